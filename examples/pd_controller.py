#!/usr/bin/env python3
"""A joint-space PD + gravity-compensation controller that closes the loop through the node's
topics: the canonical controller-in-the-loop use of mbsim_node.

    tau = M(q) (kp (q_target - q) - kd v) + g(q) + D v
        = rnea(q, 0, kp (q_target - q) - kd v) + D v      (D: the URDF's joint damping)

The PD gains are weighted by the mass matrix so that every joint gets the same closed-loop
bandwidth (sqrt(kp) rad/s): plain scalar gains that hold the shoulder make the light wrist
links unstable at a 1 ms step with one tick of delay.

It answers every joint_states message with one effort command, so it runs at the simulation's
rate in realtime or fast pacing and drives the simulation in lockstep pacing.

    mbsim-ros run --config config/arm7.yaml &
    python examples/pd_controller.py --ros-args -p urdf_path:=arm7 \\
        -p target:="[0.3, 0.5, 0.0, -1.0, 0.0, 0.8, 0.0]"

Parameters: urdf_path (or robot_description), target (one value per joint in joint_states
order; default: hold the first state received), kp, kd (scalars, SI), command_topic.
"""
from __future__ import annotations

import sys

import numpy as np
import rclpy
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from mbsim_ros.config import resolve_urdf
from mbsim_ros.dynamics import rnea
from mbsim_ros.model import load_urdf
from mbsim_ros.ros.shutdown import until_shutdown


class PDController(Node):
    def __init__(self) -> None:
        super().__init__("pd_controller")
        urdf_path = self.declare_parameter("urdf_path", "arm7").value
        description = self.declare_parameter("robot_description", "").value
        self.target = np.array(self.declare_parameter("target", [0.0]).value, dtype=float)
        self.hold_first = self.target.shape == (1,) and self.target[0] == 0.0
        self.kp = self.declare_parameter("kp", 100.0).value  # 1/s^2: 10 rad/s bandwidth
        self.kd = self.declare_parameter("kd", 20.0).value   # 1/s: critically damped
        topic = self.declare_parameter("command_topic", "/mbsim/effort_commands").value
        self.model = load_urdf(description or resolve_urdf(urdf_path))
        if self.model.nq != self.model.nv:
            raise SystemExit("pd_controller: fixed-base models only")
        self.zero = np.zeros(self.model.nv)
        self.command = Float64MultiArray()
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.publisher = self.create_publisher(Float64MultiArray, topic, qos)
        self.create_subscription(JointState, "/joint_states", self.on_state, qos)

    def on_state(self, msg: JointState) -> None:
        q = np.asarray(msg.position)
        v = np.asarray(msg.velocity)
        if self.hold_first:
            self.target, self.hold_first = q.copy(), False
        if q.shape != self.target.shape:
            self.get_logger().error(f"target has {self.target.size} values, the robot "
                                    f"{q.size} joints", throttle_duration_sec=1.0)
            return
        tau = rnea(self.model, q, self.zero, self.kp * (self.target - q) - self.kd * v)
        tau += self.model.damping * v
        self.command.data = tau.tolist()
        self.publisher.publish(self.command)


def main() -> int:
    rclpy.init(args=sys.argv)
    node = PDController()
    try:
        with until_shutdown():
            rclpy.spin(node)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
