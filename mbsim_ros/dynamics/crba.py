"""Joint-space inertia: the composite-rigid-body algorithm (Featherstone 2008, Table 6.2), in the
world frame, where composite inertias add without frame changes and M[j, i] = S_j^T (Yc_i S_i)
for every ancestor j of i."""
from __future__ import annotations

import numpy as np
from numba import types

from .._jit import kernel, step
from ..model.model import I_IDX_V, I_NV, I_PARENT
from ..codes import BAD_ARG0
from .checks import OK, fits_model, input_code
from .kinematics import inertia_times_motion, kinematics_pass
from .workspace import (TABLE, VECTOR, call_checked, carve, closed_on_first_call,
                        unpack_model)


@step
def crba_backward_step(i, joint_int, oS, Yc, M, F):
    """Fill the column block of joint i (and its transpose) from the composite inertia Yc_i,
    then add Yc_i into its parent."""
    iv = joint_int[i, I_IDX_V]
    for k in range(iv, iv + joint_int[i, I_NV]):
        inertia_times_motion(Yc[i], oS[k], F)
        j = i
        while j >= 0:
            jv = joint_int[j, I_IDX_V]
            for m in range(jv, jv + joint_int[j, I_NV]):
                acc = 0.0
                for r in range(6):
                    acc += oS[m, r] * F[r]
                M[m, k] = acc
                M[k, m] = acc
            j = joint_int[j, I_PARENT]
    p = joint_int[i, I_PARENT]
    if p >= 0:
        for r in range(10):
            Yc[p, r] += Yc[i, r]


@step
def mass_matrix_diagonal(joint_int, armature, oS, oY, Yc, tmp, out):
    """out_k = M_kk = S_k^T Yc_i S_k + armature_k from world-frame composite inertias (O(n);
    Yc: (nj, 10) scratch, tmp: a 6-vector)."""
    nj = joint_int.shape[0]
    for i in range(nj):
        for r in range(10):
            Yc[i, r] = oY[i, r]
    for i in range(nj - 1, -1, -1):
        iv = joint_int[i, I_IDX_V]
        for k in range(iv, iv + joint_int[i, I_NV]):
            inertia_times_motion(Yc[i], oS[k], tmp)
            acc = 0.0
            for r in range(6):
                acc += oS[k, r] * tmp[r]
            out[k] = acc + armature[k]
        p = joint_int[i, I_PARENT]
        if p >= 0:
            for r in range(10):
                Yc[p, r] += Yc[i, r]


@kernel
def crba_kernel(joint_int, joint_real, armature, q, ws, M):
    """M must be zero on entry (entries of unrelated branches are not written); the armature
    (rotor inertia reflected to each joint) adds to the diagonal."""
    code = input_code(joint_int, q, q, q)
    if code != OK:
        return code
    nj = joint_int.shape[0]
    oR, op, oY, ov, oa, of, pA, c, IA, oS, U, Dinv, u, Rq, pq, tmp, small = carve(
        ws, nj, M.shape[0])
    kinematics_pass(joint_int, joint_real, q, oR, op, oS, oY, Rq, pq)
    crba_backward(joint_int, armature, oS, oY, tmp[0], M)
    return OK


@step
def crba_backward(joint_int, armature, oS, oY, tmp, M):
    """M (zero on entry) from the world-frame oS and oY of a kinematics pass; oY becomes the
    composite inertias in place (tmp: a 6-vector)."""
    for i in range(joint_int.shape[0] - 1, -1, -1):
        crba_backward_step(i, joint_int, oS, oY, M, tmp)
    for k in range(M.shape[0]):
        M[k, k] += armature[k]


@kernel
def crba_table(q, M, table):
    """crba_kernel on the model's arrays of a MODEL_ARRAYS table (workspace.model_table); M
    zero on entry; BAD_ARG0 when q does not have the model's nq entries (nothing read)."""
    m = unpack_model(table)
    nv = m.armature.shape[0]
    if not (fits_model(m.joint_int, m.armature, q, m.armature, m.armature)
            and M.shape[0] == nv and M.shape[1] == nv):
        return BAD_ARG0
    return crba_kernel(m.joint_int, m.joint_real, m.armature, q, m.ws, M)


_crba = closed_on_first_call(globals(), "_crba", crba_table,
                             (VECTOR, types.Array(types.float64, 2, "C"), TABLE))


def crba(model, q) -> np.ndarray:
    """The joint-space inertia matrix M(q), full and symmetric (nv x nv)."""
    M = np.zeros((model.nv, model.nv))
    call_checked(_crba, model, (q,), M, ("q",))
    return M
