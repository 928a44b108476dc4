"""A steel ball dropped on the steel floor (docs/COMPLIANT.md, "Impacts"): peak penetration
against Hertz's impact theory and rebound height, at dt = 1 ms, 0.1 ms and 10 us; the median
cost of a step in contact. Beside the simulator, `one_row`: the same step for a lone ball
written out for its single normal row (test_compliant checks it equals the simulator's to
rounding), with the row's stiffness taken at the step-start depth (what the integrator does)
or at the step-end depth (backward Euler on the Hertz force, found by Newton on the depth):
the candidate of the issue's item 1, measured before building it into the kernels.

Hertz's peak penetration of a sphere (radius R, mass m) hitting a flat of the same material
at v0 (Johnson, "Contact Mechanics", 1985, Sec. 11.4, eq. 11.24):

    delta_max = (15 m v0^2 / (16 E* sqrt(R)))^(2/5),    1/E* = 2 (1 - nu^2) / E

    python bench/impact.py [--quick]
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: see mbsim_ros/__init__.py

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mbsim_ros import Simulator  # noqa: E402

RADIUS, MASS, DROP = 0.05, 1.0, 0.2       # m, kg, m (the steel ball)
YOUNGS, POISSON, GRAVITY = 2.0e11, 0.3, 9.81


def hertz_peak(drop: float = DROP) -> float:
    """Hertz's peak penetration of the ball dropped from `drop` (m)."""
    e_star = YOUNGS / (2.0 * (1.0 - POISSON ** 2))
    v0 = math.sqrt(2.0 * GRAVITY * drop)
    return (15.0 * MASS * v0 ** 2 / (16.0 * e_star * math.sqrt(RADIUS))) ** 0.4


def drop(dt: float, seconds: float | None = None) -> dict:
    """Drop the ball from DROP (its lowest point) and follow it through its first rebound:
    the deepest penetration, the rebound's apex (lowest point above the floor) and the
    median wall-clock time of the steps in contact (us)."""
    ground = {"friction": 0.5, "youngs_modulus": YOUNGS, "poisson_ratio": POISSON}
    scene = {"ground": ground, "gravity": [0.0, 0.0, -GRAVITY],
             "models": [{"sphere": {"radius": RADIUS, "mass": MASS}, "name": "ball",
                         "position": [0.0, 0.0, RADIUS + DROP]}]}
    sim = Simulator.from_scene(scene, dt=dt)
    fall = math.sqrt(2.0 * DROP / GRAVITY)
    steps = int(round((seconds or 2.2 * fall) / dt))
    tau = np.zeros(sim.model.nv)
    deepest, apex, touched, costs = 0.0, 0.0, False, []
    for _ in range(steps):
        start = time.perf_counter()
        sim.step(tau)
        elapsed = time.perf_counter() - start
        height = sim.q[2] - RADIUS
        if height < 0.0:
            touched = True
            costs.append(elapsed)
        deepest = max(deepest, -height)
        if touched and height > 0.0:
            apex = max(apex, height)
    return {"peak": deepest, "rebound": apex,
            "cost_us": float(np.median(costs)) * 1e6 if costs else float("nan")}


def end_depth(reach: float, compliance: float, hertz: float) -> float:
    """The depth d >= 0 at the step's end under the Hertz force at d, backward Euler:
    d + compliance hertz d^(3/2) = reach (compliance = h^2 / m), by Newton (the left side is
    increasing and convex in d: from d = reach the iterates decrease monotonically)."""
    if reach <= 0.0:
        return 0.0
    d = reach
    for _ in range(100):
        step = (d + compliance * hertz * d ** 1.5 - reach) \
            / (1.0 + 1.5 * compliance * hertz * math.sqrt(d))
        d -= step
        if abs(step) <= 1e-14 * reach:
            break
    return d


def one_row(dt: float, law: str, margin: float = 0.01, reference: float = 1e-8) -> dict:
    """The integrator's step for the lone ball (docs/COMPLIANT.md, "The step we implement"):
    v* = v0 - h g, the speculative normal row (rigid closing law before touching), E^-1 =
    1 / (h^2 k), c = v* + phi0 / h, gamma = max(0, -c / (1/m + E^-1)), v1 = v* + gamma / m,
    x1 = x0 + h v1; k = 4/3 E* sqrt(R d) at d = the step-start depth (law "start") or the
    step-end depth (law "end"), d at least the reference depth."""
    e_star = YOUNGS / (2.0 * (1.0 - POISSON ** 2))
    hertz = 4.0 / 3.0 * e_star * math.sqrt(RADIUS)
    x, v, deepest, apex, touched = DROP, 0.0, 0.0, 0.0, False
    for _ in range(int(round(2.2 * math.sqrt(2.0 * DROP / GRAVITY) / dt))):
        free = v - dt * GRAVITY
        depth = -x if law == "start" else end_depth(-x - dt * free, dt * dt / MASS, hertz)
        k = hertz * math.sqrt(max(depth, reference))
        gamma = 0.0
        if x < margin + dt * abs(v):
            gamma = max(0.0, -(free + x / dt) / (1.0 / MASS + 1.0 / (dt * dt * k)))
        v = free + gamma / MASS
        x += dt * v
        touched = touched or x < 0.0
        deepest = max(deepest, -x)
        if touched and x > 0.0:
            apex = max(apex, x)
    return {"peak": deepest, "rebound": apex}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="dt = 1 ms only")
    args = parser.parse_args()
    peak = hertz_peak()
    print(f"Hertz peak penetration {peak * 1e6:.1f} um (drop {DROP} m, v0 "
          f"{math.sqrt(2 * GRAVITY * DROP):.3f} m/s)")
    print("| dt | simulator: peak um (vs Hertz), rebound mm | one row, stiffness at the start "
          "depth | one row, at the end depth | per step in contact us |")
    print("|---|---|---|---|---|")
    for dt in (1e-3,) if args.quick else (1e-3, 1e-4, 1e-5):
        out = drop(dt)
        cells = [f"{r['peak'] * 1e6:.1f} ({r['peak'] / peak - 1:+.0%}), "
                 f"{r['rebound'] * 1e3:.2f}"
                 for r in (out, one_row(dt, "start"), one_row(dt, "end"))]
        print(f"| {dt * 1e3:g} ms | {' | '.join(cells)} | {out['cost_us']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
