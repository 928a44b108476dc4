"""Every legged robot of example-robot-data standing on a steel floor
(docs/COMPLIANT.md#standing): neutral posture clamped into the joint limits, the lowest collision
point on the ground (contact.standing.standing_scene: the URDF's own collision geometry), held
by joint PD with gains scaled by the joint-space inertia, kp_j = M_jj w^2, kd_j = 2 z w M_jj
(w = 30 rad/s, z = 0.7, M from the current q every step, the start posture as target), 3 s at
1 ms in the compliant and the rigid (PGS) integrators. The PD is applied as the integrators'
implicit joint servo (``servo()``; ``--explicit``: as tau from the step start, which diverges
on G1 and Centauro; docs/COMPLIANT.md, "Joint limits, joint friction and joint servos").

Per robot and integrator: finished or the failure message, the lowest contact over the run of
the feet (the links touching the ground at the start) and of any link (mm, negative: into the
floor; a robot that falls hits the floor with other links), the slowest step after the first
10 (ms; the first ones load the compiled kernels), the median time per step (us), the steps
whose solver fell back (compliant: to clarabel), the most energy gained over the start (J: the
servo does work, so a little is expected; a blow-up shows here first), the fastest joint
(rad/s), the base height at the start and the end.

    python bench/standing.py [--seconds 3] [--explicit] [--robots g1 go2 ...]
                             [--velocity-terms explicit|implicit]
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
from mbsim_ros.scenarios import LEGGED, OMEGA, ZETA, stand  # noqa: E402
from mbsim_ros.scenarios import STANDING_INTEGRATORS as INTEGRATORS  # noqa: E402

WARM_UP = 10  # steps left out of the slowest-step figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--explicit", action="store_true", help="PD as tau (explicit)")
    parser.add_argument("--robots", nargs="*", default=list(LEGGED))
    parser.add_argument("--integrators", nargs="*", default=list(INTEGRATORS))
    parser.add_argument("--velocity-terms", default="implicit",
                        help="the integrators' velocity_terms option")
    args = parser.parse_args()
    mode = "explicit tau" if args.explicit else "implicit servo"
    print(f"standing {args.seconds:g} s at 1 ms, PD w {OMEGA:g} rad/s z {ZETA:g} ({mode}), "
          f"velocity_terms {args.velocity_terms}")
    print(f"{'robot':16s} {'integrator':10s} {'nv':>3s} {'finished':8s} {'feet mm':>8s} "
          f"{'any mm':>7s} "
          f"{'max ms':>7s} {'med us':>7s} {'fallbacks':>9s} {'gained J':>8s} {'rad/s':>6s} "
          f"{'base m':>13s}  message")
    for label in args.robots:
        scene = standing_scene(example_robot_urdf(LEGGED[label]))
        for integrator in args.integrators:
            r = stand(label, integrator, args.seconds, args.explicit, scene,
                      args.velocity_terms)
            later = r["times"][WARM_UP:] if r["times"].size > WARM_UP else r["times"]
            print(f"{label:16s} {integrator:10s} {scene.model.nv:3d} "
                  f"{'yes' if r['finished'] else 'NO':8s} {1e3 * r['feet']:8.2f} "
                  f"{1e3 * r['lowest']:7.2f} "
                  f"{1e3 * later.max():7.1f} {1e6 * np.median(r['times']):7.0f} "
                  f"{r['fallbacks']:9d} {r['gained']:8.2f} {r['speed']:6.0f} "
                  f"{r['start']:.3f}->{r['base']:.3f}  {r['message']}", flush=True)


if __name__ == "__main__":
    main()
