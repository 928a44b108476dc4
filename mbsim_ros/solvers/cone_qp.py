"""A general convex cone QP, compiled:

    min 1/2 y.P y + q.y  subject to  s = D y  in a product of cones

(free variables, y >= 0, second-order cones (y0 >= |(y1, y2)|/coef), their parts, pyramids and
boxes, per variable kind of mbsim_ros.codes), by a primal-dual interior-point method with
Nesterov-Todd scaling and Mehrotra's predictor-corrector (the method of CVXOPT's coneqp:
Vandenberghe, "The CVXOPT linear and quadratic cone program solvers", 2010, Sec. 4-5). It knows
nothing of contact: cone_solver.py reduces the compliant integrator's rows to it.

``face_newton`` solves the same problem from a start near its solution (the last step's):
semismooth Newton on the natural map y = Pi(y - (P y + q)) (Pi: the Euclidean projection onto
the cones, Fukushima, Luo and Tseng, "Smoothing functions for second-order-cone
complementarity problems", SIAM J. Optim. 12, 2002, for the cone; Qi and Sun, "A nonsmooth
version of Newton's method", Math. Programming 58, 1993), each iterate the exact solution on
the faces of the last one (for bounds: Hintermueller, Ito and Kunisch, "The primal-dual active
set strategy as a semismooth Newton method", SIAM J. Optim. 13, 2002).
"""
from __future__ import annotations

import math

import numpy as np

from .._jit import routine, step
from ..codes import BOX, CONE, FREE, NONNEG, NOT_CONVERGED, NOT_POSITIVE, OK, PART, PYRAMID
from .envelope_cholesky import cholesky, cholesky_solve
from .lu import lu_factor, lu_solve

ITERATIONS = 100          # interior-point iterations per solve, default
GAP_TOLERANCE = 1e-12     # surrogate gap, relative to |objective|
DUAL_TOLERANCE = 1e-11    # dual residual, relative to its terms (|q|, |P y|)
ACCEPTABLE = 1e-9         # both, accepted when rounding stops progress (the best iterate)
NEWTON_ITERATIONS = 16    # face_newton's iterations before its caller turns to interior_qp
# the limits' entries: iteration cap, gap tolerance, out: the residual, warm start (1.0 / 0.0)
LIMIT_ITERATIONS, LIMIT_GAP, LIMIT_RESIDUAL, LIMIT_WARM_START = range(4)
# a variable's face in face_newton (its cone's, for a cone's three): inside, at its lower bound
# (0; a box's -b; a cone's apex), at a box's upper bound, on a cone's boundary (sliding)
FACE_LOWER, FACE_FREE, FACE_UPPER, FACE_SLIDING = range(4)


def solver_limits(iterations: int = ITERATIONS, gap_tolerance: float = GAP_TOLERANCE,
                  warm_start: bool = True) -> np.ndarray:
    """The solve's limits: [interior_qp's iteration cap, its relative gap tolerance, out: the
    residual, whether each solve starts from the last one's solution by face_newton and
    ends with a face_newton step (cone_solver.weighted_solve)]."""
    return np.array([float(iterations), float(gap_tolerance), 0.0, float(warm_start)])


# The cone solver's buffers (interior_qp's and cone_solver.py's), every slot named once here
# (solver_workspace sizes them from these lists, so a new slot cannot alias another): matrices
# (rows, rows), vectors (4 rows: a cone's slack has three entries per row), integer vectors.
(M_HESS, M_L, M_P, M_H, M_LH, M_M3), N_MATRICES = range(6), 6
(V_RDUAL, V_DY, V_YU, V_RHS, V_S, V_Z, V_W, V_LAM, V_DS, V_DZ, V_SDS, V_SDZ,    # interior_qp
 V_COEF, V_SCALE, V_Q, V_Y,                                                    # weighted_solve
 V_EINV, V_C, V_WEIGHT, V_TRIAL_MU,                                            # solve_rows
 V_RC, V_ZERO, V_YBEST,                                                        # interior_qp
 V_CONVEX,                                                                     # solve_rows
 V_START), N_VECTORS = range(25), 25     # weighted_solve: the last solution (its next start)
(I_INDEX, I_VTYPE, I_TRIAL_KIND, I_PUSHING, I_COUPLED, I_FIRST,
 I_ACTIVE,                # the active set's state (cone_solver.py)
 I_LAST, I_EARLIER,       # its last two pushing sets (a cycle's test)
 I_FACE, I_LAST_FACE, I_PIVOTS), N_INTS = range(12), 12  # face_newton
MIN_ROWS = 8  # the integer vectors also hold the active set's few state entries


def solver_workspace(rows: int) -> tuple:
    """Buffers for `rows` rows: (the matrices, the vectors, the integer vectors named above,
    the memory a step carries to the next (4, rows): the rows' kinds, their pushing flags,
    [row count], and the impulses as float64 bits (``last_impulses``))."""
    rows = max(rows, MIN_ROWS)
    return (np.zeros((N_MATRICES, rows, rows)), np.zeros((N_VECTORS, 4 * rows)),
            np.zeros((N_INTS, rows), dtype=np.int64), np.zeros((4, rows), dtype=np.int64))


@step
def last_impulses(memory):
    """The memory's last impulses (its row 3 read as float64: one int array carries the
    memory through save_state, the estimators' held copies and the compiled step)."""
    return memory[3].view(np.float64)


@step
def slack_count(vtype, n) -> tuple:
    """(slots of the slacks s = D y and multipliers z, degree): NONNEG 1 slot, CONE 3 slots
    (one second-order cone, degree 1 with e = (1, 0, 0)), PYRAMID 4 slots (four half-spaces),
    BOX 2 slots (b + y >= 0, b - y >= 0)."""
    slots, degree = 0, 0.0
    for i in range(n):
        if vtype[i] == NONNEG:
            slots, degree = slots + 1, degree + 1.0
        elif vtype[i] == CONE:
            slots, degree = slots + 3, degree + 1.0
        elif vtype[i] == PYRAMID:
            slots, degree = slots + 4, degree + 4.0
        elif vtype[i] == BOX:
            slots, degree = slots + 2, degree + 2.0
    return slots, degree


@step
def slot_width(t) -> int:
    return 1 if t == NONNEG else 3 if t == CONE else 4 if t == PYRAMID else 2 if t == BOX \
        else 0


@step
def slacks(y, vtype, coef, n, s, offset):
    """s = D y + d per constraint (NONNEG: y_i; CONE: (mu y0, y1, y2); PYRAMID: mu y0 -+ y1,
    mu y0 -+ y2; BOX: b + y, b - y with b = coef; offset 0: a step's D dy, no b)."""
    k = 0
    for i in range(n):
        t = vtype[i]
        if t == NONNEG:
            s[k] = y[i]
        elif t == CONE:
            s[k], s[k + 1], s[k + 2] = coef[i] * y[i], y[i + 1], y[i + 2]
        elif t == PYRAMID:
            e = k
            for j in (1, 2):
                for sign in (1.0, -1.0):
                    s[e] = coef[i] * y[i] - sign * y[i + j]
                    e += 1
        elif t == BOX:
            s[k], s[k + 1] = offset * coef[i] + y[i], offset * coef[i] - y[i]
        k += slot_width(t)


@step
def cone_step_limit(x0, x1, x2, d0, d1, d2) -> float:
    """The largest a with x + a d in the closed second-order cone (x inside; inf if none)."""
    qa = d0 * d0 - d1 * d1 - d2 * d2
    qb = 2.0 * (x0 * d0 - x1 * d1 - x2 * d2)
    qc = x0 * x0 - x1 * x1 - x2 * x2
    best = math.inf
    if abs(qa) < 1e-300:
        if qb < 0.0:
            best = -qc / qb
    else:
        disc = qb * qb - 4.0 * qa * qc
        if disc >= 0.0:
            root = math.sqrt(disc)
            for r in ((-qb - root) / (2.0 * qa), (-qb + root) / (2.0 * qa)):
                if r > 0.0:
                    best = min(best, r)
    if d0 < 0.0:
        best = min(best, -x0 / d0)
    return best


@step
def step_limit(vtype, n, x, dx) -> float:
    """The largest a keeping x + a dx in the cones of the slots (inf if unbounded)."""
    best = math.inf
    k = 0
    for i in range(n):
        t = vtype[i]
        if t == CONE:
            best = min(best, cone_step_limit(x[k], x[k + 1], x[k + 2], dx[k], dx[k + 1],
                                             dx[k + 2]))
        else:
            for e in range(k, k + slot_width(t)):
                if dx[e] < 0.0:
                    best = min(best, -x[e] / dx[e])
        k += slot_width(t)
    return best


@step
def nt_scaling(vtype, n, s, z, w, lam):
    """Nesterov-Todd scaling W with W z = W^-1 s = lam (Vandenberghe, "The CVXOPT linear and
    quadratic cone program solvers", Sec. 4.1): half-spaces w = sqrt(s / z); a cone stores
    (beta, wbar_1, wbar_2) in its three slots with wbar_0 = sqrt(1 + |wbar_1|^2),
    W = beta [[wbar_0, wbar_1^T], [wbar_1, I + wbar_1 wbar_1^T / (1 + wbar_0)]]."""
    k = 0
    for i in range(n):
        t = vtype[i]
        if t == CONE:
            s0, s1, s2 = s[k], s[k + 1], s[k + 2]
            z0, z1, z2 = z[k], z[k + 1], z[k + 2]
            sn = math.sqrt(s0 * s0 - s1 * s1 - s2 * s2)
            zn = math.sqrt(z0 * z0 - z1 * z1 - z2 * z2)
            s0, s1, s2 = s0 / sn, s1 / sn, s2 / sn
            z0, z1, z2 = z0 / zn, z1 / zn, z2 / zn
            gamma = math.sqrt(0.5 * (1.0 + s0 * z0 + s1 * z1 + s2 * z2))
            w[k] = math.sqrt(sn / zn)
            w[k + 1] = (s1 - z1) / (2.0 * gamma)
            w[k + 2] = (s2 - z2) / (2.0 * gamma)
            apply_scaling(w, k, z[k], z[k + 1], z[k + 2], False, lam, k)
        else:
            for e in range(k, k + slot_width(t)):
                w[e] = math.sqrt(s[e] / z[e])
                lam[e] = math.sqrt(s[e] * z[e])
        k += slot_width(t)


@step
def apply_scaling(w, k, x0, x1, x2, inverse, out, o):
    """out[o:o+3] = W x (or W^-1 x) for the cone whose scaling is in w[k:k+3]."""
    beta, w1, w2 = w[k], w[k + 1], w[k + 2]
    w0 = math.sqrt(1.0 + w1 * w1 + w2 * w2)
    if inverse:
        beta, w1, w2 = 1.0 / beta, -w1, -w2
    dot = w1 * x1 + w2 * x2
    tail = dot / (1.0 + w0) + x0
    out[o] = beta * (w0 * x0 + dot)
    out[o + 1] = beta * (x1 + tail * w1)
    out[o + 2] = beta * (x2 + tail * w2)


@step
def jordan_divide(l0, l1, l2, r0, r1, r2, out, k):
    """out[k:k+3] = u with lam o u = r, lam o u = (lam . u, lam_0 u_1 + u_0 lam_1)."""
    u0 = (l0 * r0 - l1 * r1 - l2 * r2) / (l0 * l0 - l1 * l1 - l2 * l2)
    out[k] = u0
    out[k + 1] = (r1 - l1 * u0) / l0
    out[k + 2] = (r2 - l2 * u0) / l0


@step
def centering_target(vtype, n, lam, sigma_mu, a_s, a_z, out):
    """out = lam^-1 o (sigma mu e - lam o lam - a_s o a_z) per slot (Mehrotra's corrector
    a_s o a_z; zeros for the affine step)."""
    k = 0
    for i in range(n):
        t = vtype[i]
        if t == CONE:
            l0, l1, l2 = lam[k], lam[k + 1], lam[k + 2]
            r0 = sigma_mu - (l0 * l0 + l1 * l1 + l2 * l2) \
                - (a_s[k] * a_z[k] + a_s[k + 1] * a_z[k + 1] + a_s[k + 2] * a_z[k + 2])
            r1 = -2.0 * l0 * l1 - (a_s[k] * a_z[k + 1] + a_z[k] * a_s[k + 1])
            r2 = -2.0 * l0 * l2 - (a_s[k] * a_z[k + 2] + a_z[k] * a_s[k + 2])
            jordan_divide(l0, l1, l2, r0, r1, r2, out, k)
        else:
            for e in range(k, k + slot_width(t)):
                out[e] = (sigma_mu - lam[e] * lam[e] - a_s[e] * a_z[e]) / lam[e]
        k += slot_width(t)


@step
def normal_matrix(P, vtype, coef, n, w, hess, M3):
    """hess = P + D^T W^-2 D (half-space a.y >= 0: a a^T / w^2)."""
    for i in range(n):
        for j in range(n):
            hess[i, j] = P[i, j]
    k = 0
    for i in range(n):
        t = vtype[i]
        if t == NONNEG:
            hess[i, i] += 1.0 / (w[k] * w[k])
        elif t == BOX:
            hess[i, i] += 1.0 / (w[k] * w[k]) + 1.0 / (w[k + 1] * w[k + 1])
        elif t == CONE:
            for c in range(3):  # columns of W^-1, then W^-2 = W^-1 W^-1 (symmetric)
                apply_scaling(w, k, 1.0 if c == 0 else 0.0, 1.0 if c == 1 else 0.0,
                              1.0 if c == 2 else 0.0, True, M3[c], 0)
            for a in range(3):
                da = coef[i] if a == 0 else 1.0
                for b in range(3):
                    db = coef[i] if b == 0 else 1.0
                    acc = 0.0
                    for c in range(3):
                        acc += M3[a, c] * M3[c, b]
                    hess[i + a, i + b] += da * acc * db
        elif t == PYRAMID:
            c0 = coef[i]
            e = k
            for j in (1, 2):
                for sign in (1.0, -1.0):  # a = c e_0 - sign e_j
                    d = 1.0 / (w[e] * w[e])
                    hess[i, i] += d * c0 * c0
                    hess[i, i + j] -= d * c0 * sign
                    hess[i + j, i] -= d * c0 * sign
                    hess[i + j, i + j] += d
                    e += 1
        k += slot_width(t)


@step
def add_scaled_target(vtype, coef, n, w, rc, rhs, tmp):
    """rhs += D^T W^-1 rc."""
    k = 0
    for i in range(n):
        t = vtype[i]
        if t == NONNEG:
            rhs[i] += rc[k] / w[k]
        elif t == BOX:
            rhs[i] += rc[k] / w[k] - rc[k + 1] / w[k + 1]
        elif t == CONE:
            apply_scaling(w, k, rc[k], rc[k + 1], rc[k + 2], True, tmp, k)
            rhs[i] += coef[i] * tmp[k]
            rhs[i + 1] += tmp[k + 1]
            rhs[i + 2] += tmp[k + 2]
        elif t == PYRAMID:
            e = k
            for j in (1, 2):
                for sign in (1.0, -1.0):
                    g = rc[e] / w[e]
                    rhs[i] += coef[i] * g
                    rhs[i + j] -= sign * g
                    e += 1
        k += slot_width(t)


@step
def multiplier_direction(vtype, n, w, rc, ds, dz, scaled_ds, scaled_dz):
    """dz = W^-1 (rc - W^-1 ds); also W^-1 ds and W dz (Mehrotra's corrector needs them)."""
    k = 0
    for i in range(n):
        t = vtype[i]
        if t == CONE:
            apply_scaling(w, k, ds[k], ds[k + 1], ds[k + 2], True, scaled_ds, k)
            for e in range(k, k + 3):
                scaled_dz[e] = rc[e] - scaled_ds[e]
            apply_scaling(w, k, scaled_dz[k], scaled_dz[k + 1], scaled_dz[k + 2], True, dz, k)
        else:
            for e in range(k, k + slot_width(t)):
                scaled_ds[e] = ds[e] / w[e]
                scaled_dz[e] = rc[e] - scaled_ds[e]
                dz[e] = scaled_dz[e] / w[e]
        k += slot_width(t)


@step
def dual_residual(P, q, y, vtype, coef, n, z, r_dual) -> float:
    """r_dual = P y + q - D^T z; returns the largest |P y| entry (the terms' size)."""
    size = 0.0
    for i in range(n):
        acc = 0.0
        for j in range(n):
            acc += P[i, j] * y[j]
        size = max(size, abs(acc))
        r_dual[i] = acc + q[i]
    k = 0
    for i in range(n):
        t = vtype[i]
        if t == NONNEG:
            r_dual[i] -= z[k]
        elif t == BOX:
            r_dual[i] -= z[k] - z[k + 1]
        elif t == CONE:
            r_dual[i] -= coef[i] * z[k]
            r_dual[i + 1] -= z[k + 1]
            r_dual[i + 2] -= z[k + 2]
        elif t == PYRAMID:
            e = k
            for j in (1, 2):
                for sign in (1.0, -1.0):
                    r_dual[i] -= coef[i] * z[e]
                    r_dual[i + j] += sign * z[e]
                    e += 1
        k += slot_width(t)
    return size


@step
def objective(P, q, y, n) -> float:
    f = 0.0
    for i in range(n):
        acc = 0.5 * P[i, i] * y[i]
        for j in range(i):
            acc += P[i, j] * y[j]
        f += y[i] * acc + q[i] * y[i]
    return f


@routine
def newton_direction(L, first, n, vtype, coef, w, r_dual, rc, rhs, dy, ds, dz, sds, sdz):
    """Solve (P + D^T W^-2 D) dy = -r_dual + D^T W^-1 rc (L: its factor), then ds = D dy and
    dz, W^-1 ds, W dz. A routine: interior_qp takes it twice an iteration (predictor and
    corrector), and inlined it was 828 statements typed and lowered at each site."""
    for i in range(n):
        rhs[i] = -r_dual[i]
    add_scaled_target(vtype, coef, n, w, rc, rhs, sds)
    for i in range(n):
        dy[i] = rhs[i]
    cholesky_solve(L, n, first, dy)
    slacks(dy, vtype, coef, n, ds, 0.0)
    multiplier_direction(vtype, n, w, rc, ds, dz, sds, sdz)


@routine
def interior_qp(P, q, vtype, coef, n, y, limits, mats, vecs, first) -> tuple:
    """min 1/2 y.P y + q.y subject to s = D y in the constraints' cones (vtype; coef: mu of
    the cone heads), leading n x n block; y out. A primal-dual interior-point method with
    Nesterov-Todd scaling and Mehrotra's predictor-corrector (Vandenberghe, "The CVXOPT linear
    and quadratic cone program solvers", Sec. 4-5); the iterates keep s = D y exactly inside
    the cones. limits: [iteration cap, gap tolerance, out: the returned iterate's residual
    max(dual / size, gap / |f|)]. Returns (status, iterations). P must be positive definite."""
    hess, L, M3 = mats[M_HESS], mats[M_L], mats[M_M3]
    r_dual, dy, yu, rhs = vecs[V_RDUAL], vecs[V_DY], vecs[V_YU], vecs[V_RHS]
    s, z, w, lam = vecs[V_S], vecs[V_Z], vecs[V_W], vecs[V_LAM]
    ds, dz, sds, sdz = vecs[V_DS], vecs[V_DZ], vecs[V_SDS], vecs[V_SDZ]
    rc, zero, y_best = vecs[V_RC], vecs[V_ZERO], vecs[V_YBEST]
    if not cholesky(P, n, L, first):
        return NOT_POSITIVE, 0
    for i in range(n):  # the unconstrained minimum: the start's scale, a bound on f
        yu[i] = -q[i]
    cholesky_solve(L, n, first, yu)
    slots, degree = slack_count(vtype, n)
    if slots == 0:
        for i in range(n):
            y[i] = yu[i]
        limits[2] = 0.0
        return OK, 0
    f_low = objective(P, q, yu, n)
    scale, q_norm = 1e-300, 1e-300
    for i in range(n):
        scale = max(scale, abs(yu[i]))
        q_norm = max(q_norm, abs(q[i]))
    for i in range(n):  # strictly inside: (scale, 0, 0) per cone, a box's centre
        y[i] = yu[i] if vtype[i] == FREE else 0.0 if vtype[i] == PART or vtype[i] == BOX \
            else scale
    slacks(y, vtype, coef, n, s, 1.0)
    k = 0
    for i in range(n):
        for e in range(k, k + slot_width(vtype[i])):
            z[e] = q_norm if (vtype[i] != CONE or e == k) else 0.0
            zero[e] = 0.0
        k += slot_width(vtype[i])
    stalls = 0
    best = math.inf
    iteration = 0
    limit = int(limits[0])
    for iteration in range(1, limit + 1):
        gap = 0.0
        for e in range(slots):
            gap += s[e] * z[e]
        size = max(dual_residual(P, q, y, vtype, coef, n, z, r_dual), q_norm)
        dual = 0.0
        for i in range(n):
            dual += r_dual[i] * r_dual[i]  # NaN stays NaN (max() would drop it)
        dual = math.sqrt(dual)
        f_size = max(abs(f_low), abs(objective(P, q, y, n)), 1e-300)
        if not (math.isfinite(dual) and math.isfinite(gap) and math.isfinite(size)):
            break  # the scaling broke down at the rounding floor: the best iterate, if any
        merit = max(dual / size, gap / f_size)
        if dual <= DUAL_TOLERANCE * size and gap <= limits[1] * f_size:
            limits[2] = merit
            return OK, iteration - 1
        if merit <= ACCEPTABLE and merit < best:  # near the rounding floor: keep the best
            best = merit
            for i in range(n):
                y_best[i] = y[i]
        if stalls >= 3 and best <= ACCEPTABLE:
            break  # rounding stops progress
        nt_scaling(vtype, n, s, z, w, lam)
        normal_matrix(P, vtype, coef, n, w, hess, M3)
        if not cholesky(hess, n, L, first):  # the scaling degenerates at the rounding floor
            if best <= ACCEPTABLE:
                break
            return NOT_POSITIVE, iteration
        # predictor (affine scaling): rc = -lam
        centering_target(vtype, n, lam, 0.0, zero, zero, rc)
        newton_direction(L, first, n, vtype, coef, w, r_dual, rc, rhs, dy, ds, dz, sds, sdz)
        a = min(1.0, step_limit(vtype, n, s, ds), step_limit(vtype, n, z, dz))
        affine_gap = 0.0
        for e in range(slots):
            affine_gap += (s[e] + a * ds[e]) * (z[e] + a * dz[e])
        sigma = (max(affine_gap, 0.0) / gap) ** 3
        # corrector: sigma mu e - lam o lam - (W^-1 ds_a) o (W dz_a)
        for e in range(slots):
            ds[e], dz[e] = sds[e], sdz[e]  # keep the affine scaled steps
        centering_target(vtype, n, lam, sigma * gap / degree, ds, dz, rc)
        newton_direction(L, first, n, vtype, coef, w, r_dual, rc, rhs, dy, ds, dz, sds, sdz)
        a = min(1.0, 0.99 * min(step_limit(vtype, n, s, ds), step_limit(vtype, n, z, dz)))
        stalls = stalls + 1 if a < 1e-8 else 0
        for i in range(n):
            y[i] += a * dy[i]
        slacks(y, vtype, coef, n, s, 1.0)
        for e in range(slots):
            z[e] += a * dz[e]
    limits[2] = best
    if best > ACCEPTABLE:
        return NOT_CONVERGED, limit
    for i in range(n):
        y[i] = y_best[i]
    return OK, iteration


@step
def projection(vtype, coef, i, x) -> tuple:
    """The Euclidean projection Pi of the variables from i onto their cone: (face, width, p0,
    p1, p2), p1 and p2 zero past the width. A cone {mu y0 >= |(y1, y2)|}: x inside, x in
    the polar cone {x0 <= -mu |(x1, x2)|} (the apex), else the boundary ray through it."""
    t = vtype[i]
    if t == CONE:
        x0, x1, x2, mu = x[i], x[i + 1], x[i + 2], coef[i]
        r = math.sqrt(x1 * x1 + x2 * x2)
        if r <= mu * x0:
            return FACE_FREE, 3, x0, x1, x2
        if mu * r <= -x0:
            return FACE_LOWER, 3, 0.0, 0.0, 0.0
        a = (x0 + mu * r) / (1.0 + mu * mu)
        return FACE_SLIDING, 3, a, mu * a * x1 / r, mu * a * x2 / r
    if t == NONNEG and not x[i] > 0.0:
        return FACE_LOWER, 1, 0.0, 0.0, 0.0
    if t == BOX and x[i] <= -coef[i]:
        return FACE_LOWER, 1, -coef[i], 0.0, 0.0
    if t == BOX and x[i] >= coef[i]:
        return FACE_UPPER, 1, coef[i], 0.0, 0.0
    return FACE_FREE, 1, x[i], 0.0, 0.0


@step
def natural_map(P, q, y, vtype, coef, n, x, face) -> float:
    """x = y - (P y + q), and per variable the face of its cone where x projects
    (projection); returns the natural residual max |y - Pi(x)|, zero exactly at the solution
    (the problem's KKT conditions)."""
    for i in range(n):
        acc = q[i]
        for j in range(n):
            acc += P[i, j] * y[j]
        x[i] = y[i] - acc
    residual = 0.0
    i = 0
    while i < n:
        f, width, p0, p1, p2 = projection(vtype, coef, i, x)
        residual = max(residual, abs(y[i] - p0))
        if width == 3:
            residual = max(residual, abs(y[i + 1] - p1), abs(y[i + 2] - p2))
        for e in range(i, i + width):
            face[e] = f
        i += width
    return residual


@step
def project(y, vtype, coef, n):
    """y <- Pi(y): each variable onto its cone (projection)."""
    i = 0
    while i < n:
        _, width, p0, p1, p2 = projection(vtype, coef, i, y)
        y[i] = p0
        if width == 3:
            y[i + 1], y[i + 2] = p1, p2
        i += width


@step
def newton_system(P, q, vtype, coef, n, x, face, J, rhs, D):
    """The Newton equation of y = Pi(y - (P y + q)) at x, written for the next iterate itself:
    (I - D + D P) y' = Pi(x) - D x - D q, D = dPi/dx per cone (1 on a free variable, 0 at a
    bound; on a cone's boundary, with t = x_t / |x_t|, a = (x0 + mu |x_t|) / (1 + mu^2):
    D = [[1, mu t^T], [mu t, mu^2 t t^T]] / (1 + mu^2) + mu a / |x_t| [[0, 0], [0, I - t t^T]]).
    Pi(x) - D x is a box's bound and zero on a cone (Pi is positively homogeneous), so on
    faces without a sliding cone y' depends on the faces alone, not on the iterate."""
    i = 0
    while i < n:
        width = 3 if vtype[i] == CONE else 1
        f = face[i]
        if f == FACE_SLIDING:
            mu = coef[i]
            x1, x2 = x[i + 1], x[i + 2]
            r = math.sqrt(x1 * x1 + x2 * x2)
            t1, t2 = x1 / r, x2 / r
            k = 1.0 / (1.0 + mu * mu)
            g = mu * (x[i] + mu * r) * k / r
            D[0, 0], D[0, 1], D[0, 2] = k, k * mu * t1, k * mu * t2
            D[1, 0], D[2, 0] = D[0, 1], D[0, 2]
            D[1, 1] = k * mu * mu * t1 * t1 + g * (1.0 - t1 * t1)
            D[2, 2] = k * mu * mu * t2 * t2 + g * (1.0 - t2 * t2)
            D[1, 2] = k * mu * mu * t1 * t2 - g * t1 * t2
            D[2, 1] = D[1, 2]
            for a in range(3):
                rhs[i + a] = -(D[a, 0] * q[i] + D[a, 1] * q[i + 1] + D[a, 2] * q[i + 2])
                for j in range(n):
                    J[i + a, j] = D[a, 0] * P[i, j] + D[a, 1] * P[i + 1, j] \
                        + D[a, 2] * P[i + 2, j]
                for b in range(3):
                    J[i + a, i + b] += (1.0 if a == b else 0.0) - D[a, b]
        else:
            for e in range(i, i + width):
                if f == FACE_FREE:
                    for j in range(n):
                        J[e, j] = P[e, j]
                    rhs[e] = -q[e]
                else:
                    for j in range(n):
                        J[e, j] = 0.0
                    J[e, e] = 1.0
                    bound = coef[e] if vtype[e] == BOX else 0.0
                    rhs[e] = -bound if f == FACE_LOWER else bound
        i += width


@step
def newton_solve(J, n, face, rhs, L, first, pivots) -> bool:
    """rhs <- J^-1 rhs for newton_system's J (overwritten). Without a sliding cone J's rows are
    P's (a free variable) or the identity's (one at a bound): with the bound variables'
    columns moved to the right-hand side J is symmetric positive definite, factored by
    Cholesky (envelope_cholesky, half the LU's work); with one, or where Cholesky fails, LU
    with partial pivoting. False when J is singular."""
    sliding = False
    for i in range(n):
        sliding = sliding or face[i] == FACE_SLIDING
    if not sliding:
        for e in range(n):
            if face[e] == FACE_FREE:
                for j in range(n):
                    if face[j] != FACE_FREE:
                        rhs[e] -= J[e, j] * rhs[j]
                        J[e, j] = 0.0
        if cholesky(J, n, L, first):
            cholesky_solve(L, n, first, rhs)
            return True
    if not lu_factor(J[:n, :n], pivots):
        return False
    lu_solve(J[:n, :n], pivots, rhs[:n])
    return True


@routine
def face_newton(P, q, vtype, coef, n, y, limits, mats, vecs, ints) -> tuple:
    """The problem of interior_qp (no pyramids) from y near its solution: semismooth Newton on
    y = Pi(y - (P y + q)) (Qi and Sun 1993; the module docstring), each iterate the solution
    of the linearised projection at the last one (newton_system), solved by Cholesky or LU
    (newton_solve). Converged when an iterate's faces are those it was computed on (then it is the
    problem's exact solution to rounding: on those faces the KKT conditions hold) and, with a
    sliding cone, the last step was below sqrt(tolerance) / 10 of max |y| (quadratic
    convergence: the next would be ~tolerance / 100); or when the natural residual is below
    100 tolerance times max |y| (tolerance: limits[LIMIT_GAP], interior_qp's gap tolerance,
    1e-12 by default). The second test is for problems where a few contacts hold one rigid
    body: P is singular to ~1e-11 of its largest eigenvalue there (the impulses' internal
    distribution is pinned by little but the rows' compliance), and rounding moves y ~1e-6
    along those directions from one iterate to the next at a residual of 1e-12..4e-11. y: the
    start in, the solution out (garbage when not OK); limits[LIMIT_RESIDUAL] out: the natural
    residual relative to max |y|. Returns (status, iterations); NOT_CONVERGED after
    NEWTON_ITERATIONS (the faces cycle, or the start was too far). Undamped: from a start 1 to
    100 % off, 57-59 of 60 random problems converge within 16 iterations (4-7 on average), 41-53
    within 8; backtracking on |F|^2 (Armijo) or on the objective at Pi(y) converged fewer (27-51):
    a damped iterate is no face's exact solution, which is what ends the iteration."""
    J, D = mats[M_HESS], mats[M_M3]
    x, y_next = vecs[V_DY], vecs[V_RHS]
    face, last, pivots = ints[I_FACE], ints[I_LAST_FACE], ints[I_PIVOTS]
    natural_map(P, q, y, vtype, coef, n, x, face)
    tolerance = limits[LIMIT_GAP]
    for iteration in range(1, NEWTON_ITERATIONS + 1):
        newton_system(P, q, vtype, coef, n, x, face, J, y_next, D)
        if not newton_solve(J, n, face, y_next, mats[M_L], ints[I_FIRST], pivots):
            return NOT_POSITIVE, iteration
        change, size, sliding = 0.0, 1e-300, False
        for i in range(n):
            change = max(change, abs(y_next[i] - y[i]))
            size = max(size, abs(y_next[i]))
            y[i] = y_next[i]
            last[i] = face[i]
            sliding = sliding or face[i] == FACE_SLIDING
        if not math.isfinite(change + size):
            return NOT_CONVERGED, iteration
        residual = natural_map(P, q, y, vtype, coef, n, x, face)
        settled = True
        for i in range(n):
            settled = settled and face[i] == last[i]
        if residual <= 100.0 * tolerance * size or settled and (
                not sliding or change <= 0.1 * math.sqrt(tolerance) * size):
            limits[LIMIT_RESIDUAL] = residual / size
            project(y, vtype, coef, n)  # a sliding cone's ~1e-10 outside: onto its cone
            return OK, iteration
    return NOT_CONVERGED, NEWTON_ITERATIONS
