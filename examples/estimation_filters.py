"""mbsim_ros as the process model of two estimators: an extended Kalman filter (exact step
Jacobians) and a particle filter (all particles stepped in one compiled call) tracking a
simulated double pendulum from noisy joint-position measurements. Writes the estimates against
the truth to PNG.

Run: `.venv/bin/python examples/estimation_filters.py [--steps 2000] [--particles 500]
[--out docs/figures]`.

The truth is a Simulator driven by known sinusoidal efforts plus an unknown random effort
(the process noise, std ``TORQUE_NOISE`` per step); the filters know the sinusoid, the noise
levels and the model, and measure q with noise std ``MEASUREMENT_NOISE`` at every step.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mbsim_ros import Simulator, load_urdf
from mbsim_ros.estimation import ProcessModel
from mbsim_ros.model import shipped_urdf

DT = 1e-3
TORQUE_NOISE = 0.5  # N m, std of the unknown effort held over each step
MEASUREMENT_NOISE = 0.02  # rad, std of each joint-position measurement
Q0 = np.array([0.6, -0.4])
V0 = np.array([0.0, 0.0])


@dataclass
class Run:
    """A simulated run and what the filters made of it (arrays over time, one row a step)."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    z: np.ndarray
    u: np.ndarray
    estimates: dict  # filter name -> (q_hat, v_hat)


def known_effort(t: float) -> np.ndarray:
    return np.array([2.0 * np.sin(2.0 * t), 1.0 * np.cos(3.0 * t)])


def simulate(model, steps: int, rng: np.random.Generator) -> Run:
    """The truth (variational integrator, dt = 1 ms) and the measurements z_k = q_k + noise."""
    sim = Simulator(model, dt=DT)
    sim.reset(Q0, V0)
    t, q, v, z, u = [], [], [], [], []
    for k in range(steps):
        effort = known_effort(k * DT)
        sim.step(effort + rng.normal(0.0, TORQUE_NOISE, model.nv))
        t.append(sim.t)
        q.append(sim.q.copy())
        v.append(sim.v.copy())
        z.append(sim.q + rng.normal(0.0, MEASUREMENT_NOISE, model.nq))
        u.append(effort)
    return Run(np.array(t), np.array(q), np.array(v), np.array(z), np.array(u), {})


def ekf(process: ProcessModel, run: Run, q_guess: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Extended Kalman filter on x = (q, p) with covariance in the tangent space:
    predict x = f(x, u), P = A P A^T + B W B^T; update with z = q + noise (H = [I 0])."""
    nv = process.nv
    x = process.x_from(q_guess, np.zeros(nv))
    P = np.diag(np.r_[np.full(nv, 0.1 ** 2), np.full(nv, 0.1 ** 2)])
    W = np.eye(nv) * TORQUE_NOISE ** 2
    R = np.eye(nv) * MEASUREMENT_NOISE ** 2
    H = np.hstack([np.eye(nv), np.zeros((nv, nv))])
    q_hat, v_hat = [], []
    for u, z in zip(run.u, run.z):
        A, B = process.jacobians(x, u)
        x = process.step(x, u)
        P = A @ P @ A.T + B @ W @ B.T
        innovation = z - x[:process.nq]  # fixed base: the tangent difference is z - q
        S = H @ P @ H.T + R
        K = np.linalg.solve(S, H @ P).T
        x = process.integrate(x, K @ innovation)
        I_KH = np.eye(2 * nv) - K @ H
        P = I_KH @ P @ I_KH.T + K @ R @ K.T  # Joseph form
        q, v = process.qv_from(x)
        q_hat.append(q)
        v_hat.append(v)
    return np.array(q_hat), np.array(v_hat)


def particle_filter(process: ProcessModel, run: Run, q_guess: np.ndarray, particles: int,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap particle filter: every particle is stepped under the known effort plus its own
    sample of the effort noise (one step_batch call per step), weighted by the measurement
    likelihood, resampled (systematic) when the effective sample size drops below half."""
    nv, nq = process.nv, process.nq
    X = np.array([process.x_from(q_guess + rng.normal(0.0, 0.1, nq), rng.normal(0.0, 0.1, nv))
                  for _ in range(particles)])
    X_next = np.empty_like(X)
    log_w = np.zeros(particles)
    q_hat, v_hat = [], []
    for u, z in zip(run.u, run.z):
        U = u + rng.normal(0.0, TORQUE_NOISE, (particles, nv))
        process.step_batch(X, U, out=X_next)
        X, X_next = X_next, X
        log_w += -0.5 * np.sum((z - X[:, :nq]) ** 2, axis=1) / MEASUREMENT_NOISE ** 2
        w = np.exp(log_w - log_w.max())
        w /= w.sum()
        mean = w @ X  # fixed base: the weighted mean of (q, p) is a state
        q, v = process.qv_from(mean)
        q_hat.append(q)
        v_hat.append(v)
        if 1.0 / np.sum(w ** 2) < particles / 2:
            positions = (rng.random() + np.arange(particles)) / particles
            X = X[np.minimum(np.searchsorted(np.cumsum(w), positions), particles - 1)]
            X_next = np.empty_like(X)
            log_w[:] = 0.0
        else:
            log_w = np.log(w)
    return np.array(q_hat), np.array(v_hat)


def rms_errors(run: Run, name: str, after: int = 0) -> tuple[float, float]:
    """RMS position (rad) and velocity (rad/s) errors of one filter from step `after` on."""
    q_hat, v_hat = run.estimates[name]
    return (float(np.sqrt(np.mean((q_hat[after:] - run.q[after:]) ** 2))),
            float(np.sqrt(np.mean((v_hat[after:] - run.v[after:]) ** 2))))


def track(steps: int, particles: int, seed: int = 0) -> Run:
    """Simulate, then run both filters from a wrong initial guess of q (off by 0.1 rad)."""
    rng = np.random.default_rng(seed)
    model = load_urdf(str(shipped_urdf("double_pendulum")))
    run = simulate(model, steps, rng)
    process = ProcessModel(model, dt=DT)
    q_guess = Q0 + 0.1
    run.estimates["EKF"] = ekf(process, run, q_guess)
    if particles:
        run.estimates["particle filter"] = particle_filter(process, run, q_guess, particles,
                                                           rng)
    return run


def plot(run: Run, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for label, truth, index in (("q", run.q, 0), ("v", run.v, 1)):
        fig, axes = plt.subplots(truth.shape[1], 1, figsize=(8, 5), sharex=True)
        for j, ax in enumerate(axes):
            if label == "q":
                ax.plot(run.t, run.z[:, j], ".", ms=1, color="0.7", label="measured")
            ax.plot(run.t, truth[:, j], "k", lw=1.5, label="truth")
            for name, style in (("EKF", "C0--"), ("particle filter", "C3:")):
                if name in run.estimates:
                    ax.plot(run.t, run.estimates[name][index][:, j], style, lw=1.2, label=name)
            ax.set_ylabel(f"{label}{j + 1} [{'rad' if label == 'q' else 'rad/s'}]")
        axes[0].legend(loc="upper right", fontsize=8)
        axes[-1].set_xlabel("t [s]")
        fig.suptitle(f"double pendulum: joint {'positions' if label == 'q' else 'velocities'}"
                     f", estimates against the truth")
        fig.tight_layout()
        path = out / f"estimation_{'positions' if label == 'q' else 'velocities'}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--particles", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).resolve().parents[1] / "docs" / "figures")
    args = parser.parse_args(argv)
    run = track(args.steps, args.particles, args.seed)
    settle = min(200, args.steps // 4)
    print(f"measurement noise {MEASUREMENT_NOISE} rad, effort noise {TORQUE_NOISE} N m, "
          f"{args.steps} steps of {DT} s; RMS errors after the first {settle} steps:")
    for name in run.estimates:
        eq, ev = rms_errors(run, name, settle)
        print(f"  {name:16s} q {eq:.4f} rad   v {ev:.4f} rad/s")
    for path in plot(run, args.out):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
