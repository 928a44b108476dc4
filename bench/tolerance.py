"""What the variational integrator's ``tolerance`` buys: per tolerance, the root finder's
iterations and the step's cost against the errors a user sees (the energy error of a passive
run, the drift of the conserved momentum of a free-floating robot in zero gravity, the
trajectory's distance from a run solved to the rounding floor, and the energy drift of the
passive 10-link chain over 100 s, where an inexact solve's error accumulates). The default
tolerance is chosen from these tables (docs/VARIATIONAL.md, "Tolerance"). Writes
docs/figures/tolerance.png.

Run: `.venv/bin/python bench/tolerance.py [--quick]`.
"""
from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin

from mbsim_ros import Simulator
from mbsim_ros.config import resolve_urdf
from mbsim_ros.model import chain_urdf, load_urdf, shipped_urdf

FIGURES = Path(__file__).resolve().parents[1] / "docs" / "figures"
TOLERANCES = (1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12)
REFERENCE = 1e-14   # below the rounding floor: the root finder stops there


def started(model, dt: float, tol: float, speed: float) -> Simulator:
    """A passive run from the neutral pose with seeded random joint speeds (rad/s)."""
    sim = Simulator(model, dt=dt, integrator="variational", tolerance=tol)
    rng = np.random.default_rng(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim.reset(sim.q.copy(), speed * rng.standard_normal(model.nv))
    return sim


def run(model, dt: float, tol: float, seconds: float, speed: float,
        momentum=None) -> dict:
    """Iterations and cost per step, the energy error (max over the run, relative), the
    momentum drift (relative, when `momentum` (q, v) -> 6-vector is given) and the final q."""
    sim = started(model, dt, tol, speed)
    e0 = sim.energy()
    h0 = None if momentum is None else momentum(sim.q, sim.v)
    steps = int(round(seconds / dt))
    iterations, worst, wall = 0, 0.0, 0.0
    for _ in range(steps):
        start = time.perf_counter()
        info = sim.step()
        wall += time.perf_counter() - start
        if not info.converged:
            raise RuntimeError(info.message)
        iterations += info.iterations
        worst = max(worst, abs(sim.energy() - e0))
    drift = None
    if momentum is not None:
        drift = float(np.abs(momentum(sim.q, sim.v) - h0).max() / np.abs(h0).max())
    return {"iterations": iterations / steps, "us": wall / steps * 1e6,
            "energy": worst / abs(e0), "drift": drift, "q": sim.q.copy()}


def centroidal_momentum(urdf: str):
    """(q, v) -> the total momentum about the centre of mass (pinocchio: the oracle)."""
    model = pin.buildModelFromUrdf(urdf, pin.JointModelFreeFlyer())
    data = model.createData()
    return lambda q, v: np.array(pin.computeCentroidalMomentum(model, data, q, v)).copy()


def table(name: str, model, dt: float, seconds: float, speed: float, momentum=None) -> list:
    reference = run(model, dt, REFERENCE, seconds, speed, momentum)["q"]
    rows = []
    print(f"\n{name}, dt {dt * 1e3:g} ms, {seconds:g} s, random joint speeds {speed:g} rad/s")
    print(f"  {'tolerance':>9} {'iter/step':>9} {'us/step':>8} {'energy err':>10} "
          f"{'momentum':>9} {'|q - q_ref|':>11}")
    for tol in TOLERANCES:
        r = run(model, dt, tol, seconds, speed, momentum)
        r["trajectory"] = float(np.abs(r["q"] - reference).max())
        r["tol"] = tol
        rows.append(r)
        drift = "-" if r["drift"] is None else f"{r['drift']:.1e}"
        print(f"  {tol:9.0e} {r['iterations']:9.2f} {r['us']:8.1f} {r['energy']:10.2e} "
              f"{drift:>9} {r['trajectory']:11.1e}")
    return rows


def chain_drift(seconds: float, orders=(2, 4)) -> None:
    """The passive 10-link chain (1 m, 1 kg links, 0.3 rad at every joint: Lee et al. Fig. 2) at
    1 ms: max relative energy error and drift (mean error over the last tenth of the run minus
    the first tenth) per order and tolerance."""
    model = load_urdf(chain_urdf(10, axes="y", link_length=1.0, link_mass=1.0))
    print(f"\n10-link chain, {seconds:g} s at 1 ms: energy max error / drift (relative)")
    for order in orders:
        cells = []
        for tol in TOLERANCES[2:]:
            sim = Simulator(model, 1e-3, "variational", order=order, tolerance=tol)
            sim.reset(np.full(model.nq, 0.3))
            e0, errors = sim.energy(), []
            for k in range(int(round(seconds / 1e-3))):
                sim.step()
                if k % 10 == 0:
                    errors.append((sim.energy() - e0) / abs(e0))
            errors = np.array(errors)
            tenth = max(1, len(errors) // 10)
            drift = errors[-tenth:].mean() - errors[:tenth].mean()
            cells.append(f"{tol:.0e}: {np.abs(errors).max():.1e} / {drift:+.1e}")
        print(f"  order {order}: " + " | ".join(cells))


def plot(results: dict) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for name, rows in results.items():
        tols = [r["tol"] for r in rows]
        ax1.loglog(tols, [max(r["trajectory"], 1e-17) for r in rows], "o-", label=name)
        ax2.semilogx(tols, [r["iterations"] for r in rows], "o-", label=name)
    ax1.set_xlabel("tolerance")
    ax1.set_ylabel("|q - q(solved to rounding)| at the end")
    ax2.set_xlabel("tolerance")
    ax2.set_ylabel("root-finder iterations per step")
    ax1.legend(fontsize=7)
    ax1.grid(True, which="both", alpha=0.3)
    ax2.grid(True, alpha=0.3)
    fig.suptitle("Variational integrator: what the tolerance buys")
    fig.tight_layout()
    FIGURES.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURES / "tolerance.png", dpi=100)
    print(f"\nwrote {FIGURES / 'tolerance.png'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="shorter runs")
    args = parser.parse_args()
    seconds = 0.05 if args.quick else 0.2
    results = {}
    arm = load_urdf(shipped_urdf())
    results["arm7 1 ms"] = table("arm7", arm, 1e-3, 4 * seconds, 1.0)
    panda = load_urdf(resolve_urdf("panda"))
    results["panda 1 ms"] = table("panda", panda, 1e-3, 4 * seconds, 1.0)
    talos = load_urdf(resolve_urdf("talos"), floating_base=True)
    talos.gravity = (0.0, 0.0, 0.0)
    momentum = centroidal_momentum(resolve_urdf("talos"))
    for dt in (1e-3, 2e-3):
        results[f"talos floating, no gravity, {dt * 1e3:g} ms"] = table(
            "talos (floating, zero gravity)", talos, dt, seconds, 0.5, momentum)
    plot(results)
    chain_drift(20.0 if args.quick else 100.0)


if __name__ == "__main__":
    main()
