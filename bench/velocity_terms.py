"""The compliant (and rigid) step's treatment of the velocity terms (docs/COMPLIANT.md,
"Velocity terms"): ``velocity_terms="explicit"`` (Coriolis and centrifugal forces from the step
start) against ``"implicit"`` (linearised about v: M~ + h dB/dv, dense LU for the free velocity,
the impulses through M~).

1. Closed form: one rigid body's Euler equations I w' = -w x I w, one linearised step
   (I + h X)(w1 - w0) = -h w0 x I w0 for X = 0 (explicit), J = d(w x I w)/dw (implicit), its
   symmetric part (what a Cholesky or LTL factorisation could take) and its skew part; 200
   random inertias, 300 steps: the largest E / E0.
2. The compliant integrator on a free body spinning with no gravity, its centre of mass at the
   frame origin or 5 cm off, 1 s at 1 ms: the largest and the last E / E0.
3. G1 with hands (49 DOF) thrown in the air (no floor, gravity, its joint limits as rows) with
   20 rad/s random joint speeds, 1 s: the largest rise of E over its start (J), the fastest
   joint; plotted with (2) to docs/figures/compliant_velocity_terms.png.
4. Cost per step: Solo12 standing on the floor (4 foot contacts, joint PD as tau) and the 7-DOF
   arm (no scene, its limits as rows): min over interleaved blocks of the median step time.

    python bench/velocity_terms.py [--quick]
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: see mbsim_ros/__init__.py

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mbsim_ros import Simulator  # noqa: E402
from mbsim_ros.contact.scene import load_scene  # noqa: E402
from mbsim_ros.integrators.euler import VELOCITY_TERMS  # noqa: E402
from mbsim_ros.model import example_robot_urdf, load_urdf, shipped_urdf  # noqa: E402
from mbsim_ros.scenarios import spin  # noqa: E402  (the free body)

FIGURES = ROOT / "docs" / "figures"
DT = 1e-3
G1_HANDS = "g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf"


# --- 1. the closed form -------------------------------------------------------------------------

def skew(a: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def gyroscopic_steps(inertia: np.ndarray, w: np.ndarray, treatment: str, steps: int) -> float:
    """The largest E / E0 over `steps` linearised steps of I w' = -w x I w."""
    e0 = 0.5 * w @ inertia @ w
    worst = 1.0
    for _ in range(steps):
        J = skew(w) @ inertia - skew(inertia @ w)  # d(w x I w)/dw
        X = {"explicit": 0.0 * J, "implicit": J, "symmetric part": 0.5 * (J + J.T),
             "skew part": 0.5 * (J - J.T)}[treatment]
        w = w + np.linalg.solve(inertia + DT * X, -DT * np.cross(w, inertia @ w))
        e = 0.5 * w @ inertia @ w
        if not np.isfinite(e) or e > 1e6 * e0:
            return np.inf
        worst = max(worst, e / e0)
    return worst


def closed_form(trials: int) -> None:
    print("1. one rigid body, linearised gyroscopic step, worst E/E0 over 300 steps "
          f"({trials} random inertias)")
    speeds = (40, 400, 1000, 3000)
    print(f"{'treatment':16s}" + "".join(f"  h|w| = {DT * s:<5g}" for s in speeds))
    rng = np.random.default_rng(0)
    bodies = []
    for _ in range(trials):
        rotation = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        axis = rng.normal(size=3)
        bodies.append((rotation @ np.diag(rng.uniform(0.1, 1.0, 3)) @ rotation.T * 0.01,
                       axis / np.linalg.norm(axis)))
    for treatment in ("explicit", "implicit", "symmetric part", "skew part"):
        cells = [max(gyroscopic_steps(inertia, speed * axis, treatment, 300)
                     for inertia, axis in bodies) for speed in speeds]
        print(f"{treatment:16s}" + "".join(f"  {c:13.4g}" for c in cells), flush=True)


# --- 2. a free body in the compliant integrator -------------------------------------------------

def free_bodies(steps: int) -> dict:
    print(f"\n2. compliant, a free body, no gravity, {steps} steps: max E/E0 (end E/E0)")
    speeds = (40, 400, 1500, 5000)
    print(f"{'centre of mass':16s} {'mode':9s}" + "".join(f"  {s:>5d} rad/s    " for s in speeds))
    curves = {}
    for label, offset in (("at the origin", 0.0), ("5 cm off", 0.05)):
        for mode in VELOCITY_TERMS:
            cells = []
            for speed in speeds:
                e = spin(offset, speed, mode, steps)
                cells.append(f"  {e.max():8.3g} ({e[-1]:5.3g})" if np.isfinite(e).all()
                             and e.size == steps + 1 else "  diverges       ")
                if offset and (speed == 40 or (speed == 400 and mode == "implicit")):
                    curves[f"{mode}, {speed} rad/s"] = e
            print(f"{label:16s} {mode:9s}" + "".join(cells), flush=True)
    return curves


# --- 3. G1 with hands in the air ----------------------------------------------------------------

def flail(mode: str, steps: int, speed: float = 20.0) -> tuple[np.ndarray, float, str]:
    """E(t) - E(0) (J) of G1 with hands thrown with random joint speeds, no floor; the fastest
    joint (rad/s); the failure message if any."""
    model = load_urdf(str(example_robot_urdf(G1_HANDS)), floating_base=True)
    sim = Simulator(model, DT, "compliant", velocity_terms=mode)
    v = np.random.default_rng(7).normal(0.0, speed, model.nv)
    v[:6] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim.reset(model.neutral(), v)
    energies, fastest, message = [sim.energy()], 0.0, ""
    for _ in range(steps):
        info = sim.step()
        if not info.converged:
            message = f"fails at t = {sim.t:.3f} s: {info.message}"
            break
        energies.append(sim.energy())
        fastest = max(fastest, float(np.abs(sim.v[6:]).max()))
    return np.array(energies) - energies[0], fastest, message


def flailing(steps: int) -> dict:
    print(f"\n3. G1 with hands in the air, 20 rad/s random joint speeds, {steps} steps")
    curves = {}
    for mode in VELOCITY_TERMS:
        rise, fastest, message = flail(mode, steps)
        curves[mode] = rise
        print(f"{mode:9s} max E - E0 {rise.max():9.3f} J, end {rise[-1]:9.3f} J, fastest joint "
              f"{fastest:7.0f} rad/s {message}", flush=True)
    return curves


# --- 4. cost per step ---------------------------------------------------------------------------

def solo12(mode: str) -> tuple:
    scene = load_scene(ROOT / "config" / "scenes" / "solo12_standing.yaml")
    sim = Simulator.from_scene(scene, dt=DT, velocity_terms=mode)
    legs = scene.q0[7:].copy()

    def step():
        tau = np.zeros(sim.model.nv)
        tau[6:] = 30.0 * (legs - sim.q[7:]) - 0.3 * sim.v[6:]
        return sim.step(tau)
    return sim, step


def arm7(mode: str) -> tuple:
    model = load_urdf(str(shipped_urdf("arm7")))
    sim = Simulator(model, DT, "compliant", velocity_terms=mode)
    sim.reset(np.full(7, 0.3))
    return sim, sim.step


def cost(blocks: int, block: int) -> None:
    print(f"\n4. cost per step (us, min over {blocks} interleaved blocks of the median of "
          f"{block})")
    for label, make in (("Solo12 standing", solo12), ("arm7", arm7)):
        runs = {mode: make(mode) for mode in VELOCITY_TERMS}
        best = {mode: np.inf for mode in VELOCITY_TERMS}
        for _ in range(blocks):
            for mode, (sim, step) in runs.items():
                times = np.empty(block)
                for k in range(block):
                    start = time.perf_counter()
                    step()
                    times[k] = time.perf_counter() - start
                best[mode] = min(best[mode], float(np.median(times)))
        ratio = "  ".join(f"{m} {1e6 * t:6.1f}" for m, t in best.items())
        speed = best['implicit'] / best['explicit']
        print(f"{label:16s} {ratio}  (implicit / explicit {speed:.2f})",
              flush=True)


def plot(bodies: dict, g1: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
    for label, e in bodies.items():
        a.plot(DT * np.arange(e.size), e, label=label)
    a.set(xlabel="t (s)", ylabel="E / E0",
          title="free body, centre 5 cm off (explicit diverges at 400 rad/s)")
    for mode, rise in g1.items():
        b.plot(DT * np.arange(rise.size), rise, label=mode)
    b.set(xlabel="t (s)", ylabel="E - E0 (J)", title="G1 with hands in the air, 20 rad/s joints")
    for axis in (a, b):
        axis.legend()
        axis.grid(alpha=0.3)
    fig.tight_layout()
    out = FIGURES / "compliant_velocity_terms.png"
    fig.savefig(out, dpi=120)
    print(f"\nplotted {out.relative_to(ROOT)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps, no plot")
    args = parser.parse_args()
    closed_form(20 if args.quick else 200)
    bodies = free_bodies(200 if args.quick else 1000)
    g1 = flailing(200 if args.quick else 1000)
    cost(5 if args.quick else 20, 100 if args.quick else 500)
    if not args.quick:
        plot(bodies, g1)


if __name__ == "__main__":
    main()
