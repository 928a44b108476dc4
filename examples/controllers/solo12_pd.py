#!/usr/bin/env python3
"""A standalone ROS 2 controller for Solo12 standing: joint PD on the standing posture plus the
gravity feed-forward that holds the body up on four feet. It is what a user brings to a
campaign (``controller: {type: ros}``) or to a pytest integration test (mbsim_ros.testing); it
knows nothing of the simulator but its topics, so it runs the same against ``mbsim_node``.

    tau = kp (q* - q) - kd v + tau_ff,
    tau_ff = g_j(q*) - sum_feet J_f,j(q*)^T (0, 0, m g / 4)

g_j and J_f,j are the joint columns of the generalized gravity and of each foot's translational
Jacobian (world axes) at the posture q*, computed once with pinocchio (Carpentier et al. 2019):
the static torques that carry a quarter of the robot's weight on each foot.

It answers every ``joint_states`` message with one effort command on
``/mbsim/effort_commands`` (Float64MultiArray, the joints in joint_states order), so it drives
the simulation in lockstep; the default gains (kp 10 N m/rad, kd 0.3 N m s/rad) are stable
with the command applied one tick late as well (realtime pacing), where kp 20, kd 0.5 is not.

    mbsim-ros run --config config/scenes/solo12_standing.yaml --ros-args -p pacing:=lockstep &
    python examples/controllers/solo12_pd.py --ros-args -p kp:=10.0

Parameters: kp, kd, posture (HFE and KFE angles of the four legs, rad), command_topic.
"""
from __future__ import annotations

import sys

import numpy as np
import pinocchio as pin
import rclpy
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from mbsim_ros.model.resources import example_robot_urdf

FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
GRAVITY = 9.81


def standing_posture(hfe: float, kfe: float) -> dict[str, float]:
    """Every leg's hip flexion and knee (the abduction joints at zero)."""
    posture = {}
    for leg in ("FL", "FR", "HL", "HR"):
        posture.update({f"{leg}_HAA": 0.0, f"{leg}_HFE": hfe, f"{leg}_KFE": kfe})
    return posture


def gravity_feedforward(posture: dict[str, float]) -> dict[str, float]:
    """Each joint's static torque at the posture with the weight shared by the four feet."""
    model = pin.buildModelFromUrdf(str(example_robot_urdf("solo12")), pin.JointModelFreeFlyer())
    data = model.createData()
    q = pin.neutral(model)
    for name, value in posture.items():
        q[model.joints[model.getJointId(name)].idx_q] = value
    tau = pin.computeGeneralizedGravity(model, data, q).copy()
    pin.computeJointJacobians(model, data, q)
    pin.updateFramePlacements(model, data)
    weight_share = np.array([0.0, 0.0, pin.computeTotalMass(model) * GRAVITY / len(FEET)])
    for foot in FEET:
        jacobian = pin.getFrameJacobian(model, data, model.getFrameId(foot),
                                        pin.LOCAL_WORLD_ALIGNED)[:3]
        tau -= jacobian.T @ weight_share
    return {name: float(tau[model.joints[model.getJointId(name)].idx_v]) for name in posture}


class StandingPD(Node):
    def __init__(self) -> None:
        super().__init__("solo12_pd")
        self.kp = self.declare_parameter("kp", 10.0).value
        self.kd = self.declare_parameter("kd", 0.3).value
        hfe, kfe = self.declare_parameter("posture", [0.8, -1.6]).value
        topic = self.declare_parameter("command_topic", "/mbsim/effort_commands").value
        self.posture = standing_posture(hfe, kfe)
        self.feedforward = gravity_feedforward(self.posture)
        self.order: list[str] | None = None  # the joints in joint_states order
        self.command = Float64MultiArray()
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.publisher = self.create_publisher(Float64MultiArray, topic, qos)
        self.create_subscription(JointState, "/joint_states", self.on_state, qos)

    def on_state(self, msg: JointState) -> None:
        if self.order != list(msg.name):
            self.order = list(msg.name)
            self.target = np.array([self.posture[name] for name in self.order])
            self.tau_ff = np.array([self.feedforward[name] for name in self.order])
        q, v = np.asarray(msg.position), np.asarray(msg.velocity)
        tau = self.kp * (self.target - q) - self.kd * v + self.tau_ff
        self.command.data = tau.tolist()
        self.publisher.publish(self.command)


def main() -> int:
    rclpy.init(args=sys.argv)
    node = StandingPD()
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
