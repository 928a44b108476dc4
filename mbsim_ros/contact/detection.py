"""Contact candidates at a configuration: every shape against the ground plane and the static
boxes, and sphere against sphere between different bodies. Exact analytic tests for primitives
(sphere: its centre; box: its 8 corners; cylinder: 8 points on each rim), so a contact is a
point, a unit normal (pushing body a away from b), and a signed distance (negative: overlap).
Pairs farther apart than ``margin`` are dropped; the nearer ones become constraint rows that
only act when the step would close the gap (speculative contacts, no tunnelling)."""
from __future__ import annotations

import math

from .._jit import kernel, step
from .geometry import BOX, CYLINDER, SPHERE

WORLD = -1
RIM_POINTS = 8


@step
def shape_pose(s, body, sR, sp, oR, op, R, p):
    """World pose (R, p) of shape s from its body's world pose (identity for the world)."""
    b = body[s]
    if b < 0:
        for r in range(3):
            p[r] = sp[s, r]
            for c in range(3):
                R[r, c] = sR[s, r, c]
        return
    for r in range(3):
        p[r] = op[b, r] + oR[b, r, 0] * sp[s, 0] + oR[b, r, 1] * sp[s, 1] + oR[b, r, 2] * sp[s, 2]
        for c in range(3):
            R[r, c] = oR[b, r, 0] * sR[s, 0, c] + oR[b, r, 1] * sR[s, 1, c] \
                + oR[b, r, 2] * sR[s, 2, c]


@step
def add_contact(n, a, b, shape, x, y, z, nx, ny, nz, distance, radius, margin, out_int,
                out_real) -> int:
    """Append one contact when distance < margin; returns the new count."""
    if distance >= margin or n >= out_int.shape[0]:
        return n
    out_int[n, 0], out_int[n, 1], out_int[n, 2] = a, b, shape
    row = out_real[n]
    row[0], row[1], row[2] = x, y, z
    row[3], row[4], row[5] = nx, ny, nz
    row[6], row[7] = distance, radius
    return n + 1


@step
def point_on_shape(kind, size, R, p, k, out):
    """Candidate point k of a shape in the world (sphere: centre; box: corner k of 8; cylinder:
    rim point k of 2 * RIM_POINTS)."""
    if kind == BOX:
        lx = size[0] if (k & 1) else -size[0]
        ly = size[1] if (k & 2) else -size[1]
        lz = size[2] if (k & 4) else -size[2]
    elif kind == CYLINDER:
        angle = 2.0 * math.pi * (k % RIM_POINTS) / RIM_POINTS
        lx, ly = size[0] * math.cos(angle), size[0] * math.sin(angle)
        lz = size[1] if k >= RIM_POINTS else -size[1]
    else:
        lx = ly = lz = 0.0
    for r in range(3):
        out[r] = p[r] + R[r, 0] * lx + R[r, 1] * ly + R[r, 2] * lz


@kernel
def detect_contacts(oR, op, body, kind, sR, sp, size, ground, boxes, corner_radius, margin,
                    R, p, R2, p2, x, out_int, out_real) -> int:
    """Fill out_int (max, 3: body a, body b or -1, shape of a) and out_real (max, 8: point,
    normal, signed distance, effective radius); returns the number of contacts.
    ground: (4,) unit normal and height (n . x = height), normal zero for none; boxes: (k, 15)
    static boxes (R row-major, centre, half extents)."""
    n = 0
    ns = body.shape[0]
    has_ground = ground[0] != 0.0 or ground[1] != 0.0 or ground[2] != 0.0
    for s in range(ns):
        if body[s] < 0:
            continue
        shape_pose(s, body, sR, sp, oR, op, R, p)
        k_points = 1 if kind[s] == SPHERE else (8 if kind[s] == BOX else 2 * RIM_POINTS)
        r = size[s, 0] if kind[s] == SPHERE else 0.0
        radius = r if kind[s] == SPHERE else corner_radius
        for k in range(k_points):
            point_on_shape(kind[s], size[s], R, p, k, x)
            if has_ground:
                d = ground[0] * x[0] + ground[1] * x[1] + ground[2] * x[2] - ground[3] - r
                n = add_contact(n, body[s], WORLD, s, x[0] - r * ground[0],
                                x[1] - r * ground[1], x[2] - r * ground[2], ground[0],
                                ground[1], ground[2], d, radius, margin, out_int, out_real)
            for j in range(boxes.shape[0]):
                n = point_box_contact(n, body[s], s, x, r, radius, boxes[j], margin, out_int,
                                      out_real)
        if kind[s] != SPHERE:
            continue
        for s2 in range(s + 1, ns):
            if kind[s2] != SPHERE or body[s2] == body[s] or body[s2] < 0:
                continue
            shape_pose(s2, body, sR, sp, oR, op, R2, p2)
            dx, dy, dz = p[0] - p2[0], p[1] - p2[1], p[2] - p2[2]
            dist = math.sqrt(dx * dx + dy * dy + dz * dz)
            if dist == 0.0:
                continue
            r2 = size[s2, 0]
            nx, ny, nz = dx / dist, dy / dist, dz / dist
            n = add_contact(n, body[s], body[s2], s, p2[0] + nx * r2, p2[1] + ny * r2,
                            p2[2] + nz * r2, nx, ny, nz, dist - r - r2, r * r2 / (r + r2),
                            margin, out_int, out_real)
    return n


@step
def point_box_contact(n, a, s, x, r, radius, box, margin, out_int, out_real) -> int:
    """A point (or sphere of radius r) at x against a static box: the nearest face's outward
    normal and the distance to the box minus r."""
    # local coordinates: l = R^T (x - c)
    l0 = l1 = l2 = 0.0
    for k in range(3):
        d = x[k] - box[9 + k]
        l0 += box[3 * k] * d
        l1 += box[3 * k + 1] * d
        l2 += box[3 * k + 2] * d
    h0, h1, h2 = box[12], box[13], box[14]
    c0, c1, c2 = min(max(l0, -h0), h0), min(max(l1, -h1), h1), min(max(l2, -h2), h2)
    e0, e1, e2 = l0 - c0, l1 - c1, l2 - c2
    outside = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
    if outside > 0.0:
        m0, m1, m2 = e0 / outside, e1 / outside, e2 / outside
        distance = outside - r
    else:  # inside: leave through the nearest face
        g0, g1, g2 = h0 - abs(l0), h1 - abs(l1), h2 - abs(l2)
        m0 = m1 = m2 = 0.0
        if g0 <= g1 and g0 <= g2:
            m0, distance = (1.0 if l0 >= 0 else -1.0), -g0 - r
        elif g1 <= g2:
            m1, distance = (1.0 if l1 >= 0 else -1.0), -g1 - r
        else:
            m2, distance = (1.0 if l2 >= 0 else -1.0), -g2 - r
    nx = box[0] * m0 + box[1] * m1 + box[2] * m2
    ny = box[3] * m0 + box[4] * m1 + box[5] * m2
    nz = box[6] * m0 + box[7] * m1 + box[8] * m2
    return add_contact(n, a, WORLD, s, x[0] - r * nx, x[1] - r * ny, x[2] - r * nz, nx, ny, nz,
                       distance, radius, margin, out_int, out_real)
