"""The box on an elastic foundation (Drumwright 2019, section 5.5, Tables 1 and 2): a rigid
cube resting
frictionless on a Winkler foundation of N x N elements, a downward load on its top face off
centre, 1 s of simulated time. Our compliant integrator (through Simulator.from_scene) against
scipy's Radau, BDF and RK45 on the same penalty ODE, and every final pose against a
tight-tolerance reference (DOP853, rtol 1e-10).

Drumwright's text lost the case's numbers (side, density, moduli, damping, step, load point); the
values below are ours, chosen so that Drumwright's description holds: the 5 N load keeps every
element compressed (a steady state), the 50 N load lifts the far corner (lift-off above
~12 N for this point), moduli of steel's and rubber's order.

    python bench/elastic_foundation.py [--quick] [--budget SECONDS]
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: see mbsim_ros/__init__.py

import argparse
import json
import math
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mbsim_ros import Simulator  # noqa: E402
from mbsim_ros._jit import kernel  # noqa: E402
from mbsim_ros.model.constraints import AppliedForce, Attachment  # noqa: E402

FIGURES = ROOT / "docs" / "figures"
SIDE, DENSITY, DEPTH = 0.1, 1000.0, 1.0          # m, kg/m^3, m: a 1 kg cube
MASS = DENSITY * SIDE ** 3
FACE_DAMPING = 100.0                             # N s/m, the whole face (heave decays at 50/s)
LOAD_POINT = np.array([0.02, 0.01, SIDE / 2])    # on the top face, box frame
MODULI = {"steel": 1.0e11, "rubber": 1.0e7}      # N/m^2
GRAVITY = 9.81
DURATION = 1.0
PEER_TOLERANCE = {"rtol": 1e-6, "atol": 1e-9}
REFERENCE_TOLERANCE = {"rtol": 1e-10, "atol": 1e-13}


@dataclass
class Case:
    elements: int      # per side
    load: float        # N, downward
    modulus: float     # N/m^2

    @property
    def name(self) -> str:
        material = next(k for k, v in MODULI.items() if v == self.modulus)
        return f"{self.elements}x{self.elements}, {self.load:g} N, {material}"


@dataclass
class Run:
    seconds: float | None          # None: over budget
    pose: np.ndarray | None = None  # [x, y, z, qx, qy, qz, qw] at t = 1 s
    note: str = ""
    extra: dict = field(default_factory=dict)


# -- ours ---------------------------------------------------------------------------------------

def scene(case: Case) -> dict:
    return {"ground": {"friction": 0.0, "youngs_modulus": case.modulus},
            "models": [{"box": {"size": [SIDE] * 3, "mass": MASS}, "name": "cube",
                        "position": [0, 0, SIDE / 2],
                        "foundation": {"depth": DEPTH, "elements": case.elements,
                                       "damping": FACE_DAMPING}}]}


def ours(case: Case, dt: float, budget: float) -> Run:
    load = AppliedForce(Attachment("load", 0, np.eye(3), LOAD_POINT), [0, 0, -case.load])
    sim = Simulator.from_scene(scene(case), dt=dt, forces=[load],
                               max_contacts=2 * case.elements ** 2)
    tau = np.zeros(sim.model.nv)
    steps = round(DURATION / dt)
    start = time.perf_counter()
    for k in range(steps):
        info = sim.step(tau)
        if not info.converged:
            return Run(None, note=f"step {k} failed: {info.message}")
        elapsed = time.perf_counter() - start
        if elapsed > budget and k + 1 < steps:
            per_step = elapsed / (k + 1)
            return Run(None, note=f"{k + 1} of {steps} steps in {elapsed:.0f} s",
                       extra={"per_step": per_step, "estimate": per_step * steps})
    seconds = time.perf_counter() - start
    return Run(seconds, sim.q[:7].copy(), extra={"per_step": seconds / steps})


# -- the same penalty ODE for scipy -------------------------------------------------------------

class OverBudget(Exception):
    pass


class PenaltyODE:
    """y = [p (3, world), quaternion (x, y, z, w), v (3, world), w (3, body)]: the cube with
    each element a spring-damper f_e = max(0, k_e delta + b_e delta_dot) on its element point
    while compressed (delta > 0), along the world z, and the load at LOAD_POINT."""

    def __init__(self, case: Case, budget: float) -> None:
        n = case.elements
        u = ((np.arange(n) + 0.5) / n - 0.5) * SIDE
        x, y = np.meshgrid(u, u, indexing="ij")
        self.points = np.stack([x.ravel(), y.ravel(), np.full(n * n, -SIDE / 2)], axis=1)
        area = SIDE ** 2 / (n * n)
        self.k = case.modulus * area / DEPTH
        self.b = FACE_DAMPING / (n * n)
        self.load = case.load
        self.inertia = MASS * SIDE ** 2 / 6.0     # a cube: I = m a^2 / 6 about every axis
        self.deadline = time.perf_counter() + budget
        self.calls = 0

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        self.calls += 1
        if self.calls % 256 == 0 and time.perf_counter() > self.deadline:
            raise OverBudget
        return penalty_rhs(y, self.points, self.k, self.b, self.load, LOAD_POINT, MASS,
                           self.inertia, GRAVITY)

    def pressure(self, y: np.ndarray) -> np.ndarray:
        """Element pressures (N/m^2), N x N, at the state y."""
        quat = y[3:7] / np.linalg.norm(y[3:7])
        R = rotation(quat)
        r = self.points @ R.T
        delta = -(y[2] + r[:, 2])
        n = round(np.sqrt(len(delta)))
        return (self.k * np.maximum(delta, 0.0) / (SIDE ** 2 / n ** 2)).reshape(n, n)


@kernel
def penalty_rhs(y, points, k, b, load, load_point, mass, inertia, gravity):
    """dy/dt of the cube on the foundation (y as in PenaltyODE; ground at z = 0)."""
    qx, qy, qz, qw = y[3], y[4], y[5], y[6]
    norm = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
    qx, qy, qz, qw = qx / norm, qy / norm, qz / norm, qw / norm
    R = np.empty((3, 3))
    R[0, 0], R[0, 1], R[0, 2] = 1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), \
        2 * (qx * qz + qy * qw)
    R[1, 0], R[1, 1], R[1, 2] = 2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), \
        2 * (qy * qz - qx * qw)
    R[2, 0], R[2, 1], R[2, 2] = 2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), \
        1 - 2 * (qx * qx + qy * qy)
    wx, wy, wz = y[10], y[11], y[12]
    ox = R[0, 0] * wx + R[0, 1] * wy + R[0, 2] * wz      # world angular velocity
    oy = R[1, 0] * wx + R[1, 1] * wy + R[1, 2] * wz
    fz = -mass * gravity - load
    tx, ty = 0.0, 0.0
    for e in range(points.shape[0]):
        rx = R[0, 0] * points[e, 0] + R[0, 1] * points[e, 1] + R[0, 2] * points[e, 2]
        ry = R[1, 0] * points[e, 0] + R[1, 1] * points[e, 1] + R[1, 2] * points[e, 2]
        rz = R[2, 0] * points[e, 0] + R[2, 1] * points[e, 1] + R[2, 2] * points[e, 2]
        delta = -(y[2] + rz)                       # compression
        if delta <= 0.0:
            continue
        f = k * delta - b * (y[9] + ox * ry - oy * rx)   # k delta + b delta_dot
        if f <= 0.0:
            continue
        fz += f
        tx += ry * f                               # r x (0, 0, f)
        ty -= rx * f
    lx = R[0, 0] * load_point[0] + R[0, 1] * load_point[1] + R[0, 2] * load_point[2]
    ly = R[1, 0] * load_point[0] + R[1, 1] * load_point[1] + R[1, 2] * load_point[2]
    tx -= ly * load                                # r_load x (0, 0, -F)
    ty += lx * load
    out = np.empty(13)
    out[0:3] = y[7:10]
    out[3] = 0.5 * (qw * wx + qy * wz - qz * wy)   # q' = 1/2 q (x) (w_body, 0)
    out[4] = 0.5 * (qw * wy + qz * wx - qx * wz)
    out[5] = 0.5 * (qw * wz + qx * wy - qy * wx)
    out[6] = -0.5 * (qx * wx + qy * wy + qz * wz)
    out[7], out[8], out[9] = 0.0, 0.0, fz / mass
    for i in range(3):                             # a cube: no gyroscopic term
        out[10 + i] = (R[0, i] * tx + R[1, i] * ty) / inertia
    return out


def rotation(quat: np.ndarray) -> np.ndarray:
    x, y, z, w = quat
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def initial_state() -> np.ndarray:
    y0 = np.zeros(13)
    y0[2], y0[6] = SIDE / 2, 1.0   # resting on the foundation at full extension, at rest
    return y0


def scipy_run(case: Case, method: str, budget: float, tolerance: dict) -> Run:
    ode = PenaltyODE(case, budget)
    start = time.perf_counter()
    try:
        result = solve_ivp(ode, (0.0, DURATION), initial_state(), method=method,
                           t_eval=[DURATION], **tolerance)
    except OverBudget:
        return Run(None, note=f"{ode.calls} evaluations in {budget:.0f} s")
    seconds = time.perf_counter() - start
    if not result.success:
        return Run(None, note=result.message)
    y = result.y[:, -1]
    pose = np.concatenate([y[0:3], y[3:7] / np.linalg.norm(y[3:7])])
    return Run(seconds, pose, extra={"nfev": int(result.nfev), "state": y,
                                     "pressure": ode.pressure(y)})


# -- the table ----------------------------------------------------------------------------------

def errors(run: Run, reference: Run) -> tuple[float, float] | None:
    if run.pose is None or reference.pose is None:
        return None
    absolute = float(np.linalg.norm(run.pose - reference.pose))
    return absolute, absolute / float(np.linalg.norm(reference.pose))


def cell(run: Run, budget: float) -> str:
    if run.seconds is None:
        estimate = run.extra.get("estimate")
        return f"> {budget:.0f} s" + (f" (est. {estimate:.0f} s)" if estimate else "")
    return f"{run.seconds:.2f} s"


def error_cell(run: Run, reference: Run) -> str:
    e = errors(run, reference)
    return "-" if e is None else f"{e[0]:.1e} / {e[1]:.1e}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10x10 only, short budgets")
    parser.add_argument("--budget", type=float, default=None,
                        help="wall-clock budget per run (s); default 120, quick 20")
    parser.add_argument("--dt", type=float, default=1e-2, help="our step (s)")
    parser.add_argument("--out", type=Path, default=None, help="results as JSON")
    parser.add_argument("--no-peers", action="store_true",
                        help="ours and the reference only (no figure)")
    args = parser.parse_args()
    budget = args.budget or (20.0 if args.quick else 120.0)
    sizes = [10] if args.quick else [10, 30]
    cases = [Case(n, load, modulus) for n in sizes for modulus in MODULI.values()
             for load in (5.0, 50.0)]
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, python "
          f"{platform.python_version()}; our dt {args.dt:g} s; budget {budget:.0f} s per run, "
          f"reference {3 * budget:.0f} s")
    header = ("| case | ours | Radau | BDF | RK45 | reference (DOP853) | error ours | "
              "error Radau | error BDF | error RK45 | ours per step |")
    print(header)
    print("|" + "---|" * 11)
    results = []
    for case in cases:
        reference = scipy_run(case, "DOP853", 3 * budget, REFERENCE_TOLERANCE)
        runs = {"ours": ours(case, args.dt, budget)}
        for method in () if args.no_peers else ("Radau", "BDF", "RK45"):
            runs[method] = scipy_run(case, method, budget, PEER_TOLERANCE)
        per_step = runs["ours"].extra.get("per_step", float("nan")) * 1e3
        print(f"| {case.name} | " + " | ".join(cell(r, budget) for r in runs.values())
              + f" | {cell(reference, 3 * budget)} | "
              + " | ".join(error_cell(r, reference) for r in runs.values())
              + f" | {per_step:.0f} ms |", flush=True)
        results.append((case, runs, reference))
    if args.out:
        args.out.write_text(json.dumps([
            {"case": case.name, "reference_s": ref.seconds,
             **{f"{k}_s": r.seconds for k, r in runs.items()},
             **{f"{k}_note": r.note for k, r in runs.items()},
             **{f"{k}_error": errors(r, ref) for k, r in runs.items()},
             "ours_per_step": runs["ours"].extra.get("per_step"),
             "ours_estimate": runs["ours"].extra.get("estimate")}
            for case, runs, ref in results], indent=1))
    if not args.no_peers:
        plot(results, budget, args.dt)


def plot(results, budget: float, dt: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = ("ours", "Radau", "BDF", "RK45")
    colours = ("tab:blue", "tab:orange", "tab:green", "tab:red")
    fig, (ax, ax_p) = plt.subplots(1, 2, figsize=(13, 4.8),
                                   gridspec_kw={"width_ratios": [2.2, 1]})
    width = 0.2
    for j, (method, colour) in enumerate(zip(methods, colours)):
        for i, (case, runs, _) in enumerate(results):
            run = runs[method]
            over = run.seconds is None
            height = run.extra.get("estimate", budget) if over else run.seconds
            ax.bar(i + (j - 1.5) * width, height, width, color=colour, alpha=0.35 if over else 1,
                   hatch="//" if over else None, label=method if i == 0 else None)
    ax.axhline(budget, color="grey", lw=0.8, ls="--")
    ax.text(len(results) - 0.5, budget * 1.1, "budget", ha="right", color="grey")
    ax.set_yscale("log")
    ax.set_xticks(range(len(results)))
    ax.set_xticklabels([c.name.replace(", ", "\n") for c, _, _ in results], fontsize=8)
    ax.set_ylabel("wall time for 1 s simulated (s)")
    ax.set_title(f"box on a Winkler foundation: ours (dt {dt:g} s) vs scipy "
                 f"(rtol 1e-6); hatched: over budget (ours: estimate)", fontsize=9)
    ax.legend(fontsize=8)
    shown = [(c, ref) for c, _, ref in results if ref.pose is not None and c.load == 50.0]
    if shown:
        case, ref = max(shown, key=lambda item: (item[0].elements, -item[0].modulus))
        pressure = ref.extra["pressure"]
        image = ax_p.imshow(pressure.T / 1e3, origin="lower", cmap="viridis",
                            extent=[-SIDE / 2, SIDE / 2, -SIDE / 2, SIDE / 2])
        ax_p.plot(*LOAD_POINT[:2], "r+", ms=12)
        fig.colorbar(image, ax=ax_p, label="pressure (kPa)")
        ax_p.set_title(f"pressure under the box at 1 s\n{case.name} (reference; +: load)",
                       fontsize=9)
        ax_p.set_xlabel("x (m)")
        ax_p.set_ylabel("y (m)")
    fig.tight_layout()
    FIGURES.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURES / "elastic_foundation.png", dpi=110)
    print(f"wrote {FIGURES / 'elastic_foundation.png'}")


if __name__ == "__main__":
    main()
