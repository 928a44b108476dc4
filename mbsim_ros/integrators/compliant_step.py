"""The compliant step (compliant.py) as one compiled call, for the common case: no joint
servos, actuator models, springs, applied forces, point constraints or closures, and the
compiled interior-point solve. It calls the same kernels in the same order as
``CompliantIntegrator._step`` and commits into the state (fused.py), so a step costs one
dispatch instead of about fifteen and the Python between them (the profile is in
docs/SPEED.md). Bit for bit the general path's result (test/test_compliant_fused.py).

Where the step needs Python it stops before changing anything the general path reads and
returns UNFINISHED: a contact or row buffer is full (the general path grows it), or the
interior-point solve failed (the general path falls back to clarabel; the active set's memory
is written only by a solve that finished). sim.step then runs the general path for that step.

With joint servos loaded (servo.py; a campaign's built-in controllers, campaign/ticks.py) the
step adds their implicit terms as the general path does. When a servo's effort at the step's
end newly saturates, it returns RESOLVE with nothing committed, and its caller (which cleared
``saturated`` before the step) calls it again, with that joint at its bound, until it does
not: the velocity terms, M and the contacts depend on (q, v) only, so the step taken again
gives the general path's second solve bit for bit.
"""
from __future__ import annotations

import math

from .._jit import kernel, step
from ..codes import (BAD_ARG0, DIVERGED, NOT_POSITIVE, OK, OUT_OF_BOUNDS, SINGULAR,
                     UNFINISHED)
from ..contact.detection import detect_contacts
from ..dynamics.checks import all_finite
from ..dynamics.configuration import frame_rate_correction, integrate_world_aligned
from ..dynamics.crba import crba_kernel
from ..dynamics.rnea import rnea_kernel
from ..dynamics.rnea_derivative import velocity_terms
from .compliant_kernels import (apply_impulses, contact_rows, damped_system, delassus,
                                free_velocity, friction_rows, implicit_free_velocity,
                                implicit_impulses, implicit_system, limit_rows, ltl_factor,
                                reachable_contacts, servo_system)
from ..solvers.cone_solver import solve_rows
from .fused import begin_fused, commit_state
from ..layout import ArrayTable
from .impacts import impact_rows, remember_impacts
from .servo import any_servo, servo_saturation

# law: the step's constants, one float vector
(L_H, L_MARGIN, L_CORNER_RADIUS, L_MESH_BAND, L_FRICTION, L_STIFFNESS, L_DAMPING, L_E_STAR,
 L_DISSIPATION, L_REFERENCE_DEPTH, L_LIMIT_STIFFNESS, L_LIMIT_DAMPING, L_LIMIT_RATE,
 L_REGULARIZATION, L_RIGID_COMPLIANCE, L_NORMAL_WEIGHT, L_INV_DT, L_RESTITUTION,
 L_IMPACT_SPEED), N_LAW = range(19), 19
# flags: one int vector
(F_IMPLICIT, F_DETECTION, F_MESHES, F_MESH_KIND, F_LIMITS, F_PYRAMID, F_IMPACTS), N_FLAGS = \
    range(7), 7
# counts (out): contacts, rows, the solve's Newton steps
C_CONTACTS, C_ROWS, C_STEPS = 0, 1, 2


# compliant_advance's answer when a servo's effort newly saturated: nothing committed, the step
# to be taken again (saturated marks the joint)
RESOLVE = -3

# detect's answers when a buffer is short (the general path grows it and detects again)
CONTACTS_FULL, AHEAD_SHORT = -1, -2


@step
def speed_bound(v) -> float:
    """|v| (m/s and rad/s mixed): how far a point within 1 m of an axis can move per second."""
    total = 0.0
    for k in range(v.shape[0]):
        total += v[k] * v[k]
    return math.sqrt(total)


@step
def detect(joint_int, law, flags, v, oR, op, oS, shapes, scratch, contact_int, contact_real,
           ahead, ground, terrain, va, vb, origins, counts) -> int:
    """The contacts within reach of this step into contact_int / contact_real, their count
    into counts and the link frame origins (for the wrenches) into origins; returns the count,
    or CONTACTS_FULL / AHEAD_SHORT when that buffer is too small (nothing counted). Detection
    watches the margin plus dt times a speed bound (|v| mixes m/s and rad/s: exact for points
    within 1 m of a rotation axis); with meshes or fast links each point's own reach is kept
    (reachable_contacts)."""
    body, model, kind, sR, sp, size, first, local, bound = shapes
    wR, wp, x, clip = scratch
    h, watch = law[L_H], law[L_MARGIN]
    margin = watch + h * speed_bound(v)
    n = detect_contacts(oR, op, body, model, kind, sR, sp, size, first, local, bound, ground,
                        terrain, law[L_CORNER_RADIUS], margin, wR, wp, x, clip, contact_int,
                        contact_real)
    if n >= contact_int.shape[0]:
        return CONTACTS_FULL  # some contacts may be missing
    if flags[F_MESHES] or margin > 2.0 * watch:
        if ahead.shape[0] < n:
            return AHEAD_SHORT
        n = reachable_contacts(joint_int, oS, v, h, contact_int, contact_real, n, kind,
                               flags[F_MESH_KIND], law[L_MESH_BAND], watch, va, vb, ahead)
    counts[C_CONTACTS] = n
    for j in range(op.shape[0]):
        for c in range(3):
            origins[j, c] = op[j, c]
    return n


@step
def fill_rows(joint_int, law, flags, q, v, oS, n, contact_int, contact_real, shape_k, shape_b,
              va, vb, limit_iq, limit_iv, lower, upper, recovery, friction_iv, friction_bound,
              directions, G, phi, kind, k, b, mu) -> int:
    """This step's rows from row 0: contacts (n, t1, t2; the material's law or the shape's
    own), the joint limits within reach, joint friction; returns the row count. The point
    constraints and closures follow in Python (CompliantIntegrator._fill_rows)."""
    if n:
        contact_rows(joint_int, oS, v, contact_int, contact_real, n, law[L_FRICTION],
                     law[L_STIFFNESS], law[L_DAMPING], law[L_E_STAR], law[L_DISSIPATION],
                     law[L_REFERENCE_DEPTH], shape_k, shape_b, va, vb, directions, G, phi, kind,
                     k, b, mu)
    rows = 3 * n
    if flags[F_LIMITS] and limit_iv.shape[0]:
        rows = limit_rows(q, v, limit_iq, limit_iv, lower, upper, law[L_MARGIN], law[L_H],
                          law[L_LIMIT_STIFFNESS], law[L_LIMIT_DAMPING], law[L_LIMIT_RATE],
                          recovery, rows, G, phi, kind, k, b, mu)
    if friction_iv.shape[0]:
        rows = friction_rows(friction_iv, friction_bound, rows, G, phi, kind, k, b, mu)
    return rows


@step
def set_on_energy(law, contact_int, contact_real, n, shape_k, shape_e, v, rows, impacts):
    """impact_rows with the step's constants and buffers: the Hertz rows in an impact set
    on energy (impacts.py)."""
    directions, G, phi, kind, k, b, mu, Z, support, support_size, W, u, gamma = rows
    memory_int, memory_real, memory_count, phase, speed = impacts
    impact_rows(law[L_H], law[L_E_STAR], law[L_RESTITUTION], law[L_IMPACT_SPEED],
                law[L_MARGIN], contact_int, contact_real, n, shape_k, shape_e, v, G, W, u, phi,
                k, b,
                memory_int, memory_real, memory_count, phase, speed)


# The fused step's arrays (fused.py) as one argument (layout.ArrayTable): from Python it takes
# (tau, table). shapes: detect_contacts' nine shape arrays (body .. bound); scratch: its four
# (wR .. clip); rows: directions .. gamma; solver: the cone solver's (mats, vecs, ints);
# impacts: the impact phases' memory (memory_int, memory_real, memory_count) and this step's
# phases and impact speeds (impacts.py); servo, iq, saturated: the joint servos (servo.py; iq
# all -1: none), added: scratch (nv); stats, residual_out: the step's record (base.StepRecord)
COMPLIANT_ARRAYS = ArrayTable("CompliantArrays", [
    ("joint_int", "int64", 2), ("joint_real", "float64", 2), ("gravity", "float64", 1),
    ("damping", "float64", 1), ("armature", "float64", 1), ("law", "float64", 1),
    ("flags", "int64", 1), ("q", "float64", 1), ("v", "float64", 1), ("ws", "float64", 1),
    ("oR", "float64", 3), ("op", "float64", 2), ("oS", "float64", 2), ("L", "float64", 2),
    ("parent", "int64", 1), ("bias", "float64", 1), ("force", "float64", 1),
    ("v_star", "float64", 1), ("v_step", "float64", 1), ("zero", "float64", 1),
    ("K", "float64", 2), ("pivots", "int64", 1), ("dB", "float64", 2), ("crossed", "float64", 2),
    ("body", "int64", 1), ("model", "int64", 1), ("shape_kind", "int64", 1),
    ("sR", "float64", 3), ("sp", "float64", 2), ("size", "float64", 2), ("first", "int64", 1),
    ("local", "float64", 2), ("bound", "float64", 1),
    ("wR", "float64", 3), ("wp", "float64", 2), ("x", "float64", 1), ("clip", "float64", 3),
    ("contact_int", "int64", 2), ("contact_real", "float64", 2), ("ahead", "float64", 1),
    ("shape_k", "float64", 1), ("shape_b", "float64", 1), ("shape_e", "float64", 1),
    ("ground", "float64", 1), ("terrain", "float64", 1), ("va", "float64", 1),
    ("vb", "float64", 1), ("limit_iq", "int64", 1), ("limit_iv", "int64", 1),
    ("lower", "float64", 1), ("upper", "float64", 1), ("recovery", "float64", 1),
    ("friction_iv", "int64", 1), ("friction_bound", "float64", 1),
    ("directions", "float64", 2), ("G", "float64", 2), ("phi", "float64", 1),
    ("kind", "int64", 1), ("k", "float64", 1), ("b", "float64", 1), ("mu", "float64", 1),
    ("Z", "float64", 2), ("support", "int64", 2), ("support_size", "int64", 1),
    ("W", "float64", 2), ("u", "float64", 1), ("gamma", "float64", 1),
    ("mats", "float64", 3), ("vecs", "float64", 2), ("ints", "int64", 2),
    ("limits", "float64", 1), ("memory", "int64", 2),
    ("memory_int", "int64", 2), ("memory_real", "float64", 2), ("memory_count", "int64", 1),
    ("phase", "int64", 1), ("speed", "float64", 1),
    ("origins", "float64", 2), ("counts", "int64", 1), ("q_next", "float64", 1),
    ("v_next", "float64", 1), ("acceleration", "float64", 1), ("effort", "float64", 1),
    ("bounds", "float64", 1), ("servo", "float64", 2), ("iq", "int64", 1),
    ("saturated", "int64", 1), ("added", "float64", 1), ("stats", "int64", 1),
    ("residual_out", "float64", 1)], __name__)
unpack_compliant = COMPLIANT_ARRAYS.unpack


@kernel
def compliant_advance(tau, table) -> int:
    """One compliant step from (q, v) under tau on the arrays of a COMPLIANT_ARRAYS table,
    committed into q, v, acceleration and effort when it is within the bounds (module
    docstring; fused.commit_state), and its record into stats (iterations: the solve's Newton
    steps, fallbacks 0, pieces 1) and residual_out (the solve's, 0.0 without rows). The effort
    written is tau (the servoed joints' own is in the servo table). BAD_ARG0 (nothing
    written) for a tau that is not finite or not nv long; RESOLVE, nothing committed: a servo
    newly saturated (module docstring)."""
    (joint_int, joint_real, gravity, damping, armature, law, flags, q, v, ws, oR, op, oS, L,
     parent, bias, force, v_star, v_step, zero, K, pivots, dB, crossed, body, model,
     shape_kind, sR, sp, size, first, local, bound, wR, wp, x, clip, contact_int, contact_real,
     ahead, shape_k, shape_b, shape_e, ground, terrain, va, vb, limit_iq, limit_iv, lower,
     upper, recovery, friction_iv, friction_bound, directions, G, phi, kind, k, b, mu, Z,
     support, support_size, W, u, gamma, mats, vecs, ints, limits, memory, memory_int,
     memory_real, memory_count, phase, speed, origins, counts, q_next, v_next, acceleration,
     effort, bounds, servo, iq, saturated, added, stats, residual_out) = unpack_compliant(table)
    shapes = (body, model, shape_kind, sR, sp, size, first, local, bound)
    scratch = (wR, wp, x, clip)
    rows = (directions, G, phi, kind, k, b, mu, Z, support, support_size, W, u, gamma)
    impacts = (memory_int, memory_real, memory_count, phase, speed)
    if tau.shape[0] != v.shape[0] or not begin_fused(tau, effort):
        return BAD_ARG0
    h = law[L_H]
    implicit = flags[F_IMPLICIT] != 0
    for i in range(L.shape[0]):
        for j in range(L.shape[1]):
            L[i, j] = 0.0
    if implicit:
        velocity_terms(joint_int, joint_real, gravity, armature, q, v, ws, zero, crossed, bias,
                       L, dB)
    else:
        rnea_kernel(joint_int, joint_real, gravity, armature, q, v, zero, ws, bias)
        crba_kernel(joint_int, joint_real, armature, q, ws, L)
    damped_system(damping, h, v, tau, bias, L, force)
    servoed = any_servo(iq)
    if servoed:
        servo_system(h, servo, iq, saturated, q, tau, v, L, force, added)
    if implicit and not implicit_system(joint_int, parent, h, v, dB, L, K, pivots,
                                                   force):
        return SINGULAR
    if not ltl_factor(L, parent):
        return NOT_POSITIVE
    if implicit:
        implicit_free_velocity(K, pivots, parent, v, force, h, v_star)
    else:
        free_velocity(L, parent, v, force, h, v_star)
        frame_rate_correction(joint_int, v, h, v_star)
    n = 0
    if flags[F_DETECTION]:
        n = detect(joint_int, law, flags, v, oR, op, oS, shapes, scratch, contact_int,
                   contact_real, ahead, ground, terrain, va, vb, origins, counts)
        if n < 0:
            return UNFINISHED
    if 3 * n + 2 * limit_iv.shape[0] + friction_iv.shape[0] > G.shape[0]:
        return UNFINISHED
    m = fill_rows(joint_int, law, flags, q, v, oS, n, contact_int, contact_real, shape_k,
                  shape_b, va, vb, limit_iq, limit_iv, lower, upper, recovery, friction_iv,
                  friction_bound, directions, G, phi, kind, k, b, mu)
    counts[C_ROWS] = m
    counts[C_STEPS] = 0
    if m:
        delassus(L, parent, G, m, v_star, Z, support, support_size, W, u)
        if flags[F_IMPACTS]:
            set_on_energy(law, contact_int, contact_real, n, shape_k, shape_e, v, rows,
                          impacts)
        status, steps = solve_rows(W, u, phi, kind, k, b, mu, m, h, law[L_REGULARIZATION],
                                   law[L_RIGID_COMPLIANCE], law[L_NORMAL_WEIGHT],
                                   flags[F_PYRAMID] != 0, limits, memory, gamma, mats, vecs,
                                   ints)
        counts[C_STEPS] = steps
        if status != OK:
            return UNFINISHED
        if implicit:
            implicit_impulses(G, gamma, m, K, pivots, parent, v_star, v_step)
        else:
            apply_impulses(L, parent, Z, support, support_size, gamma, m, v_star, v_step)
    else:
        for i in range(v_step.shape[0]):
            v_step[i] = v_star[i]
    for i in range(v_step.shape[0]):
        v_next[i] = v_step[i]
    integrate_world_aligned(joint_int, q, v_step, h, q_next, v_next)
    if not (all_finite(q_next) and all_finite(v_next)):
        return DIVERGED
    if servoed and servo_saturation(h, servo, iq, saturated, q, tau, v_step):
        return RESOLVE
    if not commit_state(q, v, q_next, v_next, acceleration, law[L_INV_DT], bounds):
        return OUT_OF_BOUNDS
    stats[0], stats[1], stats[2] = counts[C_STEPS], 0, 1
    residual_out[0] = limits[2] if m else 0.0
    if flags[F_IMPACTS]:
        remember_impacts(contact_int, contact_real, n, phase, speed, memory_int, memory_real,
                         memory_count)
    return OK
