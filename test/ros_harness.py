"""What the node's integration tests share: the node as a separate process (``mbsim-ros run``)
and a real rclpy client in the test process, on a ROS_DOMAIN_ID of their own.

The waits below end with an error only when something never arrives (a dead node, a lost
message): their deadlines (10-180 s, against expected arrivals within milliseconds) bound a
hung test, they are not speed targets; speed is measured by bench/node.py."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MBSIM = str(Path(sys.executable).with_name("mbsim-ros"))


_CLAIMS: list = []  # held until this process ends


def unique_domain_id() -> int:
    """A DDS domain of this test's own (Fast DDS takes 0-232): claimed on this host with the
    lock campaigns and the pytest plugin take (mbsim_ros.ros.domains), so parallel runs, other
    test processes and campaign workers never share one."""
    from mbsim_ros.ros.domains import claim_domain

    _CLAIMS.append(claim_domain())
    return _CLAIMS[-1].domain_id


class NodeProcess:
    """``mbsim-ros run`` (or ``command``) in a child process, in ``env`` (default: this
    process's) on the given domain; ``stop()`` sends SIGINT and returns the exit code."""

    def __init__(self, domain_id: int, *args: str, log_dir: Path,
                 command: tuple[str, ...] = (MBSIM, "run"), env: dict | None = None) -> None:
        env = dict(os.environ if env is None else env, ROS_DOMAIN_ID=str(domain_id),
                   PYTHONUNBUFFERED="1")
        log_dir.mkdir(parents=True, exist_ok=True)
        self.stderr_path = log_dir / f"node-{time.monotonic_ns()}.log"
        self._stderr = open(self.stderr_path, "w")
        self.process = subprocess.Popen([*command, *args], env=env, cwd=ROOT,
                                        stdout=self._stderr, stderr=subprocess.STDOUT)

    def log(self) -> str:
        return self.stderr_path.read_text()

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 20.0) -> int:
        if self.alive():
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._stderr.close()
        return self.process.returncode


class Client:
    """A real rclpy node that talks to mbsim over DDS: collects joint_states, /clock and
    /diagnostics, publishes commands, calls the services."""

    def __init__(self, context, node_name: str = "mbsim", namespace: str = "") -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        from std_srvs.srv import SetBool, Trigger

        label = namespace.strip("/").replace("/", "_")
        self.node = rclpy.create_node(f"test_client_{os.getpid()}{'_' + label if label else ''}",
                                      context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        self.states: list = []
        self.clocks: list[int] = []
        self.diagnostics: list = []
        self.node.create_subscription(JointState, f"{namespace}/joint_states",
                                      self.states.append, qos)
        self.node.create_subscription(
            Clock, "/clock", lambda m: self.clocks.append(m.clock.sec * 10**9 + m.clock.nanosec),
            qos)
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self.diagnostics.append,
                                      qos)
        private = f"{namespace}/{node_name}"
        self.efforts = self.node.create_publisher(Float64MultiArray,
                                                  f"{private}/effort_commands", qos)
        self.joint_commands = self.node.create_publisher(JointState, f"{private}/joint_commands",
                                                         qos)
        self.services = {
            "reset": self.node.create_client(Trigger, f"{private}/reset"),
            "step": self.node.create_client(Trigger, f"{private}/step"),
            "pause": self.node.create_client(SetBool, f"{private}/pause"),
        }
        self._Float64MultiArray, self._JointState = Float64MultiArray, JointState
        self._Trigger, self._SetBool = Trigger, SetBool

    def spin_until(self, condition, timeout: float, what: str) -> None:
        """Serve callbacks until condition() holds; TimeoutError when it never does."""
        end = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > end:
                raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
            self.executor.spin_once(timeout_sec=0.01)

    def spin_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.01)

    def drain(self, quiet: float = 0.3, timeout: float = 30.0) -> None:
        """Read until nothing has arrived for ``quiet`` seconds, then forget what was read."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            before = len(self.states) + len(self.clocks)
            self.spin_for(quiet)
            if len(self.states) + len(self.clocks) == before:
                break
        self.states.clear()
        self.clocks.clear()

    def wait_for_states(self, count: int, timeout: float = 10.0) -> None:
        self.spin_until(lambda: len(self.states) >= count, timeout, f"{count} joint_states")

    def send_efforts(self, efforts) -> None:
        self.efforts.publish(self._Float64MultiArray(data=[float(x) for x in efforts]))

    def send_named(self, names, efforts, stamp_ns: int = 0, position=(), velocity=()) -> None:
        msg = self._JointState(name=list(names), effort=[float(x) for x in efforts],
                               position=[float(x) for x in position],
                               velocity=[float(x) for x in velocity])
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 10**9)
        self.joint_commands.publish(msg)

    def call(self, service: str, data: bool | None = None, timeout: float = 10.0):
        client = self.services[service]
        self.spin_until(lambda: client.service_is_ready(), timeout, f"service {service}")
        request = self._SetBool.Request(data=data) if service == "pause" else \
            self._Trigger.Request()
        future = client.call_async(request)
        self.spin_until(future.done, timeout, f"the {service} response")
        return future.result()

    def reset_lockstep(self, timeout: float = 10.0) -> int:
        """~/reset on a lockstep node; returns the time (ns) of the state it republishes, once
        a state at that time has arrived. That one may be a copy sent earlier (a lockstep node
        republishes its state at start and for every new subscriber, and DDS does not order
        those against the service reply): wait_for_state_at ignores older stamps."""
        self.states.clear()
        response = self.call("reset", timeout=timeout)
        assert response.success, response.message
        t_ns = round(float(response.message.rsplit("t = ", 1)[1].split()[0]) * 1e9)
        self.spin_until(lambda: any(state_time_ns(s) == t_ns for s in self.states), timeout,
                        f"the state at the reset time {t_ns} ns")
        return t_ns

    def wait_for_state_at(self, t_ns: int, timeout: float = 10.0):
        """The joint_states stamped ``t_ns``: exactly one, and none later. States stamped
        earlier are ignored (copies still in flight, see reset_lockstep)."""
        self.spin_until(lambda: any(state_time_ns(s) >= t_ns for s in self.states), timeout,
                        f"the joint_states at {t_ns} ns")
        current = [s for s in self.states if state_time_ns(s) >= t_ns]
        assert [state_time_ns(s) for s in current] == [t_ns], "one state per step, in order"
        return current[0]

    def latest_diagnostic(self) -> dict:
        status = self.diagnostics[-1].status[0]
        values = {kv.key: kv.value for kv in status.values}
        values["level"] = status.level[0] if isinstance(status.level, bytes) else status.level
        values["message"] = status.message
        return values

    def destroy(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()


def state_time_ns(msg) -> int:
    return msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec


def arrays(msg) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.array(msg.position), np.array(msg.velocity), np.array(msg.effort)


def ros_session(module: str):
    """(domain_id, context) for one test module: rclpy initialised on a domain of its own."""
    import rclpy

    domain = unique_domain_id()
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    return domain, context


def warm_kernels() -> None:
    """Compile (or load) the kernels in the test process first, so that a node started next
    finds them in the on-disk cache instead of compiling them itself."""
    from mbsim_ros import Simulator, load_urdf
    from mbsim_ros.model import shipped_urdf

    for integrator in ("variational", "euler"):
        Simulator(load_urdf(shipped_urdf("arm7")), integrator=integrator).step()


def start_node(domain: int, context, log_dir: Path, *args: str, startup_timeout: float = 180.0,
               namespace: str = "", **process):
    """A node process (``process``: NodeProcess's command / env) and a connected client (in
    ``namespace``) that has received the first joint_states."""
    node = NodeProcess(domain, *args, log_dir=log_dir, **process)
    client = Client(context, namespace=namespace)
    try:
        client.wait_for_states(1, timeout=startup_timeout)
    except TimeoutError:
        client.destroy()
        node.stop()
        raise AssertionError(f"the node did not publish joint_states; its log:\n{node.log()}")
    return node, client


def node_session(module: str, log_dir: Path, *args: str, **process):
    """A generator for a module-scoped fixture: (node, client) on a domain of the module's own
    (``process``: NodeProcess's command / env); on teardown the node must exit 0 on SIGINT."""
    import rclpy

    warm_kernels()
    domain, context = ros_session(module)
    node, client = start_node(domain, context, log_dir, *args, **process)
    yield node, client
    client.destroy()
    code = node.stop()
    rclpy.shutdown(context=context)
    assert code == 0, f"SIGINT must end the node with status 0; log:\n{node.log()}"


def run_example(module: str, log_dir: Path, node_args: list[str], example: list[str],
                timeout: float = 300.0, after=None) -> str:
    """Start the node (node_args), run ``python <example...>`` against it to its end on the
    same domain, then ``after(client)`` while the node still runs; returns the example's
    output. The example must exit 0, and the node on SIGINT."""
    import rclpy

    warm_kernels()
    domain, context = ros_session(module)
    node, client = start_node(domain, context, log_dir, *node_args)
    process = subprocess.Popen([sys.executable, *example], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True,
                               env=dict(os.environ, ROS_DOMAIN_ID=str(domain)))
    try:
        try:  # a liveness bound on a hung example, not a speed target
            out = process.communicate(timeout=timeout)[0]
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{example[0]} did not finish within {timeout} s (hung); "
                                 f"node log:\n{node.log()}") from None
        assert process.returncode == 0, out
        if after is not None:
            after(client)
        assert node.alive(), node.log()
    finally:
        if process.poll() is None:
            process.kill()
        client.destroy()
        code = node.stop()
        rclpy.shutdown(context=context)
    assert code == 0, node.log()
    return out
