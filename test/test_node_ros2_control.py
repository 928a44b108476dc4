"""The node as the hardware side of a ros2_control stack, over real DDS: what
topic_based_ros2_control's TopicBasedSystem does (JointState commands with position, velocity
and effort arrays of equal length on /robot_joint_command every cycle; states read from
/robot_joint_states with the sensor-data QoS), played by a second process, with the node's
topics moved there by plain remapping and no /joint_states of its own."""
from __future__ import annotations

import time

import numpy as np
import pytest
from ros_harness import NodeProcess, ros_session, warm_kernels

from mbsim_ros.config import read_config

CONFIG = "config/arm7_ros2_control.yaml"
TARGET = np.array([0.3, 0.5, -0.2, -1.0, 0.1, 0.8, 0.0])
NAMES = [f"joint{k}" for k in range(1, 8)]


@pytest.fixture(scope="module")
def hardware_side(tmp_path_factory):
    """(node process, rclpy node, executor, received states) on a domain of their own."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    warm_kernels()
    domain, context = ros_session(__name__)
    node = NodeProcess(domain, "--config", CONFIG, "--ros-args",
                       "-r", "/mbsim/joint_commands:=/robot_joint_command",
                       "-r", "joint_states:=/robot_joint_states",
                       log_dir=tmp_path_factory.mktemp("ros2_control"))
    client = rclpy.create_node("topic_based_ros2_control_test", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(client)
    yield node, client, executor
    executor.shutdown()
    client.destroy_node()
    code = node.stop()
    rclpy.shutdown(context=context)
    assert code == 0, f"SIGINT must end the node with status 0; log:\n{node.log()}"


def spin_until(executor, condition, timeout: float, what: str, node) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}; node log:\n{node.log()}")
        executor.spin_once(timeout_sec=0.002)


def test_a_ros2_control_hardware_interface_drives_the_arm_by_position(hardware_side):
    """The arm goes from its configured start to TARGET by position commands sent every cycle
    (1 kHz from a timer, as a controller manager's write()). Before the first command the
    servos hold the start (joints with position gains start as position servos), so the first
    state the client sees, whenever it connects, is at the start to 0.02 rad (the gravity sag
    before the integral acts: at most 0.0148 rad, at 0.11 s, computed offline with the same
    gains; a client that connected then saw 0.0136 under the full suite's load). After 3 s of
    simulated time every
    joint is within 1e-3 rad of its target (the servos' integral has removed the gravity
    sag). /robot_joint_states comes from the node, /joint_states from nobody."""
    from rclpy.qos import QoSProfile, qos_profile_sensor_data
    from sensor_msgs.msg import JointState

    node, client, executor = hardware_side
    states = []
    client.create_subscription(JointState, "/robot_joint_states", states.append,
                               qos_profile_sensor_data)
    publisher = client.create_publisher(JointState, "/robot_joint_command", QoSProfile(depth=1))
    command = JointState(name=NAMES, position=list(TARGET), velocity=[0.0] * 7,
                         effort=[0.0] * 7)
    client.create_timer(1e-3, lambda: publisher.publish(command))
    spin_until(executor, lambda: len(states) > 0, 180.0, "the first /robot_joint_states", node)
    start = states[-1].header.stamp
    start_s = start.sec + start.nanosec * 1e-9
    q0 = read_config(CONFIG).initial_positions
    np.testing.assert_allclose(states[0].position[1:6:2], [q0["joint2"], q0["joint4"],
                                                           q0["joint6"]], atol=0.02)

    def elapsed():
        stamp = states[-1].header.stamp
        return stamp.sec + stamp.nanosec * 1e-9 - start_s

    spin_until(executor, lambda: elapsed() >= 3.0, 120.0, "3 s of simulated time", node)
    assert list(states[-1].name) == NAMES
    np.testing.assert_allclose(states[-1].position, TARGET, atol=1e-3)
    assert np.all(np.abs(states[-1].velocity) < 1e-2)
    assert client.count_publishers("/robot_joint_states") == 1
    assert client.count_publishers("/joint_states") == 0
    assert client.count_subscribers("/robot_joint_command") == 1
    assert node.alive()
