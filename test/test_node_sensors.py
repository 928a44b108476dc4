"""The node's simulated sensors over real DDS (a client in this process, the node in another):
an IMU and a force-torque sensor on the hanging pendulum publish at their configured rates,
frames and covariances with the readings of a body at rest, the encoders quantise
joint_states; bad sensor settings end the start-up with one line naming them."""
from __future__ import annotations

import math
import os
import subprocess

import numpy as np
import pytest
import yaml
from ros_harness import MBSIM, ROOT, node_session, state_time_ns, unique_domain_id

G = 9.81
GYRO, ACCEL = 1e-3, 2e-3        # white-noise densities
IMU_PERIOD, FT_PERIOD = 4, 2    # steps of 1 ms
RESOLUTION = 2 * math.pi / 1024
SENSORS = [
    {"type": "imu", "name": "bob_imu", "link": "link1", "xyz": [0, 0, -1], "rate": 250,
     "seed": 1, "gyroscope_noise_density": GYRO, "accelerometer_noise_density": ACCEL},
    {"type": "force_torque", "name": "pivot", "joint": "joint1", "rate": 500, "seed": 2,
     "force_noise": 0.01, "torque_noise": 0.001, "topic": "/wrist/ft"},
]


def config(tmp_path, **extra) -> str:
    path = tmp_path / "pendulum_sensors.yaml"
    path.write_text(yaml.safe_dump({"urdf_path": "pendulum", **extra}))
    return str(path)


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sensors")
    path = config(folder, sensors=SENSORS,
                  encoders={"noise": 1e-3, "counts_per_revolution": 1024, "seed": 3})
    yield from node_session(__name__, folder, "--config", path)


def test_imu_and_force_torque_publish_their_configured_readings(session):
    from geometry_msgs.msg import WrenchStamped
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Imu

    _, client = session
    imus, wrenches = [], []
    qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    client.node.create_subscription(Imu, "/mbsim/imu/bob_imu", imus.append, qos)
    client.node.create_subscription(WrenchStamped, "/wrist/ft", wrenches.append, qos)
    client.spin_until(lambda: len(imus) >= 200 and len(wrenches) >= 400, 60.0,
                      "IMU and force-torque messages")

    for messages, period, frame in ((imus, IMU_PERIOD, "link1"), (wrenches, FT_PERIOD, "link1")):
        stamps = np.array([state_time_ns(m) for m in messages])
        assert np.all(stamps % (period * 1_000_000) == 0) and np.diff(stamps).min() > 0
        assert np.median(np.diff(stamps)) == period * 1_000_000
        assert {m.header.frame_id for m in messages} == {frame}

    imu = imus[-1]
    assert np.allclose(imu.angular_velocity_covariance,
                       np.diag([GYRO ** 2 / 0.004] * 3).ravel(), rtol=1e-12)
    assert np.allclose(imu.linear_acceleration_covariance,
                       np.diag([ACCEL ** 2 / 0.004] * 3).ravel(), rtol=1e-12)
    assert not np.any(imu.orientation_covariance)
    gyro = np.array([[m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z]
                     for m in imus])
    accel = np.array([[m.linear_acceleration.x, m.linear_acceleration.y,
                       m.linear_acceleration.z] for m in imus])
    n = len(imus)
    # at rest: the means within 5 standard errors of (0, 0, 0) and (0, 0, +g)
    assert np.all(np.abs(gyro.mean(axis=0)) < 5 * GYRO / math.sqrt(0.004 * n))
    assert np.all(np.abs(accel.mean(axis=0) - [0, 0, G]) < 5 * ACCEL / math.sqrt(0.004 * n))
    assert np.allclose(accel.std(axis=0), ACCEL / math.sqrt(0.004), rtol=0.25)
    assert (imu.orientation.x, imu.orientation.y, imu.orientation.w) == (0.0, 0.0, 1.0)
    force = np.array([[m.wrench.force.x, m.wrench.force.y, m.wrench.force.z] for m in wrenches])
    assert np.all(np.abs(force.mean(axis=0) - [0, 0, G]) < 5 * 0.01 / math.sqrt(len(wrenches)))

    positions = np.array([s.position[0] for s in client.states])
    counts = positions / RESOLUTION
    assert np.allclose(counts, np.round(counts), atol=1e-9), "whole encoder counts"


def run_node(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, ROS_DOMAIN_ID=str(unique_domain_id()))
    return subprocess.run([MBSIM, "run", *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=180)


@pytest.mark.parametrize("extra, args, code, words", [
    ({"sensors": [{"type": "imu", "name": "imu", "link": "nope"}]}, [], 1,
     ["sensors[0].link", "'nope'", "link1"]),
    ({"sensors": [{"type": "sonar", "name": "s", "link": "link1"}]}, [], 2, ["'sonar'", "imu"]),
    ({"sensors": [{"type": "force_torque", "name": "ft", "joint": "hinge"}]}, [], 1,
     ["'hinge'", "joint1"]),
    ({}, ["--ros-args", "-p", "encoders.counts:=10"], 1, ["encoders.counts"]),
    ({}, ["--ros-args", "-p", "encoders.delay_ticks:=-1"], 1, ["delay_ticks"]),
])
def test_bad_sensor_settings_end_the_start_up_with_one_line(tmp_path, extra, args, code, words):
    """A config the schema refuses stops `mbsim-ros run` before the node (exit 2); what only
    the model can judge stops the node's start-up (exit 1); one line either way."""
    result = run_node("--config", config(tmp_path, **extra), *args)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == code and len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]
