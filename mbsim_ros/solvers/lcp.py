"""Bounded LCP solvers of the rigid-contact integrator, as ODE has them (the ROS wiki's "ODE
Solvers" page: quickstep's
projected Gauss-Seidel with successive over-relaxation; dLCP's Dantzig-style principal pivoting
with Baraff's friction bounds):

    r = A x + c,   lo_i <= x_i <= hi_i,
    x_i = lo_i  =>  r_i >= 0,   x_i = hi_i  =>  r_i <= 0,   lo_i < x_i < hi_i  =>  r_i = 0,

A symmetric positive definite (W + CFM / h; docs/RIGID.md). A friction row i (owner[i] >= 0)
has the box bounds -mu_i x_owner <= x_i <= mu_i x_owner, scaled by its normal row's impulse.
Rows are visited in ``order`` (ODE: the rows without a friction owner first).
"""
import numpy as np

from .._jit import kernel, routine, step
from ..codes import CYCLING, OK, SINGULAR, UNSETTLED

# the index sets of the pivoting: a row not yet driven (x = 0), clamped (w = 0), at a bound
_UNDRIVEN, _CLAMPED, _AT_LOWER, _AT_UPPER, _HELD = 0, 1, 2, 3, 4


@step
def row_bounds(lo, hi, owner, mu, x, i):
    """(lo_i, hi_i); a friction row's from its normal row's current impulse (ODE's findex)."""
    if owner[i] >= 0:
        bound = mu[i] * max(x[owner[i]], 0.0)
        return -bound, bound
    return lo[i], hi[i]


@step
def row_residual(A, c, x, i):
    """r_i = A_i x + c_i."""
    r = c[i]
    for j in range(x.shape[0]):
        r += A[i, j] * x[j]
    return r


@kernel
def pgs_kernel(A, c, lo, hi, owner, mu, order, iterations, sor, tolerance, x):
    """Projected Gauss-Seidel with over-relaxation sor, from x (in place); the friction bounds
    follow the normal impulses row by row. Stops when no impulse moved by more than tolerance
    times the largest in a sweep; returns the sweeps done. ODE quickstep.cpp (SOR PGS)."""
    n = x.shape[0]
    for sweep in range(iterations):
        moved, largest = 0.0, 0.0
        for k in range(n):
            i = order[k]
            if A[i, i] <= 0.0:
                continue
            lower, upper = row_bounds(lo, hi, owner, mu, x, i)
            new = min(max(x[i] - sor * row_residual(A, c, x, i) / A[i, i], lower), upper)
            moved = max(moved, abs(new - x[i]))
            largest = max(largest, abs(new))
            x[i] = new
        if moved <= tolerance * largest:
            return sweep + 1
    return iterations


@kernel
def natural_residual(A, c, lo, hi, owner, mu, x):
    """max_i |x_i - clamp(x_i - r_i / A_ii)| (impulse units): zero exactly at a solution, the
    friction bounds taken from the normal impulses of x."""
    n = x.shape[0]
    worst = 0.0
    for i in range(n):
        if A[i, i] <= 0.0:
            continue
        lower, upper = row_bounds(lo, hi, owner, mu, x, i)
        trial = x[i] - row_residual(A, c, x, i) / A[i, i]
        worst = max(worst, abs(min(max(trial, lower), upper) - x[i]))
    return worst


@routine
def _clamp_add(A, inverse, clamped, k, j, p):
    """Border the inverse of A_CC (rows clamped[:k]) with row j; False when the Schur
    complement is not positive (A_CC + j singular). Cline 2002, 2.7.1 (incremental solve)."""
    for a in range(k):
        s = 0.0
        for b in range(k):
            s += inverse[a, b] * A[clamped[b], j]
        p[a] = s
    schur = A[j, j]
    for a in range(k):
        schur -= A[clamped[a], j] * p[a]
    if not schur > 1e-13 * A[j, j]:
        return False
    for a in range(k):
        for b in range(k):
            inverse[a, b] += p[a] * p[b] / schur
        inverse[a, k] = -p[a] / schur
        inverse[k, a] = -p[a] / schur
    inverse[k, k] = 1.0 / schur
    clamped[k] = j
    return True


@routine
def _clamp_remove(inverse, clamped, k, j):
    """Drop row j from the clamped set (k rows) and its inverse (swap j last, then the
    block-inverse identity E_rr - E_rl E_lr / E_ll)."""
    t = 0
    while clamped[t] != j:
        t += 1
    last = k - 1
    for a in range(k):
        inverse[a, t], inverse[a, last] = inverse[a, last], inverse[a, t]
    for a in range(k):
        inverse[t, a], inverse[last, a] = inverse[last, a], inverse[t, a]
    clamped[t], clamped[last] = clamped[last], clamped[t]
    e = inverse[last, last]
    for a in range(last):
        for b in range(last):
            inverse[a, b] -= inverse[a, last] * inverse[last, b] / e


@routine
def _direction(A, inverse, clamped, k, d, sign, dx, dw):
    """x_d moves by sign while the clamped rows keep r = 0: dx_C = -A_CC^-1 A_Cd sign;
    dw = A dx."""
    n = A.shape[0]
    for i in range(n):
        dx[i] = 0.0
    for a in range(k):
        s = 0.0
        for b in range(k):
            s += inverse[a, b] * A[clamped[b], d]
        dx[clamped[a]] = -sign * s
    dx[d] = sign
    for i in range(n):
        s = A[i, d] * sign
        for a in range(k):
            s += A[i, clamped[a]] * dx[clamped[a]]
        dw[i] = s


@routine
def _step_length(x, w, dx, dw, lower, upper, state, d, sign, tiny):
    """The step along (dx, dw) to the first change of set: (length, row, event); events:
    0 r_d reaches 0, 1 x_d its bound, 2 a clamped row its bound, 3 a row at a bound r = 0."""
    best, row, event = -w[d] / dw[d], d, 0
    bound = upper[d] if sign > 0.0 else lower[d]
    if (bound - x[d]) * sign < best:
        best, event = (bound - x[d]) * sign, 1
    for i in range(x.shape[0]):
        s = np.inf
        if state[i] == _CLAMPED and dx[i] < -tiny:
            s = (lower[i] - x[i]) / dx[i]
        elif state[i] == _CLAMPED and dx[i] > tiny:
            s = (upper[i] - x[i]) / dx[i]
        elif (state[i] == _AT_LOWER and dw[i] < -tiny) or (state[i] == _AT_UPPER and dw[i] > tiny):
            s = -w[i] / dw[i]
        if s < best:
            best, row, event = s, i, 2 if state[i] == _CLAMPED else 3
    return max(best, 0.0), row, event


@routine
def _settle(x, w, lower, upper, state, i, tiny_w):
    """Where a row that is not clamped rests: at a bound, or nowhere yet (-1)."""
    if upper[i] <= lower[i]:
        state[i] = _HELD
    elif x[i] <= lower[i] and w[i] >= -tiny_w:
        state[i] = _AT_LOWER
    elif x[i] >= upper[i] and w[i] <= tiny_w:
        state[i] = _AT_UPPER
    else:
        return False
    return True


@routine
def _drive(A, lower, upper, x, w, state, clamped, k, d, inverse, dx, dw, p, tiny, tiny_w,
           budget):
    """Drive row d until its complementarity holds, the rows before it kept in theirs (the
    clamped set and its inverse updated as rows change set). Returns (status, clamped count,
    pivots). Baraff 1994 / Cline 2002, 2.7.1; ODE lcp.cpp (Dantzig)."""
    pivots = 0
    while True:
        if _settle(x, w, lower, upper, state, d, tiny_w):
            return OK, k, pivots
        if abs(w[d]) <= tiny_w:
            if not _clamp_add(A, inverse, clamped, k, d, p):
                return SINGULAR, k, pivots
            state[d] = _CLAMPED
            return OK, k + 1, pivots
        sign = 1.0 if w[d] < 0.0 else -1.0
        _direction(A, inverse, clamped, k, d, sign, dx, dw)
        if not dw[d] * sign > tiny:
            return SINGULAR, k, pivots
        s, row, event = _step_length(x, w, dx, dw, lower, upper, state, d, sign, tiny)
        for i in range(x.shape[0]):
            x[i] += s * dx[i]
            w[i] += s * dw[i]
        pivots += 1
        if pivots > budget:
            return CYCLING, k, pivots
        if event == 0:
            w[d] = 0.0
        elif event == 1:
            x[d] = upper[d] if sign > 0.0 else lower[d]
        elif event == 2:
            x[row] = lower[row] if dx[row] < 0.0 else upper[row]
            _clamp_remove(inverse, clamped, k, row)
            k -= 1
            state[row] = _AT_LOWER if dx[row] < 0.0 else _AT_UPPER
        else:
            w[row] = 0.0
            if not _clamp_add(A, inverse, clamped, k, row, p):
                return SINGULAR, k, pivots
            k += 1
            state[row] = _CLAMPED


@routine
def _dantzig_pass(A, c, lower, upper, owner, mu, order, bounds_on_reach, x, inverse, state,
                  clamped, w, dx, dw, p, tiny, tiny_w):
    """One pass over the rows in order from x = 0; a friction row's bounds taken from its
    normal impulse when it is reached (bounds_on_reach, ODE) or kept as given."""
    n = x.shape[0]
    for i in range(n):
        x[i], w[i], state[i] = 0.0, c[i], _UNDRIVEN
    k, pivots = 0, 0
    for kk in range(n):
        d = order[kk]
        if bounds_on_reach and owner[d] >= 0:
            upper[d] = mu[d] * max(x[owner[d]], 0.0)
            lower[d] = -upper[d]
        status, k, more = _drive(A, lower, upper, x, w, state, clamped, k, d, inverse, dx, dw,
                                 p, tiny, tiny_w, 10 * n + 10 - pivots)
        pivots += more
        if status != OK:
            return status, pivots
    return OK, pivots


@kernel
def dantzig_kernel(A, c, lo, hi, owner, mu, order, max_passes, x, inverse, ints, reals):
    """The bounded LCP by principal pivoting (Dantzig, as ODE's dLCP does): the first pass sets
    each friction row's bounds from its normal impulse when the row is reached, as ODE does;
    later passes re-solve with the bounds from the last pass's normal impulses until they
    settle. Workspaces: inverse (n, n), ints (2, n), reals (6, n). Returns (status, pivots)."""
    n = x.shape[0]
    state, clamped = ints[0, :n], ints[1, :n]
    lower, upper, w, dx, dw = reals[0, :n], reals[1, :n], reals[2, :n], reals[3, :n], reals[4, :n]
    p = reals[5, :n]
    scale_a, scale_c = 0.0, 0.0
    for i in range(n):
        lower[i], upper[i] = lo[i], hi[i]
        scale_a, scale_c = max(scale_a, A[i, i]), max(scale_c, abs(c[i]))
    tiny, tiny_w = 1e-13 * scale_a, 1e-13 * scale_c
    pivots = 0
    for sweep in range(max_passes):
        status, more = _dantzig_pass(A, c, lower, upper, owner, mu, order, sweep == 0, x,
                                     inverse, state, clamped, w, dx, dw, p, tiny, tiny_w)
        pivots += more
        if status != OK:
            return status, pivots
        moved, largest = 0.0, 0.0
        for i in range(n):
            largest = max(largest, abs(x[i]))
            if owner[i] >= 0:
                bound = mu[i] * max(x[owner[i]], 0.0)
                moved = max(moved, abs(bound - upper[i]))
                upper[i], lower[i] = bound, -bound
        if moved <= 1e-10 * largest:
            return OK, pivots
    return UNSETTLED, pivots
