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
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mbsim_ros import Simulator  # noqa: E402
from mbsim_ros.contact.standing import standing_scene  # noqa: E402
from mbsim_ros.dynamics import crba  # noqa: E402
from mbsim_ros.model import example_robot_urdf  # noqa: E402

# label -> example-robot-data path: every legged robot that loads (romeo: a singular M without
# armature; romeo_laas_small: an invalid inertia; icub x2: a point-mass inertia; human and
# simple_humanoid_classical: no collision geometry to stand on)
LEGGED = {
    "solo": "solo_description/robots/solo.urdf",
    "solo12": "solo_description/robots/solo12.urdf",
    "go1": "go1_description/urdf/go1.urdf",
    "go2": "go2_description/urdf/go2.urdf",
    "a1": "a1_description/urdf/a1.urdf",
    "b1": "b1_description/urdf/b1.urdf",
    "b1-z1": "b1_description/urdf/b1-z1.urdf",
    "anymal_b": "anymal_b_simple_description/robots/anymal.urdf",
    "anymal_b-kinova": "anymal_b_simple_description/robots/anymal-kinova.urdf",
    "anymal_c": "anymal_c_simple_description/urdf/anymal.urdf",
    "laikago": "laikago_description/urdf/laikago.urdf",
    "hyq": "hyq_description/robots/hyq_no_sensors.urdf",
    "quadruped": "quadruped_description/urdf/quadruped.urdf",
    "bolt": "bolt_description/robots/bolt.urdf",
    "g1": "g1_description/urdf/g1_29dof_rev_1_0.urdf",
    "g1_hands": "g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf",
    "talos": "talos_data/robots/talos_reduced.urdf",
    "talos_full": "talos_data/robots/talos_full_v2.urdf",
    "romeo_small": "romeo_description/urdf/romeo_small.urdf",
    "simple_humanoid": "simple_humanoid_description/urdf/simple_humanoid.urdf",
    "centauro": "centauro_description/urdf/centauro.urdf",
}
OMEGA, ZETA = 30.0, 0.7
INTEGRATORS = {"compliant": {}, "rigid": {"solver": "pgs"}}
WARM_UP = 10  # steps left out of the slowest-step figure


class InertiaScaledPD:
    """Joint PD on the one-DOF joints toward q_target with kp_j = M_jj w^2, kd_j = 2 z w M_jj
    (M at the current q): through the integrator's implicit servo, or as tau (explicit)."""

    def __init__(self, sim: Simulator, q_target: np.ndarray, explicit: bool = False) -> None:
        m = sim.model
        self.sim, self.q_target, self.explicit = sim, q_target.copy(), explicit
        self.iv = np.array([m.idx_v[i] for i in range(m.njoints)
                            if m.joint_kinds[i] != "free_flyer"], dtype=int)
        self.iq = np.array([m.idx_q[i] for i in range(m.njoints)
                            if m.joint_kinds[i] != "free_flyer"], dtype=int)
        self.kp, self.kd, self.tau = np.zeros(m.nv), np.zeros(m.nv), np.zeros(m.nv)

    def step(self):
        sim = self.sim
        diagonal = np.diag(crba(sim.model, sim.q))[self.iv]
        self.kp[self.iv] = diagonal * OMEGA ** 2
        self.kd[self.iv] = 2.0 * ZETA * OMEGA * diagonal
        if self.explicit:
            self.tau[self.iv] = self.kp[self.iv] * (self.q_target[self.iq] - sim.q[self.iq]) \
                - self.kd[self.iv] * sim.v[self.iv]
            return sim.step(self.tau)
        sim.servos.set_gains(p=self.kp, d=self.kd)
        if not sim.servos.active:
            sim.servos.command(position=self.q_target)
        return sim.step()


def stand(label: str, integrator: str, seconds: float, explicit: bool = False,
          scene=None, velocity_terms: str = "implicit") -> dict:
    """One robot standing: finished, message, the lowest contact of any link and of the feet
    (the links touching the ground at the start) (m), step times (s), the most energy gained
    over the start (J) and the fastest one-DOF joint (rad/s)."""
    scene = scene if scene is not None else standing_scene(example_robot_urdf(LEGGED[label]))
    sim = Simulator.from_scene(scene, dt=1e-3, integrator=integrator,
                               velocity_terms=velocity_terms, **INTEGRATORS[integrator])
    pd = InertiaScaledPD(sim, scene.q0, explicit)
    steps = int(round(seconds / sim.dt))
    times = np.zeros(steps)
    lowest, feet_lowest, message, done, fallbacks = np.inf, np.inf, "", 0, 0
    feet = None  # the links touching the ground in the start posture
    start_energy, gained, speed = sim.energy(), 0.0, 0.0
    for k in range(steps):
        start = time.perf_counter()
        info = pd.step()
        times[k] = time.perf_counter() - start
        if not info.converged:
            message = f"t = {sim.t:.3f} s: {info.message}"
            break
        done += 1
        fallbacks += info.fallback
        gained = max(gained, sim.energy() - start_energy)
        speed = max(speed, float(np.abs(sim.v[pd.iv]).max()))
        contacts = sim.contacts()
        if feet is None:
            feet = {c.link for c in contacts if c.depth > -1e-3}
        for contact in contacts:
            lowest = min(lowest, -contact.depth)
            if contact.link in feet:
                feet_lowest = min(feet_lowest, -contact.depth)
    return {"finished": done == steps, "message": message, "lowest": lowest,
            "feet": feet_lowest,
            "fallbacks": fallbacks, "gained": gained, "speed": speed,
            "times": times[:done + 1], "base": float(sim.q[2]), "start": float(scene.q0[2])}


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
