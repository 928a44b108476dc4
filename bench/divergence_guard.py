"""What the divergence guard costs a step (mbsim_ros/integrators/bounds.py, docs/SPEED.md):
the bounds check (integrators.fused.within_bounds, inside each compiled step before the
state's update) in a compiled loop, the unboxing of the one array argument it adds to a
fused step's entry point (a kernel of 24 array arguments against one of 25, through their
compiled entry points), and ``Simulator.step`` per step for context, with the guard on and
with its bounds at infinity (the same work: the guard has no off switch, only wide bounds).
Each figure is the best of 7 blocks of calls, in us.

Run: `.venv/bin/python bench/divergence_guard.py`.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mbsim_ros import Simulator, load_urdf  # noqa: E402
from mbsim_ros.integrators.fused import bound_entry, within_bounds  # noqa: E402
from mbsim_ros.model import chain_urdf, shipped_urdf  # noqa: E402

from peers.timing import best_block_us  # noqa: E402

SCENE = Path(__file__).resolve().parents[1] / "config" / "scenes" / "solo12_standing.yaml"


@njit
def check_loop(n, q, v, bounds):
    inside = 0
    for _ in range(n):
        inside += within_bounds(q, v, bounds)
    return inside


@njit
def takes_24(tau, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17,
             a18, a19, a20, a21, a22, a23):
    return tau[0]


@njit
def takes_25(tau, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17,
             a18, a19, a20, a21, a22, a23, a24):
    return tau[0]


def check_rows() -> None:
    for name, sim in (("arm7", Simulator(load_urdf(shipped_urdf("arm7")), 1e-3, "euler")),
                      ("solo12 scene", Simulator.from_scene(SCENE)),
                      ("chain100", Simulator(load_urdf(chain_urdf(100)), 1e-3, "euler"))):
        q, v, packed = sim.state.q, sim.state.v, sim.bounds.packed
        loops = 10000
        cost = best_block_us(lambda: check_loop(loops, q, v, packed), 10) / loops
        print(f"within_bounds, {name} (nq {q.shape[0]}, nv {v.shape[0]}): {cost * 1e3:.1f} ns")


def argument_row() -> None:
    tau = np.zeros(7)
    arrays = tuple(np.zeros(7) for _ in range(24))
    entries = [bound_entry(kernel, arrays[:count], 7)
               for kernel, count in ((takes_24, 23), (takes_25, 24))]
    few = best_block_us(lambda: entries[0](tau, *arrays[:23]))
    more = best_block_us(lambda: entries[1](tau, *arrays[:24]))
    print(f"a compiled entry point with 24 array arguments: {few:.3f} us, with 25: {more:.3f} "
          f"us (one more array: {(more - few) * 1e3:.0f} ns)")


def step_rows() -> None:
    cases = (("arm7 euler", lambda: Simulator(load_urdf(shipped_urdf("arm7")), 1e-3, "euler")),
             ("arm7 variational",
              lambda: Simulator(load_urdf(shipped_urdf("arm7")), 1e-3, "variational")),
             ("solo12 standing, compliant", lambda: Simulator.from_scene(SCENE)))
    for name, make in cases:
        figures = []
        for wide in (False, True):
            sim = make()
            if wide:
                sim.bounds.speed[:] = np.inf
                sim.bounds.lower[:] = -np.inf
                sim.bounds.upper[:] = np.inf
            tau = np.zeros(sim.model.nv)

            def step(sim=sim, tau=tau):
                sim.step(tau)
                if sim.steps >= 400:  # stay near the start (Solo12 folds slowly unpowered)
                    sim.reset()

            figures.append(best_block_us(step, 200))
        print(f"Simulator.step, {name}: {figures[0]:.2f} us (bounds at infinity: "
              f"{figures[1]:.2f} us)")


if __name__ == "__main__":
    check_rows()
    argument_row()
    step_rows()
