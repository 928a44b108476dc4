"""The node's timing on this machine, each figure next to the floor the machine sets, measured in
the same run (docs/NODE.md, README):

1. realtime pacing, default arm, variational: mean rate, tick-period error p50/p99/max, missed
   ticks; beside a plain Python sleep-to-deadline loop (same Pacer, no work);
2. controller round trip over DDS (a second process answers each joint_states with a command):
   fraction of commands applied at the next tick, state-to-command latency p50/p99; beside a
   bare rclpy ping-pong between the same two processes;
3. fast pacing: real-time factor;
4. the PD law on every joint (the servos of config/arm7_ros2_control.yaml holding the start:
   docs/CONTROL.md) and two simulated sensors, both sampled every step (an IMU on the tool
   flange and a force-torque sensor at the wrist, with noise: docs/SENSORS.md): realtime rounds
   alternating with and without them (paired, so both see the same load), fast pacing with
   them, and the work per tick with and without them (lockstep ticks in this process,
   alternating blocks);
5. humanoids standing on the floor (talos, G1; compliant, realtime pacing at 1 kHz, the node
   publishing every link's contact wrench): the node's servos hold the standing posture with
   scenarios.StandingController's gains, and one command on ~/joint_commands (a second node
   in this process, as a whole-body controller would send it) gives them its feed-forward
   efforts; rate, missed ticks, period error and whether the robot still stands.

    python bench/node.py [--quick] [--seconds S] [--sensors-only] [--humanoids-only]
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: see mbsim_ros/__init__.py

import argparse
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import rclpy  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from mbsim_ros import Simulator  # noqa: E402
from mbsim_ros.cli import ros_arguments  # noqa: E402
from mbsim_ros.contact.standing import STEEL, standing_scene  # noqa: E402
from mbsim_ros.model import example_robot_urdf  # noqa: E402
from mbsim_ros.ros.node import SimulationNode  # noqa: E402
from mbsim_ros.ros.pacing import Pacer, deadline_floor, period_errors, timing_summary  # noqa: E402
from mbsim_ros.scenarios import LEGGED, StandingController, one_dof  # noqa: E402

DOMAIN = 150 + os.getpid() % 50


class RoundTripNode(SimulationNode):
    """The node, recording for every command: the step it answers (data[0], set by the echo
    process), the step that applied it, and when DDS received it; and when each state was
    published (system clock, as DDS's reception stamps)."""

    def __init__(self, capacity: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.published = np.zeros(capacity, dtype=np.int64)
        self.answered = np.zeros(capacity, dtype=np.int64)
        self.applied = np.zeros(capacity, dtype=np.int64)
        self.received = np.zeros(capacity, dtype=np.int64)
        self.n = 0

    def _publish_state(self) -> None:
        super()._publish_state()
        if self.sim.steps < self.published.shape[0]:
            self.published[self.sim.steps] = time.time_ns()

    def _poll_commands(self) -> None:
        subscription = self._polled[0][0]
        while True:
            with subscription.handle:
                taken = subscription.handle.take_message(subscription.msg_type,
                                                         subscription.raw)
            if taken is None:
                break
            msg, info = taken
            if self.n < self.answered.shape[0]:
                self.answered[self.n] = int(msg.data[0])
                self.applied[self.n] = self.sim.steps + 1
                self.received[self.n] = info["received_timestamp"]
                self.n += 1
            msg.data[0] = 0.0
            self._on_effort_array(msg)


QUADRUPED = ["-p", f"scene:={ROOT / 'config' / 'scenes' / 'solo12_standing.yaml'}",
             "-p", "integrator:=compliant"] + [
    item for leg in ("FL", "FR", "HL", "HR") for joint, value in (("HFE", 0.8), ("KFE", -1.6))
    for item in ("-p", f"initial_positions.{leg}_{joint}:={value}")]


def run_node(seconds: float, pacing: str, node_class=SimulationNode, extra=(),
             config: str | None = str(ROOT / "config" / "arm7.yaml"), companion=None,
             **kwargs):
    """Run the node in this process for `seconds` of wall time; returns it, stopped.
    ``companion(context)``: another rclpy node to spin beside it (a controller)."""
    with ros_arguments(config, ["-p", f"pacing:={pacing}", *extra]) as args:
        context = rclpy.Context()
        rclpy.init(args=args, context=context, domain_id=DOMAIN)
        node = node_class(keep_ticks=int(seconds * 1000 * 20) + 10, context=context, **kwargs)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    if companion is not None:
        executor.add_node(companion(context))
    node.start()
    wall = time.monotonic()
    executor.spin_until_future_complete(rclpy.task.Future(), timeout_sec=seconds)
    node.stop()
    node.wall_s = time.monotonic() - wall
    executor.shutdown()
    node.destroy_node()
    rclpy.shutdown(context=context)
    return node


def echo_process(n_joints: int) -> subprocess.Popen:
    env = dict(os.environ, ROS_DOMAIN_ID=str(DOMAIN))
    return subprocess.Popen([sys.executable, str(ROOT / "bench" / "echo_node.py"), "1000000",
                             str(n_joints)], env=env)


def stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGINT)
    process.wait(20)


def ping_pong(seconds: float) -> np.ndarray:
    """Round-trip times (s) of pings sent open-loop at 1 kHz to the echo process and back,
    measured like the node's round trip: from publishing to DDS's reception stamp of the
    answer (the answers are read between pings)."""
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=DOMAIN)
    node = rclpy.create_node("bench_ping", context=context)
    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    pong = node.create_subscription(Float64MultiArray, "/pong", lambda m: None, qos)
    pub = node.create_publisher(Float64MultiArray, "/ping", qos)
    end = time.monotonic() + 5.0  # discovery
    while (pub.get_subscription_count() == 0 or pong.get_publisher_count() == 0) \
            and time.monotonic() < end:
        time.sleep(0.05)
    msg = Float64MultiArray(data=[0.0])
    count = int(seconds * 1000)
    sent = np.zeros(count, dtype=np.int64)
    rtts = []
    pacer = Pacer(1_000_000)
    pacer.start()
    for k in range(count):  # open loop at 1 kHz, like the node's states
        pacer.wait()
        sent[k] = time.time_ns()
        msg.data[0] = float(k)
        pub.publish(msg)
        while True:
            with pong.handle:
                taken = pong.handle.take_message(pong.msg_type, pong.raw)
            if taken is None:
                break
            rtts.append(taken[1]["received_timestamp"] - sent[int(taken[0].data[0])])
    node.destroy_node()
    rclpy.shutdown(context=context)
    return np.array(rtts[5:]) * 1e-9


SENSORS = [  # both every step: the worst case at 1 kHz
    {"type": "imu", "name": "tool_imu", "link": "tool0", "seed": 1,
     "gyroscope_noise_density": 1.7e-4, "gyroscope_random_walk": 1.9e-5,
     "accelerometer_noise_density": 2.0e-3, "accelerometer_random_walk": 3.0e-3},
    {"type": "force_torque", "name": "wrist_ft", "joint": "joint7", "seed": 2,
     "force_noise": 0.05, "torque_noise": 0.002}]


def sensors_arguments(folder: str) -> list[str]:
    """The sensors (a sensors_file) and the servos' gains of config/arm7_ros2_control.yaml
    (joints with a position gain hold their start: the PD law runs every step)."""
    import yaml

    from mbsim_ros.config import read_config

    path = Path(folder) / "sensors.yaml"
    path.write_text(yaml.safe_dump({"sensors": SENSORS}))
    config = read_config(ROOT / "config" / "arm7_ros2_control.yaml")
    gains = config.model_dump(exclude_none=True)["gains"]
    servo = [f"gains.{joint}.{k}:={value}" for joint, values in gains.items()
             for k, value in values.items()]
    return ["-p", f"sensors_file:={path}", *[x for p in servo for x in ("-p", p)]]


def realtime(seconds: float, rounds: int) -> None:
    """Interleaved rounds of (floor, node), so that both see the same background load; the
    period errors of all rounds are pooled per kind."""
    floor_errors, node_errors, floor_p99, node_p99 = [], [], [], []
    missed = [0, 0]
    ticks, span = 0, 0.0
    for _ in range(rounds):
        floor = deadline_floor(1000.0, seconds / rounds)
        floor_errors.append(floor.pop("errors"))
        missed[0] += floor["missed"]
        node = run_node(seconds / rounds, "realtime")
        times = node.ticks.recorded()
        node_errors.append(period_errors(times, node.pacer.period_ns))
        missed[1] += node.pacer.missed
        floor_p99.append(floor["p99_s"])
        node_p99.append(timing_summary(times, node.pacer.period_ns)["p99_s"])
        ticks += times.shape[0] - 1
        span += (times[-1] - times[0]) * 1e-9
    ours, base = np.concatenate(node_errors), np.concatenate(floor_errors)
    print(f"realtime, arm7, variational: {rounds} interleaved rounds of {seconds / rounds:.0f} s "
          f"(floor, node)")
    for label, errors, lost in (("node       ", ours, missed[1]), ("sleep floor", base, missed[0])):
        print(f"  {label}  period error p50 {np.percentile(errors, 50) * 1e3:6.3f} p99 "
              f"{np.percentile(errors, 99) * 1e3:6.3f} max {errors.max() * 1e3:7.3f} ms  "
              f"missed {lost}")
    print(f"  per-round p99 (ms): node {' '.join(f'{x * 1e3:.3f}' for x in node_p99)}; floor "
          f"{' '.join(f'{x * 1e3:.3f}' for x in floor_p99)}")
    rate = ticks / span
    print(f"  p99 ratio {np.percentile(ours, 99) / np.percentile(base, 99):.2f} (target <= 1.25); "
          f"node mean rate {rate:.2f} Hz ({(rate / 1000 - 1) * 100:+.3f}%, target within 0.1%)")


def round_trip(seconds: float) -> None:
    echo = echo_process(7)
    try:
        time.sleep(2.0)
        pings = ping_pong(min(seconds, 20.0))
        node = run_node(seconds, "realtime", RoundTripNode, capacity=int(seconds * 1100) + 100)
    finally:
        stop(echo)
    n = node.n
    answered, applied, received = node.answered[:n], node.applied[:n], node.received[:n]
    valid = (answered >= 1) & (answered < node.published.shape[0])
    answered, applied, received = answered[valid], applied[valid], received[valid]
    latency = (received - node.published[answered]) * 1e-9  # state k out -> its command in
    ticks = node.sim.steps
    next_tick = np.count_nonzero(applied == answered + 1)
    print(f"controller round trip over DDS, realtime, {seconds:.0f} s ({ticks} ticks, "
          f"{n} commands)")
    print(f"  applied at the next tick: {next_tick / ticks * 100:.1f}% of ticks; "
          f"state-to-command latency p50 {np.percentile(latency, 50) * 1e3:.3f} ms, "
          f"p99 {np.percentile(latency, 99) * 1e3:.3f} ms")
    print(f"  bare rclpy ping-pong:     RTT p50 {np.percentile(pings, 50) * 1e3:.3f} ms, "
          f"p99 {np.percentile(pings, 99) * 1e3:.3f} ms ({pings.size} pings)")
    print(f"  ratio p50 {np.percentile(latency, 50) / np.percentile(pings, 50):.2f}, p99 "
          f"{np.percentile(latency, 99) / np.percentile(pings, 99):.2f} (target <= 1.25)")


def realtime_with_sensors(seconds: float, rounds: int, sensors: list[str]) -> None:
    """Realtime rounds of the node without and with the sensors, alternating (and alternating
    which goes first), pooled per kind: a paired comparison under the same background load."""
    errors, missed, rates = ([], []), [0, 0], ([], [])
    for r in range(rounds):
        for kind in ((0, 1) if r % 2 == 0 else (1, 0)):
            node = run_node(seconds / rounds, "realtime", extra=sensors if kind else ())
            times = node.ticks.recorded()
            errors[kind].append(period_errors(times, node.pacer.period_ns))
            missed[kind] += node.pacer.missed
            rates[kind].append((times.shape[0] - 1) / ((times[-1] - times[0]) * 1e-9))
    print(f"realtime, arm7, variational, with and without the PD law on every joint and an IMU "
          f"+ force-torque sensor at 1 kHz: {rounds} alternating rounds of "
          f"{seconds / rounds:.0f} s each")
    for kind, label in enumerate(("efforts, no sensors", "PD + IMU + F/T     ")):
        pooled = np.concatenate(errors[kind]) * 1e3
        print(f"  {label}  period error p50 {np.percentile(pooled, 50):6.3f} p99 "
              f"{np.percentile(pooled, 99):6.3f} p99.9 {np.percentile(pooled, 99.9):6.3f} max "
              f"{pooled.max():7.3f} ms  missed {missed[kind]}  mean rate "
              f"{np.mean(rates[kind]):.2f} Hz")


def tick_work(sensors: list[str], blocks: int = 10, ticks: int = 1000) -> None:
    """Median and p99 wall time of one tick (step, sensors, publishing; no subscriber) in
    lockstep, without and with the sensors, in alternating blocks."""
    nodes = []
    for extra in ([], sensors):
        with ros_arguments(str(ROOT / "config" / "arm7.yaml"),
                           ["-p", "pacing:=lockstep", *extra]) as args:
            context = rclpy.Context()
            rclpy.init(args=args, context=context, domain_id=DOMAIN)
            nodes.append((SimulationNode(context=context), context))
    work = [[], []]
    for _ in range(blocks):
        for kind, (node, _) in enumerate(nodes):
            times = np.empty(ticks)
            for k in range(ticks):
                start = time.perf_counter_ns()
                with node._lock:
                    node._advance()
                times[k] = time.perf_counter_ns() - start
            work[kind].append(times)
    for node, context in nodes:
        node.destroy_node()
        rclpy.shutdown(context=context)
    print(f"work per tick, arm7, variational, lockstep in-process ({blocks} x {ticks} ticks "
          f"each, alternating):")
    for label, times in (("efforts, no sensors", work[0]), ("PD + IMU + F/T", work[1])):
        times = np.concatenate(times) * 1e-3
        print(f"  {label:18s}  median {np.median(times):6.1f} us, p99 "
              f"{np.percentile(times, 99):6.1f} us")


def fast(seconds: float, extra=(), label: str = "") -> None:
    node = run_node(seconds, "fast", extra=extra)
    rtf = node.sim.steps * node.settings.dt / node.wall_s
    print(f"fast pacing, arm7, variational{label}, joint_states + /clock every 1 ms of sim "
          f"time: real-time factor {rtf:.2f} ({node.sim.steps / node.wall_s:.0f} steps/s)")


def quadruped(seconds: float) -> None:
    """Solo12 on the steel floor (compliant integrator, 4 foot contacts), starting in its
    standing posture, no controller (it sinks onto its folded legs)."""
    node = run_node(seconds, "realtime", extra=QUADRUPED, config=None)
    times = node.ticks.recorded()
    summary = timing_summary(times, node.pacer.period_ns)
    print(f"quadruped scene (Solo12, compliant, true cone), realtime {seconds:.0f} s: rate "
          f"{summary['rate_hz']:.1f} Hz, period error p99 {summary['p99_s'] * 1e3:.3f} ms, "
          f"missed {node.pacer.missed}")
    node = run_node(seconds, "fast", extra=QUADRUPED, config=None)
    print(f"quadruped scene, fast pacing: real-time factor "
          f"{node.sim.steps * node.settings.dt / node.wall_s:.2f}")


HUMANOIDS = ("talos", "g1")


def standing_node_config(label: str, folder: Path) -> tuple[Path, JointState, float]:
    """The node's config for LEGGED[label] standing on steel (contact.standing.standing_scene
    written as a scene file), its servos' gains StandingController's, commands never stale;
    the command that holds the posture with StandingController's feed-forward efforts; the
    base's standing height (m)."""
    import yaml

    urdf = example_robot_urdf(LEGGED[label])
    scene = standing_scene(urdf)
    hold = StandingController(Simulator.from_scene(scene, dt=1e-3), scene.q0)
    model = hold.sim.model
    iv, iq = one_dof(model)
    names = [model.joint_names[i] for i in range(model.njoints)
             if model.joint_kinds[i] != "free_flyer"]
    q0 = scene.q0
    scene_file = folder / f"{label}_scene.yaml"
    scene_file.write_text(yaml.safe_dump({
        "ground": {"height": 0.0, "friction": 0.8, **STEEL},
        "models": [{"urdf": str(urdf), "floating_base": True, "position": q0[:3].tolist(),
                    "initial_positions": dict(zip(names, q0[iq].tolist()))}]}))
    config_file = folder / f"{label}_node.yaml"
    config_file.write_text(yaml.safe_dump({
        "scene": str(scene_file), "integrator": "compliant", "dt": 0.001, "rate_hz": 1000.0,
        "command_timeout": 0.0,
        "gains": {name: {"p": float(hold.sim.servos.gains[0, j]),
                         "d": float(hold.sim.servos.gains[1, j])}
                  for name, j in zip(names, iv)}}))
    command = JointState(name=names, position=q0[iq].tolist(), effort=hold.tau[iv].tolist())
    return config_file, command, float(q0[2])


def commander(command: JointState):
    """A node that sends `command` on /mbsim/joint_commands twice a second (reliable: the node
    applies the last one)."""
    def make(context):
        node = rclpy.create_node("bench_whole_body", context=context)
        publisher = node.create_publisher(JointState, "/mbsim/joint_commands", 10)
        node.create_timer(0.5, lambda: publisher.publish(command))
        return node
    return make


def humanoids(seconds: float) -> None:
    """Talos and G1 standing, realtime at 1 kHz (module docstring, 5)."""
    with tempfile.TemporaryDirectory() as folder:
        for label in HUMANOIDS:
            config, command, height = standing_node_config(label, Path(folder))
            node = run_node(seconds, "realtime", config=str(config), companion=commander(command))
            times = node.ticks.recorded()
            summary = timing_summary(times, node.pacer.period_ns)
            print(f"{label} standing (compliant, {node.sim.model.nv} DOF, "
                  f"{len(node.sim.contacts())} contacts at the end), realtime {seconds:.0f} s: "
                  f"rate {summary['rate_hz']:.1f} Hz, period error p99 "
                  f"{summary['p99_s'] * 1e3:.3f} ms, max {summary['max_s'] * 1e3:.3f} ms, "
                  f"missed {node.pacer.missed}; base {height:.4f} -> {node.sim.q[2]:.4f} m")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="5 s per measurement")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--sensors-only", action="store_true",
                        help="only the realtime and fast rows and the sensors' rows (4)")
    parser.add_argument("--humanoids-only", action="store_true", help="only the humanoids (5)")
    args = parser.parse_args()
    seconds = 5.0 if args.quick else args.seconds
    rounds = 2 if args.quick else 6
    print(f"bench/node.py  (ROS_DOMAIN_ID {DOMAIN}, {os.cpu_count()} cores)")
    if args.humanoids_only:
        humanoids(seconds)
        return 0
    with tempfile.TemporaryDirectory() as folder:
        sensors = sensors_arguments(folder)
        label = ", PD law + IMU + force-torque at 1 kHz"
        realtime(seconds, rounds)
        realtime_with_sensors(seconds, 2 * rounds, sensors)
        if not args.sensors_only:
            round_trip(seconds)
        fast(min(seconds, 20.0))
        fast(min(seconds, 20.0), sensors, label)
        tick_work(sensors, blocks=4 if args.quick else 10)
    if not args.sensors_only:
        quadruped(min(seconds, 20.0))
        humanoids(seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
