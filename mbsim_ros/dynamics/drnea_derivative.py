"""The exact derivative of the DRNEA residual with respect to q_k+1 (the role of Lee et al. 2016,
Appendix Alg. 4), for Newton's method.

With the world-frame form of drnea.py, r(q_k+1) = b - sum_i J_i(q_k)^T m_i(q_k+1) - c x / 2,
and a perturbation q_k+1 (+) delta moves body i by the world twist J_i(q_k+1) delta, so

    dr/ddelta = - sum_i J_i(q_k)^T K_i J_i(q_k+1) - diag(c) / 2,
    K_i = Ad(T_k)^-T (dmu/dxi)(xi_i) dlog(xi_i) Ad(T_k)^-1,

assembled like CRBA from subtree sums of K_i (world frame). dmu/dxi differentiates
mu = dlog(xi)^T G xi / dt: dlog^T G / dt plus the derivative of dlog itself, taken term by term
from its Bernoulli series (Lee et al. 2016, eq. 12) summed until the terms fall below 1e-17 (the
series
converges for |xi| < 2 pi; a step's xi is dt times a body velocity).
"""
from __future__ import annotations

import math

import numpy as np

from .._jit import allocating, routine, step
from ..model.model import I_IDX_V, I_NV, I_PARENT
from ..spatial import relative_twist
from .checks import as_vector
from .drnea import body_inertia
from .kinematics import inertia_times_motion, kinematics_step

# B_j / j! for j = 0..30 (Bernoulli numbers with B_1 = -1/2)
_BERNOULLI = [1.0, -0.5, 1.0 / 6.0, 0.0, -1.0 / 30.0, 0.0, 1.0 / 42.0, 0.0, -1.0 / 30.0, 0.0,
              5.0 / 66.0, 0.0, -691.0 / 2730.0, 0.0, 7.0 / 6.0, 0.0, -3617.0 / 510.0, 0.0,
              43867.0 / 798.0, 0.0, -174611.0 / 330.0, 0.0, 854513.0 / 138.0, 0.0,
              -236364091.0 / 2730.0, 0.0, 8553103.0 / 6.0, 0.0, -23749461029.0 / 870.0, 0.0,
              8615841276005.0 / 14322.0]
SERIES_COEFFICIENTS = np.array([b / math.factorial(j) for j, b in enumerate(_BERNOULLI)])


@step
def ad_matrix(xi, A):
    """A = ad(xi) = [[ [w], [v] ], [0, [w]]]."""
    for r in range(6):
        for c in range(6):
            A[r, c] = 0.0
    v0, v1, v2, w0, w1, w2 = xi[0], xi[1], xi[2], xi[3], xi[4], xi[5]
    for o in (0, 3):
        A[o + 0, o + 1] = -w2
        A[o + 0, o + 2] = w1
        A[o + 1, o + 0] = w2
        A[o + 1, o + 2] = -w0
        A[o + 2, o + 0] = -w1
        A[o + 2, o + 1] = w0
    A[0, 4] = -v2
    A[0, 5] = v1
    A[1, 3] = v2
    A[1, 5] = -v0
    A[2, 3] = -v1
    A[2, 4] = v0


@step
def coadjoint_swap(w, out):
    """out = Lambda(w) with ad(delta)^T w = Lambda(w) delta: [[0, [w_l]], [[w_l], [w_a]]]."""
    for r in range(6):
        for c in range(6):
            out[r, c] = 0.0
    l0, l1, l2, a0, a1, a2 = w[0], w[1], w[2], w[3], w[4], w[5]
    for (ro, co, x0, x1, x2) in ((0, 3, l0, l1, l2), (3, 0, l0, l1, l2), (3, 3, a0, a1, a2)):
        out[ro + 0, co + 1] = -x2
        out[ro + 0, co + 2] = x1
        out[ro + 1, co + 0] = x2
        out[ro + 1, co + 2] = -x0
        out[ro + 2, co + 0] = -x1
        out[ro + 2, co + 1] = x0


@step
def series_terms(xi) -> int:
    """Terms of the Bernoulli series needed for 1e-17: |c_j| ~ 2 (|xi| / 2 pi)^j."""
    norm = math.sqrt(xi[0] ** 2 + xi[1] ** 2 + xi[2] ** 2 + xi[3] ** 2 + xi[4] ** 2 + xi[5] ** 2)
    ratio = norm / (2.0 * math.pi)
    n = 2
    term = 2.0 * ratio
    while n < SERIES_COEFFICIENTS.shape[0] - 1 and term * (n + 1) * (1.0 + norm) > 1e-17:
        term *= ratio
        n += 1
    return n


@routine
def dmu_dxi(xi, Yb, dt, D, A, AT_powers_y, Lam, H, B, tmp):
    """D = d/dxi [dlog(xi)^T G xi / dt] (6x6): dlog^T G / dt + sum_j c_j sum_{a+b=j-1}
    (A^T)^b Lambda((A^T)^a y), A = ad(xi), y = G xi / dt; the double sum by Horner in b.
    Scratch: A, Lam, H, B, tmp (6x6), AT_powers_y (>= 31 x 6)."""
    n = series_terms(xi)
    ad_matrix(xi, A)
    for r in range(6):
        tmp[0, r] = xi[r] / dt
    inertia_times_motion(Yb, tmp[0], AT_powers_y[0])  # y = G xi / dt; then (A^T)^a y
    for a in range(1, n):
        for r in range(6):
            acc = 0.0
            for c in range(6):
                acc += A[c, r] * AT_powers_y[a - 1, c]
            AT_powers_y[a, r] = acc
    # H = sum_b (A^T)^b B_b, B_b = sum_{a=0}^{n-2-b} c_{a+b+1} Lambda(z_a); Horner from b = n-2
    for r in range(6):
        for c in range(6):
            H[r, c] = 0.0
    for b in range(n - 2, -1, -1):
        for r in range(6):
            for c in range(6):
                B[r, c] = 0.0
        for a in range(0, n - 1 - b):
            coef = SERIES_COEFFICIENTS[a + b + 1]
            if coef == 0.0:
                continue
            coadjoint_swap(AT_powers_y[a], Lam)
            for r in range(6):
                for c in range(6):
                    B[r, c] += coef * Lam[r, c]
        for r in range(6):  # H = A^T H + B
            for c in range(6):
                acc = B[r, c]
                for k in range(6):
                    acc += A[k, r] * H[k, c]
                tmp[r, c] = acc
        for r in range(6):
            for c in range(6):
                H[r, c] = tmp[r, c]
    dlog_matrix(xi, A, B, tmp)  # B = dlog(xi); dlog^T is read transposed below
    # D = H + dlog^T G / dt (G as 6x6 from Yb)
    for c in range(6):
        for r in range(6):
            tmp[0, r] = 1.0 if r == c else 0.0
        inertia_times_motion(Yb, tmp[0], tmp[1])  # column c of G
        g0, g1, g2, g3, g4, g5 = tmp[1, 0], tmp[1, 1], tmp[1, 2], tmp[1, 3], tmp[1, 4], tmp[1, 5]
        for r in range(6):
            D[r, c] = H[r, c] + (B[0, r] * g0 + B[1, r] * g1 + B[2, r] * g2 + B[3, r] * g3
                                 + B[4, r] * g4 + B[5, r] * g5) / dt


@routine
def dlog_matrix(xi, A, out, tmp):
    """out = dlog(xi) = sum_j c_j ad(xi)^j by Horner (same truncation rule as dmu_dxi)."""
    n = series_terms(xi)
    ad_matrix(xi, A)
    for r in range(6):
        for c in range(6):
            out[r, c] = SERIES_COEFFICIENTS[n - 1] if r == c else 0.0
    for j in range(n - 2, -1, -1):
        for r in range(6):
            for c in range(6):
                acc = SERIES_COEFFICIENTS[j] if r == c else 0.0
                for k in range(6):
                    acc += A[r, k] * out[k, c]
                tmp[r, c] = acc
        for r in range(6):
            for c in range(6):
                out[r, c] = tmp[r, c]


@routine
def ad_inverse_matrix(R, p, out):
    """Ad(T)^-1 = Ad(T^-1) on twists: [[R^T, -R^T [p]], [0, R^T]]."""
    for r in range(6):
        for c in range(6):
            out[r, c] = 0.0
    for r in range(3):
        for c in range(3):
            out[r, c] = R[c, r]
            out[r + 3, c + 3] = R[c, r]
    # -R^T [p]: column c of [p] is p x e_c
    for c in range(3):
        e0, e1, e2 = (1.0 if c == 0 else 0.0), (1.0 if c == 1 else 0.0), (1.0 if c == 2 else 0.0)
        x0 = p[1] * e2 - p[2] * e1
        x1 = p[2] * e0 - p[0] * e2
        x2 = p[0] * e1 - p[1] * e0
        for r in range(3):
            out[r, c + 3] = -(R[0, r] * x0 + R[1, r] * x1 + R[2, r] * x2)


@routine
def body_jacobian_block(Rk, pk, xi, Yb, dt, K, S, powers):
    """K = Ad(T_k)^-T dmu/dxi dlog(xi) Ad(T_k)^-1 (world frame). S: (8, 6, 6) scratch,
    powers: (31, 6) scratch."""
    A, Lam, H, B, tmp, X, Dm, L = S[0], S[1], S[2], S[3], S[4], S[5], S[6], S[7]
    dmu_dxi(xi, Yb, dt, Dm, A, powers, Lam, H, B, tmp)
    dlog_matrix(xi, A, L, tmp)
    ad_inverse_matrix(Rk, pk, X)
    for r in range(6):  # H = dlog X
        for c in range(6):
            acc = 0.0
            for k in range(6):
                acc += L[r, k] * X[k, c]
            H[r, c] = acc
    for r in range(6):  # B = Dm H
        for c in range(6):
            acc = 0.0
            for k in range(6):
                acc += Dm[r, k] * H[k, c]
            B[r, c] = acc
    for r in range(6):  # K = X^T B
        for c in range(6):
            acc = 0.0
            for k in range(6):
                acc += X[k, r] * B[k, c]
            K[r, c] = acc


@routine
def assemble_jacobian(joint_int, oS_k, oS_next, Kc, diagonal, Jac):
    """Jac = -sum_i J_i(q_k)^T K_i J_i(q_k+1) - diag(diagonal) from subtree sums Kc
    (Kc_i = sum of K over the subtree of i, accumulated here, children first); ``diagonal``
    holds the joint-space terms linear in x (damping c / 2, armature a / h, with their signs)."""
    nj = joint_int.shape[0]
    nv = Jac.shape[0]
    for r in range(nv):
        for c in range(nv):
            Jac[r, c] = 0.0
    for i in range(nj - 1, -1, -1):
        iv = joint_int[i, I_IDX_V]
        ni = joint_int[i, I_NV]
        j = i
        while j >= 0:
            jv = joint_int[j, I_IDX_V]
            for a in range(jv, jv + joint_int[j, I_NV]):
                for b in range(iv, iv + ni):
                    # Jac[a, b] = -S_k[a]^T Kc_i S_next[b];  Jac[b, a] = -S_k[b]^T Kc_i S_next[a]
                    s1 = 0.0
                    s2 = 0.0
                    for r in range(6):
                        t1 = 0.0
                        t2 = 0.0
                        for c in range(6):
                            t1 += Kc[i, r, c] * oS_next[b, c]
                            t2 += Kc[i, r, c] * oS_next[a, c]
                        s1 += oS_k[a, r] * t1
                        s2 += oS_k[b, r] * t2
                    Jac[a, b] = -s1
                    if j != i:
                        Jac[b, a] = -s2
            j = joint_int[j, I_PARENT]
        par = joint_int[i, I_PARENT]
        if par >= 0:
            for r in range(6):
                for c in range(6):
                    Kc[par, r, c] += Kc[i, r, c]
    for k in range(nv):
        Jac[k, k] -= diagonal[k]


@allocating
def del_jacobian_kernel(joint_int, joint_real, damping, armature, dt, q, q_next, Jac):
    nj = joint_int.shape[0]
    nv = Jac.shape[0]
    Yb = np.empty((nj, 10))
    oR = np.empty((2, nj, 3, 3))
    op = np.empty((2, nj, 3))
    oS = np.empty((2, nv, 6))
    oY = np.empty((nj, 10))
    Kc = np.empty((nj, 6, 6))
    S = np.empty((8, 6, 6))
    powers = np.empty((31, 6))
    xi = np.empty(6)
    Rq = np.empty((3, 3))
    pq = np.empty(3)
    for i in range(nj):
        body_inertia(joint_real[i], Yb[i])
        kinematics_step(i, joint_int, joint_real, q, oR[0], op[0], oS[0], oY, Rq, pq)
        kinematics_step(i, joint_int, joint_real, q_next, oR[1], op[1], oS[1], oY, Rq, pq)
    for i in range(nj):
        relative_twist(oR[0, i], op[0, i], oR[1, i], op[1, i], xi)
        body_jacobian_block(oR[0, i], op[0, i], xi, Yb[i], dt, Kc[i], S, powers)
    linear = 0.5 * damping + armature / dt  # d/dx of c x / 2 + a x / h
    assemble_jacobian(joint_int, oS[0], oS[1], Kc, linear, Jac)


def del_jacobian(model, dt: float, q, q_next) -> np.ndarray:
    """d r / d delta of the DEL residual for the step q -> q_next (+) delta (nv x nv): the
    matrix Newton's method solves with."""
    q = as_vector(q, model.nq, "q")
    q_next = as_vector(q_next, model.nq, "q_next")
    Jac = np.empty((model.nv, model.nv))
    del_jacobian_kernel(model.joint_int, model.joint_real, model.damping, model.armature,
                        float(dt), q, q_next, Jac)
    return Jac
