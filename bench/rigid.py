"""The rigid-contact baseline (ODE's bounded LCP: PGS, pivoting) against the compliant
integrator on the same scenes, side by side (docs/RIGID.md): cost per step, penetration, drift,
stability at dt = 1 ms and 10 ms.

1. A stack of 10 steel spheres dropped 1 mm onto each other (test_compliant's), 1 s.
2. Solo12 standing under joint PD control (config/scenes/solo12_standing.yaml), 2 s.
3. The PR2 (example-robot-data, free-flyer) resting on its base, contact spheres at its four
   caster corners (its collision shapes are meshes), joints held by PD with gravity
   compensation: 10 s at 1 kHz, the real-time factor.

    python bench/rigid.py [--quick]

BLAS runs on one thread (set before numpy loads): OpenBLAS's threads, on this 2-core VM shared
with other jobs, made a 30-row step of the stack take 16 ms instead of 0.35 ms, whatever the
contact model.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mbsim_ros import Simulator  # noqa: E402
from mbsim_ros.contact.scene import load_scene  # noqa: E402
from mbsim_ros.dynamics import crba, rnea  # noqa: E402

CONTACT_MODELS = {"rigid PGS": {"integrator": "rigid", "solver": "pgs"},
                  "rigid pivoting": {"integrator": "rigid", "solver": "pivoting"},
                  "compliant": {"integrator": "compliant"}}
R = 0.05  # sphere radius of the stack
SOLO_LEGS = np.array([0.0, 0.8, -1.6] * 4)


@dataclass
class Figures:
    cost_us: float = 0.0        # median wall time per step
    p90_us: float = 0.0
    rtf: float = 0.0            # simulated time / wall time (steps only)
    penetration: float = 0.0    # deepest contact over the run (m)
    drift: float = 0.0          # the scene's measure (m), see each scene
    stable: bool = True
    note: str = ""


def run(sim: Simulator, steps: int, control=None) -> tuple[Figures, list]:
    """Step sim, timing each step; control(sim) -> tau or None. Returns the figures and the
    configurations after each step."""
    figures, states, times = Figures(), [], []
    for _ in range(steps):
        tau = control(sim) if control else None
        start = time.perf_counter()
        info = sim.step(tau)
        times.append(time.perf_counter() - start)
        if not info.converged:
            figures.stable, figures.note = False, f"failed at {sim.t:.3f} s: {info.message}"
            break
        depths = [c.depth for c in sim.contacts()]
        figures.penetration = max([figures.penetration, *depths])
        states.append(sim.q.copy())
    times = times[1:] or times  # the first step loads compiled code
    figures.cost_us = float(np.median(times) * 1e6)
    figures.p90_us = float(np.percentile(times, 90) * 1e6)
    figures.rtf = sim.dt / float(np.mean(times))
    return figures, states


def stack(dt: float, seconds: float, options: dict, n: int = 10) -> Figures:
    """Drift: the top sphere's distance from where a standing stack has it (its height with the
    contacts closed, and sideways). Stable: it stands (within 1 mm) and gains no energy."""
    models = [{"sphere": {"radius": R, "mass": 1.0}, "name": f"s{k}",
               "position": [0.0, 0.0, R + k * (2 * R + 1e-3)]} for k in range(n)]
    sim = Simulator.from_scene({"ground": {"friction": 0.5}, "models": models}, dt=dt, **options)
    e0 = sim.energy()
    figures, states = run(sim, int(round(seconds / dt)))
    if states:
        top = states[-1][7 * (n - 1):7 * (n - 1) + 3]
        figures.drift = float(np.linalg.norm(top - [0.0, 0.0, R + (n - 1) * 2 * R]))
        gained = sim.energy() - e0
        figures.stable &= figures.drift < 1e-3 and gained < 1e-6
        figures.note = figures.note or f"energy {gained:+.2e} J"
    return figures


def solo(dt: float, seconds: float, options: dict) -> Figures:
    """After the first 0.2 s: drift, the largest foot slide (m); penetration. Stable: four feet
    down, base height settled (peak to peak below 0.5 mm over the last half)."""
    scene = load_scene(ROOT / "config" / "scenes" / "solo12_standing.yaml")
    q0 = scene.q0.copy()
    q0[7:] = SOLO_LEGS
    sim = Simulator.from_scene(scene, dt=dt, **options)
    sim.reset(q0)
    tau = np.zeros(sim.model.nv)

    def pd(s):
        tau[6:] = 30.0 * (SOLO_LEGS - s.q[7:]) - 0.3 * s.v[6:]
        return tau

    settle = int(round(0.2 / dt))
    figures, _ = run(sim, settle, pd)  # the feet start 3.7 mm deep in the standing posture
    if not figures.stable:
        return figures
    early = feet(sim)
    more, states = run(sim, int(round(seconds / dt)) - settle, pd)
    if not more.stable:
        return more
    late = feet(sim)
    heights = [q[2] for q in states[len(states) // 2:]]
    more.drift = max((np.linalg.norm((late[k] - early[k])[:2]) for k in early if k in late),
                     default=np.inf)
    more.stable &= len(late) == 4 and np.ptp(heights) < 5e-4
    more.note = more.note or f"base {states[-1][2]:.4f} m"
    return more


def feet(sim: Simulator) -> dict:
    return {c.link: c.point.copy() for c in sim.contacts() if c.depth > 0}


def pr2_scene() -> dict:
    corners = [{"link": "base_footprint", "radius": 0.079,
                "position": [sx * 0.2246, sy * 0.2246, 0.079]} for sx in (-1, 1) for sy in (-1, 1)]
    return {"ground": {"friction": 0.8, "youngs_modulus": 2.0e11, "poisson_ratio": 0.3},
            "models": [{"urdf": "pr2", "floating_base": True, "name": "pr2", "meshes": False,
                        "contact_spheres": corners}]}


def pr2(dt: float, seconds: float, options: dict) -> Figures:
    """Joints held at a posture inside their limits by PD (5 Hz, critically damped, scaled by
    the joint-space inertia's diagonal) plus gravity compensation. Drift: the base's sideways
    travel (m). Stable: the base stays level (tilt below 1 mrad)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # two sensor links' inertias, simulated as given
        scene = load_scene(pr2_scene())
    model = scene.model
    posture = scene.q0.copy()
    inside = np.clip(posture[7:], model.lower_position_limit[7:] + 0.1,
                     model.upper_position_limit[7:] - 0.1)
    posture[7:] = inside
    sim = Simulator.from_scene(scene, dt=dt, **options)
    sim.reset(posture)
    inertia = np.diag(crba(model, posture))[6:]
    omega = 2 * np.pi * 5.0
    kp, kd = omega ** 2 * inertia, 2 * omega * inertia
    zero = np.zeros(model.nv)
    tau = np.zeros(model.nv)

    def hold(s):
        tau[6:] = rnea(model, s.q, zero, zero)[6:] + kp * (inside - s.q[7:]) - kd * s.v[6:]
        return tau

    figures, states = run(sim, int(round(seconds / dt)), hold)
    if states:
        figures.drift = float(np.linalg.norm(states[-1][:2] - posture[:2]))
        tilt = 2 * np.linalg.norm(states[-1][3:5])
        figures.stable &= tilt < 1e-3
        figures.note = figures.note or f"tilt {tilt:.1e} rad"
    return figures


def row(scene: str, dt: float, label: str, f: Figures) -> str:
    drift = f"{f.drift * 1e6:.2f}" if f.stable else "-"
    return (f"| {scene} | {dt * 1e3:g} | {label} | {f.cost_us:.0f} ({f.p90_us:.0f}) | {f.rtf:.2f} "
            f"| {f.penetration * 1e6:.2f} | {drift} | "
            f"{'yes' if f.stable else 'NO'} | {f.note} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="shorter runs (PR2 1 s)")
    args = parser.parse_args()
    short = 0.2 if args.quick else 1.0
    print("| scene | dt (ms) | contact model | median us/step (p90) | real-time factor | "
          "deepest (um) | drift (um) | stable | note |")
    print("|---|---|---|---|---|---|---|---|---|")
    scenes = (("10-sphere stack, 1 s", stack, short),
              ("Solo12 standing, 2 s", solo, 2 * short),
              ("PR2 on its base", pr2, 1.0 if args.quick else 10.0))
    for name, scene, seconds in scenes:
        for dt in ((1e-3,) if scene is pr2 else (1e-3, 1e-2)):
            for label, options in CONTACT_MODELS.items():
                print(row(name, dt, label, scene(dt, seconds, options)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
