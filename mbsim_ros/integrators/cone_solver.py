"""Our compiled solver for the compliant integrator's constraint problem (docs/COMPLIANT.md,
"The constraint solve"): the same convex problem that clarabel and osqp solve, in one call with
no Python in the loop.

    min 1/2 g.P g + q.g,  P = H + H diag(w) H,  q = c + H diag(w) c         (H = W + E^-1)
    over: bilateral rows free; unilateral rows g >= 0; per contact (n, t1, t2) the cone
    |g_t| <= mu g_n (true cone) or |g_t1|, |g_t2| <= mu g_n (pyramid); joint friction rows
    |g| <= mu (a box); held rows g = 0

by a primal-dual interior-point method with Nesterov-Todd scaling and Mehrotra's
predictor-corrector (the method of CVXOPT's coneqp: Vandenberghe, "The CVXOPT linear and
quadratic cone program solvers", 2010), on the variables scaled per block to a unit diagonal
(a cone's three rows share one scale so the cone stays a cone). The active set of
pushing rows around it mirrors row_solvers.ConeRows._solve_active_set.

All arrays are preallocated by the caller (``solver_workspace``); m <= the workspace size.
This module is the compliant-specific part: the rows' reduction to a cone QP and the active
set around it; the QP is cone_qp.py (general), its factorization envelope_cholesky.py.
"""
from __future__ import annotations

import math

from .._jit import routine, step
from ..codes import (BILATERAL, BOX, CONE, FIXED, FREE, FRICTION, NONNEG, NORMAL, NOT_POSITIVE,
                     OK, PART, PYRAMID, TANGENT, UNILATERAL)
from ..dynamics.checks import max_abs
from .cone_qp import (ACCEPTABLE, DUAL_TOLERANCE, GAP_TOLERANCE, I_COUPLED, I_FIRST,  # noqa: F401
                      I_INDEX, I_PUSHING, I_TRIAL_KIND, I_VTYPE, ITERATIONS, M_H, M_LH, M_P, V_C,
                      V_COEF, V_CONVEX, V_EINV, V_Q, V_SCALE, V_TRIAL_MU, V_WEIGHT, V_Y,
                      interior_qp, solver_limits, solver_workspace)
from .envelope_cholesky import cholesky, cholesky_solve

ACTIVE_SET_ROUNDS = 8     # rounds of the pushing rows' active set per start


@step
def reduce_problem(H, c, weight, kind, mu, m, pyramid, index, vtype, coef, scale, P, q,
                   coupled) -> int:
    """The rows that are not held at zero (index), their variable types, and P, q of the
    weighted problem on them, scaled to a unit diagonal per block; returns their count."""
    n = 0
    for i in range(m):
        head = i - 1 if kind[i - 1] == NORMAL else i - 2
        held = kind[i] == FIXED or (kind[i] == TANGENT and mu[head] == 0.0)
        if held:
            continue
        index[n] = i
        if kind[i] == BILATERAL:
            vtype[n] = FREE
        elif kind[i] == UNILATERAL or (kind[i] == NORMAL and mu[i] == 0.0):
            vtype[n] = NONNEG
        elif kind[i] == NORMAL:
            vtype[n] = PYRAMID if pyramid else CONE
        elif kind[i] == FRICTION:
            vtype[n] = BOX
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
        if vtype[a] == BOX:
            coef[a] /= s  # the bound on the scaled variable
        a += width
    for a in range(n):
        q[a] *= scale[a]
        for b in range(n):
            P[a, b] *= scale[a] * scale[b]
    return n


@routine
def weighted_solve(H, c, weight, kind, mu, m, pyramid, limits, gamma, mats, vecs,
                   ints) -> tuple:
    """gamma for min 1/2 g.H g + c.g + 1/2 sum_i w_i r_i^2 (r = H g + c) over the rows'
    cones; (status, Newton steps)."""
    index, vtype = ints[I_INDEX], ints[I_VTYPE]
    coef, scale, q, y = vecs[V_COEF], vecs[V_SCALE], vecs[V_Q], vecs[V_Y]
    P = mats[M_P]
    n = reduce_problem(H, c, weight, kind, mu, m, pyramid, index, vtype, coef, scale, P, q,
                       ints[I_COUPLED])
    status, steps = interior_qp(P, q, vtype, coef, n, y, limits, mats, vecs, ints[I_FIRST])
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
               normal_weight, pyramid, limits, memory, gamma, mats, vecs, ints) -> tuple:
    """The impulses gamma[:m] of the compliant step (docs/COMPLIANT.md: per row
    E^-1 = 1/(h(hk + b)), c = u + k/(hk + b) phi; H = W + E^-1; the active set of pushing rows
    around the weighted cone problem). memory (3, rows) int: the last step's kinds, pushing
    flags and [row count] - reused while the kinds repeat; rounds that do not settle (or whose
    solution adds energy: adds_energy) start again from the convex form's set, and if they
    still do not, the convex form's solution is returned. Returns (status, Newton steps)."""
    H, L = mats[M_H], mats[M_LH]
    first = ints[I_FIRST]
    e_inv, c, weight, trial_mu = vecs[V_EINV], vecs[V_C], vecs[V_WEIGHT], vecs[V_TRIAL_MU]
    trial_kind, pushing = ints[I_TRIAL_KIND], ints[I_PUSHING]
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
        if kind[i] == TANGENT or kind[i] == FRICTION:  # memoryless friction: (near)
            e_inv[i] = regularization * mean_w          # infinite damping
        c[i] = u[i] + erp * phi[i]
        all_bilateral = all_bilateral and kind[i] == BILATERAL
    for i in range(m):
        for j in range(m):
            H[i, j] = W[i, j]
        H[i, i] += e_inv[i]
    impulses = impulse_scale(H, c, m)
    if all_bilateral:
        if not cholesky(H, m, L, first):
            return NOT_POSITIVE, 0
        for i in range(m):
            gamma[i] = -c[i]
        cholesky_solve(L, m, first, gamma)
        return OK, 0
    # the pushing rows: the last step's when the rows repeat, else the convex form's solution
    same = memory[2, 0] == m
    for i in range(m):
        same = same and memory[0, i] == kind[i]
    steps = 0
    settled = False
    convex = vecs[V_CONVEX]  # the convex form's solution, the answer when the rounds do not settle
    for attempt in range(2 if same else 1):  # a remembered set that does not settle: again
        if same and attempt == 0:             # from the convex form's
            for i in range(m):
                pushing[i] = memory[1, i]
        else:
            for i in range(m):
                weight[i] = 0.0
            status, n_steps = weighted_solve(H, c, weight, kind, mu, m, pyramid, limits, convex,
                                             mats, vecs, ints)
            steps += n_steps
            if status != OK:
                return status, steps
            pushing_rows(convex, kind, m, impulses, pushing)
        status, n_steps, settled = active_set_rounds(H, c, W, u, kind, mu, m, pyramid, limits,
                                                     normal_weight, pushing, trial_kind,
                                                     trial_mu, weight, gamma, mats, vecs, ints)
        steps += n_steps
        if status != OK:
            return status, steps
        if settled:
            break
    if not settled:  # the rounds cycle between sets, or add energy: the convex form's solution
        for i in range(m):
            gamma[i] = convex[i]
        pushing_rows(convex, kind, m, impulses, pushing)
    memory[2, 0] = m
    for i in range(m):
        memory[0, i] = kind[i]
        memory[1, i] = pushing[i]
    return OK, steps


@step
def pushing_rows(gamma, kind, m, impulses, pushing):
    """The rows that push in the convex form's solution gamma: the bilateral rows, and the
    one-sided rows above the rounding scale (interior-point solutions leave the others
    slightly positive)."""
    tolerance = 1e-7 * max(max_abs(gamma, m), impulses)
    for i in range(m):
        pushing[i] = kind[i] == BILATERAL or (one_sided(kind[i]) and gamma[i] > tolerance)


@routine
def active_set_rounds(H, c, W, u, kind, mu, m, pyramid, limits, normal_weight, pushing,
                      trial_kind, trial_mu, weight, gamma, mats, vecs, ints) -> tuple:
    """Up to ACTIVE_SET_ROUNDS rounds of the weighted problem from the pushing set: rows not
    pushing are held at zero, the pushing rows' law is penalised; a pushing row whose impulse
    moves its own row by less than the joining threshold leaves, a held row that would close
    (r < 0 beyond it) joins. (status, Newton steps, settled: no row changed in the last round).
    A round whose solution adds energy (adds_energy: the penalty held a row's law with the
    friction rows) ends them unsettled."""
    c_scale = max(max_abs(c, m), 1e-9)
    steps = 0
    for _ in range(ACTIVE_SET_ROUNDS):
        for i in range(m):
            o = owner(kind, i)
            held = one_sided(kind[o]) and not pushing[o]
            trial_kind[i] = FIXED if held else kind[i]
            trial_mu[i] = 0.0 if held else mu[i]
            weight[i] = normal_weight if pushing[i] else 0.0
        status, n_steps = weighted_solve(H, c, weight, trial_kind, trial_mu, m, pyramid,
                                         limits, gamma, mats, vecs, ints)
        steps += n_steps
        if status != OK:
            return status, steps, False
        if adds_energy(W, u, c, gamma, m):
            return OK, steps, False
        changed = False
        for i in range(m):
            if not one_sided(kind[i]):
                continue
            ri = c[i]
            for j in range(m):
                ri += H[i, j] * gamma[j]
            # leave: an impulse that moves its own row by less than a held row must close to
            # join (the same units both ways: a test on the impulse, relative to the largest,
            # made a light joint's limit row, H_ii ~ 1e5, leave and join in turn)
            if pushing[i] and gamma[i] * H[i, i] <= 1e-7 * c_scale:
                pushing[i] = False
                changed = True
            elif not pushing[i] and ri < -1e-7 * c_scale:
                pushing[i] = True
                changed = True
        if not changed:
            return OK, steps, True
    return OK, steps, False


@step
def adds_energy(W, u, c, gamma, m) -> bool:
    """Do the impulses add more kinetic energy, gamma.u + 1/2 gamma.W gamma (in M~'s metric),
    than the rows' position terms can release, sum max(0, -gamma_i (c_i - u_i)) (a compressed
    spring pushing back, a violated limit recovering), beyond 1e-3 of their work scale
    sum |gamma_i c_i|? The convex form's solution never does (complementarity,
    gamma.(H gamma + c) = 0, leaves -1/2 gamma.W gamma - gamma.E^-1 gamma - gamma.(c - u));
    the weighted one can, when the penalty holds a row's law with the friction rows."""
    added, release, scale = 0.0, 0.0, 0.0
    for i in range(m):
        g = gamma[i]
        if g == 0.0:
            continue
        acc = 0.0
        for j in range(m):
            acc += W[i, j] * gamma[j]
        added += g * (u[i] + 0.5 * acc)
        release += max(0.0, -g * (c[i] - u[i]))
        scale += abs(g * c[i])
    return added > release + 1e-3 * scale


@step
def impulse_scale(H, c, m) -> float:
    """max |c_i| / H_ii (at least 1e-12): the impulse that would stop the fastest row, the
    scale below which an impulse is rounding (a pushing row's test: with every row separating,
    the interior-point solution's ~1e-12 leftovers are not pushes)."""
    best = 1e-12
    for i in range(m):
        if H[i, i] > 0.0:
            best = max(best, abs(c[i]) / H[i, i])
    return best
