"""Forward kinematics in the world frame, shared by every algorithm in this package.

All spatial quantities are expressed in the world frame at the world origin, linear part first
(pinocchio's convention): ``oR[i], op[i]`` place joint frame i in the world, ``oS[k]`` is the
world-frame motion subspace column of velocity coordinate k, and ``oY[i]`` is body i's inertia in
the world frame in 10-number form ``(m, h = m c, I_o)`` with ``I_o`` the rotational inertia about
the world origin (xx, xy, xz, yy, yz, zz). Working in one frame makes the backward passes plain
sums (no frame changes), as in pinocchio's world-frame ABA.
"""
from __future__ import annotations

import math


from .._jit import kernel, routine, step
from .workspace import carve
from ..model.model import (FREE_FLYER, I_IDX_Q, I_IDX_V, I_NV, I_PARENT, I_TYPE, PRISMATIC,
                           R_AXIS, R_COM, R_INERTIA, R_MASS, R_POS, R_ROT)

AXIS0, COM0, INERTIA0, POS0, ROT0 = R_AXIS.start, R_COM.start, R_INERTIA.start, R_POS.start, \
    R_ROT.start


@step
def cross3(a, b, out, out_offset):
    """out[offset:offset+3] = a x b (a, b: indexable 3-vectors)."""
    out[out_offset] = a[1] * b[2] - a[2] * b[1]
    out[out_offset + 1] = a[2] * b[0] - a[0] * b[2]
    out[out_offset + 2] = a[0] * b[1] - a[1] * b[0]


@step
def motion_cross_motion(x, y, out):
    """out = x cross y for twists x = (v, w), y = (u, s): (w x u + v x s, w x s)."""
    out[0] = x[4] * y[2] - x[5] * y[1] + x[1] * y[5] - x[2] * y[4]
    out[1] = x[5] * y[0] - x[3] * y[2] + x[2] * y[3] - x[0] * y[5]
    out[2] = x[3] * y[1] - x[4] * y[0] + x[0] * y[4] - x[1] * y[3]
    out[3] = x[4] * y[5] - x[5] * y[4]
    out[4] = x[5] * y[3] - x[3] * y[5]
    out[5] = x[3] * y[4] - x[4] * y[3]


@step
def motion_cross_force(x, f, out):
    """out = x cross* f for a twist x = (v, w) and a wrench f = (f, n): (w x f, w x n + v x f)."""
    out[0] = x[4] * f[2] - x[5] * f[1]
    out[1] = x[5] * f[0] - x[3] * f[2]
    out[2] = x[3] * f[1] - x[4] * f[0]
    out[3] = x[4] * f[5] - x[5] * f[4] + x[1] * f[2] - x[2] * f[1]
    out[4] = x[5] * f[3] - x[3] * f[5] + x[2] * f[0] - x[0] * f[2]
    out[5] = x[3] * f[4] - x[4] * f[3] + x[0] * f[1] - x[1] * f[0]


@step
def inertia_times_motion(Y, x, out):
    """out = Y x for Y = (m, h, I_o) and a twist x = (v, w): (m v - h x w, h x v + I_o w)."""
    m = Y[0]
    hx, hy, hz = Y[1], Y[2], Y[3]
    v0, v1, v2, w0, w1, w2 = x[0], x[1], x[2], x[3], x[4], x[5]
    out[0] = m * v0 - (hy * w2 - hz * w1)
    out[1] = m * v1 - (hz * w0 - hx * w2)
    out[2] = m * v2 - (hx * w1 - hy * w0)
    out[3] = hy * v2 - hz * v1 + Y[4] * w0 + Y[5] * w1 + Y[6] * w2
    out[4] = hz * v0 - hx * v2 + Y[5] * w0 + Y[7] * w1 + Y[8] * w2
    out[5] = hx * v1 - hy * v0 + Y[6] * w0 + Y[8] * w1 + Y[9] * w2


@step
def inertia_to_matrix(Y, out):
    """The 6x6 matrix of Y = (m, h, I_o): [[m 1, -[h]], [[h], I_o]]."""
    m, hx, hy, hz = Y[0], Y[1], Y[2], Y[3]
    for r in range(6):
        for c in range(6):
            out[r, c] = 0.0
    out[0, 0] = m
    out[1, 1] = m
    out[2, 2] = m
    # -[h] in the upper right, [h] in the lower left
    out[0, 4] = hz
    out[0, 5] = -hy
    out[1, 3] = -hz
    out[1, 5] = hx
    out[2, 3] = hy
    out[2, 4] = -hx
    out[4, 0] = hz
    out[5, 0] = -hy
    out[3, 1] = -hz
    out[5, 1] = hx
    out[3, 2] = hy
    out[4, 2] = -hx
    out[3, 3] = Y[4]
    out[3, 4] = Y[5]
    out[3, 5] = Y[6]
    out[4, 3] = Y[5]
    out[4, 4] = Y[7]
    out[4, 5] = Y[8]
    out[5, 3] = Y[6]
    out[5, 4] = Y[8]
    out[5, 5] = Y[9]


@step
def quaternion_matrix(q, iq, R):
    """R of the unit quaternion (x, y, z, w) stored at q[iq + 3 : iq + 7] (free-flyer layout)."""
    x, y, z, w = q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]
    R[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[0, 1] = 2.0 * (x * y - z * w)
    R[0, 2] = 2.0 * (x * z + y * w)
    R[1, 0] = 2.0 * (x * y + z * w)
    R[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[1, 2] = 2.0 * (y * z - x * w)
    R[2, 0] = 2.0 * (x * z - y * w)
    R[2, 1] = 2.0 * (y * z + x * w)
    R[2, 2] = 1.0 - 2.0 * (x * x + y * y)


@step
def joint_motion(jtype, axis, q, iq, Rq, pq):
    """Transform across joint i (child joint frame in the placement frame): Rq, pq."""
    for r in range(3):
        pq[r] = 0.0
        for c in range(3):
            Rq[r, c] = 1.0 if r == c else 0.0
    if jtype == FREE_FLYER:
        quaternion_matrix(q, iq, Rq)
        pq[0], pq[1], pq[2] = q[iq], q[iq + 1], q[iq + 2]
    elif jtype == PRISMATIC:
        for r in range(3):
            pq[r] = axis[r] * q[iq]
    else:  # revolute / continuous: Rodrigues about the unit axis
        s = math.sin(q[iq])
        one_minus_c = 1.0 - math.cos(q[iq])
        ax, ay, az = axis[0], axis[1], axis[2]
        Rq[0, 0] = 1.0 - one_minus_c * (ay * ay + az * az)
        Rq[1, 1] = 1.0 - one_minus_c * (ax * ax + az * az)
        Rq[2, 2] = 1.0 - one_minus_c * (ax * ax + ay * ay)
        Rq[0, 1] = -s * az + one_minus_c * ax * ay
        Rq[1, 0] = s * az + one_minus_c * ax * ay
        Rq[0, 2] = s * ay + one_minus_c * ax * az
        Rq[2, 0] = -s * ay + one_minus_c * ax * az
        Rq[1, 2] = -s * ax + one_minus_c * ay * az
        Rq[2, 1] = s * ax + one_minus_c * ay * az


@routine
def kinematics_pass(joint_int, joint_real, q, oR, op, oS, oY, Rq, pq):
    """kinematics_step for every joint, in order. A routine: the kernels that need a whole
    pass and nothing else per joint share one compiled copy of it (inlined, the pass cost 1.7 s
    of compile in each: docs/SPEED.md, "Cold compile: specializations")."""
    for i in range(joint_int.shape[0]):
        kinematics_step(i, joint_int, joint_real, q, oR, op, oS, oY, Rq, pq)


@step
def kinematics_step(i, joint_int, joint_real, q, oR, op, oS, oY, Rq, pq):
    """Forward step for joint i: its world placement, world motion subspace and world inertia.
    The parent's oR/op must be filled. Rq, pq are 3x3 / 3 scratch."""
    pose_step(i, joint_int, joint_real, q, oR, op, Rq, pq)
    row = joint_real[i]
    world_motion_subspace(i, joint_int, row, oR[i], op[i], oS)
    world_inertia(row, oR[i], op[i], oY[i])


@step
def pose_step(i, joint_int, joint_real, q, oR, op, Rq, pq):
    """oMi = oM_parent * placement * joint(q_i) for joint i (the parent's oR/op filled)."""
    row = joint_real[i]
    jtype = joint_int[i, I_TYPE]
    joint_motion(jtype, row[AXIS0:AXIS0 + 3], q, joint_int[i, I_IDX_Q], Rq, pq)
    # liMi = placement * joint motion; oMi = oM_parent * liMi
    p = joint_int[i, I_PARENT]
    Rl = oR[i]  # liMi rotation first, overwritten by the world rotation below
    pl0 = row[POS0] + row[ROT0] * pq[0] + row[ROT0 + 1] * pq[1] + row[ROT0 + 2] * pq[2]
    pl1 = row[POS0 + 1] + row[ROT0 + 3] * pq[0] + row[ROT0 + 4] * pq[1] + row[ROT0 + 5] * pq[2]
    pl2 = row[POS0 + 2] + row[ROT0 + 6] * pq[0] + row[ROT0 + 7] * pq[1] + row[ROT0 + 8] * pq[2]
    for r in range(3):
        for c in range(3):
            Rl[r, c] = (row[ROT0 + 3 * r] * Rq[0, c] + row[ROT0 + 3 * r + 1] * Rq[1, c]
                        + row[ROT0 + 3 * r + 2] * Rq[2, c])
    if p < 0:
        op[i, 0], op[i, 1], op[i, 2] = pl0, pl1, pl2
    else:
        Rp = oR[p]
        for r in range(3):
            op[i, r] = op[p, r] + Rp[r, 0] * pl0 + Rp[r, 1] * pl1 + Rp[r, 2] * pl2
        for r in range(3):
            a0, a1, a2 = Rl[0, r], Rl[1, r], Rl[2, r]
            for rr in range(3):
                Rq[rr, r] = Rp[rr, 0] * a0 + Rp[rr, 1] * a1 + Rp[rr, 2] * a2
        for r in range(3):
            for c in range(3):
                Rl[r, c] = Rq[r, c]


@step
def world_motion_subspace(i, joint_int, row, R, o, oS):
    """oS columns of joint i: Ad(oMi) S_local (revolute: (o x R a, R a); prismatic: (R a, 0);
    free-flyer: Ad(oMi) itself)."""
    iv = joint_int[i, I_IDX_V]
    jtype = joint_int[i, I_TYPE]
    if jtype == FREE_FLYER:
        for k in range(3):
            col = oS[iv + k]
            col[0], col[1], col[2] = R[0, k], R[1, k], R[2, k]
            col[3] = col[4] = col[5] = 0.0
            col = oS[iv + 3 + k]
            col[3], col[4], col[5] = R[0, k], R[1, k], R[2, k]
            cross3(o, col[3:6], col, 0)
        return
    a0, a1, a2 = row[AXIS0], row[AXIS0 + 1], row[AXIS0 + 2]
    col = oS[iv]
    d0 = R[0, 0] * a0 + R[0, 1] * a1 + R[0, 2] * a2
    d1 = R[1, 0] * a0 + R[1, 1] * a1 + R[1, 2] * a2
    d2 = R[2, 0] * a0 + R[2, 1] * a1 + R[2, 2] * a2
    if jtype == PRISMATIC:
        col[0], col[1], col[2] = d0, d1, d2
        col[3] = col[4] = col[5] = 0.0
    else:
        col[3], col[4], col[5] = d0, d1, d2
        col[0] = o[1] * d2 - o[2] * d1
        col[1] = o[2] * d0 - o[0] * d2
        col[2] = o[0] * d1 - o[1] * d0


@step
def world_inertia(row, R, o, Y):
    """Y = (m, m c_w, I about the world origin) for the body of one joint, c_w = o + R c."""
    m = row[R_MASS]
    c0 = o[0] + R[0, 0] * row[COM0] + R[0, 1] * row[COM0 + 1] + R[0, 2] * row[COM0 + 2]
    c1 = o[1] + R[1, 0] * row[COM0] + R[1, 1] * row[COM0 + 1] + R[1, 2] * row[COM0 + 2]
    c2 = o[2] + R[2, 0] * row[COM0] + R[2, 1] * row[COM0 + 1] + R[2, 2] * row[COM0 + 2]
    xx, xy, xz = row[INERTIA0], row[INERTIA0 + 1], row[INERTIA0 + 2]
    yy, yz, zz = row[INERTIA0 + 3], row[INERTIA0 + 4], row[INERTIA0 + 5]
    # B = R Ic (row r), then R Ic R^T
    b00 = R[0, 0] * xx + R[0, 1] * xy + R[0, 2] * xz
    b01 = R[0, 0] * xy + R[0, 1] * yy + R[0, 2] * yz
    b02 = R[0, 0] * xz + R[0, 1] * yz + R[0, 2] * zz
    b10 = R[1, 0] * xx + R[1, 1] * xy + R[1, 2] * xz
    b11 = R[1, 0] * xy + R[1, 1] * yy + R[1, 2] * yz
    b12 = R[1, 0] * xz + R[1, 1] * yz + R[1, 2] * zz
    b20 = R[2, 0] * xx + R[2, 1] * xy + R[2, 2] * xz
    b21 = R[2, 0] * xy + R[2, 1] * yy + R[2, 2] * yz
    b22 = R[2, 0] * xz + R[2, 1] * yz + R[2, 2] * zz
    cc = c0 * c0 + c1 * c1 + c2 * c2
    Y[0] = m
    Y[1], Y[2], Y[3] = m * c0, m * c1, m * c2
    # parallel axis: I_o = R Ic R^T + m (|c|^2 1 - c c^T)
    Y[4] = b00 * R[0, 0] + b01 * R[0, 1] + b02 * R[0, 2] + m * (cc - c0 * c0)
    Y[5] = b00 * R[1, 0] + b01 * R[1, 1] + b02 * R[1, 2] - m * c0 * c1
    Y[6] = b00 * R[2, 0] + b01 * R[2, 1] + b02 * R[2, 2] - m * c0 * c2
    Y[7] = b10 * R[1, 0] + b11 * R[1, 1] + b12 * R[1, 2] + m * (cc - c1 * c1)
    Y[8] = b10 * R[2, 0] + b11 * R[2, 1] + b12 * R[2, 2] - m * c1 * c2
    Y[9] = b20 * R[2, 0] + b21 * R[2, 1] + b22 * R[2, 2] + m * (cc - c2 * c2)


@step
def joint_velocity(i, joint_int, oS, v, out):
    """out = oS_i v_i, the joint's contribution to the body twist (world frame)."""
    iv = joint_int[i, I_IDX_V]
    for r in range(6):
        out[r] = 0.0
    for k in range(iv, iv + joint_int[i, I_NV]):
        vk = v[k]
        col = oS[k]
        for r in range(6):
            out[r] += col[r] * vk


@step
def gravity_acceleration(gravity, out):
    """The world's spatial acceleration that stands in for gravity: (-g, 0)."""
    out[0], out[1], out[2] = -gravity[0], -gravity[1], -gravity[2]
    out[3] = out[4] = out[5] = 0.0


@kernel
def wrenches_in_body_axes(joint_int, joint_real, q, nv, ws, world, out):
    """out[i] = (R_i^T f_i, R_i^T n_i): each body's wrench (force, torque about the body
    frame's origin) from world axes into its own axes at configuration q (R_i: the body's
    world rotation, by forward kinematics into the workspace)."""
    nj = joint_int.shape[0]
    views = carve(ws, nj, nv)
    for i in range(nj):
        pose_step(i, joint_int, joint_real, q, views.oR, views.op, views.Rq, views.pq)
        R = views.oR[i]
        for half in range(2):
            f0, f1, f2 = world[i, 3 * half], world[i, 3 * half + 1], world[i, 3 * half + 2]
            for r in range(3):
                out[i, 3 * half + r] = R[0, r] * f0 + R[1, r] * f1 + R[2, r] * f2
