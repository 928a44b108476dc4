"""Forward dynamics: the articulated-body algorithm (Featherstone 2008, Table 7.1), in the world
frame (articulated inertias of children add into the parent without frame changes).
a = (M(q) + diag(added))^-1 (tau - C(q, v) v - g(q)), where ``added`` is the armature, or the
armature plus the implicit damping an integrator folds into the same diagonal (h D)."""
from __future__ import annotations

import math

import numpy as np

from .._jit import kernel, step
from ..model.model import I_IDX_V, I_NV, I_PARENT
from ..codes import BAD_ARG0
from .checks import OK, SINGULAR, fits_model, input_code
from .kinematics import (gravity_acceleration, inertia_times_motion, inertia_to_matrix,
                         joint_velocity, kinematics_step, motion_cross_force,
                         motion_cross_motion)
from .workspace import (TABLE, VECTOR, call_checked, carve, closed_on_first_call,
                        unpack_model)


@step
def aba_forward_step1(i, joint_int, oS, v, oY, ov, c, IA, pA, vJ, tmp):
    """ov_i = ov_p + S v_i; c_i = ov_i x S v_i; IA_i = Y_i; pA_i = ov_i x* Y_i ov_i."""
    p = joint_int[i, I_PARENT]
    joint_velocity(i, joint_int, oS, v, vJ)
    for r in range(6):
        ov[i, r] = vJ[r] + (ov[p, r] if p >= 0 else 0.0)
    motion_cross_motion(ov[i], vJ, c[i])
    inertia_to_matrix(oY[i], IA[i])
    inertia_times_motion(oY[i], ov[i], tmp)
    motion_cross_force(ov[i], tmp, pA[i])


@step
def spd_inverse(D, n, out) -> bool:
    """out[:n, :n] = D[:n, :n]^-1 by Cholesky (D symmetric positive definite); False if not."""
    for j in range(n):  # in-place lower Cholesky of D
        s = D[j, j]
        for k in range(j):
            s -= D[j, k] * D[j, k]
        if not s > 0.0:
            return False
        D[j, j] = math.sqrt(s)
        for r in range(j + 1, n):
            t = D[r, j]
            for k in range(j):
                t -= D[r, k] * D[j, k]
            D[r, j] = t / D[j, j]
    for col in range(n):  # solve L L^T x = e_col
        for r in range(n):
            t = 1.0 if r == col else 0.0
            for k in range(r):
                t -= D[r, k] * out[k, col]
            out[r, col] = t / D[r, r]
        for r in range(n - 1, -1, -1):
            t = out[r, col]
            for k in range(r + 1, n):
                t -= D[k, r] * out[k, col]
            out[r, col] = t / D[r, r]
    return True


@step
def articulated_inertia_1dof(i, iv, p, d_added, oS, IA, U, Dinv) -> bool:
    """articulated_inertia_step for a one-DOF joint: fixed 6-long loops that LLVM unrolls and
    vectorises (most joints of a robot; the general step's inner loops over n are not)."""
    S = oS[iv]
    Ui = U[iv]
    IAi = IA[i]
    for r in range(6):
        acc = 0.0
        for c in range(6):
            acc += IAi[r, c] * S[c]
        Ui[r] = acc
    d = d_added
    for r in range(6):
        d += S[r] * Ui[r]
    if not d > 0.0:
        return False
    d_inv = 1.0 / d
    Dinv[iv, 0] = d_inv
    if p < 0:
        return True
    IAp = IA[p]
    for r in range(6):
        w = Ui[r] * d_inv
        for c in range(6):
            IAp[r, c] += IAi[r, c] - w * Ui[c]
    return True


@step
def articulated_inertia_step(i, joint_int, added, oS, IA, U, Dinv, small, tmp) -> bool:
    """U = IA S, D = S^T U + diag(added) (its inverse into Dinv), then
    IA_parent += IA - U D^-1 U^T (Featherstone 2008, Table 7.1, the inertia half of the backward
    pass; a joint-space diagonal such as armature enters D only). False if D is not positive
    definite."""
    iv = joint_int[i, I_IDX_V]
    n = joint_int[i, I_NV]
    p = joint_int[i, I_PARENT]
    if n == 1:
        return articulated_inertia_1dof(i, iv, p, added[iv], oS, IA, U, Dinv)
    for k in range(n):
        for r in range(6):
            acc = 0.0
            for c in range(6):
                acc += IA[i, r, c] * oS[iv + k, c]
            U[iv + k, r] = acc
        for m in range(n):
            acc = 0.0
            for r in range(6):
                acc += oS[iv + m, r] * U[iv + k, r]
            small[m, k] = acc
        small[k, k] += added[iv + k]
    if not spd_inverse(small, n, tmp):
        return False
    for k in range(n):
        for m in range(n):
            Dinv[iv + k, m] = tmp[k, m]
    if p < 0:
        return True
    for k in range(n):  # W_k = sum_m Dinv[k, m] U_m
        for r in range(6):
            acc = 0.0
            for m in range(n):
                acc += Dinv[iv + k, m] * U[iv + m, r]
            small[k, r] = acc
    for r in range(6):
        for c in range(6):
            acc = 0.0
            for k in range(n):
                acc += U[iv + k, r] * small[k, c]
            IA[p, r, c] += IA[i, r, c] - acc
    return True


@step
def bias_1dof(i, iv, p, S, tau_i, IAi, pA, ci, Ui, d_inv, u):
    """The bias half of aba_backward_step for a one-DOF joint (fixed 6-long loops)."""
    acc = tau_i
    for r in range(6):
        acc -= S[r] * pA[i, r]
    u[iv] = acc
    if p < 0:
        return
    for r in range(6):
        acc -= Ui[r] * ci[r]
    w = acc * d_inv
    for r in range(6):
        t = pA[i, r] + Ui[r] * w
        for cc in range(6):
            t += IAi[r, cc] * ci[cc]
        pA[p, r] += t


@step
def aba_backward_step(i, joint_int, added, oS, tau, IA, pA, c, U, Dinv, u, small, tmp) -> bool:
    """The articulated inertia step, u = tau - S^T pA, and the parent's bias
    pa = pA + Ia c + U D^-1 u = pA + IA c + U D^-1 (u - U^T c)."""
    if not articulated_inertia_step(i, joint_int, added, oS, IA, U, Dinv, small, tmp):
        return False
    iv = joint_int[i, I_IDX_V]
    n = joint_int[i, I_NV]
    p = joint_int[i, I_PARENT]
    if n == 1:
        bias_1dof(i, iv, p, oS[iv], tau[iv], IA[i], pA, c[i], U[iv], Dinv[iv, 0], u)
        return True
    for k in range(n):
        acc = tau[iv + k]
        for r in range(6):
            acc -= oS[iv + k, r] * pA[i, r]
        u[iv + k] = acc
    if p < 0:
        return True
    for k in range(n):
        acc = u[iv + k]
        for r in range(6):
            acc -= U[iv + k, r] * c[i, r]
        small[0, k] = acc
    for k in range(n):
        acc = 0.0
        for m in range(n):
            acc += Dinv[iv + k, m] * small[0, m]
        small[1, k] = acc
    for r in range(6):
        acc = pA[i, r]
        for cc in range(6):
            acc += IA[i, r, cc] * c[i, cc]
        for k in range(n):
            acc += U[iv + k, r] * small[1, k]
        pA[p, r] += acc
    return True


@step
def aba_forward_step2(i, joint_int, oS, c, U, Dinv, u, oa, a_world, a_out):
    """oa_i = oa_p + c_i; a_i = D^-1 (u - U^T oa_i); oa_i += S a_i."""
    p = joint_int[i, I_PARENT]
    iv = joint_int[i, I_IDX_V]
    n = joint_int[i, I_NV]
    for r in range(6):
        oa[i, r] = (oa[p, r] if p >= 0 else a_world[r]) + c[i, r]
    if n == 1:
        acc = u[iv]
        for r in range(6):
            acc -= U[iv, r] * oa[i, r]
        acc *= Dinv[iv, 0]
        a_out[iv] = acc
        for r in range(6):
            oa[i, r] += oS[iv, r] * acc
        return
    for k in range(n):
        acc = 0.0
        for m in range(n):
            um = u[iv + m]
            for r in range(6):
                um -= U[iv + m, r] * oa[i, r]
            acc += Dinv[iv + k, m] * um
        a_out[iv + k] = acc
    for k in range(n):
        for r in range(6):
            oa[i, r] += oS[iv + k, r] * a_out[iv + k]


@kernel
def aba_kernel(joint_int, joint_real, gravity, added, q, v, tau, ws, a_out):
    """a_out = (M + diag(added))^-1 (tau - C v - g)."""
    code = input_code(joint_int, q, v, tau)
    if code != OK:
        return code
    nj = joint_int.shape[0]
    oR, op, oY, ov, oa, of, pA, c, IA, oS, U, Dinv, u, Rq, pq, tmp, small = carve(
        ws, nj, a_out.shape[0])
    for i in range(nj):
        kinematics_step(i, joint_int, joint_real, q, oR, op, oS, oY, Rq, pq)
        aba_forward_step1(i, joint_int, oS, v, oY, ov, c, IA, pA, tmp[4], tmp[5])
    for i in range(nj - 1, -1, -1):
        if not aba_backward_step(i, joint_int, added, oS, tau, IA, pA, c, U, Dinv, u, small,
                                 tmp):
            return SINGULAR
    gravity_acceleration(gravity, tmp[3])
    for i in range(nj):
        aba_forward_step2(i, joint_int, oS, c, U, Dinv, u, oa, tmp[3], a_out)
    return OK


@kernel
def aba_table(q, v, tau, a_out, table):
    """aba_kernel on the model's arrays of a MODEL_ARRAYS table (workspace.model_table);
    BAD_ARG0 when q, v, tau do not have the model's lengths (nothing read)."""
    m = unpack_model(table)
    if not (fits_model(m.joint_int, m.armature, q, v, tau)
            and a_out.shape[0] == m.armature.shape[0]):
        return BAD_ARG0
    return aba_kernel(m.joint_int, m.joint_real, m.gravity, m.armature, q, v, tau, m.ws, a_out)


_aba = closed_on_first_call(globals(), "_aba", aba_table, (VECTOR,) * 4 + (TABLE,))


def aba(model, q, v, tau) -> np.ndarray:
    """Joint accelerations a (nv) under torques tau at (q, v), with the model's gravity and
    armature."""
    a = np.empty(model.nv)
    call_checked(_aba, model, (q, v, tau), a, ("q", "v", "tau"))
    return a
