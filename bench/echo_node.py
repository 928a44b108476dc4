"""A bare rclpy process for bench/node.py: answers every joint_states message with an effort
command carrying the state's step number in data[0] (the bench reads it and zeroes it before
the node sees it), and echoes every /ping as /pong (the bare ping-pong floor)."""
from __future__ import annotations

import sys

import rclpy
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray


class Echo(Node):
    def __init__(self, dt_ns: int, n_joints: int) -> None:
        super().__init__("bench_echo")
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.dt_ns = dt_ns
        self.command = Float64MultiArray(data=[0.0] * n_joints)
        self.efforts = self.create_publisher(Float64MultiArray, "/mbsim/effort_commands", qos)
        self.pong = self.create_publisher(Float64MultiArray, "/pong", qos)
        self.create_subscription(JointState, "/joint_states", self.on_state, qos)
        self.create_subscription(Float64MultiArray, "/ping", self.pong.publish, qos)

    def on_state(self, msg: JointState) -> None:
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        self.command.data[0] = float(stamp // self.dt_ns)
        self.efforts.publish(self.command)


def main() -> int:
    rclpy.init(args=sys.argv)
    node = Echo(int(sys.argv[1]), int(sys.argv[2]))
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
