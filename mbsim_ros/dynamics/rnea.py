"""Inverse dynamics: the recursive Newton-Euler algorithm (Featherstone 2008, Table 5.1), in the
world frame. tau = M(q) a + C(q, v) v + g(q)."""
from __future__ import annotations

import numpy as np

from .._jit import kernel, step
from ..model.model import I_IDX_V, I_NV, I_PARENT
from ..codes import BAD_ARG0
from .checks import OK, fits_model, input_code
from .kinematics import (gravity_acceleration, inertia_times_motion, joint_velocity,
                         kinematics_pass, motion_cross_force, motion_cross_motion)
from .workspace import (TABLE, VECTOR, call_checked, carve, closed_on_first_call,
                        unpack_model)


@step
def rnea_forward_step(i, joint_int, oS, v, a, oY, ov, oa, of, a_world, vJ, tmp):
    """ov_i = ov_p + S v_i; oa_i = oa_p + S a_i + ov_i x S v_i; of_i = Y oa_i + ov_i x* Y ov_i."""
    p = joint_int[i, I_PARENT]
    joint_velocity(i, joint_int, oS, v, vJ)
    joint_velocity(i, joint_int, oS, a, tmp[0])
    for r in range(6):
        ov[i, r] = vJ[r] + (ov[p, r] if p >= 0 else 0.0)
        oa[i, r] = tmp[0, r] + (oa[p, r] if p >= 0 else a_world[r])
    motion_cross_motion(ov[i], vJ, tmp[1])
    for r in range(6):
        oa[i, r] += tmp[1, r]
    inertia_times_motion(oY[i], oa[i], of[i])
    inertia_times_motion(oY[i], ov[i], tmp[1])
    motion_cross_force(ov[i], tmp[1], tmp[2])
    for r in range(6):
        of[i, r] += tmp[2, r]


@step
def rnea_backward_step(i, joint_int, oS, of, tau):
    """tau_i = S_i^T of_i; of_p += of_i."""
    iv = joint_int[i, I_IDX_V]
    for k in range(iv, iv + joint_int[i, I_NV]):
        acc = 0.0
        for r in range(6):
            acc += oS[k, r] * of[i, r]
        tau[k] = acc
    p = joint_int[i, I_PARENT]
    if p >= 0:
        for r in range(6):
            of[p, r] += of[i, r]


@kernel
def rnea_kernel(joint_int, joint_real, gravity, armature, q, v, a, ws, tau):
    """tau = M(q) a + C(q, v) v + g(q), M with the armature on its diagonal."""
    code = input_code(joint_int, q, v, a)
    if code != OK:
        return code
    nj = joint_int.shape[0]
    oR, op, oY, ov, oa, of, pA, c, IA, oS, U, Dinv, u, Rq, pq, tmp, small = carve(
        ws, nj, tau.shape[0])
    gravity_acceleration(gravity, tmp[3])
    kinematics_pass(joint_int, joint_real, q, oR, op, oS, oY, Rq, pq)
    for i in range(nj):
        rnea_forward_step(i, joint_int, oS, v, a, oY, ov, oa, of, tmp[3], tmp[4], tmp)
    for i in range(nj - 1, -1, -1):
        rnea_backward_step(i, joint_int, oS, of, tau)
    for k in range(tau.shape[0]):
        tau[k] += armature[k] * a[k]
    return OK


@kernel
def rnea_table(q, v, a, tau, table):
    """rnea_kernel on the model's arrays of a MODEL_ARRAYS table (workspace.model_table);
    BAD_ARG0 when q, v, a do not have the model's lengths (nothing read)."""
    m = unpack_model(table)
    if not (fits_model(m.joint_int, m.armature, q, v, a)
            and tau.shape[0] == m.armature.shape[0]):
        return BAD_ARG0
    return rnea_kernel(m.joint_int, m.joint_real, m.gravity, m.armature, q, v, a, m.ws, tau)


_rnea = closed_on_first_call(globals(), "_rnea", rnea_table, (VECTOR,) * 4 + (TABLE,))


def rnea(model, q, v, a) -> np.ndarray:
    """Joint torques tau (nv) that produce accelerations a at (q, v), with the model's gravity."""
    tau = np.empty(model.nv)
    call_checked(_rnea, model, (q, v, a), tau, ("q", "v", "a"))
    return tau
