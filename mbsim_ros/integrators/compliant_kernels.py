"""Compiled pieces of the compliant step (docs/COMPLIANT.md) over preallocated arrays: the
joint-space inertia factored with the tree's sparsity, the Delassus matrix W = G M~^-1 G^T from
it, and the contact and joint-limit rows with their spring-damper laws.

M = L^T L with L lower triangular and L[i, j] != 0 only for j an ancestor of i: Featherstone's
LTL factorization (Rigid Body Dynamics Algorithms, Sec. 6.5, Table 6.3), no fill-in, so a forest
of free bodies costs O(n) and a chain O(n d). Then G M^-1 G^T = Z Z^T with L^T z_r = g_r: each
z_r keeps the support of g_r (the DOFs between the contact's bodies and their roots).
"""
from __future__ import annotations

import math

import numpy as np

from .._jit import kernel, step
from ..codes import BILATERAL, FRICTION, NORMAL, TANGENT, UNILATERAL
from ..contact.jacobian import add_point_rows, contact_directions, point_velocity
from ..model.model import FREE_FLYER, I_IDX_V, I_NV, I_PARENT, I_TYPE
from ..solvers.lu import lu_factor
from ..solvers.tree_lu import solve_l, step_solve, tree_lu_factor
from .servo import servo_saturation, servo_terms


def dof_parents(joint_int: np.ndarray) -> np.ndarray:
    """lambda(i) of every DOF: the previous DOF of its joint, else the last DOF of the parent
    joint, -1 at a root."""
    nv = int(sum(joint_int[:, I_NV]))
    parent = np.full(nv, -1, dtype=np.int64)
    for j in range(joint_int.shape[0]):
        iv, count, p = joint_int[j, I_IDX_V], joint_int[j, I_NV], joint_int[j, I_PARENT]
        for k in range(count):
            if k > 0:
                parent[iv + k] = iv + k - 1
            elif p >= 0:
                parent[iv] = joint_int[p, I_IDX_V] + joint_int[p, I_NV] - 1
    return parent


@kernel
def ltl_factor(M, parent) -> bool:
    """M <- L in place (lower triangle), M = L^T L (RBDA Table 6.3); False if M is not
    positive definite."""
    for k in range(M.shape[0] - 1, -1, -1):
        if not (M[k, k] > 0.0):
            return False
        M[k, k] = math.sqrt(M[k, k])
        i = parent[k]
        while i >= 0:
            M[k, i] /= M[k, k]
            i = parent[i]
        i = parent[k]
        while i >= 0:
            j = i
            while j >= 0:
                M[i, j] -= M[k, i] * M[k, j]
                j = parent[j]
            i = parent[i]
    return True


@step
def solve_lt(L, parent, x):
    """x <- L^-T x (backward over the tree)."""
    for i in range(x.shape[0] - 1, -1, -1):
        x[i] /= L[i, i]
        j = parent[i]
        while j >= 0:
            x[j] -= L[i, j] * x[i]
            j = parent[j]


@kernel
def damped_system(damping, h, v, tau, bias, M, force):
    """M <- M~ = M + h D and force = tau - b - D v (D: diagonal joint damping)."""
    for i in range(v.shape[0]):
        M[i, i] += h * damping[i]
        force[i] = tau[i] - bias[i] - damping[i] * v[i]


@kernel
def free_velocity(L, parent, v, force, h, v_star):
    """v* = v + h M~^-1 force (force is overwritten)."""
    solve_lt(L, parent, force)
    solve_l(L, parent, force)
    for i in range(v.shape[0]):
        v_star[i] = v[i] + h * force[i]


@step
def step_matrix(joint_int, h, v, dB, M, K, force, with_force):
    """K = M~ + h dB/dv - h M~ dc/dv (M~: M with the step's damping and servo terms; c: each
    free-flyer's frame-rate term w x v_lin, which the explicit step adds to v*
    (frame_rate_correction) and which is linearised here with the rest, dc/dv = [[w]x,
    -[v_lin]x] on the free-flyer's (linear; linear, angular) block); with_force: force +=
    M~ c too."""
    nv = v.shape[0]
    for i in range(nv):
        for j in range(nv):
            K[i, j] = M[i, j] + h * dB[i, j]
    for joint in range(joint_int.shape[0]):
        if joint_int[joint, I_TYPE] != FREE_FLYER:
            continue
        iv = joint_int[joint, I_IDX_V]
        u0, u1, u2 = v[iv], v[iv + 1], v[iv + 2]
        w0, w1, w2 = v[iv + 3], v[iv + 4], v[iv + 5]
        c0, c1, c2 = w1 * u2 - w2 * u1, w2 * u0 - w0 * u2, w0 * u1 - w1 * u0
        for i in range(nv):
            m0, m1, m2 = M[i, iv], M[i, iv + 1], M[i, iv + 2]
            if with_force:
                force[i] += m0 * c0 + m1 * c1 + m2 * c2
            K[i, iv] -= h * (m1 * w2 - m2 * w1)      # row i of M~'s linear columns times [w]x
            K[i, iv + 1] -= h * (m2 * w0 - m0 * w2)
            K[i, iv + 2] -= h * (m0 * w1 - m1 * w0)
            K[i, iv + 3] -= h * (m2 * u1 - m1 * u2)  # ... times -[v_lin]x
            K[i, iv + 4] -= h * (m0 * u2 - m2 * u0)
            K[i, iv + 5] -= h * (m1 * u0 - m0 * u1)


@kernel
def implicit_system(joint_int, parent, h, v, dB, M, K, pivots, force) -> bool:
    """The linearly implicit step's matrix K and force += M~ c (step_matrix), K factored in
    place (pivots) leaf first without fill-in (solvers/tree_lu.py: K couples a dof only with
    its ancestors and descendants), or by LU with partial pivoting where that meets a pivot
    that is not positive. False when K is singular."""
    step_matrix(joint_int, h, v, dB, M, K, force, True)
    if tree_lu_factor(K, parent, pivots):
        return True
    step_matrix(joint_int, h, v, dB, M, K, force, False)  # (K partly eliminated)
    return lu_factor(K, pivots)


@kernel
def implicit_free_velocity(K, pivots, parent, v, force, h, v_star):
    """v* = v + h K^-1 force from implicit_system's factors (force is overwritten)."""
    step_solve(K, pivots, parent, force)
    for i in range(v.shape[0]):
        v_star[i] = v[i] + h * force[i]


@kernel
def implicit_impulses(G, gamma, m, K, pivots, parent, v_star, v_out):
    """v_out = v* + K^-1 G^T gamma: the impulses through the implicit step's matrix (its
    factors from implicit_system), so that they meet the same linearised velocity terms as
    the free motion."""
    nv = v_star.shape[0]
    for i in range(nv):
        s = 0.0
        for r in range(m):
            s += G[r, i] * gamma[r]
        v_out[i] = s
    step_solve(K, pivots, parent, v_out)
    for i in range(nv):
        v_out[i] += v_star[i]


@kernel
def delassus(L, parent, G, m, v_star, Z, support, support_size, W, u):
    """Z[:m] (rows z_r: L^T z_r = g_r), their supports, W[:m, :m] = Z Z^T and u = G v*. The
    solve skips a row's zero entries (a zero moves no ancestor): the entries off a support,
    zeros either way, are read only as the zero products in W's sums."""
    nv = L.shape[0]
    for r in range(m):
        z = Z[r]
        s = 0.0
        for i in range(nv):
            z[i] = G[r, i]
            s += G[r, i] * v_star[i]
        u[r] = s
        for i in range(nv - 1, -1, -1):  # z <- L^-T z (solve_lt), past the zero entries
            if z[i] == 0.0:  # (a zero stays zero and moves no ancestor)
                continue
            z[i] /= L[i, i]
            j = parent[i]
            while j >= 0:
                z[j] -= L[i, j] * z[i]
                j = parent[j]
        count = 0
        for i in range(nv):
            if z[i] != 0.0:
                support[r, count] = i
                count += 1
        support_size[r] = count
    for r in range(m):
        for c in range(r + 1):
            s = 0.0
            for a in range(support_size[r]):
                i = support[r, a]
                s += Z[r, i] * Z[c, i]
            W[r, c] = s
            W[c, r] = s


@kernel
def apply_impulses(L, parent, Z, support, support_size, gamma, m, v_star, v_out):
    """v_out = v* + M~^-1 G^T gamma = v* + L^-1 Z^T gamma."""
    nv = L.shape[0]
    for i in range(nv):
        v_out[i] = 0.0
    for r in range(m):
        g = gamma[r]
        for a in range(support_size[r]):
            i = support[r, a]
            v_out[i] += Z[r, i] * g
    solve_l(L, parent, v_out)
    for i in range(nv):
        v_out[i] += v_star[i]


@kernel
def contact_rows(joint_int, oS, v, contact_int, contact_real, n, friction, stiffness,
                 damping, e_star, dissipation, reference_depth, shape_k, shape_b, va, vb,
                 directions, G, phi, kind, k, b, mu):
    """Rows 3c, 3c + 1, 3c + 2 of contact c: normal, t1 (along the slip), t2. The normal law:
    the shape's own spring-damper where it has one (shape_k finite: elastic-foundation
    elements, k_e = E A_e / depth), else a plain stiffness (stiffness >= 0) or Hertz's secant
    stiffness 4/3 E* sqrt(R delta) at delta = max(depth, reference depth) with Hunt-Crossley
    damping dissipation * k * delta plus damping; no damping before touching (the row then only
    stops the gap from closing)."""
    contact_directions(joint_int, oS, v, contact_int, contact_real, n, va, vb, directions)
    nv = G.shape[1]
    for c in range(n):
        a, other = contact_int[c, 0], contact_int[c, 1]
        x = contact_real[c, 0:3]
        distance, radius = contact_real[c, 6], contact_real[c, 7]
        depth = max(-distance, reference_depth)
        own = contact_int[c, 2]
        if math.isfinite(shape_k[own]):
            kn = shape_k[own]
            bn = shape_b[own] if distance < 0.0 else 0.0
        elif stiffness >= 0.0:
            kn = stiffness
            bn = damping if distance < 0.0 else 0.0
        else:
            kn = 4.0 / 3.0 * e_star * math.sqrt(radius * depth)
            bn = dissipation * kn * depth + damping if distance < 0.0 else 0.0
        for d in range(3):
            r = 3 * c + d
            for i in range(nv):
                G[r, i] = 0.0
            phi[r] = distance if d == 0 else 0.0
            kind[r] = NORMAL if d == 0 else TANGENT
            k[r] = kn if d == 0 else 0.0
            b[r] = bn if d == 0 else 0.0
            mu[r] = friction if d == 0 else 0.0
        add_point_rows(joint_int, oS, a, 1.0, x, directions, 3 * c, 3, G)
        if other >= 0:
            add_point_rows(joint_int, oS, other, -1.0, x, directions, 3 * c, 3, G)


@kernel
def limit_rows(q, v, iq, iv, lower, upper, margin, h, stiffness, damping, rate, recovery,
               start, G, phi, kind, k, b, mu) -> int:
    """Rows (+-e_iv) of the joint limits within reach of this step (margin plus h |v|), from
    row start; returns the new row count. A limit in reach is a unilateral row with its gap (a
    joint whose limits coincide: one two-sided row, the two would be redundant). A
    limit violated by more than a rounding deadband is recovered at a bounded rate instead of in
    one step: a two-sided row whose target velocity out of the violation is min(-gap / T,
    v_max) (recovery = (T, v_max, deadband); rate: how fast the solve removes a row's phi, 1/h
    for rigid rows, ERP / h in the rigid integrator, 0: no recovery; the row's phi is then
    -target / rate). Docs: COMPLIANT.md, "Joint limits, joint friction and joint servos".
    """
    r = start
    nv = G.shape[1]
    for a in range(iq.shape[0]):
        i, j = iq[a], iv[a]
        watch = margin + h * abs(v[j])
        if upper[i] <= lower[i]:  # a joint locked by its limits: one two-sided row
            if abs(q[i] - lower[i]) < watch:
                for c in range(nv):
                    G[r, c] = 0.0
                G[r, j] = 1.0
                phi[r], kind[r], k[r], b[r], mu[r] = q[i] - lower[i], BILATERAL, stiffness, \
                    damping, 0.0
                r += 1
            continue
        for sign in (1.0, -1.0):
            gap = q[i] - lower[i] if sign > 0.0 else upper[i] - q[i]
            if not (gap < watch):
                continue
            for c in range(nv):
                G[r, c] = 0.0
            G[r, j] = sign
            phi[r], kind[r], k[r], b[r], mu[r] = gap, UNILATERAL, stiffness, damping, 0.0
            if gap < -recovery[2] and rate > 0.0:
                target = min(-gap / recovery[0], recovery[1])
                phi[r], kind[r] = max(gap, -target / rate), BILATERAL
            r += 1
    return r


@kernel
def body_wrenches(contact_int, contact_real, directions, gamma, n, h, origins, out, touching):
    """out[j] = the contact wrench on body j over the last step ([f, torque about body j's
    frame origin], world axes; body b of a contact gets the opposite force), touching[j] = 1
    for the bodies in a contact. force = (n, t1, t2)^T gamma / h."""
    for j in range(out.shape[0]):
        touching[j] = 0
        for e in range(6):
            out[j, e] = 0.0
    for c in range(n):
        d = directions[3 * c:3 * c + 3]
        g0, g1, g2 = gamma[3 * c] / h, gamma[3 * c + 1] / h, gamma[3 * c + 2] / h
        f0 = d[0, 0] * g0 + d[1, 0] * g1 + d[2, 0] * g2
        f1 = d[0, 1] * g0 + d[1, 1] * g1 + d[2, 1] * g2
        f2 = d[0, 2] * g0 + d[1, 2] * g1 + d[2, 2] * g2
        for side in range(2):
            j = contact_int[c, side]
            if j < 0:
                continue
            sign = 1.0 if side == 0 else -1.0
            r0 = contact_real[c, 0] - origins[j, 0]
            r1 = contact_real[c, 1] - origins[j, 1]
            r2 = contact_real[c, 2] - origins[j, 2]
            w = out[j]
            w[0] += sign * f0
            w[1] += sign * f1
            w[2] += sign * f2
            w[3] += sign * (r1 * f2 - r2 * f1)
            w[4] += sign * (r2 * f0 - r0 * f2)
            w[5] += sign * (r0 * f1 - r1 * f0)
            touching[j] = 1


@kernel
def friction_rows(iv, bound, start, G, phi, kind, k, b, mu) -> int:
    """One row e_iv per joint with Coulomb friction, from row start: the impulse that holds the
    joint still, |gamma| <= bound (friction h) kept in mu; returns the new row count."""
    r = start
    nv = G.shape[1]
    for a in range(iv.shape[0]):
        for c in range(nv):
            G[r, c] = 0.0
        G[r, iv[a]] = 1.0
        phi[r], kind[r], k[r], b[r], mu[r] = 0.0, FRICTION, 0.0, 0.0, bound[a]
        r += 1
    return r


@kernel
def servo_system(h, servo, iq, saturated, q, tau, v, M, force, added):
    """The joint servos' implicit-Euler terms (servo.servo_terms) into M~'s diagonal and the
    force (added: scratch, nv)."""
    for j in range(v.shape[0]):
        added[j] = 0.0
    servo_terms(h, servo, iq, saturated, q, tau, v, added, force)
    for j in range(v.shape[0]):
        M[j, j] += added[j]


@kernel
def servo_saturated(h, servo, iq, saturated, q, tau, v_new) -> bool:
    """servo.servo_saturation at the step's end, from Python."""
    return servo_saturation(h, servo, iq, saturated, q, tau, v_new)


@kernel
def reachable_contacts(joint_int, oS, v, h, contact_int, contact_real, n, shape_kind, mesh,
                       band, margin, va, vb, ahead) -> int:
    """Keep the contacts within reach of this step: those whose distance at the step's end if
    they kept closing (d + h min(v_n, 0)) is within margin (detection watches margin + h |v|
    for every point, a bound that a fast link makes huge); and of each pair's run of mesh
    points (consecutive contacts of one shape with one other body), those within band of the
    run's least, or of the ground: the patch that can carry load this step (a rounded foot's
    hull gives 8 points within the margin where 1-2 touch). Compacts the contacts in place;
    returns their new count. ahead: scratch (n,)."""
    for c in range(n):
        a, b = contact_int[c, 0], contact_int[c, 1]
        x = contact_real[c, 0:3]
        point_velocity(joint_int, oS, a, x, v, va)
        vb[0] = vb[1] = vb[2] = 0.0
        if b >= 0:
            point_velocity(joint_int, oS, b, x, v, vb)
        vn = (va[0] - vb[0]) * contact_real[c, 3] + (va[1] - vb[1]) * contact_real[c, 4] \
            + (va[2] - vb[2]) * contact_real[c, 5]
        ahead[c] = contact_real[c, 6] + h * min(vn, 0.0)
    out = 0
    c = 0
    while c < n:
        e = c + 1
        while e < n and contact_int[e, 0] == contact_int[c, 0] \
                and contact_int[e, 1] == contact_int[c, 1] \
                and contact_int[e, 2] == contact_int[c, 2]:
            e += 1
        least = ahead[c]
        for k in range(c + 1, e):
            least = min(least, ahead[k])
        limit = max(least, 0.0) + band if shape_kind[contact_int[c, 2]] == mesh else math.inf
        for k in range(c, e):
            if ahead[k] <= min(limit, margin):
                if out != k:
                    for j in range(4):
                        contact_int[out, j] = contact_int[k, j]
                    for j in range(8):
                        contact_real[out, j] = contact_real[k, j]
                out += 1
        c = e
    return out
