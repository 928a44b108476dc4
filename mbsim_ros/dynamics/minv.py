"""M(q)^-1 applied in O(n): the articulated-body algorithm at zero velocity and zero gravity
(Featherstone's articulated-body *impulse* algorithm, used by Lee et al. 2016 Alg. 3 l.5),
split into a factorisation that depends on q only and an application per right-hand side."""
from __future__ import annotations

import numpy as np

from .._jit import kernel, routine
from ..model.model import I_IDX_V, I_NV, I_PARENT
from .aba import articulated_inertia_step
from .checks import OK, SINGULAR, as_vector, input_code, raise_for
from .kinematics import inertia_to_matrix, kinematics_step
from .workspace import carve, workspace


@routine
def minv_factor(joint_int, added, oS, oY, IA, U, Dinv, small, tmp) -> bool:
    """Factor M(q) + diag(added) given the world-frame oS and oY of q."""
    nj = joint_int.shape[0]
    for i in range(nj):
        inertia_to_matrix(oY[i], IA[i])
    for i in range(nj - 1, -1, -1):
        if not articulated_inertia_step(i, joint_int, added, oS, IA, U, Dinv, small, tmp):
            return False
    return True


@routine
def minv_apply(joint_int, oS, U, Dinv, tau, pA, oa, out):
    """out = M^-1 tau from a factorisation (pA, oa: (nj, 6) scratch)."""
    nj = joint_int.shape[0]
    for i in range(nj):
        for r in range(6):
            pA[i, r] = 0.0
    for i in range(nj - 1, -1, -1):  # u_i = tau_i - S^T pA_i; pA_parent += pA_i + U D^-1 u_i
        iv = joint_int[i, I_IDX_V]
        n = joint_int[i, I_NV]
        for k in range(n):
            acc = tau[iv + k]
            for r in range(6):
                acc -= oS[iv + k, r] * pA[i, r]
            out[iv + k] = acc  # u, overwritten in the forward pass
        p = joint_int[i, I_PARENT]
        if p >= 0:
            for r in range(6):
                acc = pA[i, r]
                for k in range(n):
                    w = 0.0
                    for m in range(n):
                        w += Dinv[iv + k, m] * out[iv + m]
                    acc += U[iv + k, r] * w
                pA[p, r] += acc
    for i in range(nj):  # a_i = a_p; x_i = D^-1 (u_i - U^T a_i); a_i += S x_i
        p = joint_int[i, I_PARENT]
        iv = joint_int[i, I_IDX_V]
        n = joint_int[i, I_NV]
        for r in range(6):
            oa[i, r] = oa[p, r] if p >= 0 else 0.0
        for m in range(n):
            acc = out[iv + m]
            for r in range(6):
                acc -= U[iv + m, r] * oa[i, r]
            pA[i, m] = acc  # reuse pA row i as the (u - U^T a) scratch: pA[i] is consumed
        for k in range(n):
            acc = 0.0
            for m in range(n):
                acc += Dinv[iv + k, m] * pA[i, m]
            out[iv + k] = acc
        for k in range(n):
            for r in range(6):
                oa[i, r] += oS[iv + k, r] * out[iv + k]


@kernel
def minv_kernel(joint_int, joint_real, armature, q, tau, ws, out):
    code = input_code(joint_int, q, tau, tau)
    if code != OK:
        return code
    nj = joint_int.shape[0]
    oR, op, oY, ov, oa, of, pA, c, IA, oS, U, Dinv, u, Rq, pq, tmp, small = carve(
        ws, nj, out.shape[0])
    for i in range(nj):
        kinematics_step(i, joint_int, joint_real, q, oR, op, oS, oY, Rq, pq)
    if not minv_factor(joint_int, armature, oS, oY, IA, U, Dinv, small, tmp):
        return SINGULAR
    minv_apply(joint_int, oS, U, Dinv, tau, pA, oa, out)
    return OK


def minv(model, q, tau) -> np.ndarray:
    """M(q)^-1 tau in O(n) (no gravity, no velocity terms; M with the armature)."""
    q = as_vector(q, model.nq, "q")
    tau = as_vector(tau, model.nv, "tau")
    out = np.empty(model.nv)
    code = minv_kernel(model.joint_int, model.joint_real, model.armature, q, tau,
                       workspace(model), out)
    if code != OK:
        raise_for(code, ("q", "tau"), model)
    return out
