"""The integration test of docs/TESTING.md (Solo12 stands for 0.5 s under the example
controller) as a ``launch_testing`` file, for a ROS 2 installation: ``mbsim_node`` in lockstep
on the shipped Solo12 scene, the controller beside it, and a test that listens to the node's
``~/base_pose``.

    launch_test examples/launch_testing/test_solo12_pd.launch.py

(in a package: ``add_launch_test(test/test_solo12_pd.launch.py)`` in CMake, or
``launch_testing`` through pytest with ``launch_pytest``). In lockstep the node steps once per
command, so the run takes as long as the two processes need, on any load; the test judges the
first 0.5 s of simulated time it hears. Here the controller is this repository's example
script; a package's own controller is a ``Node(package=..., executable=...)`` like the
simulation's. Both are stopped with SIGINT when the test ends and must exit with 0.

The names below are plain constants so that the repository's tests can check them without
launch_testing (test/test_launch_testing_example.py).
"""
import os
import sys
import time
import unittest

import launch_testing
import launch_testing.actions
import launch_testing.asserts
import pytest
import rclpy
from ament_index_python.packages import get_package_share_directory
from geometry_msgs.msg import PoseStamped
from launch import LaunchDescription
from launch.actions import ExecuteProcess
from launch_ros.actions import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy

PACKAGE = "mbsim_ros"
EXECUTABLE = "mbsim_node"
NODE_NAME = "mbsim"
SCENE = "config/scenes/solo12_standing.yaml"  # in the package's share folder
PARAMETERS = {"pacing": "lockstep", "integrator": "compliant", "dt": 0.001}
CONTROLLER = "../controllers/solo12_pd.py"  # relative to this file
CONTROLLER_PARAMETERS = {"kp": 10.0, "kd": 0.3}
BASE_POSE_TOPIC = "/mbsim/base_pose"
SECONDS = 0.5  # of simulated time
MIN_HEIGHT = 0.2  # m: the base stays up (it starts at 0.237 m)
WAIT_S = 120.0  # wall s for the 0.5 s to pass: a liveness bound


@pytest.mark.launch_test
def generate_test_description():
    scene = os.path.join(get_package_share_directory(PACKAGE), SCENE)
    simulation = Node(package=PACKAGE, executable=EXECUTABLE, name=NODE_NAME, output="screen",
                      parameters=[{"scene": scene, **PARAMETERS}])
    controller_args = [arg for name, value in CONTROLLER_PARAMETERS.items()
                       for arg in ("-p", f"{name}:={value}")]
    controller = ExecuteProcess(
        cmd=[sys.executable, os.path.join(os.path.dirname(__file__), CONTROLLER),
             "--ros-args", *controller_args],
        name="controller", output="screen")
    return (LaunchDescription([simulation, controller, launch_testing.actions.ReadyToTest()]),
            {"simulation": simulation, "controller": controller})


class TestSolo12Stands(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.node = rclpy.create_node("solo12_pd_test")

    @classmethod
    def tearDownClass(cls):
        cls.node.destroy_node()
        rclpy.shutdown()

    def test_the_base_stays_up(self):
        samples = []  # (simulated s, base height)
        self.node.create_subscription(
            PoseStamped, BASE_POSE_TOPIC,
            lambda msg: samples.append((msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9,
                                        msg.pose.position.z)),
            QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
        end = time.monotonic() + WAIT_S
        while (not samples or samples[-1][0] - samples[0][0] < SECONDS) \
                and time.monotonic() < end:
            rclpy.spin_once(self.node, timeout_sec=0.1)
        self.assertTrue(samples, f"nothing on {BASE_POSE_TOPIC} within {WAIT_S:g} s")
        heard = samples[-1][0] - samples[0][0]
        self.assertGreaterEqual(heard, SECONDS, f"only {heard:.3f} s simulated in {WAIT_S:g} s")
        lowest = min(z for t, z in samples if t - samples[0][0] <= SECONDS)
        self.assertGreater(lowest, MIN_HEIGHT)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_both_exit_cleanly(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
