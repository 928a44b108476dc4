"""The partial derivatives of one variational step with respect to both of its configurations,
for the exact linearisation of the step (mbsim_ros.estimation; derivation in docs/ESTIMATION.md).

A step from (q_k, p_k) under u solves r = 0 for q_k+1 and then reads p_k+1 (drnea.py):

    r    = p_k + h/2 u - c x / 2 + sum_i J_i(q_k)^T   (w_i(q_k)   - m_i)
    p_k+1 =      h/2 u - c x / 2 + sum_i J_i(q_k+1)^T (w_i(q_k+1) + m_i)

with w_i the half-step gravity wrench and m_i = Ad(T_k)^-T mu(xi_i) body i's discrete momentum
in the world frame. Perturbing q (+) delta moves body i by the world twist zeta_i = J_i(q) delta,
and every term responds to zeta_i through a 6x6 block:

    m_i:  K_i zeta_i(q_k+1) - (K_i + Lambda(m_i)) zeta_i(q_k)   (K_i: drnea_derivative.py)
    w_i:  W_i zeta_i                                             (gravity_wrench_derivative)
    J^T:  S_a(q)^T F turns with its ancestors: (S_b x S_a) . F   (add_projection_derivative)

so R0 = dr/ddelta_k, R1 = dr/ddelta_k+1 (Newton's matrix), P0 = dp_k+1/ddelta_k and
P1 = dp_k+1/ddelta_k+1 are four CRBA-like assemblies of subtree sums of these blocks.

Coulomb friction's stick estimate reads the diagonal of M(q_k) (integrators/variational.py);
``mass_diagonal_partials`` gives it with its derivative.
"""
from __future__ import annotations

import numpy as np

from .._jit import allocating, routine, step
from ..model.model import I_IDX_V, I_NV, I_PARENT
from .checks import as_vector
from .crba import mass_matrix_diagonal
from .drnea import (body_inertia, discrete_momentum, gravity_wrench,
                    project_subtree_sums)
from .drnea_derivative import (assemble_jacobian, body_jacobian_block,
                               coadjoint_swap)
from .kinematics import inertia_times_motion, kinematics_step, motion_cross_motion


@step
def gravity_wrench_derivative(Y, gravity, scale, out):
    """d(scale w)/dzeta for the world gravity wrench w = (m g, h x g) of a body with world
    inertia Y = (m, h, I) moved by the world twist zeta = (v, omega): dh = m v - [h] omega, so
    dw = (0, -m [g] v + [g][h] omega)."""
    m, hx, hy, hz = Y[0], Y[1], Y[2], Y[3]
    gx, gy, gz = scale * gravity[0], scale * gravity[1], scale * gravity[2]
    for r in range(6):
        for c in range(6):
            out[r, c] = 0.0
    # -m [g]
    out[3, 1], out[3, 2] = m * gz, -m * gy
    out[4, 0], out[4, 2] = -m * gz, m * gx
    out[5, 0], out[5, 1] = m * gy, -m * gx
    # [g][h] = h g^T - (g . h) 1
    gh = gx * hx + gy * hy + gz * hz
    out[3, 3], out[3, 4], out[3, 5] = hx * gx - gh, hx * gy, hx * gz
    out[4, 3], out[4, 4], out[4, 5] = hy * gx, hy * gy - gh, hy * gz
    out[5, 3], out[5, 4], out[5, 5] = hz * gx, hz * gy, hz * gz - gh


@routine
def add_projection_derivative(joint_int, oS, Fc, cross, Jac):
    """Jac[a, b] += (S_b x S_a) . Fc_i for the dofs a of joint i and b of i or an ancestor:
    S_a(q) = Ad(T_i(q)) S_local turns with every joint that supports i, so
    d(S_a^T Fc_i) = S_a^T ad(S_b)^T Fc_i delta_b. Fc_i: the subtree sum of wrenches at i."""
    nj = joint_int.shape[0]
    for i in range(nj):
        iv, ni = joint_int[i, I_IDX_V], joint_int[i, I_NV]
        j = i
        while j >= 0:
            jv = joint_int[j, I_IDX_V]
            for b in range(jv, jv + joint_int[j, I_NV]):
                for a in range(iv, iv + ni):
                    motion_cross_motion(oS[b], oS[a], cross)
                    s = 0.0
                    for r in range(6):
                        s += cross[r] * Fc[i, r]
                    Jac[a, b] += s
            j = joint_int[j, I_PARENT]


@allocating
def step_partials_kernel(joint_int, joint_real, gravity, damping, armature, h, q, q_next, R0,
                         R1, P0, P1):
    """The four partials of (r, p_k+1) at the step q -> q_next of length h (module docstring)."""
    nj = joint_int.shape[0]
    nv = R0.shape[0]
    Yb = np.empty((nj, 10))
    oR = np.empty((2, nj, 3, 3))
    op = np.empty((2, nj, 3))
    oS = np.empty((2, nv, 6))
    oY = np.empty((2, nj, 10))
    K = np.empty((nj, 6, 6))
    Phi = np.empty((nj, 6, 6))
    mom = np.empty((nj, 6))
    Fr = np.empty((nj, 6))
    Fp = np.empty((nj, 6))
    wg = np.empty((2, 6))
    S = np.empty((8, 6, 6))
    powers = np.empty((31, 6))
    xi = np.empty(6)
    tmp = np.empty((2, 6))
    Rq = np.empty((3, 3))
    pq = np.empty(3)
    projected = np.empty(nv)
    # terms linear in x: r has -(c/2 + a/h) x, p_k+1 has -(c/2 - a/h) x (armature's
    # Ld = a x^2 / 2h), and x = q_k+1 (-) q_k on the 1-dof joints that carry c and a
    in_r = 0.5 * damping + armature / h
    in_p = 0.5 * damping - armature / h
    for i in range(nj):
        body_inertia(joint_real[i], Yb[i])
        kinematics_step(i, joint_int, joint_real, q, oR[0], op[0], oS[0], oY[0], Rq, pq)
        kinematics_step(i, joint_int, joint_real, q_next, oR[1], op[1], oS[1], oY[1], Rq, pq)
    for i in range(nj):
        discrete_momentum(Yb[i], oR[0, i], op[0, i], oR[1, i], op[1, i], h, xi, tmp, mom[i])
        body_jacobian_block(oR[0, i], op[0, i], xi, Yb[i], h, K[i], S, powers)
        gravity_wrench(oY[0, i], gravity, 0.5 * h, wg[0])
        gravity_wrench(oY[1, i], gravity, 0.5 * h, wg[1])
        for c in range(6):
            Fr[i, c] = wg[0, c] - mom[i, c]
            Fp[i, c] = wg[1, c] + mom[i, c]
    project_subtree_sums(joint_int, oS[0], Fr, projected)  # Fr, Fp become subtree sums
    project_subtree_sums(joint_int, oS[1], Fp, projected)
    # R1 = -sum J_i(q_k)^T K_i J_i(q_k+1) - (c/2 + a/h) (Newton's matrix)
    Phi[:] = K
    assemble_jacobian(joint_int, oS[0], oS[1], Phi, in_r, R1)
    # P0 = -sum J_i(q_k+1)^T (K_i + Lambda(m_i)) J_i(q_k) + (c/2 - a/h)
    for i in range(nj):
        coadjoint_swap(mom[i], S[0])
        for r in range(6):
            for c in range(6):
                Phi[i, r, c] = K[i, r, c] + S[0, r, c]
    assemble_jacobian(joint_int, oS[1], oS[0], Phi, -in_p, P0)
    # R0 = sum J_i(q_k)^T (W_i(q_k) + K_i + Lambda(m_i)) J_i(q_k) + (S_b x S_a) . Fr
    #      + (c/2 + a/h)
    for i in range(nj):
        coadjoint_swap(mom[i], S[0])
        gravity_wrench_derivative(oY[0, i], gravity, 0.5 * h, S[1])
        for r in range(6):
            for c in range(6):
                Phi[i, r, c] = -(S[1, r, c] + K[i, r, c] + S[0, r, c])
    assemble_jacobian(joint_int, oS[0], oS[0], Phi, -in_r, R0)
    add_projection_derivative(joint_int, oS[0], Fr, xi, R0)
    # P1 = sum J_i(q_k+1)^T (W_i(q_k+1) + K_i) J_i(q_k+1) + (S_b x S_a) . Fp
    #      - (c/2 - a/h)
    for i in range(nj):
        gravity_wrench_derivative(oY[1, i], gravity, 0.5 * h, S[1])
        for r in range(6):
            for c in range(6):
                Phi[i, r, c] = -(S[1, r, c] + K[i, r, c])
    assemble_jacobian(joint_int, oS[1], oS[1], Phi, in_p, P1)
    add_projection_derivative(joint_int, oS[1], Fp, xi, P1)


def step_partials(model, dt: float, q, q_next) -> tuple:
    """(R0, R1, P0, P1): the derivatives of the step residual r and of the new momentum p_k+1
    with respect to q_k (+) delta_k and q_k+1 (+) delta_k+1 (each nv x nv), at the step
    q -> q_next of length dt. For checks and the process model's Jacobians."""
    q = as_vector(q, model.nq, "q")
    q_next = as_vector(q_next, model.nq, "q_next")
    out = tuple(np.empty((model.nv, model.nv)) for _ in range(4))
    step_partials_kernel(model.joint_int, model.joint_real, model.gravity, model.damping,
                         model.armature, float(dt), q, q_next, *out)
    return out


@routine
def mass_diagonal_derivative(joint_int, oS, Yc, tmp, cross, D):
    """D[k, b] = dM_kk/ddelta_b from the composite inertias Yc that mass_matrix_diagonal leaves.
    M_kk = S_k^T Yc_j S_k (k a dof of joint j). A dof b of a joint l below j turns the subtree
    of l inside that of j: dYc = -ad(S_b)^T Yc_l - Yc_l ad(S_b), so
    dM_kk = -2 (S_b x S_k) . (Yc_l S_k); the dofs of j and its ancestors move the subtree of j
    rigidly with S_k and leave M_kk alone."""
    nj = joint_int.shape[0]
    for r in range(D.shape[0]):
        for c in range(D.shape[1]):
            D[r, c] = 0.0
    for l in range(nj):
        lv, nl = joint_int[l, I_IDX_V], joint_int[l, I_NV]
        j = joint_int[l, I_PARENT]
        while j >= 0:
            jv = joint_int[j, I_IDX_V]
            for k in range(jv, jv + joint_int[j, I_NV]):
                inertia_times_motion(Yc[l], oS[k], tmp)
                for b in range(lv, lv + nl):
                    motion_cross_motion(oS[b], oS[k], cross)
                    s = 0.0
                    for r in range(6):
                        s += cross[r] * tmp[r]
                    D[k, b] = -2.0 * s
            j = joint_int[j, I_PARENT]


@allocating
def mass_diagonal_partials_kernel(joint_int, joint_real, armature, q, diagonal, D):
    nj = joint_int.shape[0]
    nv = diagonal.shape[0]
    oR = np.empty((nj, 3, 3))
    op = np.empty((nj, 3))
    oS = np.empty((nv, 6))
    oY = np.empty((nj, 10))
    Yc = np.empty((nj, 10))
    Rq = np.empty((3, 3))
    pq = np.empty(3)
    tmp = np.empty((2, 6))
    for i in range(nj):
        kinematics_step(i, joint_int, joint_real, q, oR, op, oS, oY, Rq, pq)
    mass_matrix_diagonal(joint_int, armature, oS, oY, Yc, tmp[0], diagonal)
    mass_diagonal_derivative(joint_int, oS, Yc, tmp[0], tmp[1], D)


def mass_diagonal_partials(model, q) -> tuple:
    """(diag M(q), D) with D[k, b] = dM_kk / ddelta_b at q (+) delta (nv, nv x nv)."""
    q = as_vector(q, model.nq, "q")
    diagonal, D = np.empty(model.nv), np.empty((model.nv, model.nv))
    mass_diagonal_partials_kernel(model.joint_int, model.joint_real, model.armature, q,
                                  diagonal, D)
    return diagonal, D
