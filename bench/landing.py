"""Every legged robot of example-robot-data landing on a steel floor (docs/COMPLIANT.md#impacts):
held in its standing posture by scenarios.StandingController, released `--height` above it
(2 cm: 0.63 m/s at touchdown), 1 s at 1 ms in the compliant integrator, for floor
restitutions 0 (the default: plastic) and 0.5. Each foot's touchdown is an impact through the
legs' shared mobility (integrators/impacts.py).

Per robot and restitution: finished or the failure message, the steps whose contacts were set
on energy, the deepest contact (mm), the base's rise above its touchdown height (mm: a bounce),
its height at the end against the standing height (%), the slowest step after the first 10 and
the median (us).

    python bench/landing.py [--height 0.02] [--robots solo12 talos ...]
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: see mbsim_ros/__init__.py

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mbsim_ros.scenarios import CANNOT_STAND, LEGGED, land  # noqa: E402

WARM_UP = 10  # steps: the first ones load the compiled kernels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--height", type=float, default=0.02)
    parser.add_argument("--robots", nargs="*", default=list(LEGGED))
    args = parser.parse_args()
    print(f"landing from {args.height * 100:g} cm, 1 s at 1 ms, compliant")
    print("| robot | e | finished | steps set on energy | deepest mm | rise mm | end vs "
          "standing % | max ms | median us |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label in args.robots:
        if label in CANNOT_STAND:
            print(f"| {label} | - | left out: cannot stand still | | | | | | |")
            continue
        for restitution in (0.0, 0.5):
            r = land(label, restitution, args.height)
            times = r["times"]
            later = times[WARM_UP:] if times.size > WARM_UP else times
            print(f"| {label} | {restitution:g} | {r['message'] or 'yes'} | {r['steps']} | "
                  f"{r['deepest'] * 1e3:.3f} | {r['rise'] * 1e3:.2f} | {100 * r['end']:+.2f} | "
                  f"{later.max() * 1e3:.1f} | {np.median(times) * 1e6:.0f} |", flush=True)


if __name__ == "__main__":
    main()
