#!/usr/bin/env python3
"""A joint PD controller for the campaign and plugin tests that misbehaves on request: it holds
the first state it hears (efforts kp (q0 - q) - kd v on /mbsim/effort_commands) and, after
``after`` answers, does its ``fault``: none, crash (a line on stderr, exit code 3), hang (alive,
no more answers), nonfinite (a NaN effort), short (one effort too few). ``pid_file``: its
process id is written there at start. A std_srvs/Trigger ``~/reset`` forgets the held state
and the count. ``wait_description``: subscribe to joint_states only once robot_description
(latched) has come, as a controller that builds its model from it does."""
from __future__ import annotations

import os
import sys

import numpy as np
import rclpy
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger


class FaultyPD(Node):
    def __init__(self) -> None:
        super().__init__("faulty_pd")
        self.kp = self.declare_parameter("kp", 5.0).value
        self.kd = self.declare_parameter("kd", 0.1).value
        self.fault = self.declare_parameter("fault", "none").value
        self.after = self.declare_parameter("after", 0).value
        pid_file = self.declare_parameter("pid_file", "").value
        if pid_file:
            with open(pid_file, "w") as stream:
                stream.write(str(os.getpid()))
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.publisher = self.create_publisher(Float64MultiArray, "/mbsim/effort_commands", qos)
        self.qos = qos
        if self.declare_parameter("wait_description", False).value:
            latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL)
            self.create_subscription(String, "/robot_description", self.on_description, latched)
        else:
            self.on_description(None)
        self.create_service(Trigger, "~/reset", self.on_reset)
        self.q0 = None
        self.answers = 0

    def on_description(self, msg) -> None:
        if msg is not None and "<robot" not in msg.data:
            raise SystemExit("faulty_pd: robot_description is not a URDF")
        self.create_subscription(JointState, "/joint_states", self.on_state, self.qos)

    def on_reset(self, request, response):
        self.q0, self.answers = None, 0
        response.success = True
        return response

    def on_state(self, msg: JointState) -> None:
        q, v = np.asarray(msg.position), np.asarray(msg.velocity)
        if self.q0 is None:
            self.q0 = q.copy()
        tau = self.kp * (self.q0 - q) - self.kd * v
        if self.answers >= self.after and self.fault != "none":
            if self.fault == "crash":
                print(f"faulty_pd: crashing after {self.answers} answers", file=sys.stderr,
                      flush=True)
                os._exit(3)
            if self.fault == "hang":
                return
            if self.fault == "nonfinite":
                tau[0] = float("nan")
            if self.fault == "short":
                tau = tau[:-1]
        self.answers += 1
        self.publisher.publish(Float64MultiArray(data=tau.tolist()))


def main() -> int:
    rclpy.init(args=sys.argv)
    node = FaultyPD()
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
