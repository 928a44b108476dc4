"""Our compiled solver for the compliant integrator's constraint problem (docs/COMPLIANT.md,
"The constraint solve"): the same convex problem that clarabel and osqp solve, in one call with
no Python in the loop.

    min 1/2 g.P g + q.g,  P = H + H diag(w) H,  q = c + H diag(w) c         (H = W + E^-1)
    over: bilateral rows free; unilateral rows g >= 0; per contact (n, t1, t2) the cone
    |g_t| <= mu g_n (true cone) or |g_t1|, |g_t2| <= mu g_n (pyramid); held rows g = 0

by a primal-dual interior-point method on scalar convex constraints (Boyd & Vandenberghe,
Convex Optimization, Alg. 11.2; the true cone as |g_t|^2 / (mu g_n) - mu g_n <= 0, convex and
smooth inside), on the variables scaled per block to a unit diagonal (a cone's three rows share
one scale so the cone stays a cone). The active set of
pushing rows around it mirrors CompliantIntegrator._solve_active_set.

All arrays are preallocated by the caller (``solver_workspace``); m <= the workspace size.
"""
from __future__ import annotations

import math

import numpy as np

from .._jit import routine, step

BILATERAL, UNILATERAL, NORMAL, TANGENT, FIXED = 0, 1, 2, 3, 4
FREE, NONNEG, CONE, PART, PYRAMID = 0, 1, 2, 3, 4  # reduced variable types

SOLVED, NOT_CONVERGED, NOT_POSITIVE = 0, 1, 2
NEWTON_LIMIT = 200
GROWTH = 10.0             # mu of Alg. 11.2: t = GROWTH * constraints / surrogate gap
GAP_TOLERANCE = 1e-12     # surrogate gap, relative to |objective|
DUAL_TOLERANCE = 1e-11    # dual residual, relative to its terms (|q|, |P y|)
STALL_TOLERANCE = 1e-9    # both, accepted when the line search can no longer move


def solver_workspace(rows: int) -> tuple:
    """Buffers for `rows` rows: (five (rows, rows) matrices, twenty vectors, six integer
    vectors, the active-set memory (3, rows))."""
    return (np.zeros((5, rows, rows)), np.zeros((20, 4 * rows)),
            np.zeros((6, rows), dtype=np.int64), np.zeros((3, rows), dtype=np.int64))


@step
def cholesky(A, n, L, first) -> bool:
    """L (lower) with L L^T = A[:n, :n], computed inside A's envelope (first[i]: the first
    non-zero column of row i; L has the same envelope, so banded problems such as stacks cost
    O(n b^2)); False when A is not numerically positive definite."""
    for i in range(n):
        first[i] = i
        for k in range(i):
            if A[i, k] != 0.0:
                first[i] = k
                break
    for j in range(n):
        s = A[j, j]
        for k in range(first[j], j):
            s -= L[j, k] * L[j, k]
        if not (s > 0.0):
            return False
        d = math.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, n):
            if first[i] > j:
                L[i, j] = 0.0
                continue
            s = A[i, j]
            for k in range(max(first[i], first[j]), j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    return True


@step
def cholesky_solve(L, n, first, x):
    """x <- A^-1 x for A = L L^T (envelope first), in place."""
    for i in range(n):
        s = x[i]
        for k in range(first[i], i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            if first[k] <= i:
                s -= L[k, i] * x[k]
        x[i] = s / L[i, i]


@step
def constraint_count(vtype, n) -> int:
    count = 0
    for i in range(n):
        count += 1 if vtype[i] == NONNEG or vtype[i] == CONE else \
            4 if vtype[i] == PYRAMID else 0
    return count


@step
def constraint_values(y, vtype, coef, n, f) -> bool:
    """f_k(y) of every scalar constraint f_k <= 0; False when one is not strictly negative.
    NONNEG: -y_i; PYRAMID: -(c y0 -+ y_j); CONE: |y_t|^2 / (c y0) - c y0 (quadratic over
    linear: convex and smooth where y0 > 0)."""
    k = 0
    inside = True
    for i in range(n):
        t = vtype[i]
        if t == NONNEG:
            f[k] = -y[i]
            k += 1
        elif t == CONE:
            s = coef[i] * y[i]
            f[k] = (y[i + 1] * y[i + 1] + y[i + 2] * y[i + 2]) / s - s if s > 0.0 else 1.0
            k += 1
        elif t == PYRAMID:
            for j in (1, 2):
                for sign in (1.0, -1.0):
                    f[k] = sign * y[i + j] - coef[i] * y[i]
                    k += 1
    for j in range(k):
        inside = inside and f[j] < 0.0
    return inside


@step
def add_constraint_terms(y, vtype, coef, n, lam, f, r_cent, rhs, hess):
    """With d_k = lam_k / -f_k: rhs -= sum Df_k r_cent_k / f_k, hess += sum lam_k D^2 f_k +
    d_k Df_k Df_k^T (Boyd & Vandenberghe 11.7: the primal-dual Newton system with the
    multipliers eliminated)."""
    k = 0
    for i in range(n):
        t = vtype[i]
        if t == NONNEG:  # Df = -e_i
            rhs[i] += r_cent[k] / f[k]
            hess[i, i] += lam[k] / -f[k]
            k += 1
        elif t == CONE:
            c = coef[i]
            s = c * y[i]
            u2 = y[i + 1] * y[i + 1] + y[i + 2] * y[i + 2]
            df0 = -c * (u2 / (s * s) + 1.0)
            df1, df2 = 2.0 * y[i + 1] / s, 2.0 * y[i + 2] / s
            df = (df0, df1, df2)
            d = lam[k] / -f[k]
            for a in range(3):
                rhs[i + a] -= df[a] * r_cent[k] / f[k]
                for b in range(3):
                    hess[i + a, i + b] += d * df[a] * df[b]
            # D^2 (|u|^2 / s), s = c y0
            two = 2.0 * lam[k]
            hess[i, i] += two * u2 * c * c / (s * s * s)
            for j in (1, 2):
                cross = -two * y[i + j] * c / (s * s)
                hess[i, i + j] += cross
                hess[i + j, i] += cross
                hess[i + j, i + j] += two / s
            k += 1
        elif t == PYRAMID:
            for j in (1, 2):
                for sign in (1.0, -1.0):  # Df = -c e_0 + sign e_j
                    d = lam[k] / -f[k]
                    rhs[i] += coef[i] * r_cent[k] / f[k]
                    rhs[i + j] -= sign * r_cent[k] / f[k]
                    hess[i, i] += d * coef[i] * coef[i]
                    hess[i, i + j] -= d * coef[i] * sign
                    hess[i + j, i] -= d * coef[i] * sign
                    hess[i + j, i + j] += d
                    k += 1


@step
def constraint_slopes(y, dy, vtype, coef, n, out):
    """out_k = Df_k(y) . dy."""
    k = 0
    for i in range(n):
        t = vtype[i]
        if t == NONNEG:
            out[k] = -dy[i]
            k += 1
        elif t == CONE:
            c = coef[i]
            s = c * y[i]
            u2 = y[i + 1] * y[i + 1] + y[i + 2] * y[i + 2]
            out[k] = -c * (u2 / (s * s) + 1.0) * dy[i] \
                + 2.0 * (y[i + 1] * dy[i + 1] + y[i + 2] * dy[i + 2]) / s
            k += 1
        elif t == PYRAMID:
            for j in (1, 2):
                for sign in (1.0, -1.0):
                    out[k] = -coef[i] * dy[i] + sign * dy[i + j]
                    k += 1


@step
def residual_norm(P, q, y, vtype, coef, n, lam, f, t, grad, r_cent, ncon) -> float:
    """|(r_dual, r_cent)| at (y, lam) for barrier parameter t; fills grad (r_dual), r_cent."""
    for i in range(n):
        s = q[i]
        for j in range(n):
            s += P[i, j] * y[j]
        grad[i] = s
    k = 0
    for i in range(n):  # the multipliers' part of r_dual
        tp = vtype[i]
        if tp == NONNEG:
            grad[i] -= lam[k]
            k += 1
        elif tp == CONE:
            c = coef[i]
            s = c * y[i]
            u2 = y[i + 1] * y[i + 1] + y[i + 2] * y[i + 2]
            grad[i] += lam[k] * -c * (u2 / (s * s) + 1.0)
            grad[i + 1] += lam[k] * 2.0 * y[i + 1] / s
            grad[i + 2] += lam[k] * 2.0 * y[i + 2] / s
            k += 1
        elif tp == PYRAMID:
            for j in (1, 2):
                for sign in (1.0, -1.0):
                    grad[i] -= coef[i] * lam[k]
                    grad[i + j] += sign * lam[k]
                    k += 1
    total = 0.0
    for i in range(n):
        total += grad[i] * grad[i]
    for k in range(ncon):
        r_cent[k] = -lam[k] * f[k] - 1.0 / t
        total += r_cent[k] * r_cent[k]
    return math.sqrt(total)


@step
def objective(P, q, y, n) -> float:
    f = 0.0
    for i in range(n):
        s = 0.5 * P[i, i] * y[i]
        for j in range(i):
            s += P[i, j] * y[j]
        f += y[i] * s + q[i] * y[i]
    return f


@routine
def interior_qp(P, q, vtype, coef, n, y, mats, vecs, first) -> tuple:
    """min 1/2 y.P y + q.y subject to the constraints of vtype (coef: mu of the cone heads),
    leading n x n block; y out. The primal-dual interior-point method of Boyd & Vandenberghe
    (Convex Optimization, Alg. 11.2: surrogate gap, residual line search) on scalar convex
    constraints. Returns (status, iterations). P must be positive definite."""
    hess, L = mats[0], mats[1]
    grad, dy, yu, rhs = vecs[0], vecs[1], vecs[2], vecs[3]
    lam, f, r_cent, dlam = vecs[4], vecs[5], vecs[6], vecs[7]
    y_new, lam_new, f_new, slope = vecs[8], vecs[9], vecs[10], vecs[11]
    if not cholesky(P, n, L, first):
        return NOT_POSITIVE, 0
    for i in range(n):  # the unconstrained minimum: the start's scale, a bound on f
        yu[i] = -q[i]
    cholesky_solve(L, n, first, yu)
    ncon = constraint_count(vtype, n)
    if ncon == 0:
        for i in range(n):
            y[i] = yu[i]
        return SOLVED, 0
    f_low = objective(P, q, yu, n)
    scale = 1e-300
    q_norm = 1e-300
    for i in range(n):
        scale = max(scale, abs(yu[i]))
        q_norm = max(q_norm, abs(q[i]))
    for i in range(n):  # strictly inside
        y[i] = yu[i] if vtype[i] == FREE else scale if vtype[i] != PART else 0.0
    constraint_values(y, vtype, coef, n, f)
    for k in range(ncon):
        lam[k] = q_norm
    stalled = False
    for iteration in range(1, NEWTON_LIMIT + 1):
        gap = 0.0
        for k in range(ncon):
            gap -= f[k] * lam[k]
        t = GROWTH * ncon / gap
        norm = residual_norm(P, q, y, vtype, coef, n, lam, f, t, grad, r_cent, ncon)
        dual, size = 0.0, q_norm  # size: of the terms the dual residual sums (rounding)
        for i in range(n):
            dual = max(dual, abs(grad[i]))
            s = 0.0
            for j in range(n):
                s += P[i, j] * y[j]
            size = max(size, abs(s))
        f_size = max(abs(f_low), abs(objective(P, q, y, n)), 1e-300)
        if dual <= DUAL_TOLERANCE * size and gap <= GAP_TOLERANCE * f_size:
            return SOLVED, iteration - 1
        if stalled and dual <= STALL_TOLERANCE * size and gap <= STALL_TOLERANCE * f_size:
            return SOLVED, iteration - 1  # rounding stops progress, the answer is there
        for i in range(n):
            rhs[i] = -grad[i]
            for j in range(n):
                hess[i, j] = P[i, j]
        add_constraint_terms(y, vtype, coef, n, lam, f, r_cent, rhs, hess)
        if not cholesky(hess, n, L, first):
            return NOT_POSITIVE, iteration
        for i in range(n):
            dy[i] = rhs[i]
        cholesky_solve(L, n, first, dy)
        constraint_slopes(y, dy, vtype, coef, n, slope)
        a = 1.0
        for k in range(ncon):  # dlam from the eliminated row; keep lam > 0
            dlam[k] = (r_cent[k] - lam[k] * slope[k]) / f[k]
            if dlam[k] < 0.0:
                a = min(a, -lam[k] / dlam[k])
        a *= 0.99
        for _ in range(60):  # backtrack: strictly feasible, then the residual decreases
            for i in range(n):
                y_new[i] = y[i] + a * dy[i]
            for k in range(ncon):
                lam_new[k] = lam[k] + a * dlam[k]
            new_norm = math.inf
            if constraint_values(y_new, vtype, coef, n, f_new):
                new_norm = residual_norm(P, q, y_new, vtype, coef, n, lam_new, f_new, t, grad,
                                         r_cent, ncon)
                if new_norm <= (1.0 - 0.01 * a) * norm:
                    break
            a *= 0.5
        stalled = a < 1e-10 or new_norm > 0.999 * norm
        for i in range(n):
            y[i] = y_new[i]
        for k in range(ncon):
            lam[k] = lam_new[k]
            f[k] = f_new[k]
    return NOT_CONVERGED, NEWTON_LIMIT


@step
def reduce_problem(H, c, weight, kind, mu, m, pyramid, index, vtype, coef, scale, P, q,
                   coupled) -> int:
    """The rows that are not held at zero (index), their variable types, and P, q of the
    weighted problem on them, scaled to a unit diagonal per block; returns their count."""
    n = 0
    for i in range(m):
        held = kind[i] == FIXED or (kind[i] == TANGENT and mu[i - 1 if kind[i - 1] == NORMAL
                                                             else i - 2] == 0.0)
        if held:
            continue
        index[n] = i
        if kind[i] == BILATERAL:
            vtype[n] = FREE
        elif kind[i] == UNILATERAL or (kind[i] == NORMAL and mu[i] == 0.0):
            vtype[n] = NONNEG
        elif kind[i] == NORMAL:
            vtype[n] = PYRAMID if pyramid else CONE
        else:
            vtype[n] = PART
        coef[n] = mu[i]
        n += 1
    for a in range(n):  # P = H + H diag(w) H, q = c + H diag(w) c on the kept rows
        i = index[a]
        count = 0  # the weighted rows that couple to row i (H is sparse for stacks)
        for k in range(m):
            if weight[k] != 0.0 and H[i, k] != 0.0:
                coupled[count] = k
                count += 1
        s = c[i]
        for e in range(count):
            k = coupled[e]
            s += H[i, k] * weight[k] * c[k]
        q[a] = s
        for b in range(a + 1):
            j = index[b]
            s = H[i, j]
            for e in range(count):
                k = coupled[e]
                s += H[i, k] * weight[k] * H[k, j]
            P[a, b] = s
            P[b, a] = s
    a = 0
    while a < n:  # one scale per block: a cone keeps its shape
        width = 3 if vtype[a] == CONE or vtype[a] == PYRAMID else 1
        d = 0.0
        for k in range(a, a + width):
            d += P[k, k]
        s = 1.0 / math.sqrt(d / width)
        for k in range(a, a + width):
            scale[k] = s
        a += width
    for a in range(n):
        q[a] *= scale[a]
        for b in range(n):
            P[a, b] *= scale[a] * scale[b]
    return n


@routine
def weighted_solve(H, c, weight, kind, mu, m, pyramid, gamma, mats, vecs, ints) -> tuple:
    """gamma for min 1/2 g.H g + c.g + 1/2 sum_i w_i r_i^2 (r = H g + c) over the rows'
    cones; (status, Newton steps)."""
    index, vtype = ints[0], ints[1]
    coef, scale, q, y = vecs[12], vecs[13], vecs[14], vecs[15]
    P = mats[2]
    n = reduce_problem(H, c, weight, kind, mu, m, pyramid, index, vtype, coef, scale, P, q,
                       ints[4])
    status, steps = interior_qp(P, q, vtype, coef, n, y, mats, vecs, ints[5])
    for i in range(m):
        gamma[i] = 0.0
    for a in range(n):
        gamma[index[a]] = scale[a] * y[a]
    return status, steps


@step
def one_sided(kind) -> bool:
    return kind == UNILATERAL or kind == NORMAL


@step
def owner(kind, i) -> int:
    """The row whose push decides whether row i is held: a tangent's normal, else itself."""
    if kind[i] != TANGENT:
        return i
    return i - 1 if kind[i - 1] == NORMAL else i - 2


@routine
def solve_rows(W, u, phi, kind, k, b, mu, m, h, regularization, rigid_compliance,
               normal_weight, pyramid, memory, gamma, mats, vecs, ints) -> tuple:
    """The impulses gamma[:m] of the compliant step (docs/COMPLIANT.md: per row
    E^-1 = 1/(h(hk + b)), c = u + k/(hk + b) phi; H = W + E^-1; the active set of pushing rows
    around the weighted cone problem). memory (3, rows) int: the last step's kinds, pushing
    flags and [row count] - reused while the kinds repeat. Returns (status, Newton steps)."""
    H, L = mats[3], mats[4]
    first = ints[5]
    e_inv, c, weight, trial_mu = vecs[16], vecs[17], vecs[18], vecs[19]
    trial_kind, pushing = ints[2], ints[3]
    mean_w = 0.0
    for i in range(m):
        mean_w += W[i, i]
    mean_w = max(mean_w / m, 1e-12)
    all_bilateral = True
    for i in range(m):
        soft = h * k[i] + b[i]
        if not math.isfinite(k[i]):
            e_inv[i] = rigid_compliance * mean_w if kind[i] == BILATERAL else 0.0
            erp = 1.0 / h
        else:
            e_inv[i] = 1.0 / (h * soft) if soft > 0.0 else math.inf
            erp = k[i] / soft if soft > 0.0 else 0.0
        if kind[i] == TANGENT:  # memoryless friction: (near) infinite damping
            e_inv[i] = regularization * mean_w
        c[i] = u[i] + erp * phi[i]
        all_bilateral = all_bilateral and kind[i] == BILATERAL
    for i in range(m):
        for j in range(m):
            H[i, j] = W[i, j]
        H[i, i] += e_inv[i]
    if all_bilateral:
        if not cholesky(H, m, L, first):
            return NOT_POSITIVE, 0
        for i in range(m):
            gamma[i] = -c[i]
        cholesky_solve(L, m, first, gamma)
        return SOLVED, 0
    # the pushing rows: the last step's when the rows repeat, else the convex form's solution
    same = memory[2, 0] == m
    for i in range(m):
        same = same and memory[0, i] == kind[i]
    steps = 0
    if same:
        for i in range(m):
            pushing[i] = memory[1, i]
    else:
        for i in range(m):
            weight[i] = 0.0
        status, n_steps = weighted_solve(H, c, weight, kind, mu, m, pyramid, gamma, mats,
                                         vecs, ints)
        steps += n_steps
        if status != SOLVED:
            return status, steps
        tolerance = 1e-7 * max(max_abs(gamma, m), 1e-12)
        for i in range(m):
            pushing[i] = kind[i] == BILATERAL or (one_sided(kind[i]) and gamma[i] > tolerance)
    c_scale = max(max_abs(c, m), 1e-9)
    status = SOLVED
    for _ in range(8):
        for i in range(m):
            o = owner(kind, i)
            held = one_sided(kind[o]) and not pushing[o]
            trial_kind[i] = FIXED if held else kind[i]
            trial_mu[i] = 0.0 if held else mu[i]
            weight[i] = normal_weight if pushing[i] else 0.0
        status, n_steps = weighted_solve(H, c, weight, trial_kind, trial_mu, m, pyramid, gamma,
                                         mats, vecs, ints)
        steps += n_steps
        if status != SOLVED:
            return status, steps
        tolerance = 1e-7 * max(max_abs(gamma, m), 1e-12)
        changed = False
        for i in range(m):
            if not one_sided(kind[i]):
                continue
            ri = c[i]
            for j in range(m):
                ri += H[i, j] * gamma[j]
            if pushing[i] and gamma[i] <= tolerance:
                pushing[i] = False
                changed = True
            elif not pushing[i] and ri < -1e-7 * c_scale:
                pushing[i] = True
                changed = True
        if not changed:
            break
    memory[2, 0] = m
    for i in range(m):
        memory[0, i] = kind[i]
        memory[1, i] = pushing[i]
    return status, steps


@step
def max_abs(x, m) -> float:
    best = 0.0
    for i in range(m):
        best = max(best, abs(x[i]))
    return best
