"""The derivatives of inverse dynamics (rnea.py) with respect to q (in the tangent space, q (+) d)
and v, in the world frame: for the exact linearisation of the semi-implicit Euler step
(mbsim_ros.estimation; derivation in docs/ESTIMATION.md).

A dof b of joint l moves the subtree of l rigidly by the world twist zeta = S_b d_b and leaves
every other body alone. Everything world-frame that belongs to the subtree turns with it
(motion subspaces, inertias, velocities and accelerations relative to the parent lambda of l),
while the parent's ov_lambda, oa_lambda stay; so for body i below l, with
w_i = ov_i - ov_lambda (its velocity relative to lambda):

    d ov_i = zeta x w_i
    d oa_i = zeta x (oa_i - oa_lambda - ov_lambda x w_i) + ov_lambda x d ov_i
    d Y_i x = zeta x* (Y_i x) - Y_i (zeta x x)

and a velocity dv_b gives d ov_i = S_b, d oa_i = S_b x w_i + ov_l x S_b. Each changes the body
wrench of_i = Y_i oa_i + ov_i x* Y_i ov_i; tau_a = S_a^T F_j (F_j: the subtree sum at joint j of
a) takes the change of F, plus (zeta x S_a) . F_j when joint j itself is in the subtree of l.
O(n) per dof: O(n * nv) in all. The velocity part (coriolis_composites, velocity_jacobian:
subtree sums as in CRBA, O(n + the entries of M), over preallocated scratch) is also the
implicit Euler and compliant steps' dB/dv (velocity_terms: b, M and dB/dv in one pass).
"""
from __future__ import annotations

import numpy as np

from .._jit import allocating, kernel, routine, step
from ..layout import writable_view
from ..model.model import I_IDX_V, I_NV, I_PARENT
from .checks import OK, as_vector
from .crba import crba_backward
from .kinematics import (gravity_acceleration, inertia_times_motion, kinematics_step,
                         motion_cross_force, motion_cross_motion)
from .rnea import rnea_backward_step, rnea_forward_step, rnea_kernel
from .workspace import carve


@step
def in_subtree(i, l, joint_int) -> bool:
    """Is joint i joint l or below it (parents come before their children)?"""
    while i > l:
        i = joint_int[i, I_PARENT]
    return i == l


@step
def wrench_derivative(Y, ov, dov, doa, dY_ov, dY_oa, tmp, out):
    """d(Y oa + ov x* Y ov) from d ov, d oa and the inertia's change applied to ov and oa."""
    inertia_times_motion(Y, doa, out)
    for r in range(6):
        out[r] += dY_oa[r]
    inertia_times_motion(Y, ov, tmp[0])
    motion_cross_force(dov, tmp[0], tmp[1])  # d ov x* Y ov
    inertia_times_motion(Y, dov, tmp[0])
    for r in range(6):
        tmp[0, r] += dY_ov[r]  # d(Y ov)
    motion_cross_force(ov, tmp[0], tmp[2])  # ov x* d(Y ov)
    for r in range(6):
        out[r] += tmp[1, r] + tmp[2, r]


@step
def inertia_turned(Y, zeta, x, tmp, out):
    """dY x = zeta x* (Y x) - Y (zeta x x), the change of an inertia turned by zeta."""
    inertia_times_motion(Y, x, tmp[0])
    motion_cross_force(zeta, tmp[0], out)
    motion_cross_motion(zeta, x, tmp[0])
    inertia_times_motion(Y, tmp[0], tmp[1])
    for r in range(6):
        out[r] -= tmp[1, r]


@routine
def subtree_wrench_derivatives(joint_int, oY, ov, oa, l, ov0, oa0, zeta, tmp, df):
    """df_i for every body i below l (zero elsewhere) when q_b (zeta = S_b) moves, then summed
    over subtrees (df_l: the whole subtree)."""
    nj = joint_int.shape[0]
    w, dov, doa, dY_ov, dY_oa = tmp[0], tmp[1], tmp[2], tmp[3], tmp[4]
    for i in range(nj):
        for r in range(6):
            df[i, r] = 0.0
    for i in range(l, nj):
        if not in_subtree(i, l, joint_int):
            continue
        for r in range(6):
            w[r] = ov[i, r] - ov0[r]
        # d ov = zeta x w; d oa = zeta x (oa - oa0 - ov0 x w) + ov0 x d ov
        motion_cross_motion(zeta, w, dov)
        motion_cross_motion(ov0, w, tmp[5])
        for r in range(6):
            tmp[5, r] = oa[i, r] - oa0[r] - tmp[5, r]
        motion_cross_motion(zeta, tmp[5], doa)
        motion_cross_motion(ov0, dov, tmp[5])
        for r in range(6):
            doa[r] += tmp[5, r]
        inertia_turned(oY[i], zeta, ov[i], tmp[6:8], dY_ov)
        inertia_turned(oY[i], zeta, oa[i], tmp[6:8], dY_oa)
        wrench_derivative(oY[i], ov[i], dov, doa, dY_ov, dY_oa, tmp[5:8], df[i])
    for i in range(nj - 1, l, -1):
        p = joint_int[i, I_PARENT]
        if p >= l:
            for r in range(6):
                df[p, r] += df[i, r]


@step
def coriolis_numbers(Y, x) -> tuple:
    """The nine numbers of coriolis_map's B for the inertia Y = (m, h, I_o) and the twist
    x = (v, w): a = m v + w x h, then D = 2 (v.h) 1 - h v^T - v h^T + C + C^T (C = [w]x I_o)
    by its diagonal and its (0, 1), (0, 2), (1, 2) entries."""
    m, hx, hy, hz = Y[0], Y[1], Y[2], Y[3]
    vx, vy, vz, wx, wy, wz = x[0], x[1], x[2], x[3], x[4], x[5]
    ax = m * vx + wy * hz - wz * hy
    ay = m * vy + wz * hx - wx * hz
    az = m * vz + wx * hy - wy * hx
    ixx, ixy, ixz, iyy, iyz, izz = Y[4], Y[5], Y[6], Y[7], Y[8], Y[9]
    c00, c01, c02 = wy * ixz - wz * ixy, wy * iyz - wz * iyy, wy * izz - wz * iyz
    c10, c11, c12 = wz * ixx - wx * ixz, wz * ixy - wx * iyz, wz * ixz - wx * izz
    c20, c21, c22 = wx * ixy - wy * ixx, wx * iyy - wy * ixy, wx * iyz - wy * ixz
    vh = vx * hx + vy * hy + vz * hz
    return (ax, ay, az, 2.0 * (vh - hx * vx + c00), 2.0 * (vh - hy * vy + c11),
            2.0 * (vh - hz * vz + c22), c01 + c10 - hx * vy - vx * hy,
            c02 + c20 - hx * vz - vx * hz, c12 + c21 - hy * vz - vy * hz)


@step
def coriolis_map(Y, x, out):
    """out (6 x 6) = the map B y = x x* (Y y) - Y (x x y) for the inertia Y = (m, h, I_o) and
    the twist x = (v, w), written out by blocks (Featherstone 2008, Rigid Body Dynamics
    Algorithms, Sec. 2.9 (crm, crf), and [a]x [b]x = b a^T - (a.b) 1): with a = m v + w x h
    and C = [w]x I_o, B = [[0, -[a]x], [[a]x, 2 (v.h) 1 - h v^T - v h^T + C + C^T]], which is
    symmetric (its nine numbers: coriolis_numbers)."""
    ax, ay, az, d00, d11, d22, d01, d02, d12 = coriolis_numbers(Y, x)
    for r in range(3):
        for k in range(3):
            out[r, k] = 0.0
    out[0, 3], out[0, 4], out[0, 5] = 0.0, az, -ay
    out[1, 3], out[1, 4], out[1, 5] = -az, 0.0, ax
    out[2, 3], out[2, 4], out[2, 5] = ay, -ax, 0.0
    for r in range(3):
        for k in range(3):
            out[3 + r, k] = -out[r, 3 + k]
    out[3, 3], out[4, 4], out[5, 5] = d00, d11, d22
    out[3, 4] = out[4, 3] = d01
    out[3, 5] = out[5, 3] = d02
    out[4, 5] = out[5, 4] = d12


@routine
def coriolis_composites(joint_int, oY, ov, momenta, coriolis):
    """Per body i, then summed over subtrees (parents come before children): the momentum
    h_i = Y_i ov_i into momenta (nj, 6) and the 6x6 map B_i x = ov_i x* (Y_i x) - Y_i (ov_i x x)
    into coriolis (nj, 6, 6) (coriolis_map)."""
    nj = joint_int.shape[0]
    for i in range(nj):
        inertia_times_motion(oY[i], ov[i], momenta[i])
        coriolis_map(oY[i], ov[i], coriolis[i])
    for i in range(nj - 1, -1, -1):
        p = joint_int[i, I_PARENT]
        if p >= 0:
            for r in range(6):
                momenta[p, r] += momenta[i, r]
                for k in range(6):
                    coriolis[p, r, k] += coriolis[i, r, k]


@step
def velocity_change_wrench(joint_int, l, o, zeta, ov, momenta, coriolis, Yc, velocity_sum, force,
                           crossed, out):
    """What a unit velocity of dof zeta (a dof of joint l) adds to the wrench sum of l's
    subtree (velocity_jacobian): crossed = u_b = (ov_l + ov_lambda) x zeta and
    out = Yc_l u_b + B_l zeta + zeta x* H_l, the bodies' velocities and coriolis_composites'
    sums read at rows o + i (o: 0, or the offset of a second velocity's rows).
    velocity_sum, force: 6-vector scratch."""
    lam = joint_int[l, I_PARENT]
    for r in range(6):
        velocity_sum[r] = ov[o + l, r] + (ov[o + lam, r] if lam >= 0 else 0.0)
    motion_cross_motion(velocity_sum, zeta, crossed)
    inertia_times_motion(Yc[l], crossed, out)
    motion_cross_force(zeta, momenta[o + l], force)
    for r in range(6):
        acc = out[r] + force[r]
        for k in range(6):
            acc += coriolis[o + l, r, k] * zeta[k]
        out[r] = acc


@step
def coriolis_projection(S_a, momentum, coriolis, force, q_a):
    """q_a = B_j^T S_a - S_a x* H_j (velocity_jacobian; B_j = coriolis, H_j = momentum: the
    subtree sums of joint j, which dof a moves). force: 6-vector scratch."""
    motion_cross_force(S_a, momentum, force)
    for k in range(6):
        acc = -force[k]
        for r in range(6):
            acc += coriolis[r, k] * S_a[r]
        q_a[k] = acc


@routine
def velocity_jacobian(joint_int, oS, Yc, ov, momenta, coriolis, crossed, tmp, out):
    """out = d tau / d v (nv x nv, every entry written), which is d b / d v for the bias
    b = rnea(q, v, 0), from the world-frame oS, ov of a forward RNEA pass, the composite
    inertias Yc (crba) and coriolis_composites' subtree sums H_j, B_j. A velocity dv_b (a dof of
    joint l, zeta = S_b) changes only the bodies i below l: d ov_i = zeta,
    d oa_i = zeta x (ov_i - ov_lambda) + ov_l x zeta, so
    d of_i = Y_i u_b + B_i zeta + zeta x* h_i with u_b = (ov_l + ov_lambda) x zeta, and its sum
    over the subtree of j is Yc_j u_b + B_j zeta + zeta x* H_j. Entry (a, b), a a dof of joint
    j: S_a . (that sum at l) when j is l or above it; when j is below l,
    p_a . u_b + q_a . zeta with p_a = Yc_j S_a, q_a = B_j^T S_a - S_a x* H_j (per a, once);
    0 on other branches. O(n + the entries of M). crossed: (nv, 6) scratch (the u_b);
    tmp: (>= 3, 6)."""
    nj, nv = joint_int.shape[0], oS.shape[0]
    for a in range(nv):
        for b in range(nv):
            out[a, b] = 0.0
    g = tmp[1]
    for l in range(nj):
        lv = joint_int[l, I_IDX_V]
        for b in range(lv, lv + joint_int[l, I_NV]):
            velocity_change_wrench(joint_int, l, 0, oS[b], ov, momenta, coriolis, Yc, tmp[0],
                                   tmp[2], crossed[b], g)
            j = l
            while j >= 0:
                project_joint(joint_int, oS, g, j, b, out)
                j = joint_int[j, I_PARENT]
    p_a, q_a = tmp[0], tmp[1]
    for j in range(nj):
        jv = joint_int[j, I_IDX_V]
        for a in range(jv, jv + joint_int[j, I_NV]):
            inertia_times_motion(Yc[j], oS[a], p_a)
            coriolis_projection(oS[a], momenta[j], coriolis[j], tmp[2], q_a)
            l = joint_int[j, I_PARENT]
            while l >= 0:
                lv = joint_int[l, I_IDX_V]
                for b in range(lv, lv + joint_int[l, I_NV]):
                    acc = 0.0
                    for r in range(6):
                        acc += p_a[r] * crossed[b, r] + q_a[r] * oS[b, r]
                    out[a, b] = acc
                l = joint_int[l, I_PARENT]


@routine
def velocity_terms(joint_int, joint_real, gravity, armature, q, v, ws, zero, crossed, bias, M,
                   dB) -> int:
    """The velocity terms of a linearly implicit step at (q, v): bias = rnea(q, v, 0), M = the
    joint-space inertia with the armature (zero on entry) and dB = dB/dv (velocity_jacobian),
    from one kinematics pass. zero: nv zeros; crossed: (nv, 6) scratch. Returns the kernel code
    (checks.OK when done)."""
    nj = joint_int.shape[0]
    code = rnea_kernel(joint_int, joint_real, gravity, armature, q, v, zero, ws, bias)
    if code != OK:
        return code
    oR, op, oY, ov, oa, of, pA, c, IA, oS, U, Dinv, u, Rq, pq, tmp, small = carve(
        ws, nj, v.shape[0])
    coriolis_composites(joint_int, oY, ov, pA, IA)
    crba_backward(joint_int, armature, oS, oY, tmp[0], M)  # oY: composite from here on
    velocity_jacobian(joint_int, oS, oY, ov, pA, IA, crossed, tmp, dB)
    return OK


@kernel
def velocity_terms_kernel(joint_int, joint_real, gravity, armature, q, v, ws, zero, crossed, bias,
                          M, dB) -> int:
    """velocity_terms (a routine), called from Python (the compliant integrator's general
    step). The Model's arrays (read only here) typed as the fused steps' table views
    (layout.writable_view): the velocity terms the steps compiled serve, not a second copy
    for read-only arrays."""
    return velocity_terms(writable_view(joint_int), writable_view(joint_real),
                          writable_view(gravity), writable_view(armature), q, v, ws, zero,
                          crossed, bias, M, dB)


@step
def project_joint(joint_int, oS, f, j, b, out):
    """out[a, b] = S_a . f for the dofs a of joint j."""
    jv = joint_int[j, I_IDX_V]
    for a in range(jv, jv + joint_int[j, I_NV]):
        s = 0.0
        for r in range(6):
            s += oS[a, r] * f[r]
        out[a, b] = s


@routine
def project_column(joint_int, oS, F, df, l, zeta, tmp, column):
    """column_a = S_a . df_j + (zeta x S_a) . F_j for the dofs a of joint j in the
    subtree of l; S_a . df_l for the dofs of l's ancestors; 0 elsewhere."""
    nj = joint_int.shape[0]
    for a in range(column.shape[0]):
        column[a] = 0.0
    for j in range(nj):
        jv, nvj = joint_int[j, I_IDX_V], joint_int[j, I_NV]
        below = in_subtree(j, l, joint_int)
        if not below and not in_subtree(l, j, joint_int):
            continue
        source = j if below else l
        for a in range(jv, jv + nvj):
            s = 0.0
            for r in range(6):
                s += oS[a, r] * df[source, r]
            if below:
                motion_cross_motion(zeta, oS[a], tmp)
                for r in range(6):
                    s += tmp[r] * F[j, r]
            column[a] = s


@allocating
def rnea_derivatives_kernel(joint_int, joint_real, gravity, q, v, a, dtau_dq, dtau_dv):
    nj = joint_int.shape[0]
    nv = v.shape[0]
    oR = np.empty((nj, 3, 3))
    op = np.empty((nj, 3))
    oS = np.empty((nv, 6))
    oY = np.empty((nj, 10))
    ov = np.empty((nj, 6))
    oa = np.empty((nj, 6))
    F = np.empty((nj, 6))
    df = np.empty((nj, 6))
    tmp = np.zeros((10, 6))
    column = np.empty(nv)
    tau = np.empty(nv)
    zero = np.zeros(6)
    Rq = np.empty((3, 3))
    pq = np.empty(3)
    a_world = np.empty(6)
    gravity_acceleration(gravity, a_world)
    for i in range(nj):
        kinematics_step(i, joint_int, joint_real, q, oR, op, oS, oY, Rq, pq)
        rnea_forward_step(i, joint_int, oS, v, a, oY, ov, oa, F, a_world, tmp[8], tmp)
    for i in range(nj - 1, -1, -1):
        rnea_backward_step(i, joint_int, oS, F, tau)  # F: subtree sums
    for l in range(nj):
        lam = joint_int[l, I_PARENT]
        ov0 = ov[lam] if lam >= 0 else zero
        oa0 = oa[lam] if lam >= 0 else a_world
        lv = joint_int[l, I_IDX_V]
        for b in range(lv, lv + joint_int[l, I_NV]):
            zeta = oS[b]
            subtree_wrench_derivatives(joint_int, oY, ov, oa, l, ov0, oa0, zeta, tmp, df)
            project_column(joint_int, oS, F, df, l, zeta, tmp[9], column)
            for k in range(nv):
                dtau_dq[k, b] = column[k]
    momenta, coriolis = np.empty((nj, 6)), np.empty((nj, 6, 6))
    coriolis_composites(joint_int, oY, ov, momenta, coriolis)
    Yc = oY.copy()
    for i in range(nj - 1, -1, -1):
        p = joint_int[i, I_PARENT]
        if p >= 0:
            for r in range(10):
                Yc[p, r] += Yc[i, r]
    velocity_jacobian(joint_int, oS, Yc, ov, momenta, coriolis, np.empty((nv, 6)), tmp,
                      dtau_dv)


def rnea_derivatives(model, q, v, a) -> tuple:
    """(d tau / d q, d tau / d v) of tau = rnea(model, q, v, a) (nv x nv each; q moved as
    q (+) delta, in the tangent space)."""
    q = as_vector(q, model.nq, "q")
    v = as_vector(v, model.nv, "v")
    a = as_vector(a, model.nv, "a")
    dtau_dq, dtau_dv = np.empty((model.nv, model.nv)), np.empty((model.nv, model.nv))
    rnea_derivatives_kernel(model.joint_int, model.joint_real, model.gravity, q, v, a, dtau_dq,
                            dtau_dv)
    return dtau_dq, dtau_dv
