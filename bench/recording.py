"""What a recording costs (mbsim_ros/recording): the time of ``Recorder.record()`` per step,
beside the step itself, on the 7-DOF arm (variational; /clock, joint_states, /tf, the effort
command) and on Solo12 standing on the floor (compliant; also odometry, four contact wrenches,
an IMU, a force-torque sensor and a contact switch), every step and at 100 Hz; and the file's
size per simulated second.

    python bench/recording.py [--steps N]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from mbsim_ros import Simulator, load_urdf
from mbsim_ros.model import shipped_urdf
from mbsim_ros.recording import Recorder
from mbsim_ros.sensors import SensorSuite

SCENE = Path(__file__).resolve().parents[1] / "config" / "scenes" / "solo12_standing.yaml"
SOLO_SENSORS = [
    {"type": "imu", "name": "base_imu", "link": "base_link"},
    {"type": "force_torque", "name": "knee", "joint": "FL_KFE"},
    {"type": "contact", "name": "fl_foot", "link": "FL_LOWER_LEG"},
]


def arm() -> tuple:
    sim = Simulator(load_urdf(shipped_urdf("arm7")), 1e-3, "variational")
    return sim, None, np.full(sim.model.nv, 0.1)


def solo() -> tuple:
    sim = Simulator.from_scene(str(SCENE), 1e-3)
    return sim, SensorSuite(sim, SOLO_SENSORS), None


def measure(make, steps: int, rate: float | None, folder: Path) -> dict:
    """Per step: the step's and the record's time (us; median, mean, p99), bytes per
    simulated second."""
    sim, suite, tau = make()
    path = folder / "bench.mcap"
    recorder = Recorder(path, sim, suite=suite, rate=rate)
    command = None if tau is None else {"effort": tau}
    step_ns, record_ns = np.zeros(steps), np.zeros(steps)
    recorder.record()
    for k in range(steps):
        start = time.perf_counter_ns()
        sim.step(tau)
        if suite is not None:
            suite.update()
        middle = time.perf_counter_ns()
        recorder.record(command)
        record_ns[k], step_ns[k] = time.perf_counter_ns() - middle, middle - start
    recorder.close()
    size = path.stat().st_size / (steps * sim.dt)

    def summary(ns: np.ndarray) -> tuple:
        us = ns[steps // 10:] * 1e-3  # the first tenth warms caches up
        return np.median(us), us.mean(), np.percentile(us, 99)

    return {"step": summary(step_ns), "record": summary(record_ns), "bytes_per_s": size,
            "topics": len(recorder.topics)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    args = parser.parse_args()
    print(f"{'robot':8s} {'rate':>8s} {'topics':>6s} {'step us (median/mean/p99)':>28s} "
          f"{'record us (median/mean/p99)':>30s} {'file kB/s':>10s}")
    with tempfile.TemporaryDirectory() as folder:
        for name, make in (("arm7", arm), ("solo12", solo)):
            for rate in (None, 100.0):
                found = measure(make, args.steps, rate, Path(folder))
                step, record = found["step"], found["record"]
                print(f"{name:8s} {'every' if rate is None else f'{rate:g} Hz':>8s} "
                      f"{found['topics']:6d} {step[0]:10.1f} {step[1]:8.1f} {step[2]:8.1f} "
                      f"{record[0]:12.1f} {record[1]:8.1f} {record[2]:8.1f} "
                      f"{found['bytes_per_s'] / 1e3:10.1f}")


if __name__ == "__main__":
    main()
