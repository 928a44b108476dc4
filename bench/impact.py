"""A steel ball dropped on the steel floor (docs/COMPLIANT.md, "Impacts"): peak penetration
against Hertz's impact theory and rebound height against e^2 h0, at dt = 1 ms, 0.1 ms and
10 us, for restitutions 0.9, 0.5 and 0; the median cost of a step in contact. Beside it, the
two force laws that cannot show an impact shorter than the step: the simulator with
``impacts="spring"`` (the row's Hertz stiffness at the step-start depth, what the integrator
did before impacts were set on energy) and `one_row` with the stiffness at the step-end depth
(backward Euler on the Hertz force, Newton on the depth).

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

RESTITUTIONS = (0.9, 0.5, 0.0)


def cell(out: dict, peak: float, restitution: float | None) -> str:
    """'peak um (vs Hertz), rebound mm (vs e^2 h0)'."""
    text = f"{out['peak'] * 1e6:.1f} ({out['peak'] / peak - 1:+.1%}), {out['rebound'] * 1e3:.2f}"
    if restitution:
        text += f" ({out['rebound'] / (restitution ** 2 * DROP) - 1:+.1%})"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="dt = 1 ms only")
    args = parser.parse_args()
    peak = hertz_peak()
    print(f"Hertz peak penetration {peak * 1e6:.1f} um (drop {DROP} m, v0 "
          f"{math.sqrt(2 * GRAVITY * DROP):.3f} m/s); rebound targets e^2 h0: "
          + ", ".join(f"e {e}: {e * e * DROP * 1e3:.1f} mm" for e in RESTITUTIONS))
    steps = (1e-3,) if args.quick else (1e-3, 1e-4, 1e-5)
    print("\nThe simulator: peak um (vs Hertz), rebound mm (vs e^2 h0); median us per step "
          "in contact")
    print("| dt | " + " | ".join(f"e = {e}" for e in RESTITUTIONS) + " | us per step |")
    print("|---|" + "---|" * (len(RESTITUTIONS) + 1))
    for dt in steps:
        outs = [drop(dt, restitution=e) for e in RESTITUTIONS]
        cells = [cell(o, peak, e) for o, e in zip(outs, RESTITUTIONS)]
        print(f"| {dt * 1e3:g} ms | {' | '.join(cells)} | {outs[0]['cost_us']:.0f} |",
              flush=True)
    print("\nForce laws: peak um (vs Hertz), rebound mm")
    print("| dt | stiffness at the step-start depth (the simulator, impacts=\"spring\") | "
          "at the step-end depth (one-row model) |")
    print("|---|---|---|")
    for dt in steps:
        cells = [cell(drop(dt, impacts="spring"), peak, None),
                 cell(one_row(dt, "end"), peak, None)]
        print(f"| {dt * 1e3:g} ms | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
