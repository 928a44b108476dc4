"""Where a call's time goes (docs/SPEED.md): the articulated-body kernel in a compiled loop
against pinocchio.aba from Python, the pieces of our aba() from Python, a fused step called
through numba's dispatcher and through its compiled entry point, and the pieces of a compliant
contact step (the whole compiled step, the cone solve, the velocity terms). Each figure is the
best of 7 blocks of calls, in us.

Run: `.venv/bin/python bench/profile_step.py` (bench extras installed: `make bench`).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mbsim_ros import Simulator  # noqa: E402
from mbsim_ros.dynamics.aba import aba, aba_kernel  # noqa: E402
from mbsim_ros.dynamics.checks import as_vector  # noqa: E402
from mbsim_ros.dynamics.rnea_derivative import velocity_terms  # noqa: E402
from mbsim_ros.dynamics.workspace import workspace  # noqa: E402
from mbsim_ros.solvers.cone_solver import solve_rows  # noqa: E402
from mbsim_ros.integrators.row_solvers import RIGID_COMPLIANCE  # noqa: E402
from mbsim_ros.model import chain_urdf, shipped_urdf  # noqa: E402

from peers.contact import OursScene, box_scene  # noqa: E402
from peers.dispatch import aba_problem  # noqa: E402
from peers.models import describe  # noqa: E402
from peers.quadruped import OursStanding, solo12, standing  # noqa: E402
from peers.timing import best_block_us  # noqa: E402


@njit
def aba_loop(n, joint_int, joint_real, gravity, armature, q, v, tau, ws, a):
    for _ in range(n):
        aba_kernel(joint_int, joint_real, gravity, armature, q, v, tau, ws, a)


def aba_rows() -> None:
    import pinocchio as pin

    for name, source in (("arm7", shipped_urdf("arm7")), ("chain100", chain_urdf(100))):
        model, (q, v, tau), pm, pd = aba_problem(describe(source, name))
        ws, a = workspace(model), np.empty(model.nv)
        arrays = (model.joint_int, model.joint_real, model.gravity, model.armature, q, v, tau,
                  ws, a)
        loops = 1000 if name == "arm7" else 100
        compiled = best_block_us(lambda: aba_loop(loops, *arrays), 10) / loops
        row = {"kernel, compiled loop": compiled,
               "aba_kernel from Python": best_block_us(lambda: aba_kernel(*arrays)),
               "aba() from Python": best_block_us(lambda: aba(model, q, v, tau)),
               "pinocchio.aba from Python": best_block_us(lambda: pin.aba(pm, pd, q, v, tau)),
               "as_vector": best_block_us(lambda: as_vector(q, model.nq, "q")),
               "workspace(model)": best_block_us(lambda: workspace(model)),
               "np.empty(nv)": best_block_us(lambda: np.empty(model.nv)),
               "an empty lambda": best_block_us(lambda: None)}
        print(f"aba {name} [us]: " + " | ".join(f"{k} {x:.2f}" for k, x in row.items()))


def entry_rows() -> None:
    desc = describe(shipped_urdf("arm7"), "arm7")
    for integrator, options in (("euler", {"velocity_terms": "explicit"}), ("variational", {})):
        sim = Simulator(desc.model(), 1e-3, integrator, **options)
        tau = np.zeros(sim.model.nv)
        advance, _, arguments = sim.integrator.fused(sim.state, sim.data)
        entry = sim.data.fused(sim.state)[0]

        def through(call):
            def run():
                sim.reset()
                for _ in range(100):
                    call(tau, *arguments)
            return run

        row = {"dispatcher": best_block_us(through(advance), 10) / 100,
               "compiled entry": best_block_us(through(entry), 10) / 100}
        print(f"fused step arm7 {integrator}, {len(arguments) + 1} arguments [us]: "
              + " | ".join(f"{k} {x:.2f}" for k, x in row.items()))


def contact_row(label: str, sim: Simulator, tau: np.ndarray) -> None:
    for _ in range(200):
        sim.step(tau)
    integrator, m = sim.integrator, sim.model
    q0, v0 = sim.state.q.copy(), sim.state.v.copy()

    def restore():
        sim.state.q[:], sim.state.v[:] = q0, v0

    fused = sim.data.fused(sim.state)
    buf, rows = integrator._buffers, integrator._row_count
    memory = buf.memory.copy()
    cone = integrator.rows
    problem = (buf.W, buf.u, buf.phi, buf.kind, buf.k, buf.b, buf.mu, rows, integrator.dt,
               cone.regularization, RIGID_COMPLIANCE, cone.normal_weight,
               integrator.cone == "pyramid", cone.limits, buf.memory, buf.gamma, *buf.solver)

    def solve():
        buf.memory[:] = memory
        return solve_rows(*problem)

    implicit = integrator._implicit

    def terms():
        integrator._M.fill(0.0)
        velocity_terms(m.joint_int, m.joint_real, m.gravity, m.armature, q0, v0,
                       integrator._ws, integrator._zero, implicit.crossed, integrator._bias,
                       integrator._M, implicit.dB)

    row = {"Simulator.step": best_block_us(lambda: (restore(), sim.step(tau)), 300),
           "compiled step": best_block_us(lambda: (restore(), fused[0](tau, *fused[2])), 300),
           "cone solve (solve_rows)": best_block_us(solve, 300),
           "velocity terms": best_block_us(terms, 300)}
    print(f"contact {label}, {rows} rows, {solve()[1]} Newton steps [us]: "
          + " | ".join(f"{k} {x:.1f}" for k, x in row.items()))


def main() -> int:
    aba_rows()
    entry_rows()
    box = OursScene(box_scene(0.3), 1e-3)
    contact_row("inclined box", box.sim, np.zeros(box.sim.model.nv))
    desc = solo12()
    quadruped = OursStanding(desc, "compliant")
    quadruped.reset(standing(desc), np.zeros(desc.nv))
    quadruped.place_root((0.0, 0.0, 0.235))
    contact_row("solo12 standing", quadruped.sim, quadruped.tau)
    return 0


if __name__ == "__main__":
    sys.exit(main())
