"""Contact candidates at a configuration, by exact analytic tests on primitives and on points.
A contact is a point, a unit normal (pushing body a away from body b or the world), a signed
distance (negative: overlap) and an effective radius (Hertz). Pairs farther apart than
``margin`` are dropped; the nearer ones become constraint rows that only act when the step
would close the gap (speculative contacts, no tunnelling).

Every shape has candidate points (geometry.candidate_points: a sphere's centre, a box's 8
corners, 8 points on each cylinder rim, a mesh's hull points). Pairs (docs/COMPLIANT.md):

- each candidate point (a sphere's centre with its radius) against the ground plane, or the
  heightfield (heightfield.py: the triangle under it, the contact normal its normal);
- a sphere, cylinder or mesh point against a box (static, or on another model): exact, the
  box's closest point, or the face of least penetration when inside;
- box against box (static, or on another model): the separating axis of least penetration
  among the 6 face normals and the 9 edge-edge directions (an edge axis only where it beats
  the best face axis by EDGE_PREFERENCE: faces make the steadier manifold); on a face axis
  the other box's most opposed face clipped to that face (vertex-face and face-face contacts),
  without the clipped vertices that lie on an edge between two others (flush edges:
  docs/COMPLIANT.md, "Box against box on flush edges"); on an edge axis one contact where the
  two edges pass closest (edge-edge);
- sphere against sphere on different bodies, sphere against cylinder (exact), mesh point
  against sphere, on different models;
- cylinder against cylinder, box or mesh of another model: the other shape's candidate points
  against the cylinder (exact point-cylinder distances: box corners, rim points, hull points),
  and two cylinders' sides where their axes pass closest (cylinder_sides).
"""
from __future__ import annotations

import math

from .._jit import kernel, routine, step
from .geometry import BOX, CYLINDER, MESH, SPHERE
from .heightfield import terrain_gap

WORLD = -1
MESH_CONTACTS = 8  # a mesh keeps its deepest points per pair (ground, box, sphere)
REDUNDANT = 1e-8  # box_box drops clipped vertices this close (times the face's size) to an edge
# box_box takes an edge-edge axis only where its gap beats the best face axis's by this
# fraction of the face axis's penetration (and 1e-12 m): near ties the face manifold (ODE's
# dBoxBox prefers faces the same way, by 5 %)
EDGE_PREFERENCE = 0.05
PARALLEL = 1e-6  # |a_i x b_j| below this: the edges are parallel, no edge axis


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
    """Append one contact when distance < margin (the other shape -1: the ground; a pair's
    caller sets it, mark_other); returns the new count."""
    if distance >= margin or n >= out_int.shape[0]:
        return n
    out_int[n, 0], out_int[n, 1], out_int[n, 2], out_int[n, 3] = a, b, shape, -1
    row = out_real[n]
    row[0], row[1], row[2] = x, y, z
    row[3], row[4], row[5] = nx, ny, nz
    row[6], row[7] = distance, radius
    return n + 1


@kernel
def detect_contacts(oR, op, body, model, kind, sR, sp, size, first, local, bound, ground,
                    terrain, corner_radius, margin, wR, wp, x, clip, out_int, out_real) -> int:
    """Fill out_int (max, 4: body a, body b or -1, shape of a, the other shape or -1 for the
    ground and the heightfield) and out_real (max, 8: point,
    normal, signed distance, effective radius); returns the number of contacts.
    Shapes (n): body (-1: the world), model (pairs only between different models, but two
    spheres on different bodies), kind, pose in the body frame (sR, sp), size, candidate points
    local[first[s]:first[s + 1]], bound (radius about the shape's origin); ground: (4,) unit
    normal and height (n . x = height), normal zero for none; terrain: the packed heightfield
    (heightfield.py), empty for none. Scratch: wR (n, 3, 3), wp (n, 3)
    (the shapes' world poses), x (3,), clip (2, 16, 3)."""
    ns = body.shape[0]
    for s in range(ns):
        shape_pose(s, body, sR, sp, oR, op, wR[s], wp[s])
    n = ns - ns  # an int64 zero: for a literal 0 numba compiles each callee twice (+6 s)
    for s in range(ns):
        if body[s] >= 0:
            n = shape_points_contacts(n, s, body, model, kind, size, first, local, bound, ground,
                                      terrain, corner_radius, margin, wR, wp, x, out_int,
                                      out_real)
            n = shape_pair_contacts(n, s, body, model, kind, size, bound, corner_radius, margin,
                                    wR, wp, clip, out_int, out_real)
    return n


@routine
def shape_points_contacts(n, s, body, model, kind, size, first, local, bound, ground, terrain,
                          corner_radius, margin, wR, wp, x, out_int, out_real) -> int:
    """The candidate points of moving shape s against the ground and the terrain, and against
    the boxes (but a box's corners: box_box), spheres (a mesh's points) and cylinders (every
    shape's: a sphere exact, a box's corners, a cylinder's rims, a mesh's hull points) of
    other models within reach."""
    r = size[s, 0] if kind[s] == SPHERE else 0.0
    radius = r if kind[s] == SPHERE else corner_radius
    keep = MESH_CONTACTS if kind[s] == MESH else first[s + 1] - first[s]
    if ground[0] != 0.0 or ground[1] != 0.0 or ground[2] != 0.0:
        start = n
        for k in range(first[s], first[s + 1]):
            point_in_world(wR[s], wp[s], local[k], x)
            d = ground[0] * x[0] + ground[1] * x[1] + ground[2] * x[2] - ground[3] - r
            n = add_contact(n, body[s], WORLD, s, x[0] - r * ground[0], x[1] - r * ground[1],
                            x[2] - r * ground[2], ground[0], ground[1], ground[2], d, radius,
                            margin, out_int, out_real)
        n = keep_deepest(start, n, keep, out_int, out_real)
    if terrain.shape[0]:
        start = n
        for k in range(first[s], first[s + 1]):
            point_in_world(wR[s], wp[s], local[k], x)
            d, nx, ny, nz = terrain_gap(terrain, x)
            n = add_contact(n, body[s], WORLD, s, x[0] - r * nx, x[1] - r * ny, x[2] - r * nz,
                            nx, ny, nz, d - r, radius, margin, out_int, out_real)
        n = keep_deepest(start, n, keep, out_int, out_real)
    for s2 in range(body.shape[0]):
        if model[s2] == model[s] or body[s2] == body[s] or kind[s2] == MESH \
                or (kind[s2] == BOX and kind[s] == BOX) \
                or (kind[s2] == SPHERE and kind[s] != MESH):
            continue  # (boxes: box_box; a sphere's own pairs from its side)
        reach = bound[s] + bound[s2] + margin
        dx, dy, dz = wp[s, 0] - wp[s2, 0], wp[s, 1] - wp[s2, 1], wp[s, 2] - wp[s2, 2]
        if dx * dx + dy * dy + dz * dz > reach * reach:
            continue
        start = n
        for k in range(first[s], first[s + 1]):
            point_in_world(wR[s], wp[s], local[k], x)
            if kind[s2] == BOX:
                n = point_box_contact(n, body[s], body[s2], s, x, r, radius, wR[s2], wp[s2],
                                      size[s2], margin, out_int, out_real)
            elif kind[s2] == CYLINDER:
                n = sphere_cylinder_contact(n, body[s], body[s2], s, x, r, radius, wR[s2],
                                            wp[s2], size[s2], margin, out_int, out_real)
            else:  # a mesh point against a sphere
                dx, dy, dz = x[0] - wp[s2, 0], x[1] - wp[s2, 1], x[2] - wp[s2, 2]
                dist = math.sqrt(dx * dx + dy * dy + dz * dz)
                if dist > 0.0:
                    n = add_contact(n, body[s], body[s2], s, x[0], x[1], x[2], dx / dist,
                                    dy / dist, dz / dist, dist - size[s2, 0], corner_radius,
                                    margin, out_int, out_real)
        n = keep_deepest(start, n, keep, out_int, out_real)
        mark_other(start, n, s, s2, out_int)
    return n


@step
def mark_other(start, n, s, s2, out_int):
    """Contacts start..n-1 are between shapes s and s2: each one's other shape (column 3) is
    the one that is not its own (column 2)."""
    for k in range(start, n):
        out_int[k, 3] = s2 if out_int[k, 2] == s else s


@step
def keep_deepest(start, n, keep, out_int, out_real) -> int:
    """Of the contacts start..n-1 keep the ``keep`` with the smallest distance (a selection
    sort of that block's first rows); returns the new count."""
    if n - start <= keep:
        return n
    for i in range(start, start + keep):
        j_min = i
        for j in range(i + 1, n):
            if out_real[j, 6] < out_real[j_min, 6]:
                j_min = j
        if j_min != i:
            for c in range(4):
                out_int[i, c], out_int[j_min, c] = out_int[j_min, c], out_int[i, c]
            for c in range(8):
                out_real[i, c], out_real[j_min, c] = out_real[j_min, c], out_real[i, c]
    return start + keep


@step
def point_in_world(R, p, local, x):
    """x = p + R local."""
    for i in range(3):
        x[i] = p[i] + R[i, 0] * local[0] + R[i, 1] * local[1] + R[i, 2] * local[2]


@routine
def shape_pair_contacts(n, s, body, model, kind, size, bound, corner_radius, margin, wR, wp,
                        clip, out_int, out_real) -> int:
    """Moving shape s against whole shapes: sphere-sphere (different bodies), box-box and
    cylinder-cylinder sides (different models), each pair once."""
    if kind[s] != SPHERE and kind[s] != BOX and kind[s] != CYLINDER:
        return n
    p = wp[s]
    for s2 in range(body.shape[0]):
        if kind[s2] != kind[s] or body[s2] == body[s] or (s2 < s and body[s2] >= 0):
            continue
        dx, dy, dz = p[0] - wp[s2, 0], p[1] - wp[s2, 1], p[2] - wp[s2, 2]
        if dx * dx + dy * dy + dz * dz > (bound[s] + bound[s2] + margin) ** 2:
            continue
        if kind[s] == BOX:
            if model[s2] != model[s]:
                start = n
                n = box_box(n, s, s2, body, wR, wp, size, corner_radius, margin, clip, out_int,
                            out_real)
                mark_other(start, n, s, s2, out_int)
            continue
        if kind[s] == CYLINDER:
            if model[s2] != model[s]:
                start = n
                n = cylinder_sides(n, s, s2, body, wR, wp, size, margin, out_int, out_real)
                mark_other(start, n, s, s2, out_int)
            continue
        if body[s2] < 0:
            continue
        dist = math.sqrt(dx * dx + dy * dy + dz * dz)
        if dist == 0.0:
            continue
        r, r2 = size[s, 0], size[s2, 0]
        nx, ny, nz = dx / dist, dy / dist, dz / dist
        q = wp[s2]
        start = n
        n = add_contact(n, body[s], body[s2], s, q[0] + nx * r2, q[1] + ny * r2,
                        q[2] + nz * r2, nx, ny, nz, dist - r - r2, r * r2 / (r + r2),
                        margin, out_int, out_real)
        mark_other(start, n, s, s2, out_int)
    return n


@step
def cylinder_sides(n, sa, sb, body, wR, wp, size, margin, out_int, out_real) -> int:
    """The sides of cylinders sa and sb (axes their frames' z): where the two axis segments
    pass closest at points inside both (Ericson 2005, Real-Time Collision Detection, 5.1.9;
    parallel axes: the middle of the segments' overlap), a contact at the distance of those
    points less both radii, the normal along them (b to a), the point on b's side, the radius
    r_a r_b / (r_a + r_b). Rims and caps are the candidate points' (shape_points_contacts)."""
    Ra, Rb = wR[sa], wR[sb]
    ra, ha, rb, hb = size[sa, 0], size[sa, 1], size[sb, 0], size[sb, 1]
    a0, a1, a2 = Ra[0, 2], Ra[1, 2], Ra[2, 2]
    b0, b1, b2 = Rb[0, 2], Rb[1, 2], Rb[2, 2]
    w0, w1, w2 = wp[sa, 0] - wp[sb, 0], wp[sa, 1] - wp[sb, 1], wp[sa, 2] - wp[sb, 2]
    c = a0 * b0 + a1 * b1 + a2 * b2
    e, f = a0 * w0 + a1 * w1 + a2 * w2, b0 * w0 + b1 * w1 + b2 * w2
    denominator = 1.0 - c * c
    if denominator > 1e-12:  # s along a, t along b: the closest points of the two lines
        s = (c * f - e) / denominator
    else:  # parallel: the middle of b's segment's overlap with a's, along a
        lo, hi = -e - hb * abs(c), -e + hb * abs(c)
        lo, hi = max(lo, -ha), min(hi, ha)
        if lo > hi:
            return n
        s = 0.5 * (lo + hi)
    t = f + c * s
    if abs(s) > ha or abs(t) > hb:
        return n
    d0, d1, d2 = w0 + s * a0 - t * b0, w1 + s * a1 - t * b1, w2 + s * a2 - t * b2
    dist = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if dist == 0.0:
        return n
    m0, m1, m2 = d0 / dist, d1 / dist, d2 / dist
    return add_contact(n, body[sa], body[sb], sa, wp[sb, 0] + t * b0 + rb * m0,
                       wp[sb, 1] + t * b1 + rb * m1, wp[sb, 2] + t * b2 + rb * m2, m0, m1, m2,
                       dist - ra - rb, ra * rb / (ra + rb), margin, out_int, out_real)


@step
def add_sphere_contact(n, a, b, s, x, r, R, m0, m1, m2, distance, radius, margin, out_int,
                       out_real) -> int:
    """Append the contact of a sphere (centre x, radius r) whose normal is (m0, m1, m2) in the
    frame R of the shape it meets: the point on the sphere's surface along -normal."""
    nx = R[0, 0] * m0 + R[0, 1] * m1 + R[0, 2] * m2
    ny = R[1, 0] * m0 + R[1, 1] * m1 + R[1, 2] * m2
    nz = R[2, 0] * m0 + R[2, 1] * m1 + R[2, 2] * m2
    return add_contact(n, a, b, s, x[0] - r * nx, x[1] - r * ny, x[2] - r * nz, nx, ny, nz,
                       distance, radius, margin, out_int, out_real)


@step
def point_box_contact(n, a, b, s, x, r, radius, R, c, h, margin, out_int, out_real) -> int:
    """A point (or sphere of radius r) at x against the box (R, centre c, half extents h): the
    box's closest point, or, inside, the nearest face's outward normal; distance minus r."""
    l0 = l1 = l2 = 0.0   # local coordinates: l = R^T (x - c)
    for k in range(3):
        d = x[k] - c[k]
        l0 += R[k, 0] * d
        l1 += R[k, 1] * d
        l2 += R[k, 2] * d
    h0, h1, h2 = h[0], h[1], h[2]
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
    return add_sphere_contact(n, a, b, s, x, r, R, m0, m1, m2, distance, radius, margin,
                              out_int, out_real)


@step
def sphere_cylinder_contact(n, a, b, s, x, r, radius, R, c, size, margin, out_int,
                            out_real) -> int:
    """A sphere (centre x, radius r; r = 0: a point) against a cylinder (R, centre c, radius
    and half length in size, axis R's z): exact closest point; inside, the nearer of the side
    and the caps; ``radius`` the contact's (Hertz)."""
    l0 = l1 = l2 = 0.0
    for k in range(3):
        d = x[k] - c[k]
        l0 += R[k, 0] * d
        l1 += R[k, 1] * d
        l2 += R[k, 2] * d
    rc, hl = size[0], size[1]
    rho = math.sqrt(l0 * l0 + l1 * l1)
    u0, u1 = (l0 / rho, l1 / rho) if rho > 0.0 else (1.0, 0.0)
    radial, axial = rho - rc, abs(l2) - hl
    if radial <= 0.0 and axial <= 0.0:  # centre inside: leave through the nearer surface
        if axial >= radial:
            m0, m1, m2, distance = 0.0, 0.0, (1.0 if l2 >= 0 else -1.0), axial - r
        else:
            m0, m1, m2, distance = u0, u1, 0.0, radial - r
    else:
        cr, cz = min(rho, rc), min(max(l2, -hl), hl)
        e0, e1, e2 = l0 - cr * u0, l1 - cr * u1, l2 - cz
        gap = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
        m0, m1, m2, distance = e0 / gap, e1 / gap, e2 / gap, gap - r
    return add_sphere_contact(n, a, b, s, x, r, R, m0, m1, m2, distance, radius, margin,
                              out_int, out_real)


@routine
def box_box(n, sa, sb, body, wR, wp, size, corner_radius, margin, clip, out_int,
            out_real) -> int:
    """Box sa (moving) against box sb (the separating axis test, Gottschalk, Lin and Manocha 1996,
    OBBTree, over the 15 axes): of the 6 face normals, the axis of least penetration (largest
    gap) separates them; the face of that axis (the reference face) clips the other box's
    most opposed face (the incident face, Sutherland-Hodgman), and the clipped vertices are
    contacts at their signed distance from the reference face, but those within REDUNDANT of
    the face's size of the segment between their neighbours (drop_redundant_vertices: where
    edges lie flush on the clipping lines, rounding makes them). Where an edge-edge axis
    separates them better (edge_edge_axis), the contact is the one where those edges pass
    closest (edge_edge_contact) instead."""
    Ra, pa, ha, Rb, pb, hb = wR[sa], wp[sa], size[sa], wR[sb], wp[sb], size[sb]
    d0, d1, d2 = pa[0] - pb[0], pa[1] - pb[1], pa[2] - pb[2]
    best_gap, best, best_sign = -math.inf, 0, 1.0
    for axis in range(6):
        U = Rb if axis < 3 else Ra
        i = axis % 3
        u0, u1, u2 = U[0, i], U[1, i], U[2, i]
        gap = axis_gap(u0, u1, u2, d0, d1, d2, Ra, ha, Rb, hb)
        if gap > best_gap + 1e-9:  # ties: b's faces first
            along = d0 * u0 + d1 * u1 + d2 * u2
            best_gap, best, best_sign = gap, axis, (1.0 if along >= 0 else -1.0)
    edge_gap, edge = edge_edge_axis(d0, d1, d2, Ra, ha, Rb, hb)
    if edge_gap > best_gap + EDGE_PREFERENCE * max(-best_gap, 0.0) + 1e-12:
        if edge_gap >= margin:
            return n
        start = n
        n = edge_edge_contact(n, sa, sb, body, Ra, pa, ha, Rb, pb, hb, edge // 3, edge % 3,
                              edge_gap, corner_radius, margin, out_int, out_real)
        if n > start:
            return n  # (else its closest points are off the edges: the face manifold below)
    if best_gap >= margin:
        return n
    i_ref = best % 3
    if best < 3:   # b's face towards a: normal n = m (b to a)
        Rr, pr, hr, Ri, pi, hi, face = Rb, pb, hb, Ra, pa, ha, best_sign
    else:          # a's face towards b: m = -n
        Rr, pr, hr, Ri, pi, hi, face = Ra, pa, ha, Rb, pb, hb, -best_sign
    m0, m1, m2 = face * Rr[0, i_ref], face * Rr[1, i_ref], face * Rr[2, i_ref]
    n_sign = 1.0 if best < 3 else -1.0   # n = n_sign * m
    # the incident face: the other box's face most opposed to m
    k_inc, most = 0, -1.0
    for k in range(3):
        dot = abs(Ri[0, k] * m0 + Ri[1, k] * m1 + Ri[2, k] * m2)
        if dot > most:
            k_inc, most = k, dot
    f = -1.0 if Ri[0, k_inc] * m0 + Ri[1, k_inc] * m1 + Ri[2, k_inc] * m2 > 0 else 1.0
    k1, k2 = (k_inc + 1) % 3, (k_inc + 2) % 3
    i1, i2 = (i_ref + 1) % 3, (i_ref + 2) % 3
    # reference face centre; incident quad in its (u, v, depth) coordinates
    c0 = pr[0] + hr[i_ref] * m0
    c1 = pr[1] + hr[i_ref] * m1
    c2 = pr[2] + hr[i_ref] * m2
    quad = clip[0]
    for corner in range(4):
        s1 = 1.0 if corner == 0 or corner == 3 else -1.0
        s2 = 1.0 if corner < 2 else -1.0
        y0 = pi[0] + f * hi[k_inc] * Ri[0, k_inc] + s1 * hi[k1] * Ri[0, k1] \
            + s2 * hi[k2] * Ri[0, k2] - c0
        y1 = pi[1] + f * hi[k_inc] * Ri[1, k_inc] + s1 * hi[k1] * Ri[1, k1] \
            + s2 * hi[k2] * Ri[1, k2] - c1
        y2 = pi[2] + f * hi[k_inc] * Ri[2, k_inc] + s1 * hi[k1] * Ri[2, k1] \
            + s2 * hi[k2] * Ri[2, k2] - c2
        quad[corner, 0] = y0 * Rr[0, i1] + y1 * Rr[1, i1] + y2 * Rr[2, i1]
        quad[corner, 1] = y0 * Rr[0, i2] + y1 * Rr[1, i2] + y2 * Rr[2, i2]
        quad[corner, 2] = y0 * m0 + y1 * m1 + y2 * m2
    count = 4
    for side in range(4):  # |u| <= hr[i1], |v| <= hr[i2]
        count = clip_polygon(clip[side % 2], count, clip[(side + 1) % 2], side // 2,
                             1.0 if side % 2 == 0 else -1.0, hr[i1] if side < 2 else hr[i2])
    out = clip[0]
    count = drop_redundant_vertices(out, count, REDUNDANT * (hr[i1] + hr[i2]))
    for j in range(count):
        u, v, depth = out[j, 0], out[j, 1], out[j, 2]
        x0 = c0 + u * Rr[0, i1] + v * Rr[0, i2] + depth * m0
        x1 = c1 + u * Rr[1, i1] + v * Rr[1, i2] + depth * m1
        x2 = c2 + u * Rr[2, i1] + v * Rr[2, i2] + depth * m2
        n = add_contact(n, body[sa], body[sb], sa, x0, x1, x2, n_sign * m0, n_sign * m1,
                        n_sign * m2, depth, corner_radius, margin, out_int, out_real)
    return n


@step
def axis_gap(u0, u1, u2, d0, d1, d2, Ra, ha, Rb, hb) -> float:
    """The gap of boxes (Ra, ha) and (Rb, hb), centres d = pa - pb apart, along the unit axis
    u: |d . u| less the two boxes' half extents along u (negative: overlap)."""
    extent = 0.0
    for k in range(3):
        extent += ha[k] * abs(u0 * Ra[0, k] + u1 * Ra[1, k] + u2 * Ra[2, k]) \
            + hb[k] * abs(u0 * Rb[0, k] + u1 * Rb[1, k] + u2 * Rb[2, k])
    return abs(d0 * u0 + d1 * u1 + d2 * u2) - extent


@step
def edge_axis(Ra, Rb, i, j) -> tuple:
    """a_i x b_j (the columns of Ra and Rb) and its length."""
    u0 = Ra[1, i] * Rb[2, j] - Ra[2, i] * Rb[1, j]
    u1 = Ra[2, i] * Rb[0, j] - Ra[0, i] * Rb[2, j]
    u2 = Ra[0, i] * Rb[1, j] - Ra[1, i] * Rb[0, j]
    return u0, u1, u2, math.sqrt(u0 * u0 + u1 * u1 + u2 * u2)


@step
def edge_edge_axis(d0, d1, d2, Ra, ha, Rb, hb) -> tuple:
    """(largest gap, 3 i + j) over the 9 axes a_i x b_j of edge pairs that are not parallel
    (|a_i x b_j| >= PARALLEL); (-inf, 0) when all are."""
    best_gap, best = -math.inf, 0
    for i in range(3):
        for j in range(3):
            u0, u1, u2, norm = edge_axis(Ra, Rb, i, j)
            if norm < PARALLEL:
                continue
            gap = axis_gap(u0 / norm, u1 / norm, u2 / norm, d0, d1, d2, Ra, ha, Rb, hb)
            if gap > best_gap:
                best_gap, best = gap, 3 * i + j
    return best_gap, best


@step
def edge_edge_contact(n, sa, sb, body, Ra, pa, ha, Rb, pb, hb, i, j, gap, radius, margin,
                      out_int, out_real) -> int:
    """The contact of box a's edge along a_i with box b's edge along b_j on their axis
    u = a_i x b_j: the normal m = +-u from b to a; a's edge the one of its four along a_i
    farthest towards b (its other coordinates -h sign(m . a_k)), b's the one farthest towards
    a; the contact at the point of a's edge closest to b's (the closest points of two lines),
    at the axis's gap. Appends nothing when a closest point falls off its edge (beyond its end
    by 1e-9 of the edge): then the deepest features are not these edges."""
    u0, u1, u2, norm = edge_axis(Ra, Rb, i, j)
    sign = 1.0 if (pa[0] - pb[0]) * u0 + (pa[1] - pb[1]) * u1 + (pa[2] - pb[2]) * u2 >= 0 \
        else -1.0
    m0, m1, m2 = sign * u0 / norm, sign * u1 / norm, sign * u2 / norm
    ea0, ea1, ea2 = pa[0], pa[1], pa[2]  # a point of each edge (its middle)
    eb0, eb1, eb2 = pb[0], pb[1], pb[2]
    for k in range(3):
        if k != i:
            s = -ha[k] if m0 * Ra[0, k] + m1 * Ra[1, k] + m2 * Ra[2, k] > 0 else ha[k]
            ea0, ea1, ea2 = ea0 + s * Ra[0, k], ea1 + s * Ra[1, k], ea2 + s * Ra[2, k]
        if k != j:
            s = hb[k] if m0 * Rb[0, k] + m1 * Rb[1, k] + m2 * Rb[2, k] > 0 else -hb[k]
            eb0, eb1, eb2 = eb0 + s * Rb[0, k], eb1 + s * Rb[1, k], eb2 + s * Rb[2, k]
    # lines ea + s a_i, eb + t b_j: s = (c e - d) / (1 - c^2), t = (e - c d) / (1 - c^2)
    w0, w1, w2 = ea0 - eb0, ea1 - eb1, ea2 - eb2
    c = Ra[0, i] * Rb[0, j] + Ra[1, i] * Rb[1, j] + Ra[2, i] * Rb[2, j]
    d = Ra[0, i] * w0 + Ra[1, i] * w1 + Ra[2, i] * w2
    e = Rb[0, j] * w0 + Rb[1, j] * w1 + Rb[2, j] * w2
    s, t = (c * e - d) / (norm * norm), (e - c * d) / (norm * norm)
    if abs(s) > ha[i] * (1.0 + 1e-9) or abs(t) > hb[j] * (1.0 + 1e-9):
        return n
    return add_contact(n, body[sa], body[sb], sa, ea0 + s * Ra[0, i], ea1 + s * Ra[1, i],
                       ea2 + s * Ra[2, i], m0, m1, m2, gap, radius, margin, out_int, out_real)


@step
def drop_redundant_vertices(poly, count, eps) -> int:
    """Drop from the convex polygon poly[:count] (rows u, v, depth; in order, as clip_polygon
    leaves it) every vertex within eps of the segment between its neighbours, near-duplicates
    included, until none is (at least 2 stay); returns its vertex count. Each drop moves the
    polygon by at most eps, and a dropped vertex's contact is a convex combination of its
    neighbours' (same normal, depth linear along the edge): the set is the same support,
    without the vertices that rounding makes where an incident edge lies on a clipping line
    (flush, coplanar edges: Sutherland-Hodgman's intersection of two nearly parallel lines
    slides along the edge with the rounding, and a corner a rounding error outside becomes two
    points; Ericson 2005, Real-Time Collision Detection, ch. 8 on clipping against planes
    thickened by an epsilon, ch. 11 on robustness)."""
    j, checked = 0, 0
    while count > 2 and checked < count:
        i, k = (j + count - 1) % count, (j + 1) % count
        if segment_distance(poly[j], poly[i], poly[k]) <= eps:
            for r in range(j, count - 1):
                for c in range(3):
                    poly[r, c] = poly[r + 1, c]
            count -= 1
            j, checked = (j if j < count else 0), 0
        else:
            j, checked = (j + 1) % count, checked + 1
    return count


@step
def segment_distance(x, a, b) -> float:
    """The distance of point x from the segment a-b (3-vectors)."""
    e0, e1, e2 = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    w0, w1, w2 = x[0] - a[0], x[1] - a[1], x[2] - a[2]
    length2 = e0 * e0 + e1 * e1 + e2 * e2
    t = 0.0 if length2 == 0.0 else min(max((w0 * e0 + w1 * e1 + w2 * e2) / length2, 0.0), 1.0)
    w0, w1, w2 = w0 - t * e0, w1 - t * e1, w2 - t * e2
    return math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)


@step
def clip_polygon(poly, count, out, axis, sign, limit) -> int:
    """Sutherland-Hodgman: the part of polygon poly[:count] (rows u, v, depth) where
    sign * row[axis] <= limit, into out; returns its vertex count."""
    m = 0
    for j in range(count):
        k = (j + 1) % count
        dp = sign * poly[j, axis] - limit
        dq = sign * poly[k, axis] - limit
        if dp <= 0.0:
            for c in range(3):
                out[m, c] = poly[j, c]
            m += 1
        if (dp <= 0.0) != (dq <= 0.0):
            t = dp / (dp - dq)
            for c in range(3):
                out[m, c] = poly[j, c] + t * (poly[k, c] - poly[j, c])
            m += 1
    return m
