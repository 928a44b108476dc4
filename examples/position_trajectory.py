#!/usr/bin/env python3
"""A position-controlled arm: a joint trajectory through a few waypoints, sent as position and
velocity targets on the node's ``~/joint_commands`` (the joints' servos close the loop inside
the simulation step, as a drive does), the way a trajectory controller drives position
interfaces.

    mbsim-ros run --config config/arm7_ros2_control.yaml &
    python examples/position_trajectory.py --ros-args \\
        -p waypoints:="[0.3, 0.5, -0.2, -1.0, 0.1, 0.8, 0.0,
                        -0.3, 0.2, 0.2, -1.5, 0.0, 0.5, 0.3]" \\
        -p segment_time:=1.5

Each segment from one waypoint to the next is a quintic in time (zero velocity and
acceleration at both ends); the first starts at the first joint_states received. Time is the
simulation's (joint_states stamps), so it runs at any pacing. After the last waypoint the
arm holds it; the node logs the tracking error along the way and the final error, then exits
(``hold_time`` later).

Parameters: waypoints (flat list, one configuration of joint_states' joints after another),
segment_time (s), hold_time (s), command_topic.
"""
from __future__ import annotations

import sys

import numpy as np
import rclpy
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from mbsim_ros.ros.shutdown import until_shutdown


def quintic(s: float) -> tuple[float, float]:
    """The minimum-jerk blend 10 s^3 - 15 s^4 + 6 s^5 and its derivative, s in [0, 1]."""
    s = min(1.0, max(0.0, s))
    return s ** 3 * (10.0 - 15.0 * s + 6.0 * s * s), 30.0 * s * s * (1.0 - s) ** 2


class Trajectory(Node):
    def __init__(self) -> None:
        super().__init__("position_trajectory")
        self.flat = np.array(self.declare_parameter("waypoints", [0.0]).value, dtype=float)
        self.segment = float(self.declare_parameter("segment_time", 1.5).value)
        self.hold = float(self.declare_parameter("hold_time", 1.0).value)
        topic = self.declare_parameter("command_topic", "/mbsim/joint_commands").value
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.publisher = self.create_publisher(JointState, topic, qos)
        self.create_subscription(JointState, "/joint_states", self.on_state, qos)
        self.points = None
        self.start_s = None
        self.worst = 0.0
        self.done = False

    def on_state(self, msg: JointState) -> None:
        t = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        q = np.asarray(msg.position)
        if self.points is None:
            if self.flat.size % q.size:
                self.get_logger().error(f"{self.flat.size} waypoint values are not a multiple "
                                        f"of the {q.size} joints")
                raise SystemExit(1)
            self.points = np.vstack([q, self.flat.reshape(-1, q.size)])
            self.start_s = t
            self.command = JointState(name=list(msg.name))
        target, velocity = self.reference(t - self.start_s)
        self.worst = max(self.worst, float(np.max(np.abs(q - target))))
        self.command.header.stamp = msg.header.stamp
        self.command.position = target.tolist()
        self.command.velocity = velocity.tolist()
        self.publisher.publish(self.command)
        end = self.segment * (len(self.points) - 1)
        if not self.done and t - self.start_s > end + self.hold:
            error = float(np.max(np.abs(q - self.points[-1])))
            self.get_logger().info(f"final error {error:.2e} rad; largest tracking error "
                                   f"{self.worst:.2e} rad")
            self.done = True

    def reference(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Position and velocity of the quintic segments at time t from the start."""
        k = min(int(t // self.segment), len(self.points) - 2)
        s, ds = quintic(t / self.segment - k)
        a, b = self.points[k], self.points[k + 1]
        return a + s * (b - a), ds * (b - a) / self.segment


def main() -> int:
    rclpy.init(args=sys.argv)
    node = Trajectory()
    try:
        with until_shutdown():
            while rclpy.ok() and not node.done:
                rclpy.spin_once(node, timeout_sec=0.1)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
