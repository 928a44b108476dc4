"""Semi-implicit (symplectic) Euler, the baseline that the variational integrator is compared
against (Lee, Liu, Park and Srinivasa 2016, "Linear-time variational integrators in maximal
coordinates", Fig. 2), in two treatments of the velocity-dependent forces (``velocity_terms``):

* ``"explicit"`` (MuJoCo's ``Euler``; the O(n) option): joint damping D implicit, Coriolis and
  centrifugal forces explicit,

      (M + A + h D) (v' - v) = h (tau - D v - b(q, v)),   q' = q (+) h v'

  i.e. (M + A + h D) v' = (M + A) v + h (tau - b): stable for any damping and step (A: armature),
  by one articulated-body pass with A + h D added to the joint inertias (O(n)).
* ``"implicit"`` (MuJoCo's ``implicit``; the default): linearly implicit in every velocity term,

      (M + A + h D + h dB/dv) (v' - v) = h (tau - D v - b(q, v)),   q' = q (+) h v'

  with b = rnea(q, v, 0) and dB/dv its velocity Jacobian (rnea_derivative.velocity_jacobian);
  the matrix is not symmetric: dense LU with partial pivoting (O(n^3), plus O(n depth) for
  dB/dv and CRBA). The explicit treatment of the Coriolis terms gains energy when light
  distal links spin fast (a humanoid's free limbs); the linearised one dissipates it (a
  spinning free body), though neither is energy-stable once h |v| nears a radian
  (docs/EULER.md: the robot zoo).

URDF joint friction f acts as one clamped impulse per joint, lambda_j = clamp(-d_j v'_j,
-h f_j, h f_j) with d_j the step matrix's diagonal entry (M_jj + A_j + h D_j, plus h dB_j/dv_j
when implicit), applied through the same factorisation: it stops a lone joint exactly and never
pushes harder than Coulomb's bound (in a chain the joints' coupling is not iterated, so a stuck
joint may creep at the scale h f / d_j).
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel, routine, step
from ..arena import ArenaPlan
from ..dynamics.aba import aba_kernel
from ..codes import BAD_ARG0, DIVERGED, OK, OUT_OF_BOUNDS, SINGULAR
from ..dynamics.checks import all_finite
from ..dynamics.configuration import integrate_kernel
from ..dynamics.crba import mass_matrix_diagonal
from ..dynamics.minv import minv_apply
from ..dynamics.rnea_derivative import velocity_terms
from ..dynamics.workspace import carve, workspace_size
from ..layout import ArrayTable
from .base import Integrator, StepInfo, StepRecord, register
from .fused import begin_fused, commit_state, store_rollout_row
from ..solvers.lu import lu_factor, lu_solve
from .options import EulerOptions
from .servo import any_servo, clear_saturation, servo_saturation, servo_terms

# rows of the (EULER_ROWS, nv) work array
W_FORCE, W_ACC, W_ADDED, W_DIAG = range(4)
EULER_ROWS = 4


def euler_buffers(model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The step kernel's scratch: work (EULER_ROWS, nv), matrices (2, nv, nv) (the implicit
    step's matrix and dB/dv) and ints (nv: the LU's pivots)."""
    return (np.zeros((EULER_ROWS, model.nv)), np.zeros((2, model.nv, model.nv)),
            np.zeros(model.nv, dtype=np.int64))


@kernel
def euler_step_kernel(joint_int, joint_real, gravity, damping, friction, armature, dt, implicit,
                      explicit, q, v, tau, servo, iq, saturated, ws, work, matrices, ints, q_out,
                      v_out):
    """euler_step, called from Python (the general step)."""
    return euler_step(joint_int, joint_real, gravity, damping, friction, armature, dt, implicit,
                      explicit, q, v, tau, servo, iq, saturated, ws, work, matrices, ints, q_out,
                      v_out)


@routine
def euler_step(joint_int, joint_real, gravity, damping, friction, armature, dt, implicit,
               explicit, q, v, tau, servo, iq, saturated, ws, work, matrices, ints, q_out, v_out):
    """One step (module docstring): velocity terms implicit or explicit, whichever of
    ``implicit``, ``explicit`` is not None (the other one's code is not even compiled: numba
    prunes a branch on an argument that is None; EulerIntegrator.treatment); the joint
    servos (servo.py) implicit, solved again while a joint's effort newly saturates; scratch
    from euler_buffers."""
    nv = v.shape[0]
    servoed = any_servo(iq)
    if servoed:
        clear_saturation(saturated)
    code = OK
    while True:
        if implicit is not None:
            code = implicit_velocity(joint_int, joint_real, gravity, damping, armature, dt, q,
                                     v, tau, servo, iq, saturated, ws, work, matrices, ints,
                                     v_out)
        if explicit is not None:
            code = explicit_velocity(joint_int, joint_real, gravity, damping, armature, dt, q,
                                     v, tau, servo, iq, saturated, ws, work, v_out)
        if code != OK:
            return code
        if not (servoed and servo_saturation(dt, servo, iq, saturated, q, tau, v_out)):
            break
    any_friction = False
    for k in range(nv):
        any_friction = any_friction or friction[k] > 0.0
    if any_friction:
        impulse, dv, diagonal = work[W_FORCE], work[W_ACC], work[W_DIAG]
        if implicit is not None:  # implicit_velocity left K's diagonal and its LU
            clamped_impulses(friction, dt, diagonal, v_out, impulse)
            lu_solve(matrices[0], ints, impulse)
            dv = impulse
        if explicit is not None:
            explicit_impulses(joint_int, friction, dt, work[W_ADDED], ws, v_out, impulse,
                              diagonal, dv)
        for k in range(nv):
            v_out[k] += dv[k]
    integrate_kernel(joint_int, q, v_out, dt, q_out)
    if not (all_finite(q_out) and all_finite(v_out)):
        return DIVERGED
    return OK


# The fused step's arrays (fused.py) as one argument (layout.ArrayTable): from Python it and
# the rollout take (tau, table, dt, implicit, explicit, inv_dt)
EULER_ARRAYS = ArrayTable("EulerArrays", [
    ("joint_int", "int64", 2), ("joint_real", "float64", 2), ("gravity", "float64", 1),
    ("damping", "float64", 1), ("friction", "float64", 1), ("armature", "float64", 1),
    ("q", "float64", 1), ("v", "float64", 1), ("servo", "float64", 2), ("iq", "int64", 1),
    ("saturated", "int64", 1), ("ws", "float64", 1), ("work", "float64", 2),
    ("matrices", "float64", 3), ("ints", "int64", 1), ("q_next", "float64", 1),
    ("v_next", "float64", 1), ("acceleration", "float64", 1), ("effort", "float64", 1),
    ("bounds", "float64", 1)], __name__)
unpack_euler = EULER_ARRAYS.unpack


@kernel
def euler_advance(tau, table, dt, implicit, explicit, inv_dt) -> int:
    """euler_step from (q, v) under tau on the arrays of an EULER_ARRAYS table,
    committed into q, v, acceleration and effort when it succeeds within the bounds
    (fused.py); q and v unchanged when it does not, and BAD_ARG0 (nothing written) for a tau
    that is not finite or not nv long."""
    a = unpack_euler(table)
    if tau.shape[0] != a.v.shape[0] or not begin_fused(tau, a.effort):
        return BAD_ARG0
    code = euler_step(a.joint_int, a.joint_real, a.gravity, a.damping, a.friction, a.armature,
                      dt, implicit, explicit, a.q, a.v, tau, a.servo, a.iq, a.saturated, a.ws,
                      a.work, a.matrices, a.ints, a.q_next, a.v_next)
    if code == OK and not commit_state(a.q, a.v, a.q_next, a.v_next, a.acceleration, inv_dt,
                                       a.bounds):
        return OUT_OF_BOUNDS
    return code


@kernel
def euler_rollout(taus, Q, V, table, dt, implicit, explicit, inv_dt) -> tuple:
    """len(taus) steps of euler_advance, the state after each into rows of Q and V; stops at
    the first that fails: (steps done, its code)."""
    a = unpack_euler(table)
    for s in range(taus.shape[0]):
        code = euler_advance(taus[s], table, dt, implicit, explicit, inv_dt)
        if code != OK:
            return s, code
        store_rollout_row(s, a.q, a.v, Q, V)
    return taus.shape[0], OK


@routine
def explicit_velocity(joint_int, joint_real, gravity, damping, armature, dt, q, v, tau, servo,
                      iq, saturated, ws, work, v_out):
    """v_out = v + h ABA(q, v, tau - D v + servo force) with A + h D + the servos' h kd + h^2
    kp (into work[W_ADDED]) added to the joint inertias."""
    nv = v.shape[0]
    force, a, added = work[W_FORCE], work[W_ACC], work[W_ADDED]
    for k in range(nv):
        force[k] = tau[k] - damping[k] * v[k]
        added[k] = armature[k] + dt * damping[k]
    servo_terms(dt, servo, iq, saturated, q, tau, v, added, force)
    code = aba_kernel(joint_int, joint_real, gravity, added, q, v, force, ws, a)
    if code != OK:
        return code
    for k in range(nv):
        v_out[k] = v[k] + dt * a[k]
    return OK


@routine
def explicit_impulses(joint_int, friction, dt, added, ws, v_out, impulse, diagonal, dv):
    """dv = (M + added)^-1 lambda (clamped_impulses, d = diag(M) + added), from the
    factorisation and kinematics that aba_kernel left in ws."""
    nj, nv = joint_int.shape[0], v_out.shape[0]
    oR, op, oY, ov, oa, of, pA, c, IA, oS, U, Dinv, u, Rq, pq, tmp, small = carve(ws, nj, nv)
    mass_matrix_diagonal(joint_int, added, oS, oY, IA.reshape((nj, 36)), tmp[0], diagonal)
    clamped_impulses(friction, dt, diagonal, v_out, impulse)
    minv_apply(joint_int, oS, U, Dinv, impulse, pA, oa, dv)


@routine
def implicit_velocity(joint_int, joint_real, gravity, damping, armature, dt, q, v, tau, servo,
                      iq, saturated, ws, work, matrices, ints, v_out):
    """v_out = v + K^-1 h (tau - D v - b + servo force), K = M + A + h D + h dB/dv + the
    servos' h kd + h^2 kp, factored in place into matrices[0] (pivots in ints); K's diagonal
    into work[W_DIAG]."""
    nj, nv = joint_int.shape[0], v.shape[0]
    rhs, zero, diagonal = work[W_FORCE], work[W_ACC], work[W_DIAG]
    added, servo_force = work[W_ADDED], work[W_ACC]
    K, dB = matrices[0], matrices[1]
    for k in range(nv):
        zero[k] = 0.0
    for i in range(nv):
        for j in range(nv):
            K[i, j] = 0.0
    U = carve(ws, nj, nv)[10]
    code = velocity_terms(joint_int, joint_real, gravity, armature, q, v, ws, zero, U, rhs, K,
                          dB)  # rhs = b
    if code != OK:
        return code
    for k in range(nv):  # the rnea's zero acceleration is free from here on
        added[k] = 0.0
        servo_force[k] = 0.0
    servo_terms(dt, servo, iq, saturated, q, tau, v, added, servo_force)
    for i in range(nv):
        for j in range(nv):
            K[i, j] += dt * dB[i, j]
        K[i, i] += dt * damping[i] + added[i]
        diagonal[i] = K[i, i]
        rhs[i] = dt * (tau[i] - damping[i] * v[i] - rhs[i] + servo_force[i])
    if not lu_factor(K, ints):
        return SINGULAR
    lu_solve(K, ints, rhs)
    for k in range(nv):
        v_out[k] = v[k] + rhs[k]
    return OK


@step
def clamped_impulses(friction, dt, diagonal, v_out, impulse):
    """lambda_j = clamp(-d_j v_out_j, +-dt f_j): the impulse that would stop joint j alone,
    within Coulomb's bound."""
    for k in range(v_out.shape[0]):
        bound = dt * friction[k]
        impulse[k] = min(bound, max(-bound, -diagonal[k] * v_out[k]))


@register("euler")
class SemiImplicitEuler(Integrator):
    """``velocity_terms``: ``"implicit"`` (default; linearised implicit in damping and Coriolis
    terms: finishes every robot of the zoo) or ``"explicit"`` (damping implicit, Coriolis
    explicit: MuJoCo's Euler, O(n), 1.35-2x cheaper, diverges on flailing light links);
    module docstring."""

    options_schema = EulerOptions
    kernels = (euler_step_kernel, euler_advance, euler_rollout)
    fused_servos = True  # (Integrator.fused_servos)

    def __init__(self, model, dt: float, *, velocity_terms: str = "implicit",
                 plan: ArenaPlan | None = None, **options) -> None:
        super().__init__(model, dt, plan, **options)
        self.velocity_terms = velocity_terms
        self.implicit = velocity_terms == "implicit"
        # the kernels' (implicit, explicit): the treatment not chosen is None, left uncompiled
        self.treatment = (True, None) if self.implicit else (None, True)
        for name, buffer in zip(("euler.work", "euler.matrices", "euler.ints"),
                                euler_buffers(model)):
            self._plan.add_array(name, buffer)
        self._plan.add("euler.ws", (workspace_size(model.njoints, model.nv),))
        arena = self._allocate()
        self._work, self._matrices = arena["euler.work"], arena["euler.matrices"]
        self._ints, self._ws = arena["euler.ints"], arena["euler.ws"]
        self._info = StepInfo()
        self.record = StepRecord()  # what a fused step that succeeds reports

    def step(self, q, v, tau, q_out, v_out) -> StepInfo:
        m = self.model
        servos = self.servos
        code = euler_step_kernel(m.joint_int, m.joint_real, m.gravity, m.damping, m.friction,
                                 m.armature, self.dt, *self.treatment, q, v, tau, servos.table,
                                 servos.iq, servos.saturated, self._ws,
                                 self._work, self._matrices, self._ints, q_out, v_out)
        self._info.converged = code == OK
        self._info.message = "" if code == OK else self.failure_message(code)
        return self._info

    def fused(self, state, data) -> tuple:
        m, servos = self.model, self.servos
        self._bound = EULER_ARRAYS.bind((  # the table's arrays, held while it is used
            m.joint_int, m.joint_real, m.gravity, m.damping, m.friction, m.armature, state.q,
            state.v, servos.table, servos.iq, servos.saturated, self._ws, self._work,
            self._matrices, self._ints, data.q_next, data.v_next, state.acceleration,
            state.effort, data.bounds.packed))
        arguments = (self._bound.table, self.dt, *self.treatment, 1.0 / self.dt)
        return euler_advance, euler_rollout, arguments

    def failure_message(self, code: int) -> str:
        """StepInfo.message for a kernel code of euler_step_kernel."""
        if code == SINGULAR and self.implicit:
            return ("singular step matrix M + A + h D + h dB/dv (the LU met a zero pivot): "
                    "joints that move no inertia need armature")
        return _FAILURES.get(code, f"kernel code {code}")


_FAILURES = {DIVERGED: "diverged: the new state is not finite",
             SINGULAR: "forward dynamics failed: singular joint-space inertia"}
