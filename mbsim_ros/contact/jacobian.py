"""Constraint rows in the world frame: for a point x on body a (and the same point on body b,
or the world), the row G with G v = d . (velocity of x on a - velocity of x on b). From the
world-frame motion subspace columns oS_k = (v_k, w_k) (twists at the world origin) of the
joints between the body and the root: d . (v_k + w_k x x)."""
from __future__ import annotations

from .._jit import kernel, step
from ..model.model import I_IDX_V, I_NV, I_PARENT


@step
def add_point_rows(joint_int, oS, body, sign, x, directions, first, count, G):
    """G[r] += sign * directions[r] . J_body(x) for the rows r = first .. first + count - 1
    of one point (a contact's normal and tangents), walking from body to the root; J's column
    is taken once per dof for all of them."""
    j = body
    while j >= 0:
        iv = joint_int[j, I_IDX_V]
        for k in range(iv, iv + joint_int[j, I_NV]):
            s = oS[k]
            px = s[0] + s[4] * x[2] - s[5] * x[1]
            py = s[1] + s[5] * x[0] - s[3] * x[2]
            pz = s[2] + s[3] * x[1] - s[4] * x[0]
            for r in range(first, first + count):
                d = directions[r]
                G[r, k] += sign * (d[0] * px + d[1] * py + d[2] * pz)
        j = joint_int[j, I_PARENT]


@kernel
def point_rows(joint_int, oS, body_a, body_b, points, directions, G):
    """G[r] = directions[r] . (J_a(points[r]) - J_b(points[r])) for every row r (body -1: the
    world). G must be zero on entry."""
    for r in range(G.shape[0]):
        add_point_rows(joint_int, oS, body_a[r], 1.0, points[r], directions, r, 1, G)
        if body_b[r] >= 0:
            add_point_rows(joint_int, oS, body_b[r], -1.0, points[r], directions, r, 1, G)


@step
def point_velocity(joint_int, oS, body, x, v, out):
    """out = velocity of the point x fixed to body (world frame)."""
    out[0] = out[1] = out[2] = 0.0
    j = body
    while j >= 0:
        iv = joint_int[j, I_IDX_V]
        for k in range(iv, iv + joint_int[j, I_NV]):
            s = oS[k]
            out[0] += v[k] * (s[0] + s[4] * x[2] - s[5] * x[1])
            out[1] += v[k] * (s[1] + s[5] * x[0] - s[3] * x[2])
            out[2] += v[k] * (s[2] + s[3] * x[1] - s[4] * x[0])
        j = joint_int[j, I_PARENT]


@kernel
def contact_directions(joint_int, oS, v, contact_int, contact_real, count, va, vb, directions):
    """directions[3c:3c+3] = (n, t1, t2) of contact c: t1 along the relative tangential velocity
    of body a over body b when it slides (so that a pyramidal cone is exact along the slip),
    else any unit vector normal to n; t2 = n x t1."""
    for c in range(count):
        a, b = contact_int[c, 0], contact_int[c, 1]
        x = contact_real[c, 0:3]
        n = contact_real[c, 3:6]
        point_velocity(joint_int, oS, a, x, v, va)
        vb[0] = vb[1] = vb[2] = 0.0
        if b >= 0:
            point_velocity(joint_int, oS, b, x, v, vb)
        rel0, rel1, rel2 = va[0] - vb[0], va[1] - vb[1], va[2] - vb[2]
        vn = rel0 * n[0] + rel1 * n[1] + rel2 * n[2]
        t0, t1, t2 = rel0 - vn * n[0], rel1 - vn * n[1], rel2 - vn * n[2]
        speed = (t0 * t0 + t1 * t1 + t2 * t2) ** 0.5
        if speed < 1e-9:  # not sliding: a fixed perpendicular
            if abs(n[0]) < 0.9:
                t0, t1, t2 = 0.0, n[2], -n[1]   # e_x x n
            else:
                t0, t1, t2 = -n[2], 0.0, n[0]   # e_y x n
            speed = (t0 * t0 + t1 * t1 + t2 * t2) ** 0.5
        t0, t1, t2 = t0 / speed, t1 / speed, t2 / speed
        d = directions[3 * c:3 * c + 3]
        d[0, 0], d[0, 1], d[0, 2] = n[0], n[1], n[2]
        d[1, 0], d[1, 1], d[1, 2] = t0, t1, t2
        d[2, 0] = n[1] * t2 - n[2] * t1
        d[2, 1] = n[2] * t0 - n[0] * t2
        d[2, 2] = n[0] * t1 - n[1] * t0
