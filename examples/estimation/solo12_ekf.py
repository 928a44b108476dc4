#!/usr/bin/env python3
"""Solo12's base state from its IMU and joint encoders: an EKF whose process model is the
simulator's contact step, against the same EKF without the floor and against leg kinematics.

The run is recorded first (MCAP, the campaign's own run of ``solo12_push.yaml``: Solo12 standing
under a joint PD, pushed sideways at the base): its odometry is the ground truth, its IMU
(orientation, gyro, accelerometer), joint encoders, contact switches and applied joint efforts
are what the estimators get, with the noise the spec gives them (docs/SENSORS.md, seeded per
run). Three estimators of the base's velocity (in its own axes) and height:

(a) **contact EKF**: state x = (q, v) of the whole robot (base pose and twist, the twelve
    joints), process model ``ProcessModel.from_scene`` (the compliant contact step of the
    scene's floor), covariance predicted with its exact Jacobians ``jacobians(x, u)`` through
    the contact solve; u the recorded joint efforts, the push unknown (process noise). Each
    step starts from the contact memory its own previous step ended with (the active set and
    the impact phases: ``hold_memory``), as the Simulator's does; "no memory": from none;
(b) **floorless EKF**: the same filter with ``ProcessModel(model, dt, "euler")``, the same
    robot without the floor;
(c) **leg kinematics**: each foot whose contact switch is on held still on the ground: the
    base velocity ``-(J_f(q) qdot + w x p_f)`` and the height ``-(R p_f)_z + r`` averaged over
    those feet (the stance foot's kinematics that Bloesch et al. 2013, "State Estimation for
    Legged Robots: Consistent Fusion of Leg Kinematics and IMU", fuse as a measurement), with
    the encoders, the gyro and the IMU's orientation.

The EKF (Bar-Shalom, Li and Kirubarajan 2001, "Estimation with Applications to Tracking and
Navigation") lives on the tangent space of x (``process.integrate`` /
``process.difference``, as in docs/ESTIMATION.md). The accelerometer reads the step's mean
acceleration, a function of the state before and after the step, so each step's update is on
the pair (x_k-1, x_k) (stochastic cloning: Roumeliotis and Burdick 2002, "Stochastic Cloning: A
Generalized Framework for Processing Relative State Measurements"), then x_k is kept.

    python examples/estimation/solo12_ekf.py        # records runs/solo12_push.mcap, estimates
    python examples/estimation/solo12_ekf.py --plot docs/figures/solo12_estimation.png

It prints the RMSE table of docs/ESTIMATION.md ("A legged robot: Solo12 pushed").
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin
import yaml
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory

from mbsim_ros.campaign.run import prepared, run
from mbsim_ros.campaign.spec import load_spec
from mbsim_ros.estimation import ProcessModel
from mbsim_ros.model.resources import example_robot_urdf

HERE = Path(__file__).resolve().parent
SPEC = HERE / "solo12_push.yaml"
FEET = ("FL", "FR", "HL", "HR")
FOOT_RADIUS = 0.0175           # m, the scene's contact spheres
GRAVITY = np.array([0.0, 0.0, -9.81])
ESTIMATORS = ("contact EKF", "contact EKF, no memory", "floorless EKF", "leg kinematics")


# ---- the recording --------------------------------------------------------------------------

def record(path: Path, seed: int = 0, duration: float | None = None) -> dict:
    """Run seed ``seed`` of the campaign spec (campaign seed 0, as ``mbsim-ros campaign``) and
    record it into ``path``: the same file as ``mbsim-ros campaign replay DIR --seed S --record
    path``. ``duration``: shorter than the spec's (s). Returns the run's table row."""
    _, data = load_spec(SPEC)
    if duration is not None:
        data["duration"] = float(duration)
    path.parent.mkdir(parents=True, exist_ok=True)
    return run(prepared(data), 0, seed, record=path)


@dataclass
class Recording:
    """One recorded run, sample k at t[k] (every step): the truth and the sensors."""

    t: np.ndarray           # (n,)
    position: np.ndarray    # (n, 3) base position (truth)
    quaternion: np.ndarray  # (n, 4) base orientation x y z w (truth)
    velocity: np.ndarray    # (n, 3) base linear velocity in its axes (truth)
    joints: list[str]       # the one-DOF joints in joint_states order
    encoder_q: np.ndarray   # (n, 12)
    encoder_v: np.ndarray   # (n, 12)
    effort: np.ndarray      # (n, 12) applied over the step that ends at t[k]
    imu_quaternion: np.ndarray  # (n, 4)
    gyro: np.ndarray        # (n, 3)
    accel: np.ndarray       # (n, 3) specific force
    imu_variance: np.ndarray  # (3,) per sample: orientation, angular velocity, acceleration
    stance: np.ndarray      # (n, 4) the feet's contact switches (FEET order)


def read_recording(path: Path) -> Recording:
    """The recording's topics (mcap + mcap_ros2, no ROS needed: docs/RECORDING.md)."""
    rows: dict[str, dict[int, object]] = {}
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _, channel, message, decoded in reader.iter_decoded_messages():
            rows.setdefault(channel.topic, {})[message.log_time] = decoded
    stamps = sorted(rows["/joint_states"])

    def series(topic, read):
        return np.array([read(rows[topic][s]) for s in stamps], dtype=float)

    def xyz(v):
        return (v.x, v.y, v.z)

    def xyzw(o):
        return (o.x, o.y, o.z, o.w)

    imu = "/mbsim/imu/base_imu"
    first = rows[imu][stamps[0]]
    return Recording(
        t=np.array(stamps) * 1e-9,
        position=series("/mbsim/odom", lambda m: xyz(m.pose.pose.position)),
        quaternion=series("/mbsim/odom", lambda m: xyzw(m.pose.pose.orientation)),
        velocity=series("/mbsim/odom", lambda m: xyz(m.twist.twist.linear)),
        joints=list(rows["/joint_states"][stamps[0]].name),
        encoder_q=series("/joint_states", lambda m: m.position),
        encoder_v=series("/joint_states", lambda m: m.velocity),
        effort=series("/mbsim/effort_commands", lambda m: m.data),
        imu_quaternion=series(imu, lambda m: xyzw(m.orientation)),
        gyro=series(imu, lambda m: xyz(m.angular_velocity)),
        accel=series(imu, lambda m: xyz(m.linear_acceleration)),
        imu_variance=np.array([first.orientation_covariance[0],
                               first.angular_velocity_covariance[0],
                               first.linear_acceleration_covariance[0]]),
        stance=np.stack([series(f"/mbsim/contact/{foot}_FOOT", lambda m: m.data)
                         for foot in FEET], axis=1) > 0.5)


def rotation(quaternion) -> np.ndarray:
    """World <- body rotation of a unit quaternion (x, y, z, w)."""
    x, y, z, w = quaternion
    return pin.Quaternion(w, x, y, z).toRotationMatrix()


# ---- (a), (b): the EKF ----------------------------------------------------------------------

@dataclass
class Noise:
    """The filter's noise model: process noise as unknown accelerations (std per axis) and
    the sensors' per-sample variances."""

    base_linear: float = 20.0     # m/s^2: the push (unknown), the floor for (b)
    base_angular: float = 100.0   # rad/s^2
    joint: float = 500.0          # rad/s^2
    encoder_q: float = 2e-4 ** 2
    encoder_v: float = 0.05 ** 2
    orientation: float = 0.005 ** 2
    gyro: float = 1e-3
    accel: float = 4e-3


class BaseEKF:
    """EKF on x = (q, v) of a floating-base robot with ``process`` as its process model,
    updated at each step with the joint encoders, the IMU's orientation, gyro and
    accelerometer (an IMU at the base's origin, in its axes; the free-flyer is the model's
    first joint).

    Predict (x in the tangent space; Bar-Shalom et al. 2001):
    ``x_k = f(x_k-1, u_k)``, ``P_k = A P A^T + G Q G^T`` with A from ``process.jacobians`` and
    G the unknown accelerations' effect over one step (``dt^2`` on q, ``dt`` on v). The update
    is on the pair (x_k-1, x_k), covariance ``[[P, P A^T], [A P, P_k]]``, since the
    accelerometer's step-mean acceleration involves both (stochastic cloning, Roumeliotis and
    Burdick 2002); Joseph form, then x_k and its block are kept. ``carry_memory`` (contact
    integrators): each step starts from the memory the previous one ended with."""

    def __init__(self, process: ProcessModel, x0: np.ndarray, P0: np.ndarray,
                 noise: Noise, carry_memory: bool = False) -> None:
        self.process, self.x, self.P = process, x0.copy(), P0.copy()
        self.carry_memory = carry_memory
        if carry_memory:
            process.hold_memory(None)  # the start's: none, as a Simulator's after reset
        nv, dt = process.nv, process.dt
        self.nv, self.dt = nv, dt
        sigma = np.r_[[noise.base_linear] * 3, [noise.base_angular] * 3,
                      [noise.joint] * (nv - 6)]
        G = np.vstack([dt * dt * np.eye(nv), dt * np.eye(nv)])
        self.Q = G @ np.diag(sigma ** 2) @ G.T
        nj = nv - 6
        self.R = np.diag(np.r_[[noise.encoder_q] * nj, [noise.encoder_v] * nj,
                               [noise.orientation] * 3, [noise.gyro] * 3, [noise.accel] * 3])

    def step(self, u, encoder_q, encoder_v, imu_rotation, gyro, accel) -> None:
        process, n = self.process, self.process.ndx
        x0 = self.x
        A, _ = process.jacobians(x0, u)
        x1 = process.step(x0, u)
        if self.carry_memory:  # the next step starts from the memory this one ended with
            process.hold_memory(process.memory())
        P = self.P
        AP = A @ P
        C = np.block([[P, AP.T], [AP, AP @ A.T + self.Q]])
        residual, H = self._measurements(x0, x1, encoder_q, encoder_v, imu_rotation, gyro,
                                         accel)
        S = H @ C @ H.T + self.R
        K = np.linalg.solve(S, H @ C).T
        dx = K @ residual
        IKH = np.eye(2 * n) - K @ H
        C = IKH @ C @ IKH.T + K @ self.R @ K.T
        self.x = process.integrate(x1, dx[n:])
        self.P = 0.5 * (C[n:, n:] + C[n:, n:].T)

    def _measurements(self, x0, x1, encoder_q, encoder_v, imu_rotation, gyro, accel):
        """The residuals y - h(x_k-1, x_k) and their Jacobian H (on the pair's tangent)."""
        process, nv, nq = self.process, self.nv, self.process.nq
        n = process.ndx
        nj = nv - 6
        q1, v1 = x1[:nq], x1[nq:]
        v0 = x0[nq:]
        R1 = rotation(q1[3:7])
        lin1, w1 = v1[:3], v1[3:6]
        # (at the base's origin, in its axes: a = dv/dt + w x v, the specific force a - R^T g)
        predicted_accel = (lin1 - v0[:3]) / self.dt + np.cross(w1, lin1) - R1.T @ GRAVITY
        residual = np.concatenate([
            encoder_q - q1[7:], encoder_v - v1[6:],
            pin.log3(R1.T @ imu_rotation), gyro - w1, accel - predicted_accel])
        H = np.zeros((residual.size, 2 * n))
        rows = np.arange(nj)
        H[rows, n + 6 + rows] = 1.0                         # joint positions
        H[nj + rows, n + nv + 6 + rows] = 1.0               # joint velocities
        o = 2 * nj
        H[o:o + 3, n + 3:n + 6] = np.eye(3)                 # orientation (right perturbation)
        H[o + 3:o + 6, n + nv + 3:n + nv + 6] = np.eye(3)   # gyro
        a = o + 6
        H[a:a + 3, nv:nv + 3] = -np.eye(3) / self.dt        # accelerometer: v_k-1
        H[a:a + 3, n + nv:n + nv + 3] = np.eye(3) / self.dt + pin.skew(w1)
        H[a:a + 3, n + nv + 3:n + nv + 6] = -pin.skew(lin1)
        H[a:a + 3, n + 3:n + 6] = -pin.skew(R1.T @ GRAVITY)
        return residual, H


def run_ekf(process: ProcessModel, rec: Recording, q0: np.ndarray, noise: Noise,
            steps: int, carry_memory: bool = False) -> tuple[np.ndarray, ...]:
    """(base velocity (steps, 3), height (steps,), the final covariance, the height's std
    (steps,)) of the EKF from the scene's start (q0, at rest; the prior's std: 1 cm and 0.05
    rad on the base, 0.01 rad on the joints, 0.1 m/s or rad/s on every velocity)."""
    nv = process.nv
    x0 = process.x_from(q0, np.zeros(nv))
    prior = np.r_[[0.01] * 3, [0.05] * 3, [0.01] * (nv - 6), [0.1] * nv]
    ekf = BaseEKF(process, x0, np.diag(prior ** 2), noise, carry_memory)
    velocity, height, height_std = np.empty((steps, 3)), np.empty(steps), np.empty(steps)
    effort = np.zeros(nv)
    for k in range(steps):
        effort[6:] = rec.effort[k]
        ekf.step(effort, rec.encoder_q[k], rec.encoder_v[k], rotation(rec.imu_quaternion[k]),
                 rec.gyro[k], rec.accel[k])
        velocity[k] = ekf.x[process.nq:process.nq + 3]
        height[k] = ekf.x[2]
        up = rotation(ekf.x[3:7])[2]  # the world's z in the base's axes (its position tangent)
        height_std[k] = np.sqrt(up @ ekf.P[:3, :3] @ up)
    return velocity, height, ekf.P, height_std


# ---- (c): leg kinematics --------------------------------------------------------------------

def leg_kinematics(rec: Recording, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Base velocity and height from the stance feet's kinematics (pinocchio, Carpentier et
    al. 2019): the feet in contact held still on the ground (Bloesch et al. 2013); with no
    foot in contact, the last estimate is held."""
    model = pin.buildModelFromUrdf(str(example_robot_urdf("solo12")), pin.JointModelFreeFlyer())
    data = model.createData()
    feet = [model.getFrameId(f"{leg}_FOOT") for leg in FEET]
    joints = [model.joints[model.getJointId(name)] for name in rec.joints]
    columns, dofs = [j.idx_q for j in joints], [j.idx_v for j in joints]
    velocity, height = np.zeros((steps, 3)), np.zeros(steps)
    q, v = pin.neutral(model), np.zeros(model.nv)
    q[2] = 0.0
    for k in range(steps):
        q[columns] = rec.encoder_q[k]
        v[dofs] = rec.encoder_v[k]
        v[3:6] = rec.gyro[k]
        pin.forwardKinematics(model, data, q, v)
        pin.updateFramePlacements(model, data)
        R = rotation(rec.imu_quaternion[k])
        stance = [f for f, on in zip(feet, rec.stance[k]) if on]
        if not stance:
            velocity[k], height[k] = velocity[k - 1], height[k - 1]
            continue
        # base at the origin with zero linear velocity: a foot's velocity is then
        # J qdot + w x p; the base's is minus that for a foot held still
        velocity[k] = -np.mean([pin.getFrameVelocity(model, data, f, pin.LOCAL_WORLD_ALIGNED)
                                .linear for f in stance], axis=0)
        height[k] = np.mean([-(R @ data.oMf[f].translation)[2] for f in stance]) + FOOT_RADIUS
    return velocity, height


# ---- the comparison -------------------------------------------------------------------------

def estimate(rec: Recording, steps: int | None = None, noise: Noise | None = None) -> dict:
    """The three estimators on the first ``steps`` samples of a recording: {name: (velocity,
    height)}, plus "covariances": the EKFs' final covariances, "height_std": their heights'
    standard deviations."""
    steps = len(rec.t) if steps is None else steps
    noise = Noise(orientation=rec.imu_variance[0], gyro=rec.imu_variance[1],
                  accel=rec.imu_variance[2], **_encoder_noise()) if noise is None else noise
    contact = ProcessModel.from_scene(_scene(), dt=_dt())
    floorless = ProcessModel(contact.model, contact.dt, "euler")
    q0 = contact.scene.q0
    runs = [run_ekf(contact, rec, q0, noise, steps, carry_memory=True),
            run_ekf(ProcessModel.from_scene(_scene(), dt=_dt()), rec, q0, noise, steps),
            run_ekf(floorless, rec, q0, noise, steps)]
    results = {name: r[:2] for name, r in zip(ESTIMATORS, runs)}
    results[ESTIMATORS[3]] = leg_kinematics(rec, steps)
    results["covariances"] = tuple(r[2] for r in runs)
    results["height_std"] = tuple(r[3] for r in runs)
    return results


def rmse(rec: Recording, results: dict, start: float = 0.0, end: float = np.inf) -> dict:
    """{estimator: (base velocity RMSE (m/s, the norm's), height RMSE (m))} over
    start <= t < end."""
    table = {}
    for name in ESTIMATORS:
        velocity, height = results[name]
        t = rec.t[:len(height)]
        k = np.flatnonzero((t >= start) & (t < end))
        error_v = np.linalg.norm(velocity[k] - rec.velocity[k], axis=1)
        error_z = height[k] - rec.position[k, 2]
        table[name] = (float(np.sqrt(np.mean(error_v ** 2))),
                       float(np.sqrt(np.mean(error_z ** 2))))
    return table


def _spec() -> dict:
    return yaml.safe_load(SPEC.read_text())


def _scene() -> Path:
    return (SPEC.parent / _spec()["scene"]).resolve()


def _dt() -> float:
    return float(_spec()["dt"])


def _encoder_noise() -> dict:
    encoders = _spec()["sensors"]["encoders"]
    resolution = 2.0 * np.pi / encoders["counts_per_revolution"]
    # the quantisation's variance res^2 / 12 on top of the noise (docs/SENSORS.md)
    return {"encoder_q": encoders["noise"] ** 2 + resolution ** 2 / 12.0,
            "encoder_v": encoders["velocity_noise"] ** 2}


def plot(rec: Recording, results: dict, path: Path) -> None:
    """The base's lateral velocity and height, truth and the three estimates, and the errors
    (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(4, 1, figsize=(8, 10), sharex=True)
    n = len(results[ESTIMATORS[0]][1])
    t, truth_v, truth_z = rec.t[:n], rec.velocity[:n], rec.position[:n, 2]
    styles = dict(zip(ESTIMATORS, ("C0", "C9", "C3", "C2")))
    axes[0].plot(t, truth_v[:, 1], "k", lw=2, label="truth (recording)")
    axes[1].plot(t, truth_z, "k", lw=2)
    for name in ESTIMATORS:
        velocity, height = results[name]
        axes[0].plot(t, velocity[:, 1], styles[name], lw=1, label=name)
        axes[1].plot(t, height, styles[name], lw=1)
        axes[2].semilogy(t, np.linalg.norm(velocity - truth_v, axis=1), styles[name], lw=1)
        axes[3].semilogy(t, np.abs(height - truth_z), styles[name], lw=1)
    span = np.ptp(truth_v[:, 1])
    axes[0].set_ylim(truth_v[:, 1].min() - 0.2 * span, truth_v[:, 1].max() + 0.2 * span)
    axes[1].set_ylim(truth_z.min() - 0.01, truth_z.max() + 0.01)
    axes[2].set_ylim(1e-5, 1.0)
    axes[3].set_ylim(1e-8, 1e-2)
    labels = ("base velocity y (m/s)", "base height (m)", "|velocity error| (m/s)",
              "|height error| (m)")
    for ax, label in zip(axes, labels):
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[0].legend(loc="lower left", fontsize=8)
    axes[-1].set_xlabel("t (s)")
    fig.suptitle("Solo12 pushed: base state from its IMU and joint encoders")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recording", type=Path, default=Path("runs/solo12_push.mcap"),
                        help="the MCAP recording (made from the spec when it does not exist)")
    parser.add_argument("--seed", type=int, default=0, help="the campaign run's seed")
    parser.add_argument("--record", action="store_true", help="record again even if it exists")
    parser.add_argument("--steps", type=int, default=None, help="estimate the first N samples")
    parser.add_argument("--after", type=float, default=0.15,
                        help="the second table's start (s): after the landing on four feet")
    parser.add_argument("--plot", type=Path, default=None, help="a PNG of the estimates")
    args = parser.parse_args(argv)
    if args.record or not args.recording.exists():
        row = record(args.recording, args.seed)
        print(f"recorded {args.recording}: push {row['push[0].fy']:.1f} N sideways, "
              f"sensor seed {row['sensor_seed']}")
    rec = read_recording(args.recording)
    results = estimate(rec, args.steps)
    whole, settled = rmse(rec, results), rmse(rec, results, start=args.after)
    print(f"| estimator | base velocity RMSE (m/s) | base height RMSE (m) | from {args.after} s: "
          f"velocity | height |")
    print("|---|---|---|---|---|")
    for name in ESTIMATORS:
        print(f"| {name} | {whole[name][0]:.4f} | {whole[name][1]:.1e} | "
              f"{settled[name][0]:.4f} | {settled[name][1]:.1e} |")
    if args.plot is not None:
        plot(rec, results, args.plot)


if __name__ == "__main__":
    main()
