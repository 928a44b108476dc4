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
(a cone's three rows share one scale so the cone stays a cone). With a warm start
(``warm_start``, the default) each solve starts from the last one's impulses by semismooth Newton
on the same problem (cone_qp.face_newton), the interior-point method its fallback, and ends on
the exact solution of its faces from either start (weighted_solve). The active set of
pushing rows around it is a state machine that row_solvers.ConeRows also drives with clarabel
and osqp in its place.

All arrays are preallocated by the caller (``solver_workspace``); m <= the workspace size.
This module is the compliant-specific part: the rows' reduction to a cone QP and the active
set around it; the QP is cone_qp.py (general), its factorization envelope_cholesky.py.
"""
from __future__ import annotations

import math

import numpy as np

from .._jit import kernel, routine, step
from ..codes import (BILATERAL, BOX, CONE, FIXED, FREE, FRICTION, NONNEG, NORMAL,
                     NOT_CONVERGED, NOT_POSITIVE, OK, PART, PYRAMID, TANGENT, UNILATERAL)
from ..dynamics.checks import max_abs
from .cone_qp import (ACCEPTABLE, DUAL_TOLERANCE, GAP_TOLERANCE,  # noqa: F401
                      I_ACTIVE, I_COUPLED, I_EARLIER, I_FIRST, I_INDEX, I_LAST, I_PUSHING,
                      I_TRIAL_KIND,
                      I_VTYPE, ITERATIONS, LIMIT_RESIDUAL, LIMIT_WARM_START, M_H, M_LH, M_P,
                      V_C, V_COEF, V_CONVEX, V_EINV, V_Q, V_SCALE, V_START, V_TRIAL_MU,
                      V_WEIGHT, V_Y, V_YBEST, face_newton, interior_qp, last_impulses,
                      solver_limits, solver_workspace)
from .envelope_cholesky import cholesky, cholesky_solve

ACTIVE_SET_ROUNDS = 8     # rounds of the pushing rows' active set per start


@step
def reduce_problem(H, c, weight, kind, mu, m, pyramid, index, vtype, coef, scale, P, q,
                   coupled) -> int:
    """The rows that are not held at zero (index), their variable types, and P, q of the
    weighted problem on them, scaled to a unit diagonal per block; returns their count."""
    n = np.int64(0)  # not the literal 0: its caller would compile interior_qp for n = 0 too
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
    cones; (status, Newton steps). With the limits' warm start (true cones): face_newton from
    the last solution (vecs[V_START], when ints[I_ACTIVE][A_HAVE_START]), else, or when it
    does not converge, interior_qp from its cold start, ended by face_newton from its answer
    (kept when that converges: the exact solution, whatever the start). Without it:
    interior_qp alone."""
    index, vtype = ints[I_INDEX], ints[I_VTYPE]
    coef, scale, q, y = vecs[V_COEF], vecs[V_SCALE], vecs[V_Q], vecs[V_Y]
    start, active = vecs[V_START], ints[I_ACTIVE]
    P = mats[M_P]
    n = reduce_problem(H, c, weight, kind, mu, m, pyramid, index, vtype, coef, scale, P, q,
                       ints[I_COUPLED])
    newton = limits[LIMIT_WARM_START] != 0.0 and not pyramid
    status, steps = NOT_CONVERGED, 0
    if newton and active[A_HAVE_START]:
        for a in range(n):
            y[a] = start[index[a]] / scale[a]
        status, steps = face_newton(P, q, vtype, coef, n, y, limits, mats, vecs, ints)
    if status != OK:
        status, more = interior_qp(P, q, vtype, coef, n, y, limits, mats, vecs, ints[I_FIRST])
        steps += more
        if status == OK and newton:
            steps += polish(P, q, vtype, coef, n, y, limits, mats, vecs, ints)
    for i in range(m):
        gamma[i] = 0.0
    for a in range(n):
        gamma[index[a]] = scale[a] * y[a]
    if status == OK:
        for i in range(m):
            start[i] = gamma[i]
        active[A_HAVE_START] = True
    return status, steps


@step
def polish(P, q, vtype, coef, n, y, limits, mats, vecs, ints) -> int:
    """face_newton from interior_qp's answer y: its exact solution when that converges, else
    interior_qp's answer and residual back; returns face_newton's steps."""
    kept, residual = vecs[V_YBEST], limits[LIMIT_RESIDUAL]
    for a in range(n):
        kept[a] = y[a]
    status, steps = face_newton(P, q, vtype, coef, n, y, limits, mats, vecs, ints)
    if status != OK:
        for a in range(n):
            y[a] = kept[a]
        limits[LIMIT_RESIDUAL] = residual
    return steps


@step
def one_sided(kind) -> bool:
    return kind == UNILATERAL or kind == NORMAL


@step
def owner(kind, i) -> int:
    """The row whose push decides whether row i is held: a tangent's normal, else itself."""
    if kind[i] != TANGENT:
        return i
    return i - 1 if kind[i - 1] == NORMAL else i - 2


# The active set of pushing rows is a state machine (begin_active_set, advance_active_set) that
# asks its driver for one weighted solve at a time (weight, trial_kind, trial_mu) and takes the
# solution back in gamma: solve_rows drives it with our interior-point solve, compiled;
# row_solvers.ConeRows with clarabel or osqp from Python. One set of rules for both.
SOLVE_CONVEX, SOLVE_ROUND, DONE = 0, 1, 2  # what the active set asks for next
# its int state (ints[I_ACTIVE]): the phase, rounds taken, rounds allowed per start, whether
# rounds follow the convex solve, whether the convex form's solution is in hand; and the
# weighted solve's: whether vecs[V_START] holds a start
(A_PHASE, A_ROUNDS, A_MAX_ROUNDS, A_ROUNDS_AFTER_CONVEX, A_HAVE_CONVEX, A_HAVE_START,
 N_ACTIVE) = range(7)


@step
def prepare_rows(W, u, phi, kind, k, b, m, h, regularization, rigid_compliance, e_inv, c,
                 H) -> bool:
    """The rows' laws (docs/COMPLIANT.md: per row E^-1 = 1/(h(hk + b)), c = u + k/(hk + b) phi;
    rigid rows: E^-1 = 0, c = u + phi/h; friction rows: memoryless, E^-1 the regularization)
    and H = W + E^-1. Returns whether every row is bilateral (then H gamma = -c is the step)."""
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
    return all_bilateral


@step
def bilateral_solve(H, c, m, L, first, gamma) -> int:
    """gamma = -H^-1 c by envelope Cholesky; NOT_POSITIVE when H is not positive definite."""
    if not cholesky(H, m, L, first):
        return NOT_POSITIVE
    for i in range(m):
        gamma[i] = -c[i]
    cholesky_solve(L, m, first, gamma)
    return OK


@kernel
def solve_rows_kernel(W, u, phi, kind, k, b, mu, m, h, regularization, rigid_compliance,
                      normal_weight, pyramid, limits, memory, gamma, mats, vecs, ints) -> tuple:
    """solve_rows (a routine, linked into the compiled step), called from Python (ConeRows)."""
    return solve_rows(W, u, phi, kind, k, b, mu, m, h, regularization, rigid_compliance,
                      normal_weight, pyramid, limits, memory, gamma, mats, vecs, ints)


@routine
def solve_rows(W, u, phi, kind, k, b, mu, m, h, regularization, rigid_compliance,
               normal_weight, pyramid, limits, memory, gamma, mats, vecs, ints) -> tuple:
    """The impulses gamma[:m] of the compliant step: the rows' laws (prepare_rows), then the
    active set of pushing rows (begin_active_set) driven with our interior-point solve of each
    weighted cone problem it asks for. memory (4, rows) int: the last step's kinds, pushing
    flags, [row count] and the impulses (last_impulses): the first weighted solve starts from
    those when the rows repeat (load_start). Returns (status, Newton steps)."""
    H = mats[M_H]
    c, weight, trial_mu = vecs[V_C], vecs[V_WEIGHT], vecs[V_TRIAL_MU]
    trial_kind, active = ints[I_TRIAL_KIND], ints[I_ACTIVE]
    if prepare_rows(W, u, phi, kind, k, b, m, h, regularization, rigid_compliance, vecs[V_EINV],
                    c, H):
        return bilateral_solve(H, c, m, mats[M_LH], ints[I_FIRST], gamma), 0
    phase = begin_active_set(kind, mu, m, normal_weight, memory, True, ACTIVE_SET_ROUNDS,
                             ints[I_PUSHING], active, weight, trial_kind, trial_mu)
    load_start(memory, m, active, vecs[V_START])
    steps = 0
    while phase != DONE:
        status, n_steps = weighted_solve(H, c, weight, trial_kind, trial_mu, m, pyramid, limits,
                                         gamma, mats, vecs, ints)
        steps += n_steps
        if status != OK:
            return status, steps
        phase = advance_active_set(H, c, W, u, kind, mu, m, normal_weight, memory, gamma,
                                   vecs[V_CONVEX], ints[I_PUSHING], active,
                                   ints[I_LAST:I_EARLIER + 1], weight, trial_kind, trial_mu)
    return OK, steps


@step
def begin_active_set(kind, mu, m, normal_weight, memory, restart, max_rounds, pushing, active,
                     weight, trial_kind, trial_mu) -> int:
    """Start the active set: from the last step's pushing rows when the rows repeat (memory;
    if those rounds do not settle, again from the convex form's set when ``restart``), else
    from the convex form's solution. Sets the first request; returns the phase."""
    same = memory[2, 0] == m
    for i in range(m):
        same = same and memory[0, i] == kind[i]
    active[A_ROUNDS], active[A_MAX_ROUNDS], active[A_HAVE_CONVEX] = 0, max_rounds, 0
    active[A_HAVE_START] = 0
    if same:
        for i in range(m):
            pushing[i] = memory[1, i]
        active[A_ROUNDS_AFTER_CONVEX] = restart
        request_round(kind, mu, m, normal_weight, pushing, weight, trial_kind, trial_mu)
        active[A_PHASE] = SOLVE_ROUND
    else:
        active[A_ROUNDS_AFTER_CONVEX] = True
        request_convex(kind, mu, m, weight, trial_kind, trial_mu)
        active[A_PHASE] = SOLVE_CONVEX
    return active[A_PHASE]


@step
def load_start(memory, m, active, start):
    """When the active set starts from the remembered rows (begin_active_set's SOLVE_ROUND),
    their last impulses are the first weighted solve's start (weighted_solve)."""
    if active[A_PHASE] == SOLVE_ROUND:
        impulses = last_impulses(memory)
        for i in range(m):
            start[i] = impulses[i]
        active[A_HAVE_START] = True


@step
def request_convex(kind, mu, m, weight, trial_kind, trial_mu):
    """Ask for the convex form: no penalty, every row as it is."""
    for i in range(m):
        weight[i] = 0.0
        trial_kind[i] = kind[i]
        trial_mu[i] = mu[i]


@step
def request_round(kind, mu, m, normal_weight, pushing, weight, trial_kind, trial_mu):
    """Ask for one round: the one-sided rows that do not push (and their friction rows) held at
    zero, the pushing rows' law penalised with normal_weight."""
    for i in range(m):
        o = owner(kind, i)
        held = one_sided(kind[o]) and not pushing[o]
        trial_kind[i] = FIXED if held else kind[i]
        trial_mu[i] = 0.0 if held else mu[i]
        weight[i] = normal_weight if pushing[i] else 0.0


@step
def advance_active_set(H, c, W, u, kind, mu, m, normal_weight, memory, gamma, convex, pushing,
                       active, history, weight, trial_kind, trial_mu) -> int:
    """Take the solution (gamma) of the request and decide the next one; returns the phase.
    After the convex form: its pushing rows (pushing_rows), then rounds (unless this convex
    solve only ends a remembered set's failed rounds). After a round: a pushing row whose
    impulse moves its own row by less than the joining threshold leaves, a held row that would
    close (r < 0 beyond it) joins; no change settles the set. A round whose solution adds
    energy (adds_energy: the penalty held a row's law with the friction rows), a set that
    returns to the one of two rounds before (a cycle: each round's set is a function of the
    last, so it would repeat to the last allowed round), or the last allowed round, ends the
    rounds unsettled: the convex form's solution is the answer (solved first if not in hand).
    history (2, rows): the sets of the last two rounds. At DONE gamma is the answer and memory
    holds the set."""
    if active[A_PHASE] == SOLVE_CONVEX:
        for i in range(m):
            convex[i] = gamma[i]
        active[A_HAVE_CONVEX] = True
        pushing_rows(convex, kind, m, impulse_scale(H, c, m), pushing)
        if not active[A_ROUNDS_AFTER_CONVEX]:
            return finish_active_set(kind, m, pushing, gamma, memory, active)
        active[A_ROUNDS] = 0
        request_round(kind, mu, m, normal_weight, pushing, weight, trial_kind, trial_mu)
        active[A_PHASE] = SOLVE_ROUND
        return SOLVE_ROUND
    if not adds_energy(W, u, c, gamma, m, impulse_scale(H, c, m) * max_abs(c, m)):
        last, earlier = history[0], history[1]
        for i in range(m):
            last[i] = pushing[i]
        if not update_pushing(H, c, kind, m, gamma, pushing):
            return finish_active_set(kind, m, pushing, gamma, memory, active)
        cycled = active[A_ROUNDS] > 0 and same_set(pushing, earlier, m)
        for i in range(m):
            earlier[i] = last[i]
        active[A_ROUNDS] += 1
        if not cycled and active[A_ROUNDS] < active[A_MAX_ROUNDS]:
            request_round(kind, mu, m, normal_weight, pushing, weight, trial_kind, trial_mu)
            return SOLVE_ROUND
    if active[A_HAVE_CONVEX]:  # unsettled: the convex form's solution
        for i in range(m):
            gamma[i] = convex[i]
        pushing_rows(convex, kind, m, impulse_scale(H, c, m), pushing)
        return finish_active_set(kind, m, pushing, gamma, memory, active)
    request_convex(kind, mu, m, weight, trial_kind, trial_mu)
    active[A_PHASE] = SOLVE_CONVEX
    return SOLVE_CONVEX


@step
def update_pushing(H, c, kind, m, gamma, pushing) -> bool:
    """One round's change of the pushing set; returns whether any row changed. Leave: an
    impulse that moves its own row by less than a held row must close to join (the same units
    both ways: a test on the impulse, relative to the largest, made a light joint's limit row,
    H_ii ~ 1e5, leave and join in turn)."""
    closing = 1e-7 * max(max_abs(c, m), 1e-9)
    changed = False
    for i in range(m):
        if not one_sided(kind[i]):
            continue
        ri = c[i]
        for j in range(m):
            ri += H[i, j] * gamma[j]
        if pushing[i] and gamma[i] * H[i, i] <= closing:
            pushing[i] = False
            changed = True
        elif not pushing[i] and ri < -closing:
            pushing[i] = True
            changed = True
    return changed


@step
def same_set(pushing, other, m) -> bool:
    for i in range(m):
        if pushing[i] != other[i]:
            return False
    return True


@step
def finish_active_set(kind, m, pushing, gamma, memory, active) -> int:
    """Remember this step's rows, pushing set and impulses for the next step's start; DONE."""
    memory[2, 0] = m
    impulses = last_impulses(memory)
    for i in range(m):
        memory[0, i] = kind[i]
        memory[1, i] = pushing[i]
        impulses[i] = gamma[i]
    active[A_PHASE] = DONE
    return DONE


@step
def pushing_rows(gamma, kind, m, impulses, pushing):
    """The rows that push in the convex form's solution gamma: the bilateral rows, and the
    one-sided rows above the rounding scale (interior-point solutions leave the others
    slightly positive)."""
    tolerance = 1e-7 * max(max_abs(gamma, m), impulses)
    for i in range(m):
        pushing[i] = kind[i] == BILATERAL or (one_sided(kind[i]) and gamma[i] > tolerance)


@step
def adds_energy(W, u, c, gamma, m, work) -> bool:
    """Do the impulses add more kinetic energy, gamma.u + 1/2 gamma.W gamma (in M~'s metric),
    than the rows' position terms can release, sum max(0, -gamma_i (c_i - u_i)) (a compressed
    spring pushing back, a violated limit recovering), beyond 1e-3 of their work scale
    sum |gamma_i c_i| and 1e-9 of the rows' own ``work`` (impulse_scale times max |c|: below
    it the impulses are rounding, and so is the test)? The convex form's solution never does
    (complementarity, gamma.(H gamma + c) = 0, leaves -1/2 gamma.W gamma - gamma.E^-1 gamma -
    gamma.(c - u)); the weighted one can, when the penalty holds a row's law with the friction
    rows."""
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
    return added > release + 1e-3 * scale + 1e-9 * work


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
