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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mbsim_ros.scenarios import DROP, GRAVITY, drop, hertz_peak, one_row  # noqa: E402


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
