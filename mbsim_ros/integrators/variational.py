"""The variational integrator of Lee, Liu, Park, Srinivasa (2016): the forced discrete
Euler-Lagrange equation of the trapezoidal discrete Lagrangian on SE(3), evaluated by DRNEA in
O(n) and solved by RIQN (Alg. 3: q_k+1 <- q_k+1 (+) dt M(q_k)^-1 r, M^-1 applied by the
articulated-body algorithm in O(n)), optionally Anderson-accelerated, with Newton on the exact
Jacobian and Broyden as alternatives and Newton as the fallback. Joint damping c and armature a
enter the DEL linearly in x = q_k+1 (-) q_k (-(c/2 + a/h) x): RIQN is preconditioned with them,
x <- x + h (M(q_k) + a + h c/2)^-1 r, so stiff damping never stalls it. Newton restarts from the
best iterate; a step that neither solves is split in halves (up to ``split_levels`` times).
Position-momentum form: the state is (q_k, p_k); the reported velocity is
v_k = (M(q_k) + a)^-1 p_k (docs/VARIATIONAL.md). ``order=4`` composes three steps of
dt * (g1, g2, g1) (Yoshida's triple jump), or with ``composition="suzuki"`` five of
dt * (s, s, 1 - 4 s, s, s) (Suzuki's fractal), each substep's new momentum given back the
residual its solve left (give_back), which lets order 4 solve to 1e-8 by default.
"""
from __future__ import annotations

import math

import numpy as np

from .._jit import kernel, routine, step
from ..arena import ArenaPlan
from ..arrays import copy_into
from ..codes import BAD_ARG0, DIVERGED, NOT_CONVERGED, OK, OUT_OF_BOUNDS, SINGULAR
from ..dynamics.checks import all_finite, max_abs
from ..dynamics.configuration import difference_step, integrate_kernel
from ..dynamics.drnea import (body_inertia, discrete_momentum, gravity_wrench,
                              project_subtree_sums)
from ..dynamics.drnea_derivative import assemble_jacobian, body_jacobian_block
from ..dynamics.kinematics import (inertia_times_motion, joint_velocity, kinematics_pass,
                                   pose_step, world_inertia, world_motion_subspace)
from ..dynamics.crba import mass_matrix_diagonal
from ..dynamics.minv import minv_apply, minv_factor
from ..dynamics.workspace import carve, workspace_size
from ..layout import ArrayTable, Layout, writable_view
from ..solvers.lu import LAPACK_INT, lapack_solve_into
from ..model.model import I_PARENT
from .base import Integrator, StepInfo, StepRecord, register
from .euler import explicit_velocity
from .fused import begin_fused, commit_state, store_rollout_row
from .options import GUESSES, MAX_ANDERSON, ROOT_FINDERS, VariationalOptions
from .servo import any_servo, clear_saturation, servo_forces, servo_saturation


# settings columns
S_ROOT, S_GUESS, S_MAX_ITER, S_ANDERSON, S_NEWTON_MAX, S_SPLIT_LEVELS, S_GIVE_BACK = range(7)
# the tolerance when the option is 0: by order (order 4 gives each substep's residual back)
DEFAULT_TOLERANCE = {2: 1e-10, 4: 1e-8}
YOSHIDA_G1 = 1.0 / (2.0 - 2.0 ** (1.0 / 3.0))
YOSHIDA_G2 = -(2.0 ** (1.0 / 3.0)) / (2.0 - 2.0 ** (1.0 / 3.0))
# Suzuki 1990, Fractal decomposition of exponential operators, eq. (3.14) with m = 2:
# S4(h) = S2(s h) S2(s h) S2((1 - 4 s) h) S2(s h) S2(s h), s = 1 / (4 - 4^(1/3))
SUZUKI_S = 1.0 / (4.0 - 4.0 ** (1.0 / 3.0))
COMPOSITIONS = {"yoshida": (YOSHIDA_G1, YOSHIDA_G2, YOSHIDA_G1),
                "suzuki": (SUZUKI_S, SUZUKI_S, 1.0 - 4.0 * SUZUKI_S, SUZUKI_S, SUZUKI_S)}
# The residual's rounding floor, in units of the double's epsilon times its terms (rounding_floor):
# a root finder that stops improving at or below it is accepted there (the tolerance asked for
# less than rounding allows); above it, stagnation is not convergence.
ROUNDING_FLOOR = 16.0 * 2.220446049250313e-16
# rows of the (n_vectors, nv) block of the variational workspace
V_B, V_R, V_X, V_DX, V_VK, V_WORK, V_Y, V_GNEW, V_PCUR, V_UEFF, V_DIAG, V_RES = range(12)
# (IG3: explicit_velocity takes rows V_WORK, V_Y, V_GNEW as its first three work rows)
V_PRECOND, V_LINEAR, V_XBEST, V_PPIECE = range(12, 16)
# the substep's force with the servos' (servo.servo_forces) and the servos' linear terms
V_UTOTAL, V_SERVO_LINEAR = range(16, 18)
V_ADDED = 18  # the diagonal added to M in the factorisation IA_k, U_k, Dinv_k hold
V_XLAST = 19  # the increment x of the last substep solved in this step (its length: last_h)
V_PKEPT = 20  # the momentum whose velocity row V_VK holds (from the factorisation held)
N_VECTORS = 21
# rows of the (n_configurations, nq) block; Q_KIN: the q of the kinematics oR_k ... oY_k hold
Q_NEXT, Q_TRIAL, Q_CUR, Q_PIECE, Q_KIN = range(5)
N_CONFIGURATIONS = 5
# entries of `cached`: 1.0 when oR_k, op_k, oS_k, oY_k are the kinematics at row Q_KIN, when
# IA_k, U_k, Dinv_k factor M + diag(row V_ADDED) at those kinematics, and when row V_VK is that
# factorisation applied to row V_PKEPT (0.0: not known to be)
C_KINEMATICS, C_FACTOR, C_VELOCITY = range(3)
# Newton's backtracking: at most this many halvings of a step that raises the residual
NEWTON_HALVINGS = 4


VARIATIONAL = Layout("VariationalViews", [
    ("oR_k", ("nj", 3, 3)), ("op_k", ("nj", 3)), ("oY_k", ("nj", 10)),  # the kinematics at q_k
    ("wg", ("nj", 6)), ("mom", ("nj", 6)), ("acc", ("nj", 6)), ("xis", ("nj", 6)),
    ("Kc", ("nj", 6, 6)), ("IA_k", ("nj", 6, 6)),
    ("oS_k", ("nv", 6)), ("U_k", ("nv", 6)), ("Dinv_k", ("nv", 6)),
    ("vec", (N_VECTORS, "nv")), ("qv", (N_CONFIGURATIONS, "nq")),       # rows V_*, Q_* above
    ("F", (MAX_ANDERSON, "nv")), ("G", (MAX_ANDERSON, "nv")),           # Anderson's histories
    ("AtA", (MAX_ANDERSON, MAX_ANDERSON)), ("rhs", (2, MAX_ANDERSON)),
    ("dense", (2, "nv", "nv")), ("S8", (8, 6, 6)), ("powers", (31, 6)),  # Newton's Jacobian
    ("tmp2", (2, 6)), ("R3", (2, 3, 3)), ("cached", (3,)),
    ("last_h", (1,))], __name__)  # the length of the substep in row V_XLAST (0.0: none)
carve_variational = VARIATIONAL.carve  # carve_variational(vws, nj, nv, nq) -> VariationalViews


def variational_workspace_size(nj: int, nv: int, nq: int) -> int:
    return VARIATIONAL.size(nj=nj, nv=nv, nq=nq)


@step
def views(ws, vws, nj, nv, nq) -> tuple:
    """The dynamics and the variational workspaces' views, carved where they are used: passed
    down as two namedtuples of 40 views, they cost a routine call about 0.25 us (arm7)."""
    return carve(ws, nj, nv), carve_variational(vws, nj, nv, nq)


@step
def same_bits(a, b) -> bool:
    """a and b hold the same numbers, zeros of the same sign (a cache keyed on a vector)."""
    for k in range(a.shape[0]):
        if a[k] != b[k] or (a[k] == 0.0 and math.copysign(1.0, a[k]) != math.copysign(1.0, b[k])):
            return False
    return True


@routine
def residual(joint_int, joint_real, Yb, h, q, nv, ws, vws) -> float:
    """DRNEA (Alg. 2) at q_next = q (+) x (row V_X): r = b - sum J_i(q_k)^T (m_i - wg_i) -
    linear x into row V_R, with linear = c/2 + a/h (damping's F- and the armature's D1 Ld).
    Returns max |r|; leaves body momenta in mom, relative twists in xis and the poses at
    q_next in the dynamics workspace's oR, op (finish_step takes them from there: every solve
    ends on a residual at its x)."""
    dyn, vw = views(ws, vws, joint_int.shape[0], nv, q.shape[0])
    vec, q_next = vw.vec, vw.qv[Q_NEXT]
    x, b, linear, r = vec[V_X], vec[V_B], vec[V_LINEAR], vec[V_R]
    mom, acc, wg = vw.mom, vw.acc, vw.wg
    integrate_kernel(joint_int, q, x, 1.0, q_next)
    for i in range(joint_int.shape[0]):
        pose_step(i, joint_int, joint_real, q_next, dyn.oR, dyn.op, dyn.Rq, dyn.pq)
        discrete_momentum(Yb[i], vw.oR_k[i], vw.op_k[i], dyn.oR[i], dyn.op[i], h, vw.xis[i],
                          vw.tmp2, mom[i])
        for c in range(6):
            acc[i, c] = wg[i, c] - mom[i, c]
    project_subtree_sums(joint_int, vw.oS_k, acc, r)
    for k in range(r.shape[0]):
        r[k] += b[k] - linear[k] * x[k]
    return max_abs(r, r.shape[0])


@routine
def anderson_mix(x, f, k, depth, F, G, AtA, rhs, g_new):
    """Anderson acceleration (type II) of the fixed-point map g(x) = x + f(x):
    x_next = g_k - dG gamma, gamma = argmin |f_k - dF gamma| (Walker & Ni 2011), histories of
    differences kept in F, G (ring of `depth`). k: the iteration index (0 = first)."""
    nv = x.shape[0]
    for j in range(nv):
        g_new[j] = x[j] + f[j]
    slot = k % (depth + 1)
    # F/G rows hold the last depth+1 (f, g) pairs; differences are formed on the fly
    for j in range(nv):
        F[slot, j] = f[j]
        G[slot, j] = g_new[j]
    mk = min(k, depth)
    if mk == 0:
        for j in range(nv):
            x[j] = g_new[j]
        return
    # difference columns d_c = F[slot_c+1] - F[slot_c] for the last mk pairs
    for a in range(mk):
        sa1 = (k - a) % (depth + 1)
        sa0 = (k - a - 1) % (depth + 1)
        for bcol in range(a, mk):
            sb1 = (k - bcol) % (depth + 1)
            sb0 = (k - bcol - 1) % (depth + 1)
            s = 0.0
            for j in range(nv):
                s += (F[sa1, j] - F[sa0, j]) * (F[sb1, j] - F[sb0, j])
            AtA[a, bcol] = s
            AtA[bcol, a] = s
        s = 0.0
        for j in range(nv):
            s += (F[sa1, j] - F[sa0, j]) * f[j]
        rhs[0, a] = s
    scale = 0.0
    for a in range(mk):
        scale = max(scale, AtA[a, a])
    for a in range(mk):  # Tikhonov regularisation keeps the small system well posed
        AtA[a, a] += 1e-12 * scale + 1e-300
    # solve AtA gamma = rhs by Gaussian elimination (mk <= 8)
    for a in range(mk):
        rhs[1, a] = rhs[0, a]
    for col in range(mk):
        piv = AtA[col, col]
        for row in range(col + 1, mk):
            factor = AtA[row, col] / piv
            for c2 in range(col, mk):
                AtA[row, c2] -= factor * AtA[col, c2]
            rhs[1, row] -= factor * rhs[1, col]
    for row in range(mk - 1, -1, -1):
        s = rhs[1, row]
        for c2 in range(row + 1, mk):
            s -= AtA[row, c2] * rhs[1, c2]
        rhs[1, row] = s / AtA[row, row]
    for j in range(nv):
        s = g_new[j]
        for a in range(mk):
            sa1 = (k - a) % (depth + 1)
            sa0 = (k - a - 1) % (depth + 1)
            s -= rhs[1, a] * (G[sa1, j] - G[sa0, j])
        x[j] = s


@routine
def begin_step(joint_int, joint_real, gravity, damping, armature, h, q, p, u, servo, iq,
               saturated, guess, ig3, ws, vws) -> int:
    """Kinematics, gravity half-impulses and the factorisation of the preconditioner
    M(q_k) + a + h c/2 + h s (-dr/dx times h, but for the configuration dependence; s: the
    servos' linear terms, row V_SERVO_LINEAR); b = p_k + h/2 u (u: row V_UTOTAL);
    v_k from that factorisation; the initial guess x (Lee et al. 2016 sec. 3.3: IG1 x = 0,
    IG2 x = h v_k, IG3 a semi-implicit Euler step with implicit damping; ``ig3`` None: compiled
    without IG3, see VariationalIntegrator.choices). The kinematics and the factorisation are
    taken as they are when they are already those of q (the last step ended at q: finish_step,
    variational_step_kernel) and of this added diagonal, and v_k when it is that of p (the
    last step's v_out): the same numbers, not computed again."""
    nj, nv, nq = joint_int.shape[0], p.shape[0], q.shape[0]
    dyn, vw = views(ws, vws, nj, nv, nq)
    oR, op, oY, ov, oa, of, pA, c_, IA, oS, U, Dinv, u_, Rq, pq, tmp, small = dyn
    (oR_k, op_k, oY_k, wg, mom, acc, xis, Kc, IA_k, oS_k, U_k, Dinv_k, vec, qv, F, G, AtA, rhs,
     dense, S8, powers, tmp2, R3, cached, last_h) = vw
    b, x, dx, v_k = vec[V_B], vec[V_X], vec[V_DX], vec[V_VK]
    precond, linear, servo_linear = vec[V_PRECOND], vec[V_LINEAR], vec[V_SERVO_LINEAR]
    added = vec[V_ADDED]
    for k in range(nv):
        precond[k] = armature[k] + 0.5 * h * damping[k] + h * servo_linear[k]
        linear[k] = precond[k] / h
    if not (cached[C_KINEMATICS] == 1.0 and same_bits(q, qv[Q_KIN])):
        cached[C_KINEMATICS] = cached[C_FACTOR] = cached[C_VELOCITY] = 0.0
        kinematics_pass(joint_int, joint_real, q, oR_k, op_k, oS_k, oY_k, Rq, pq)
        for k in range(nq):
            qv[Q_KIN, k] = q[k]
        cached[C_KINEMATICS] = 1.0
    for i in range(nj):
        gravity_wrench(oY_k[i], gravity, 0.5 * h, wg[i])
    if not (cached[C_FACTOR] == 1.0 and same_bits(precond, added)):
        cached[C_FACTOR] = cached[C_VELOCITY] = 0.0
        if not minv_factor(joint_int, precond, oS_k, oY_k, IA_k, U_k, Dinv_k, small, tmp):
            return SINGULAR
        for k in range(nv):
            added[k] = precond[k]
        cached[C_FACTOR] = 1.0
    for k in range(nv):
        b[k] = p[k] + 0.5 * h * u[k]
    if not (cached[C_VELOCITY] == 1.0 and same_bits(p, vec[V_PKEPT])):
        cached[C_VELOCITY] = 0.0  # (row V_VK no longer goes with row V_PKEPT)
        minv_apply(joint_int, oS_k, U_k, Dinv_k, p, pA, oa, v_k)
    if guess == 1:
        for k in range(nv):
            x[k] = 0.0
    elif guess == 2 and last_h[0] == 0.0:
        for k in range(nv):
            x[k] = h * v_k[k]
    elif guess == 2:  # a later substep of the step: the parabola through the last one
        extrapolate_guess(h, last_h[0], v_k, vec[V_XLAST], x)
    elif ig3 is not None:  # the Euler step's velocity; rows V_WORK, V_Y, V_GNEW are free
        code = explicit_velocity(joint_int, joint_real, gravity, damping, armature, h, q, v_k,
                                 u, servo, iq, saturated, ws, vec[V_WORK:V_WORK + 3], dx)
        if code != OK:
            return code
        for k in range(nv):
            x[k] = h * dx[k]
    return OK


@step
def keep_velocity(p, v, p_kept, v_kept, cached):
    """Record the step's end v = (M + a)^-1 p from the factorisation it leaves (rows V_PKEPT,
    V_VK): the next begin_step from the same p and factorisation takes it instead of applying
    it again."""
    for k in range(p.shape[0]):
        p_kept[k] = p[k]
        v_kept[k] = v[k]
    cached[C_VELOCITY] = 1.0


@step
def extrapolate_guess(h, h_last, v, x_last, x):
    """IG2 for a substep that starts where the last one (length h_last, increment x_last)
    ended: x(h) = h v + c h^2 through x(-h_last) = -x_last, which the symmetric step makes
    exact (stepping back by h_last from where it ended returns to its start, q (+) -x_last),
    so the guess errs by O(h^2 (h + h_last)) instead of IG2's O(h^2)."""
    ratio = (h / h_last) ** 2
    for k in range(x.shape[0]):
        x[k] = h * v[k] + ratio * (h_last * v[k] - x_last[k])


@step
def keep_if_best(rnorm, best, x, x_best) -> float:
    """x_best <- x when rnorm improves on best; returns the best max |r| so far."""
    if rnorm < best:
        for k in range(x.shape[0]):
            x_best[k] = x[k]
        return rnorm
    return best


@routine
def riqn_solve(joint_int, joint_real, Yb, damping, h, q, max_iter, depth, threshold, floor,
               rnorm, ws, vws):
    """Alg. 3, preconditioned: x <- x + h (M(q_k) + a + h c/2)^-1 r (Anderson-mixed when
    depth > 0); the best iterate is kept in its row. Returns (max |r|, iterations, reached the
    rounding floor, best max |r|)."""
    nv = damping.shape[0]
    dyn, vw = views(ws, vws, joint_int.shape[0], nv, q.shape[0])
    vec = vw.vec
    r, x, dx, g_new = vec[V_R], vec[V_X], vec[V_DX], vec[V_GNEW]
    best = keep_if_best(rnorm, np.inf, x, vec[V_XBEST])
    iterations = np.int64(0)  # not the literal 0: anderson_mix would be compiled for both
    previous = np.inf
    while rnorm > threshold and iterations < max_iter:
        if rnorm > 0.9 * previous and rnorm <= floor:
            return rnorm, iterations, True, best
        previous = rnorm
        minv_apply(joint_int, vw.oS_k, vw.U_k, vw.Dinv_k, r, dyn.pA, dyn.oa, dx)
        for k in range(nv):
            dx[k] *= h
        if depth > 0:
            anderson_mix(x, dx, iterations, depth, vw.F, vw.G, vw.AtA, vw.rhs, g_new)
        else:
            for k in range(nv):
                x[k] += dx[k]
        iterations += 1
        rnorm = residual(joint_int, joint_real, Yb, h, q, nv, ws, vws)
        best = keep_if_best(rnorm, best, x, vec[V_XBEST])
    return rnorm, iterations, False, best


@routine
def broyden_solve(joint_int, joint_real, Yb, damping, h, q, max_iter, threshold, rnorm, ws,
                  vws):
    """Broyden's "good" update of the inverse Jacobian H, from H0 = -h (M(q_k) + a + h c/2)^-1.
    Returns (max |r|, iterations, False, best max |r|)."""
    nv = damping.shape[0]
    dyn, vw = views(ws, vws, joint_int.shape[0], nv, q.shape[0])
    oR, op, oY, ov, oa, of, pA, c_, IA, oS, U, Dinv, u_, Rq, pq, tmp, small = dyn
    (oR_k, op_k, oY_k, wg, mom, acc, xis, Kc, IA_k, oS_k, U_k, Dinv_k, vec, qv, F, G, AtA, rhs,
     dense, S8, powers, tmp2, R3, cached, last_h) = vw
    r, x, dx, work, y, row = vec[V_R], vec[V_X], vec[V_DX], vec[V_WORK], vec[V_Y], vec[V_GNEW]
    best = keep_if_best(rnorm, np.inf, x, vec[V_XBEST])
    H = dense[1]
    for col in range(nv):
        for k in range(nv):
            work[k] = 1.0 if k == col else 0.0
        minv_apply(joint_int, oS_k, U_k, Dinv_k, work, pA, oa, dx)
        for k in range(nv):
            H[k, col] = -h * dx[k]
    iterations = 0
    while rnorm > threshold and iterations < max_iter:
        for k in range(nv):
            s = 0.0
            for j in range(nv):
                s += H[k, j] * r[j]
            dx[k] = -s
            x[k] += dx[k]
            y[k] = r[k]
        iterations += 1
        rnorm = residual(joint_int, joint_real, Yb, h, q, nv, ws, vws)
        best = keep_if_best(rnorm, best, x, vec[V_XBEST])
        denom = 0.0
        for k in range(nv):
            y[k] = r[k] - y[k]
        for k in range(nv):
            s = 0.0
            for j in range(nv):
                s += H[k, j] * y[j]
            work[k] = s  # H y
            denom += dx[k] * s
        if denom == 0.0:
            break
        for j in range(nv):  # dx^T H
            s = 0.0
            for k in range(nv):
                s += dx[k] * H[k, j]
            row[j] = s
        for k in range(nv):
            coef = (dx[k] - work[k]) / denom
            for j in range(nv):
                H[k, j] += coef * row[j]
    return rnorm, iterations, False, best


@routine
def newton_solve(joint_int, joint_real, Yb, damping, h, q, max_iter, threshold, floor, rnorm,
                 ws, vws):
    """Newton on the exact Jacobian (drnea_derivative.py): q_k+1 <- q_k+1 (+) alpha delta,
    J delta = -r, alpha halved (up to NEWTON_HALVINGS times) while the residual grows; stops at
    the rounding floor when it no longer halves the residual. LAPACK's scratch: the second
    dense block (Broyden's H, whose solve has ended when Newton runs), row V_DX for delta and
    row V_GNEW's bytes for the pivots."""
    nj, nv, nq = joint_int.shape[0], damping.shape[0], q.shape[0]
    dyn, vw = views(ws, vws, nj, nv, nq)
    oR, op, oY, ov, oa, of, pA, c_, IA, oS, U, Dinv, u_, Rq, pq, tmp, small = dyn
    (oR_k, op_k, oY_k, wg, mom, acc, xis, Kc, IA_k, oS_k, U_k, Dinv_k, vec, qv, F, G, AtA, rhs,
     dense, S8, powers, tmp2, R3, cached, last_h) = vw
    r, x, work, q_base = vec[V_R], vec[V_X], vec[V_WORK], qv[Q_TRIAL]
    Jac, fortran, delta = dense[0], dense[1], vec[V_DX]
    pivots = vec[V_GNEW].view(LAPACK_INT)
    iterations = 0
    previous = np.inf
    while rnorm > threshold and iterations < max_iter:
        if rnorm > 0.5 * previous and rnorm <= floor:
            return rnorm, iterations, True
        previous = rnorm
        for i in range(nj):
            world_motion_subspace(i, joint_int, joint_real[i], oR[i], op[i], oS)
            body_jacobian_block(oR_k[i], op_k[i], xis[i], Yb[i], h, Kc[i], S8, powers)
        assemble_jacobian(joint_int, oS_k, oS, Kc, vec[V_LINEAR], Jac)
        for k in range(nv):
            work[k] = -r[k]
        for k in range(nq):
            q_base[k] = qv[Q_NEXT, k]  # q (+) x, as the residual left it
        lapack_solve_into(Jac, work, fortran, delta, pivots)
        iterations += 1
        alpha = 1.0
        for halving in range(NEWTON_HALVINGS + 1):
            for k in range(nv):
                work[k] = alpha * delta[k]
            integrate_kernel(joint_int, q_base, work, 1.0, qv[Q_NEXT])
            difference_step(joint_int, q, qv[Q_NEXT], x, R3, tmp2[0])
            trial = residual(joint_int, joint_real, Yb, h, q, nv, ws, vws)
            if trial < rnorm:
                break
            alpha *= 0.5
        rnorm = trial
    return rnorm, iterations, False


@routine
def finish_step(joint_int, joint_real, gravity, armature, h, u, ws, vws, q_out, p_out):
    """The discrete momentum at the new time (discrete Legendre transform):
    p_k+1 = sum_i J_i(q_k+1)^T (m_i + wg_i(q_k+1)) + h/2 u - (c/2 + s - a/h) x
    (c/2 + s + a/h: the linear row that begin_step left). The kinematics at q_k+1 go into
    oR_k ... oY_k, the next step's begin_step's, the poses from the solve's last residual."""
    nj, nv, nq = joint_int.shape[0], p_out.shape[0], q_out.shape[0]
    dyn, vw = views(ws, vws, nj, nv, nq)
    oR, op, oY, ov, oa, of, pA, c_, IA, oS, U, Dinv, u_, Rq, pq, tmp, small = dyn
    (oR_k, op_k, oY_k, wg, mom, acc, xis, Kc, IA_k, oS_k, U_k, Dinv_k, vec, qv, F, G, AtA, rhs,
     dense, S8, powers, tmp2, R3, cached, last_h) = vw
    x = vec[V_X]
    cached[C_KINEMATICS] = cached[C_FACTOR] = cached[C_VELOCITY] = 0.0
    for k in range(nq):
        q_out[k] = qv[Q_NEXT, k]
        qv[Q_KIN, k] = q_out[k]
    for i in range(nj):
        for r in range(3):
            op_k[i, r] = op[i, r]
            for c in range(3):
                oR_k[i, r, c] = oR[i, r, c]
        row = joint_real[i]
        world_motion_subspace(i, joint_int, row, oR_k[i], op_k[i], oS_k)
        world_inertia(row, oR_k[i], op_k[i], oY_k[i])
        gravity_wrench(oY_k[i], gravity, 0.5 * h, acc[i])
        for c in range(6):
            acc[i, c] += mom[i, c]
    cached[C_KINEMATICS] = 1.0
    project_subtree_sums(joint_int, oS_k, acc, p_out)
    for k in range(nv):
        p_out[k] += 0.5 * h * u[k] - (vec[V_LINEAR, k] - 2.0 * armature[k] / h) * x[k]


@step
def rounding_floor(Yb, op_k, h, scale) -> float:
    """The size of max |r| that rounding alone leaves: r sums, over subtrees, the bodies' world
    impulses m_i = Y_i xi_i / h about the world origin, whose twists xi_i (SE(3) logs of
    rotations with unit-size entries) carry an absolute error of about epsilon (1 + |p_i|):
    ROUNDING_FLOOR (bodies scale + sum_i (m_i (1 + |p_i|^2) + trace I_i) / h)."""
    nj = Yb.shape[0]
    impulses = 0.0
    for i in range(nj):
        lever = op_k[i, 0] ** 2 + op_k[i, 1] ** 2 + op_k[i, 2] ** 2
        impulses += Yb[i, 0] * (1.0 + lever) + Yb[i, 4] + Yb[i, 7] + Yb[i, 9]
    return ROUNDING_FLOOR * (nj * scale + impulses / abs(h))  # h < 0: the Yoshida middle step


@routine
def solve_del(joint_int, joint_real, Yb, damping, h, q, settings, broyden, tol, ws, vws, stats):
    """Find x with r(q_k (+) x) = 0 from the current x to max |r| <= tol (1 + max |b|) (or the
    rounding floor, if that is above it): the chosen root finder, then, if it did not finish,
    Newton restarted from its best iterate (never from a diverged one).
    Returns (max |r| relative to 1 + max |b|, solved)."""
    nv = damping.shape[0]
    dyn, vw = views(ws, vws, joint_int.shape[0], nv, q.shape[0])
    vec = vw.vec
    scale = 1.0 + max_abs(vec[V_B], nv)
    threshold = tol * scale
    floor = rounding_floor(Yb, vw.op_k, h, scale)
    rnorm = residual(joint_int, joint_real, Yb, h, q, nv, ws, vws)
    root = settings[S_ROOT]
    max_iter = settings[S_MAX_ITER]
    iterations = 0
    at_floor = False
    best = rnorm
    if root == 0:
        rnorm, iterations, at_floor, best = riqn_solve(joint_int, joint_real, Yb, damping, h, q,
                                                       max_iter, settings[S_ANDERSON],
                                                       threshold, floor, rnorm, ws, vws)
    elif broyden is not None and root == 2:  # (None: compiled without it)
        rnorm, iterations, at_floor, best = broyden_solve(joint_int, joint_real, Yb, damping, h,
                                                          q, max_iter, threshold, rnorm, ws,
                                                          vws)
    unsolved = rnorm > threshold and not at_floor
    if root == 1 or unsolved:  # Newton: the chosen root finder, or the fallback
        if root != 1 and not rnorm <= best:  # restart from the best iterate
            for k in range(nv):
                vec[V_X, k] = vec[V_XBEST, k]
            rnorm = residual(joint_int, joint_real, Yb, h, q, nv, ws, vws)
        newton_max = max_iter if root == 1 else settings[S_NEWTON_MAX]
        rnorm, n_it, at_floor = newton_solve(joint_int, joint_real, Yb, damping, h, q,
                                             newton_max, threshold, floor, rnorm, ws, vws)
        iterations += n_it
    stats[0] += iterations
    stats[1] += 1 if unsolved and root != 1 else 0
    return rnorm / scale, rnorm <= threshold or at_floor


@routine
def friction_before(joint_int, armature, friction, h, u, nq, vws, u_eff) -> bool:
    """Coulomb joint friction, first half: F-_j = clamp(-M_jj x_j / h, -h f_j / 2, h f_j / 2)
    with x the frictionless solution (the impulse that stops joint j when the others are left
    free of it, from the diagonal of M, armature included), applied as the held effort
    u_eff = u + 2 F- / h. Returns False when no joint has friction."""
    nj, nv = joint_int.shape[0], u.shape[0]
    any_friction = False
    for k in range(nv):
        u_eff[k] = u[k]
        if friction[k] > 0.0:
            any_friction = True
    if not any_friction:
        return False
    (oR_k, op_k, oY_k, wg, mom, acc, xis, Kc, IA_k, oS_k, U_k, Dinv_k, vec, qv, F, G, AtA, rhs,
     dense, S8, powers, tmp2, R3, cached, last_h) = carve_variational(vws, nj, nv, nq)
    diagonal, x = vec[V_DIAG], vec[V_X]
    mass_matrix_diagonal(joint_int, armature, oS_k, oY_k, Kc.reshape((nj, 36)), tmp2[0],
                         diagonal)
    for k in range(nv):
        if friction[k] > 0.0:
            bound = 0.5 * h * friction[k]
            impulse = min(bound, max(-bound, -diagonal[k] * x[k] / h))
            u_eff[k] += 2.0 * impulse / h
    return True


@step
def friction_after(friction, h, p_out):
    """Second half: F+_j = clamp(-p_j, -h f_j / 2, h f_j / 2), stopping what it can of the
    joint's momentum without reversing it (so a stuck joint's momentum stays zero)."""
    for k in range(p_out.shape[0]):
        if friction[k] > 0.0:
            bound = 0.5 * h * friction[k]
            p_out[k] += min(bound, max(-bound, -p_out[k]))


@routine
def substep(joint_int, joint_real, gravity, damping, friction, armature, Yb, h, q, p, u,
            servo, iq, saturated, settings, ig3, broyden, tol, ws, vws, q_out, p_out,
            stats) -> int:
    """One DEL step of length h from (q, p) under u and the joint servos to (q_out, p_out):
    solved again while a servo's effort (at the midpoint) newly saturates; the final max |r|
    is left in its row; stats as solve_friction."""
    nv = p.shape[0]
    vw = views(ws, vws, joint_int.shape[0], nv, q.shape[0])[1]
    vec = vw.vec
    u_total, v_mid = vec[V_UTOTAL], vec[V_DX]
    servoed = any_servo(iq)
    if servoed:
        clear_saturation(saturated)
    while True:
        servo_forces(h, servo, iq, saturated, q, u, u_total, vec[V_SERVO_LINEAR])
        code = begin_step(joint_int, joint_real, gravity, damping, armature, h, q, p, u_total,
                          servo, iq, saturated, settings[S_GUESS], ig3, ws, vws)
        if code != OK:
            return code
        has_friction, solved = solve_friction(joint_int, joint_real, damping, friction,
                                              armature, Yb, h, q, p, u_total, settings, broyden,
                                              tol, ws, vws, stats)
        if not solved:
            return NOT_CONVERGED
        if not servoed:
            break
        for k in range(nv):
            v_mid[k] = vec[V_X, k] / h
        if not servo_saturation(0.5 * h, servo, iq, saturated, q, u, v_mid):
            break
    finish_step(joint_int, joint_real, gravity, armature, h, u_total, ws, vws, q_out, p_out)
    if settings[S_GIVE_BACK] != 0:
        give_back(vec[V_R], p_out)
    if has_friction:
        friction_after(friction, h, p_out)
    for k in range(nv):  # the next substep's guess (begin_step) starts from this one
        vec[V_XLAST, k] = vec[V_X, k]
    vw.last_h[0] = h
    return OK


@step
def give_back(r, p_out):
    """p_k+1 += r, the residual the solve left at its x: that x solves the DEL exactly for the
    momentum p_k - r, so the substep is the exact discrete flow between a kick of -r and, with
    this, one of +r. The solve's error then enters the energy as (v_k+1 - v_k) . r instead of
    v_k . r, O(h) smaller; equivalently the first-order correction of p_k+1(x) to the root,
    dp_k+1/dx = -dr/dx (1 + O(h)) (docs/VARIATIONAL.md, "Fourth order")."""
    for k in range(p_out.shape[0]):
        p_out[k] += r[k]


@routine
def solve_friction(joint_int, joint_real, damping, friction, armature, Yb, h, q, p, u, settings,
                   broyden, tol, ws, vws, stats):
    """Solve the DEL that begin_step set up without friction, then (if any joint has friction)
    again with the first half of the friction impulse that solution implies, warm-started (the
    second half goes into the new momentum: friction_after). stats[0] += iterations, stats[1]
    += fallbacks; the final max |r| (relative to 1 + max |b|) is left in its row. Returns
    (has friction, solved)."""
    nv = p.shape[0]
    vec = views(ws, vws, joint_int.shape[0], nv, q.shape[0])[1].vec
    u_eff = vec[V_UEFF]
    rnorm, solved = solve_del(joint_int, joint_real, Yb, damping, h, q, settings, broyden, tol,
                              ws, vws, stats)
    has_friction = solved and friction_before(joint_int, armature, friction, h, u,
                                              q.shape[0], vws, u_eff)
    if has_friction:
        for k in range(nv):
            vec[V_B, k] = p[k] + 0.5 * h * u_eff[k]
        rnorm, solved = solve_del(joint_int, joint_real, Yb, damping, h, q, settings, broyden,
                                  tol, ws, vws, stats)
    vec[V_RES, 0] = rnorm
    return has_friction, solved


@routine
def split_substep(joint_int, joint_real, gravity, damping, friction, armature, Yb, h, u,
                  servo, iq, saturated, settings, ig3, broyden, tol, ws, vws, q_out, p_out,
                  stats) -> int:
    """A DEL step of length h from the stage start (its rows) to (q_out, p_out); when it cannot
    be solved, again from the same start as 2, 4, ... pieces of h / pieces (up to
    settings[S_SPLIT_LEVELS] halvings). stats[2] = the most pieces a stage needed; the worst
    final max |r| of the accepted pieces is left in the residual row."""
    nv, nq = damping.shape[0], q_out.shape[0]
    vw = views(ws, vws, joint_int.shape[0], nv, nq)[1]
    vec, qv = vw.vec, vw.qv
    code = NOT_CONVERGED
    worst = 0.0
    for level in range(settings[S_SPLIT_LEVELS] + 1):
        pieces = 1 << level
        for k in range(nq):
            qv[Q_PIECE, k] = qv[Q_CUR, k]
        for k in range(nv):
            vec[V_PPIECE, k] = vec[V_PCUR, k]
        worst = 0.0
        for piece in range(pieces):
            if level > 0:  # a split stage's pieces are the steps at h / pieces (IG2 each)
                vw.last_h[0] = 0.0
            code = substep(joint_int, joint_real, gravity, damping, friction, armature, Yb,
                           h / pieces, qv[Q_PIECE], vec[V_PPIECE], u, servo, iq, saturated,
                           settings, ig3, broyden, tol, ws, vws, q_out, p_out, stats)
            worst = max(worst, vec[V_RES, 0])
            if code != OK:
                break
            for k in range(nq):
                qv[Q_PIECE, k] = q_out[k]
            for k in range(nv):
                vec[V_PPIECE, k] = p_out[k]
        if code == OK:
            stats[2] = max(stats[2], pieces)
            break
        if code != NOT_CONVERGED:  # a singular inertia does not get better in pieces
            break
    vec[V_RES, 0] = worst
    return code


@kernel
def variational_step_kernel(joint_int, joint_real, gravity, damping, friction, armature, Yb,
                            dt, substeps, q, p, u, servo, iq, saturated, settings, ig3, broyden,
                            tol, ws, vws, q_out, p_out, v_out, stats, residual_out):
    """variational_step, called from Python (the general step, the process model)."""
    return variational_step(joint_int, joint_real, gravity, damping, friction, armature, Yb, dt,
                            substeps, q, p, u, servo, iq, saturated, settings, ig3, broyden, tol,
                            ws, vws, q_out, p_out, v_out, stats, residual_out)


@routine
def variational_step(joint_int, joint_real, gravity, damping, friction, armature, Yb, dt,
                     substeps, q, p, u, servo, iq, saturated, settings, ig3, broyden, tol, ws,
                     vws, q_out, p_out, v_out, stats, residual_out):
    """One step of dt as len(substeps) DEL substeps of dt * substeps[s] (1 or Yoshida's 3),
    each split in pieces if it must be, then v_out = (M(q_out) + a)^-1 p_out; joint servos
    from the servo table (servo.py; iq all -1: none). ``ig3``, ``broyden``: None compiles
    without that initial guess or root finder (VariationalIntegrator.choices).
    stats: (iterations, fallbacks, most pieces a substep was split into)."""
    nj = joint_int.shape[0]
    nv = p.shape[0]
    nq = q.shape[0]
    dyn, vw = views(ws, vws, nj, nv, nq)
    vec, qv = vw.vec, vw.qv
    for k in range(nq):
        qv[Q_CUR, k] = q[k]
    for k in range(nv):
        vec[V_PCUR, k] = p[k]
    stats[0] = 0
    stats[1] = 0
    stats[2] = 1
    vw.last_h[0] = 0.0  # (a step is a function of its state: no guess from the last step)
    worst = 0.0
    for s in range(substeps.shape[0]):
        code = split_substep(joint_int, joint_real, gravity, damping, friction, armature, Yb,
                             dt * substeps[s], u, servo, iq, saturated, settings, ig3, broyden,
                             tol, ws, vws, q_out, p_out, stats)
        worst = max(worst, vec[V_RES, 0])
        if code != OK:
            residual_out[0] = worst
            return code
        for k in range(nq):
            qv[Q_CUR, k] = q_out[k]
        for k in range(nv):
            vec[V_PCUR, k] = p_out[k]
    residual_out[0] = worst
    oR, op, oY, ov, oa, of, pA, c_, IA, oS, U, Dinv, u_, Rq, pq, tmp, small = dyn
    added = vec[V_ADDED]  # the armature in a work row: minv_factor's one specialisation
    for k in range(nv):   # is begin_step's (a writable row; the Model's arrays are not)
        added[k] = armature[k]
    cached = vw.cached    # finish_step left the kinematics at q_out in oR_k ... oY_k
    cached[C_FACTOR] = cached[C_VELOCITY] = 0.0
    if not minv_factor(joint_int, added, vw.oS_k, vw.oY_k, vw.IA_k, vw.U_k, vw.Dinv_k, small,
                       tmp):
        return SINGULAR
    cached[C_FACTOR] = 1.0  # (the next step's begin_step takes it when it adds no more,
    minv_apply(joint_int, vw.oS_k, vw.U_k, vw.Dinv_k, p_out, pA, oa, v_out)  # and v_out)
    keep_velocity(p_out, v_out, vec[V_PKEPT], vec[V_VK], cached)
    if not (all_finite(q_out) and all_finite(p_out) and all_finite(v_out)):
        return DIVERGED
    return OK


# The fused step's arrays (fused.py) as one argument (layout.ArrayTable): from Python it and
# the rollout take (tau, table, dt, ig3, broyden, tol, inv_dt)
VARIATIONAL_ARRAYS = ArrayTable("VariationalArrays", [
    ("joint_int", "int64", 2), ("joint_real", "float64", 2), ("gravity", "float64", 1),
    ("damping", "float64", 1), ("friction", "float64", 1), ("armature", "float64", 1),
    ("Yb", "float64", 2), ("substeps", "float64", 1), ("q", "float64", 1),
    ("v", "float64", 1), ("p", "float64", 1), ("servo", "float64", 2), ("iq", "int64", 1),
    ("saturated", "int64", 1), ("settings", "int64", 1), ("ws", "float64", 1),
    ("vws", "float64", 1), ("q_next", "float64", 1), ("p_next", "float64", 1),
    ("v_next", "float64", 1), ("stats", "int64", 1), ("residual_out", "float64", 1),
    ("acceleration", "float64", 1), ("effort", "float64", 1), ("bounds", "float64", 1)],
    __name__)
unpack_variational = VARIATIONAL_ARRAYS.unpack


@kernel
def variational_advance(tau, table, dt, ig3, broyden, tol, inv_dt) -> int:
    """variational_step from (q, p) under tau on the arrays of a VARIATIONAL_ARRAYS
    table, committed into q, v, p, acceleration and effort when it succeeds within the bounds
    (fused.py); the state unchanged when it does not, and BAD_ARG0 (nothing written) for a tau
    that is not finite or not nv long."""
    a = unpack_variational(table)
    if tau.shape[0] != a.v.shape[0] or not begin_fused(tau, a.effort):
        return BAD_ARG0
    code = variational_step(a.joint_int, a.joint_real, a.gravity, a.damping, a.friction,
                            a.armature, a.Yb, dt, a.substeps, a.q, a.p, tau, a.servo, a.iq,
                            a.saturated, a.settings, ig3, broyden, tol, a.ws, a.vws, a.q_next,
                            a.p_next, a.v_next, a.stats, a.residual_out)
    if code == OK:
        if not commit_state(a.q, a.v, a.q_next, a.v_next, a.acceleration, inv_dt, a.bounds):
            return OUT_OF_BOUNDS
        for k in range(a.p.shape[0]):
            a.p[k] = a.p_next[k]
    return code


@kernel
def variational_rollout(taus, Q, V, table, dt, ig3, broyden, tol, inv_dt) -> tuple:
    """len(taus) steps of variational_advance, the state after each into rows of Q and V;
    stops at the first that fails: (steps done, its code). stats and residual_out: the last
    step's."""
    a = unpack_variational(table)
    for s in range(taus.shape[0]):
        code = variational_advance(taus[s], table, dt, ig3, broyden, tol, inv_dt)
        if code != OK:
            return s, code
        store_rollout_row(s, a.q, a.v, Q, V)
    return taus.shape[0], OK


@kernel
def momentum_kernel(joint_int, joint_real, armature, q, v, ws, p_out):
    """p = (M(q) + a) v, the continuous Legendre transform (to start from a velocity): the world
    momentum of every body, summed over subtrees and projected, without forming M."""
    nj = joint_int.shape[0]
    nv = v.shape[0]
    oR, op, oY, ov, oa, of, pA, c_, IA, oS, U, Dinv, u_, Rq, pq, tmp, small = carve(ws, nj, nv)
    # the Model's arrays typed as the step's (read here, never written): the step's compiled
    # kinematics pass and subtree sums serve, not a second copy of each for read-only arrays
    joint_int, joint_real = writable_view(joint_int), writable_view(joint_real)
    kinematics_pass(joint_int, joint_real, q, oR, op, oS, oY, Rq, pq)
    for i in range(nj):
        joint_velocity(i, joint_int, oS, v, tmp[0])
        par = joint_int[i, I_PARENT]
        for r in range(6):
            ov[i, r] = tmp[0, r] + (ov[par, r] if par >= 0 else 0.0)
        inertia_times_motion(oY[i], ov[i], of[i])
    project_subtree_sums(joint_int, oS, of, p_out)
    for k in range(nv):
        p_out[k] += armature[k] * v[k]


@register("variational")
class VariationalIntegrator(Integrator):
    """Options: solver (the root finder: "riqn" | "newton" | "broyden"), initial_guess ("IG1" |
    "IG2" | "IG3"), tolerance (on max |r| relative to 1 + max |p_k + dt/2 u|; 0: the order's,
    DEFAULT_TOLERANCE), max_iterations,
    anderson (history depth, 0 = plain RIQN), newton_fallback_iterations, split_levels (how many
    times a step that cannot be solved is halved before it fails), order (2 | 4),
    composition (order 4's substeps: "yoshida" | "suzuki", COMPOSITIONS)."""

    renamed_options = {"root_finder": "solver"}
    options_schema = VariationalOptions
    kernels = (variational_step_kernel, variational_advance, variational_rollout, momentum_kernel)
    fused_servos = True  # (Integrator.fused_servos)

    def __init__(self, model, dt: float, *, solver: str = "riqn",
                 initial_guess: str = "IG2", tolerance: float = 0.0,
                 max_iterations: int = 50, anderson: int = 0,
                 newton_fallback_iterations: int = 20, split_levels: int = 3,
                 order: int = 2, composition: str = "yoshida",
                 plan: ArenaPlan | None = None) -> None:
        super().__init__(model, dt, plan)
        nj, nv, nq = model.njoints, model.nv, model.nq
        substeps = [1.0] if order == 2 else COMPOSITIONS[composition]
        for name, shape, dtype in (
                ("variational.settings", (7,), "int64"), ("variational.Yb", (nj, 10), "float64"),
                ("variational.substeps", (len(substeps),), "float64"),
                ("variational.ws", (workspace_size(nj, nv),), "float64"),
                ("variational.vws", (variational_workspace_size(nj, nv, nq),), "float64"),
                ("variational.p", (nv,), "float64"), ("variational.p_next", (nv,), "float64"),
                ("variational.stats", (3,), "int64"),
                ("variational.residual", (1,), "float64")):
            self._plan.add(name, shape, dtype)
        arena = self._allocate()
        self.settings = arena["variational.settings"]
        self.settings[:] = (ROOT_FINDERS[solver], GUESSES[initial_guess], max_iterations,
                            anderson, newton_fallback_iterations, split_levels, order == 4)
        # the kernels' (ig3, broyden): None for an option not chosen, whose code numba then
        # leaves out (a branch on an argument that is None is pruned before typing)
        self.choices = (True if initial_guess == "IG3" else None,
                        True if solver == "broyden" else None)
        self.tolerance = float(tolerance) or DEFAULT_TOLERANCE[order]
        self.substeps = arena["variational.substeps"]
        self.substeps[:] = substeps
        self.Yb = arena["variational.Yb"]
        for i in range(model.njoints):
            body_inertia(model.joint_real[i], self.Yb[i])
        self._ws, self._vws = arena["variational.ws"], arena["variational.vws"]
        self.p, self._p_next = arena["variational.p"], arena["variational.p_next"]
        self._stats, self._residual = arena["variational.stats"], arena["variational.residual"]
        self._info = StepInfo()
        self.record = StepRecord(self._stats, self._residual)  # filled by the fused step

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """M(q) + a column by column, p = (M(q) + a) e_k (momentum_kernel, which reset
        compiles anyway)."""
        m, nv = self.model, self.model.nv
        M, unit = np.empty((nv, nv)), np.zeros(nv)
        for k in range(nv):  # (M + a symmetric: its k-th column is its k-th row)
            unit[k] = 1.0
            momentum_kernel(m.joint_int, m.joint_real, m.armature, q, unit, self._ws, M[k])
            unit[k] = 0.0
        return M

    def reset(self, q: np.ndarray, v: np.ndarray) -> None:
        """p_0 = (M(q_0) + a) v_0."""
        m = self.model
        momentum_kernel(m.joint_int, m.joint_real, m.armature, q, v, self._ws, self.p)

    def step(self, q, v, tau, q_out, v_out) -> StepInfo:
        m = self.model
        code = variational_step_kernel(m.joint_int, m.joint_real, m.gravity, m.damping,
                                       m.friction, m.armature, self.Yb, self.dt,
                                       self.substeps, q, self.p, tau, self.servos.table,
                                       self.servos.iq, self.servos.saturated, self.settings,
                                       *self.choices, self.tolerance, self._ws, self._vws, q_out,
                                       self._p_next, v_out, self._stats, self._residual)
        info = self._info
        info.iterations = int(self._stats[0])
        info.fallback = bool(self._stats[1])
        info.residual = float(self._residual[0])
        info.substeps = int(self._stats[2])
        info.converged = code == OK
        info.message = "" if code == OK else self.failure_message(code)
        return info

    def fused(self, state, data) -> tuple:
        m, servos = self.model, self.servos
        self._bound = VARIATIONAL_ARRAYS.bind((  # the table's arrays, held while it is used
            m.joint_int, m.joint_real, m.gravity, m.damping, m.friction, m.armature, self.Yb,
            self.substeps, state.q, state.v, self.p, servos.table, servos.iq, servos.saturated,
            self.settings, self._ws, self._vws, data.q_next, self._p_next, data.v_next,
            self._stats, self._residual, state.acceleration, state.effort,
            data.bounds.packed))
        arguments = (self._bound.table, self.dt, *self.choices, self.tolerance, 1.0 / self.dt)
        return variational_advance, variational_rollout, arguments

    def step_info(self, code: int) -> StepInfo:
        iterations, fallback, substeps = self._stats.tolist()  # one call for three numbers
        if code == OK:
            return StepInfo(iterations, self._residual.item(), True, fallback != 0, "",
                            substeps)
        return StepInfo(iterations, self._residual.item(), False, fallback != 0,
                        self.failure_message(code), substeps)

    def failure_message(self, code: int) -> str:
        message = _FAILURES.get(code, f"kernel code {code}")
        if code == SINGULAR and self.substeps.shape[0] > 1 and (
                self.servos.active or np.any(self.model.damping > 0.0)):
            back = -self.substeps.min()  # Yoshida 1.70, Suzuki 0.66
            message += (f" in a substep of negative length: order 4 runs damping and servo "
                        f"dampers backwards, and M + a - {back:.2g} h (c + kd) / 2 lost its "
                        f"positive definiteness on a light joint; use order 2 "
                        f"(docs/CONTROL.md)")
        return message

    def commit(self) -> None:
        """The Simulator accepted the step: the new momentum becomes the state."""
        self.p[:] = self._p_next

    def save_state(self) -> dict:
        return {"p": self.p.copy()}

    def load_state(self, saved: dict) -> None:
        copy_into({"p": self.p}, saved, "variational")


_FAILURES = {NOT_CONVERGED: "the DEL equation did not converge (the root finder, the Newton "
                            "fallback from its best iterate and the step split in pieces all "
                            "reached their iteration caps)",
             DIVERGED: "diverged: the new state is not finite",
             SINGULAR: "singular joint-space inertia"}
