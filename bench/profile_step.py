"""Where a call's time goes (docs/SPEED.md): the articulated-body kernel in a compiled loop
against pinocchio.aba from Python, the pieces of our aba() from Python, a fused step called
through numba's dispatcher and through its compiled entry point, the pieces of a compliant
contact step (Simulator.step, the compiled step from Python and in a compiled loop, without
detection, and its pieces in compiled loops: the velocity terms, the step matrix and its
factors, detection, rows, Delassus matrix, cone solve; the inclined box, Solo12 at zero efforts
and Solo12 held standing by the quadruped bench's PD loop) and Solo12's velocity terms beside
pinocchio's calls for the same quantities. Each figure is the best of 7 blocks of calls, in us.

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
from mbsim_ros.solvers.cone_solver import solve_rows_kernel  # noqa: E402
from mbsim_ros.integrators.compliant_kernels import (damped_system, delassus,  # noqa: E402
                                                     implicit_system, ltl_factor)
from mbsim_ros.integrators.compliant_step import (F_DETECTION, F_PYRAMID, L_H,  # noqa: E402
                                                  L_NORMAL_WEIGHT, L_REGULARIZATION,
                                                  L_RIGID_COMPLIANCE, compliant_advance, detect,
                                                  fill_rows, unpack_compliant)
from mbsim_ros.model import chain_urdf, shipped_urdf  # noqa: E402

from peers.contact import OursScene, box_scene  # noqa: E402
from peers.dispatch import aba_problem  # noqa: E402
from peers.models import describe, urdf  # noqa: E402
from peers.quadruped import (DT, KD, KP, OursStanding, solo12, standing,  # noqa: E402
                             start_position)
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


@njit
def step_loop(n, tau, table, q0, v0, memory0, step):
    """n compiled steps (``step``; else the restores alone), each from (q0, v0) and the
    solve's memory0."""
    a = unpack_compliant(table)
    for _ in range(n):
        a.q[:], a.v[:], a.memory[:, :] = q0, v0, memory0
        if step:
            compliant_advance(tau, table)


PIECES = ("velocity terms", "step matrix factors", "detection", "rows", "Delassus",
          "cone solve")


@njit
def piece_loop(piece, n, tau, table, memory0):
    """n calls of one piece (PIECES) of the compliant step (compliant_step.compliant_advance)
    on its arrays, at the state the last step started from: the velocity terms (b, M, dB/dv),
    the step matrix and its factors (implicit_system, M~ restored each time), detection, the
    rows, the Delassus matrix, the cone solve (from memory0)."""
    a = unpack_compliant(table)
    law = a.law
    h = law[L_H]
    shapes = (a.body, a.model, a.shape_kind, a.sR, a.sp, a.size, a.first, a.local, a.bound)
    scratch = (a.wR, a.wp, a.x, a.clip)
    a.L[:, :] = 0.0
    velocity_terms(a.joint_int, a.joint_real, a.gravity, a.armature, a.q, a.v, a.ws, a.zero,
                   a.crossed, a.bias, a.L, a.dB)
    damped_system(a.damping, h, a.v, tau, a.bias, a.L, a.force)
    M = a.L.copy()
    contacts, rows = a.counts[0], a.counts[1]  # (the step's)
    for _ in range(n):
        if piece == 0:
            a.L[:, :] = 0.0
            velocity_terms(a.joint_int, a.joint_real, a.gravity, a.armature, a.q, a.v, a.ws,
                           a.zero, a.crossed, a.bias, a.L, a.dB)
        elif piece == 1:
            a.L[:, :] = M
            implicit_system(a.joint_int, a.parent, h, a.v, a.dB, a.L, a.K, a.pivots, a.force)
        elif piece == 2:
            contacts = detect(a.joint_int, law, a.flags, a.v, a.oR, a.op, a.oS, shapes,
                              scratch, a.contact_int, a.contact_real, a.ahead, a.ground,
                              a.terrain, a.va, a.vb, a.origins, a.counts)
        elif piece == 3:
            rows = fill_rows(a.joint_int, law, a.flags, a.q, a.v, a.oS, contacts,
                             a.contact_int, a.contact_real, a.shape_k, a.shape_b, a.va, a.vb,
                             a.limit_iq, a.limit_iv, a.lower, a.upper, a.recovery,
                             a.friction_iv, a.friction_bound, a.directions, a.G, a.phi,
                             a.kind, a.k, a.b, a.mu)
        elif piece == 4:
            a.L[:, :] = M
            ltl_factor(a.L, a.parent)
            delassus(a.L, a.parent, a.G, rows, a.v_star, a.Z, a.support, a.support_size,
                     a.W, a.u)
        else:
            a.memory[:, :] = memory0
            solve_rows_kernel(a.W, a.u, a.phi, a.kind, a.k, a.b, a.mu, rows, h,
                              law[L_REGULARIZATION], law[L_RIGID_COMPLIANCE],
                              law[L_NORMAL_WEIGHT], a.flags[F_PYRAMID] != 0, a.limits,
                              a.memory, a.gamma, a.mats, a.vecs, a.ints)


def contact_row(label: str, sim: Simulator, tau: np.ndarray) -> None:
    """Where a compliant step's time goes: Simulator.step, the compiled step called from
    Python and from a compiled loop (the crossing: one table and tau), the step without
    detection (no contact), and its pieces in compiled loops (the Delassus piece includes
    the LTL factorisation, 0.1-0.4 us). Best of 7 blocks, us."""
    for _ in range(200):
        sim.step(tau)
    integrator, state = sim.integrator, sim.state
    q0, v0 = state.q.copy(), state.v.copy()
    memory0 = integrator._buffers.memory.copy()

    def restore():
        state.q[:], state.v[:] = q0, v0
        integrator._buffers.memory[:] = memory0

    entry, _, arguments = sim.data.fused(state)
    table = arguments[0]
    calls = 300
    restores = best_block_us(restore, calls)

    def compiled() -> float:
        def loop(step):
            return best_block_us(lambda: step_loop(calls, tau, table, q0, v0, memory0, step), 1)
        return (loop(True) - loop(False)) / calls

    flags = integrator._constants[1]
    whole = compiled()
    flags[F_DETECTION] = 0
    without = compiled()
    flags[F_DETECTION] = 1
    restore()
    entry(tau, table)  # (the pieces' arrays at that step)
    steps = integrator.record.iterations
    restore()
    pieces = {name: best_block_us(lambda: piece_loop(k, calls, tau, table, memory0), 1) / calls
              for k, name in enumerate(PIECES)}
    restore()
    row = {"Simulator.step": best_block_us(lambda: (restore(), sim.step(tau)), calls) - restores,
           "compiled step from Python": best_block_us(lambda: (restore(), entry(tau, table)),
                                                      calls) - restores,
           "compiled step in a compiled loop": whole, "without detection": without, **pieces}
    print(f"contact {label}, {integrator._row_count} rows, {steps} Newton steps [us]: "
          + " | ".join(f"{k} {x:.2f}" for k, x in row.items()))


def velocity_terms_row() -> None:
    """Solo12's velocity terms (bias b, M and dB/dv in one pass: rnea_derivative.velocity_terms)
    in a compiled loop, beside pinocchio's calls for the same quantities from Python."""
    import pinocchio as pin

    desc = solo12()
    sim = Simulator(desc.model(), 1e-3, "compliant")
    m, integrator = sim.model, sim.integrator
    rng = np.random.default_rng(0)
    q, v = m.neutral(), rng.normal(0.0, 0.3, m.nv)
    implicit = integrator._implicit
    M = np.zeros((m.nv, m.nv))
    arrays = (m.joint_int, m.joint_real, m.gravity, m.armature, q, v, integrator._ws,
              integrator._zero, implicit.crossed, integrator._bias, M, implicit.dB)
    ours = best_block_us(lambda: terms_loop(1000, *arrays), 10) / 1000
    pm = pin.buildModelFromXML(urdf(desc), pin.JointModelFreeFlyer())
    pd = pm.createData()
    qp = pin.neutral(pm)
    zero = np.zeros(pm.nv)
    row = {"ours (b, M, dB/dv), compiled loop": ours,
           "pinocchio rnea": best_block_us(lambda: pin.rnea(pm, pd, qp, v, zero)),
           "crba": best_block_us(lambda: pin.crba(pm, pd, qp)),
           "computeCoriolisMatrix": best_block_us(lambda: pin.computeCoriolisMatrix(pm, pd, qp,
                                                                                     v)),
           "computeRNEADerivatives": best_block_us(
               lambda: pin.computeRNEADerivatives(pm, pd, qp, v, zero))}
    print("velocity terms solo12 [us]: " + " | ".join(f"{k} {x:.2f}" for k, x in row.items()))


@njit
def terms_loop(n, joint_int, joint_real, gravity, armature, q, v, ws, zero, crossed, bias, M,
               dB):
    for _ in range(n):
        M[:, :] = 0.0
        velocity_terms(joint_int, joint_real, gravity, armature, q, v, ws, zero, crossed, bias,
                       M, dB)


def held_standing(desc, seconds: float = 0.8) -> OursStanding:
    """Solo12 held in its standing posture by the quadruped bench's PD loop for `seconds`
    (bench/peers/quadruped.py, the figure of record), its last efforts in tau."""
    robot = OursStanding(desc, "compliant")
    q_ref = standing(desc)
    robot.reset(q_ref, np.zeros(desc.nv))
    robot.place_root(start_position())
    for _ in range(int(round(seconds / DT))):
        q, v = robot.state()
        robot.apply(KP * (q_ref - q) - KD * v)
        robot.step()
    return robot


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
    held = held_standing(desc)
    contact_row("solo12 standing under PD", held.sim, held.tau)
    velocity_terms_row()
    return 0


if __name__ == "__main__":
    sys.exit(main())
