"""Semi-implicit (symplectic) Euler with implicit joint damping, the baseline that the
variational integrator is compared against (seed 000, Fig. 2):

    (M + A + h D) (v' - v) = h (tau - D v - C(q, v) v - g(q)),   q' = q (+) h v'

i.e. (M + A + h D) v' = (M + A) v + h (tau - b), as MuJoCo's Euler integrates joint damping D:
stable for any damping and step (A: armature). URDF joint friction f then acts as one clamped
impulse per joint, lambda_j = clamp(-d_j v'_j, -h f_j, h f_j) with d_j the joint's locked inertia
M_jj + A_j + h D_j, applied through the same factorisation: it stops a lone joint exactly and
never pushes harder than Coulomb's bound (in a chain the joints' coupling is not iterated, so a
stuck joint may creep at the scale h f / d_j).
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel, routine
from ..dynamics.aba import aba_kernel
from ..dynamics.checks import DIVERGED, OK, SINGULAR, all_finite
from ..dynamics.configuration import integrate_kernel
from ..dynamics.crba import mass_matrix_diagonal
from ..dynamics.minv import minv_apply
from ..dynamics.workspace import carve, workspace
from .base import Integrator, StepInfo, register

# rows of the (EULER_ROWS, nv) work array
W_FORCE, W_ACC, W_ADDED, W_DIAG = range(4)
EULER_ROWS = 4


@kernel
def euler_step_kernel(joint_int, joint_real, gravity, damping, friction, armature, dt, q, v, tau,
                      ws, work, q_out, v_out):
    """One step (module docstring); work: (EULER_ROWS, nv) scratch."""
    nv = v.shape[0]
    force, a, added, diagonal = work[W_FORCE], work[W_ACC], work[W_ADDED], work[W_DIAG]
    any_friction = False
    for k in range(nv):
        force[k] = tau[k] - damping[k] * v[k]
        added[k] = armature[k] + dt * damping[k]
        any_friction = any_friction or friction[k] > 0.0
    code = aba_kernel(joint_int, joint_real, gravity, added, q, v, force, ws, a)
    if code != OK:
        return code
    for k in range(nv):
        v_out[k] = v[k] + dt * a[k]
    if any_friction:
        coulomb_impulses(joint_int, friction, dt, added, ws, v_out, force, diagonal, a)
    integrate_kernel(joint_int, q, v_out, dt, q_out)
    if not (all_finite(q_out) and all_finite(v_out)):
        return DIVERGED
    return OK


@routine
def coulomb_impulses(joint_int, friction, dt, added, ws, v_out, impulse, diagonal, dv):
    """v_out += (M + added)^-1 lambda, lambda_j = clamp(-d_j v_out_j, +-dt f_j), from the
    factorisation and kinematics that aba_kernel left in ws (d = diag(M) + added)."""
    nj, nv = joint_int.shape[0], v_out.shape[0]
    oR, op, oY, ov, oa, of, pA, c, IA, oS, U, Dinv, u, Rq, pq, tmp, small = carve(ws, nj, nv)
    mass_matrix_diagonal(joint_int, added, oS, oY, IA.reshape((nj, 36)), tmp[0], diagonal)
    for k in range(nv):
        bound = dt * friction[k]
        impulse[k] = min(bound, max(-bound, -diagonal[k] * v_out[k]))
    minv_apply(joint_int, oS, U, Dinv, impulse, pA, oa, dv)
    for k in range(nv):
        v_out[k] += dv[k]


@register("euler")
class SemiImplicitEuler(Integrator):
    def __init__(self, model, dt: float, **options) -> None:
        super().__init__(model, dt, **options)
        self._work = np.zeros((EULER_ROWS, model.nv))
        self._ws = workspace(model)
        self._info = StepInfo()

    def step(self, q, v, tau, q_out, v_out) -> StepInfo:
        m = self.model
        code = euler_step_kernel(m.joint_int, m.joint_real, m.gravity, m.damping, m.friction,
                                 m.armature, self.dt, q, v, tau, self._ws, self._work, q_out,
                                 v_out)
        self._info.converged = code == OK
        self._info.message = "" if code == OK else _FAILURES.get(code, f"kernel code {code}")
        return self._info


_FAILURES = {DIVERGED: "diverged: the new state is not finite",
             SINGULAR: "forward dynamics failed: singular joint-space inertia"}
