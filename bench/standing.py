"""Every legged robot of example-robot-data standing on a steel floor
(docs/COMPLIANT.md#standing): neutral posture clamped into the joint limits, the lowest collision
point on the ground (contact.standing.standing_scene: the URDF's own collision geometry), held
by scenarios.StandingController: the feet's contact forces of least norm that balance gravity
on the floating base inside the friction pyramid (a QP, osqp) give a feed-forward
tau = g(q0) - J^T f, and a joint PD through the integrators' implicit servo holds q0 with gains
scaled to the inertia each joint carries (w = 30 rad/s, z = 0.7); 3 s at 1 ms in the compliant
and the rigid (PGS) integrators. ``--controller pd``: the earlier inertia-scaled PD
(kp_j = M_jj w^2, M at the current q every step; ``--explicit``: as tau from the step start),
under which the robots fall.

Per robot and integrator: finished or the failure message, the base's largest height change
over the run (% of its start height), the feet's (the links with collision points within
1 mm of the ground at the start) deepest contact (mm, negative: into the floor), the highest
any foot's lowest support point rose (lift, mm), the largest horizontal travel of a support
point (slide, mm), the lowest contact of any link (mm), the slowest step after the first 10
(ms; the first ones load the compiled kernels), the median time per step (us), the steps whose
solver fell back (compliant: to clarabel), the most energy gained over the start (J), the
fastest joint (rad/s), the base height at the start and the end.

    python bench/standing.py [--seconds 3] [--controller standing|pd] [--explicit]
                             [--robots g1 go2 ...] [--velocity-terms explicit|implicit]
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

from mbsim_ros.contact.standing import standing_scene  # noqa: E402
from mbsim_ros.model import example_robot_urdf  # noqa: E402
from mbsim_ros.scenarios import CANNOT_STAND, CONTROLLERS, LEGGED, OMEGA, ZETA  # noqa: E402
from mbsim_ros.scenarios import stand  # noqa: E402
from mbsim_ros.scenarios import STANDING_INTEGRATORS as INTEGRATORS  # noqa: E402

WARM_UP = 10  # steps left out of the slowest-step figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--controller", choices=list(CONTROLLERS), default="standing")
    parser.add_argument("--explicit", action="store_true", help="the pd controller as tau")
    parser.add_argument("--robots", nargs="*", default=list(LEGGED))
    parser.add_argument("--integrators", nargs="*", default=list(INTEGRATORS))
    parser.add_argument("--velocity-terms", default="implicit",
                        help="the integrators' velocity_terms option")
    args = parser.parse_args()
    mode = " as explicit tau" if args.explicit else ""
    print(f"standing {args.seconds:g} s at 1 ms, controller {args.controller}{mode}, "
          f"w {OMEGA:g} rad/s z {ZETA:g}, velocity_terms {args.velocity_terms}")
    print(f"{'robot':16s} {'integrator':10s} {'nv':>3s} {'finished':8s} {'drift %':>7s} "
          f"{'feet mm':>8s} {'lift mm':>7s} {'slide mm':>8s} {'any mm':>7s} "
          f"{'max ms':>7s} {'med us':>7s} {'fallbacks':>9s} {'gained J':>8s} {'rad/s':>6s} "
          f"{'base m':>13s}  message")
    for label in args.robots:
        scene = standing_scene(example_robot_urdf(LEGGED[label]))
        if args.controller == "standing" and label in CANNOT_STAND:
            print(f"{label:16s} left out: {CANNOT_STAND[label]}")
            continue
        for integrator in args.integrators:
            r = stand(label, integrator, args.seconds, args.controller, scene,
                      args.velocity_terms, args.explicit)
            later = r["times"][WARM_UP:] if r["times"].size > WARM_UP else r["times"]
            print(f"{label:16s} {integrator:10s} {scene.model.nv:3d} "
                  f"{'yes' if r['finished'] else 'NO':8s} {100 * r['drift']:7.2f} "
                  f"{1e3 * r['feet']:8.3f} {1e3 * r['lift']:7.3f} {1e3 * r['slide']:8.3f} "
                  f"{1e3 * r['lowest']:7.2f} "
                  f"{1e3 * later.max():7.1f} {1e6 * np.median(r['times']):7.0f} "
                  f"{r['fallbacks']:9d} {r['gained']:8.2f} {r['speed']:6.2f} "
                  f"{r['start']:.3f}->{r['base']:.3f}  {r['message']}", flush=True)


if __name__ == "__main__":
    main()
