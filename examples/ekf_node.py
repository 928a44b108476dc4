#!/usr/bin/env python3
"""An extended Kalman filter fed by the node's sensors: encoders on joint_states and a gyro on
the double pendulum's second link, with mbsim_ros's own process model (exact step Jacobians)
as the filter's dynamics (docs/ESTIMATION.md, "Through the node").

    mbsim-ros run --config examples/ekf_config.yaml &
    python examples/ekf_node.py --ros-args -p steps:=3000 -p out:=runs/ekf.npz

It answers every joint_states message with a known effort (a sinusoid per joint, on
~/effort_commands; in lockstep pacing that drives the simulation), predicts with the process
model under that effort, and updates with

- the encoders: z = q (noise and quantisation: R = noise^2 + resolution^2 / 12) and the
  encoders' velocity (R = velocity_noise^2);
- the gyro, whenever a sample with this state's stamp has arrived: its component along the
  joints' common axis is v1 + v2, linear in the state (R = N^2 / T, the white noise per
  sample; the example's gyro has no bias walk).

State x = (q, v) of the Euler process model at the node's dt. At the end it writes the
estimates, the encoder readings and the efforts to ``out`` (npz) and logs the RMS innovation;
test_node_ekf.py replays the efforts offline for the truth.
"""
from __future__ import annotations

import sys

import numpy as np
import rclpy
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray

from mbsim_ros.config import read_config
from mbsim_ros.estimation import ProcessModel
from mbsim_ros.model import load_urdf, shipped_urdf
from mbsim_ros.ros.shutdown import until_shutdown

CONFIG = "examples/ekf_config.yaml"
EFFORT_NOISE = 0.05  # N m: what the process model gets wrong per step (integrator, rounding)


def known_effort(t: float) -> np.ndarray:
    return np.array([2.0 * np.sin(2.0 * t), 1.0 * np.cos(3.0 * t)])


class EKFNode(Node):
    def __init__(self) -> None:
        super().__init__("ekf_node")
        self.steps = int(self.declare_parameter("steps", 3000).value)
        self.out = self.declare_parameter("out", "runs/ekf.npz").value
        dt = float(self.declare_parameter("dt", 1e-3).value)
        config = read_config(CONFIG)
        encoders, imu = config.encoders, config.sensors[0]
        resolution = 2.0 * np.pi / encoders.counts_per_revolution
        self.process = ProcessModel(load_urdf(shipped_urdf("double_pendulum")), dt=dt,
                                    integrator="euler")
        n = self.process.nv
        self.R_encoders = np.diag(np.r_[np.full(n, encoders.noise ** 2 + resolution ** 2 / 12),
                                        np.full(n, encoders.velocity_noise ** 2)])
        self.R_gyro = imu.gyroscope_noise_density ** 2 * imu.rate
        self.H_gyro = np.r_[np.zeros(n), np.ones(n)]
        self.W = np.eye(n) * EFFORT_NOISE ** 2
        self.x = None
        self.P = np.eye(2 * n) * 0.1 ** 2
        self.u = np.zeros(n)
        self.gyro = {}  # stamp (ns) -> the rate about the joints' axis (the sensor's y)
        self.log = {"t": [], "q_hat": [], "v_hat": [], "z": [], "u": [], "innovation": []}
        qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
        self.command = Float64MultiArray()
        self.publisher = self.create_publisher(Float64MultiArray, "/mbsim/effort_commands", qos)
        self.create_subscription(Imu, f"/mbsim/imu/{imu.name}", self.on_imu, qos)
        self.create_subscription(JointState, "/joint_states", self.on_state, qos)
        self.done = False

    def on_imu(self, msg: Imu) -> None:
        self.gyro[msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec] = \
            msg.angular_velocity.y

    def on_state(self, msg: JointState) -> None:
        stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        z = np.r_[msg.position, msg.velocity]
        if self.x is None:
            self.x = z.copy()
        else:
            self.update(z, self.R_encoders, np.eye(z.size), z - self.x)
        rate = self.gyro.pop(stamp, None)
        if rate is not None:
            self.update(np.array([rate]), np.array([[self.R_gyro]]), self.H_gyro[None, :],
                        np.array([rate - self.H_gyro @ self.x]))
        self.record(stamp, z)
        if len(self.log["t"]) >= self.steps:
            self.finish()
            return
        self.u = known_effort(stamp * 1e-9)
        self.command.data = self.u.tolist()
        self.publisher.publish(self.command)
        self.predict()

    def predict(self) -> None:
        """x = f(x, u), P = A P A^T + B W B^T (the process model's exact Jacobians)."""
        A, B = self.process.jacobians(self.x, self.u)
        self.x = self.process.step(self.x, self.u)
        self.P = A @ self.P @ A.T + B @ self.W @ B.T

    def update(self, z, R, H, innovation) -> None:
        """The Kalman update (Joseph form); fixed base: the state's difference is plain."""
        S = H @ self.P @ H.T + R
        K = np.linalg.solve(S, H @ self.P).T
        self.x = self.x + K @ innovation
        I_KH = np.eye(self.x.size) - K @ H
        self.P = I_KH @ self.P @ I_KH.T + K @ R @ K.T
        if H.shape[0] == self.x.size:
            self.log["innovation"].append(innovation)

    def record(self, stamp: int, z: np.ndarray) -> None:
        n = self.process.nv
        self.log["t"].append(stamp * 1e-9)
        self.log["q_hat"].append(self.x[:n].copy())
        self.log["v_hat"].append(self.x[n:].copy())
        self.log["z"].append(z)
        self.log["u"].append(self.u.copy())

    def finish(self) -> None:
        from pathlib import Path

        Path(self.out).parent.mkdir(parents=True, exist_ok=True)
        np.savez(self.out, **{k: np.array(v) for k, v in self.log.items()})
        rms = np.sqrt(np.mean(np.array(self.log["innovation"]) ** 2, axis=0))
        self.get_logger().info(f"{len(self.log['t'])} steps; RMS encoder innovation "
                               f"{np.array2string(rms, precision=4)}; wrote {self.out}")
        self.done = True


def main() -> int:
    rclpy.init(args=sys.argv)
    node = EKFNode()
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
