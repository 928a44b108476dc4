"""The discrete recursive Newton-Euler algorithm (Lee et al. 2016, Alg. 2) in position-momentum
form, its exact derivative (the role of Alg. 4), and the discrete momentum at the new time.

Discrete Lagrangian (Lee et al. 2016, eq. 9, trapezoidal): per body
``Ld = xi^T G xi / (2 dt) - dt/2 (P(T_k) + P(T_k+1))`` with ``xi = log(T_k^-1 T_k+1)``
(``V = xi / dt``). Forcing (Lagrange-d'Alembert, trapezoidal with the input held over the
step): ``F- = F+ = dt/2 u_k - c x / 2`` with ``x = q_k+1 (-) q_k`` and ``c`` the joint damping.
With the generalized discrete momentum ``p_k`` as state (derivation in docs/VARIATIONAL.md):

    r(q_k+1) = p_k - sum_i J_i(q_k)^T m_i - dt/2 g(q_k) + dt/2 u_k - c x / 2 = 0
    p_k+1    = sum_i J_i(q_k+1)^T m_i - dt/2 g(q_k+1) + dt/2 u_k - c x / 2

where ``m_i = Ad(T_k)^-T mu_i`` is body i's discrete momentum (eq. 21b,
``mu_i = dlog(xi_i)^T G_i xi_i / dt``) carried to the world frame, ``J_i`` body i's world
Jacobian and ``g`` the generalized gravity torque. In the world frame the transmitted impulses
of Alg. 2 l.8 become plain sums over each subtree (no Ad* per joint), projected on the
world-frame motion subspaces of q_k (l.9).
"""
from __future__ import annotations

import math

import numpy as np

from .._jit import allocating, routine, step
from ..model.model import R_COM, R_INERTIA, R_MASS
from .checks import as_vector
from .kinematics import inertia_times_motion, kinematics_step, pose_step
from .rnea import rnea_backward_step
from ..spatial import (cross, relative_twist, se3_q_coefficients,
                       so3_inverse_jacobian_coefficient)

COM0, INERTIA0 = R_COM.start, R_INERTIA.start


@step
def body_inertia(row, Y):
    """Y = (m, m c, I about the joint origin) of one body in its own joint frame."""
    m = row[R_MASS]
    c0, c1, c2 = row[COM0], row[COM0 + 1], row[COM0 + 2]
    cc = c0 * c0 + c1 * c1 + c2 * c2
    Y[0] = m
    Y[1], Y[2], Y[3] = m * c0, m * c1, m * c2
    Y[4] = row[INERTIA0] + m * (cc - c0 * c0)
    Y[5] = row[INERTIA0 + 1] - m * c0 * c1
    Y[6] = row[INERTIA0 + 2] - m * c0 * c2
    Y[7] = row[INERTIA0 + 3] + m * (cc - c1 * c1)
    Y[8] = row[INERTIA0 + 4] - m * c1 * c2
    Y[9] = row[INERTIA0 + 5] + m * (cc - c2 * c2)


@step
def dlog_transpose_apply(xi, y, out):
    """out = dlog(xi)^T y with dlog = [[J^-1, -J^-1 Q J^-1], [0, J^-1]] (Lee et al. 2016, eq. 13;
    closed form in docs/SPATIAL.md). Transposes of products of skew matrices are the reversed
    products with sign (-1)^k; applied factor by factor as cross products."""
    v0, v1, v2, w0, w1, w2 = xi[0], xi[1], xi[2], xi[3], xi[4], xi[5]
    theta = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    b = so3_inverse_jacobian_coefficient(theta)
    # J^-T z = z + [w] z / 2 + b [w]^2 z   (([w])^T = -[w])
    z0, z1, z2 = y[0], y[1], y[2]
    c0, c1, c2 = cross(w0, w1, w2, z0, z1, z2)
    cc0, cc1, cc2 = cross(w0, w1, w2, c0, c1, c2)
    jl0, jl1, jl2 = z0 + 0.5 * c0 + b * cc0, z1 + 0.5 * c1 + b * cc1, z2 + 0.5 * c2 + b * cc2
    out[0], out[1], out[2] = jl0, jl1, jl2
    # angular part: J^-T y_ang - J^-T Q^T J^-T y_lin
    qt0, qt1, qt2 = q_transpose_apply(v0, v1, v2, w0, w1, w2, theta, jl0, jl1, jl2)
    z0, z1, z2 = y[3] - qt0, y[4] - qt1, y[5] - qt2
    c0, c1, c2 = cross(w0, w1, w2, z0, z1, z2)
    cc0, cc1, cc2 = cross(w0, w1, w2, c0, c1, c2)
    out[3], out[4], out[5] = z0 + 0.5 * c0 + b * cc0, z1 + 0.5 * c1 + b * cc1, \
        z2 + 0.5 * c2 + b * cc2


@step
def q_transpose_apply(v0, v1, v2, w0, w1, w2, theta, z0, z1, z2):
    """Q(v, w)^T z, Q of Barfoot eq. 7.86 (see spatial._se3_jacobian_q):
    Q^T = -V/2 + a2 (VW + WV - WVW) + a3 (3 WVW - VWW - WWV) + a4 (WWVW + WVWW)."""
    a2, a3, a4 = se3_q_coefficients(theta)
    Wz = cross(w0, w1, w2, z0, z1, z2)
    Vz = cross(v0, v1, v2, z0, z1, z2)
    VWz = cross(v0, v1, v2, Wz[0], Wz[1], Wz[2])
    WVz = cross(w0, w1, w2, Vz[0], Vz[1], Vz[2])
    WWz = cross(w0, w1, w2, Wz[0], Wz[1], Wz[2])
    WVWz = cross(w0, w1, w2, VWz[0], VWz[1], VWz[2])
    VWWz = cross(v0, v1, v2, WWz[0], WWz[1], WWz[2])
    WWVz = cross(w0, w1, w2, WVz[0], WVz[1], WVz[2])
    WWVWz = cross(w0, w1, w2, WVWz[0], WVWz[1], WVWz[2])
    WVWWz_inner = cross(v0, v1, v2, WWz[0], WWz[1], WWz[2])
    WVWWz = cross(w0, w1, w2, WVWWz_inner[0], WVWWz_inner[1], WVWWz_inner[2])
    out0 = (-0.5 * Vz[0] + a2 * (VWz[0] + WVz[0] - WVWz[0])
            + a3 * (3.0 * WVWz[0] - VWWz[0] - WWVz[0]) + a4 * (WWVWz[0] + WVWWz[0]))
    out1 = (-0.5 * Vz[1] + a2 * (VWz[1] + WVz[1] - WVWz[1])
            + a3 * (3.0 * WVWz[1] - VWWz[1] - WWVz[1]) + a4 * (WWVWz[1] + WVWWz[1]))
    out2 = (-0.5 * Vz[2] + a2 * (VWz[2] + WVz[2] - WVWz[2])
            + a3 * (3.0 * WVWz[2] - VWWz[2] - WWVz[2]) + a4 * (WWVWz[2] + WVWWz[2]))
    return out0, out1, out2


@step
def wrench_to_world(R, p, f, out):
    """Ad(T)^-T f: a wrench (force, moment about the body origin) in body axes -> world frame
    at the world origin."""
    f0 = R[0, 0] * f[0] + R[0, 1] * f[1] + R[0, 2] * f[2]
    f1 = R[1, 0] * f[0] + R[1, 1] * f[1] + R[1, 2] * f[2]
    f2 = R[2, 0] * f[0] + R[2, 1] * f[1] + R[2, 2] * f[2]
    n0 = R[0, 0] * f[3] + R[0, 1] * f[4] + R[0, 2] * f[5]
    n1 = R[1, 0] * f[3] + R[1, 1] * f[4] + R[1, 2] * f[5]
    n2 = R[2, 0] * f[3] + R[2, 1] * f[4] + R[2, 2] * f[5]
    c0, c1, c2 = cross(p[0], p[1], p[2], f0, f1, f2)
    out[0], out[1], out[2] = f0, f1, f2
    out[3], out[4], out[5] = n0 + c0, n1 + c1, n2 + c2


@step
def discrete_momentum(Yb, Rk, pk, R, p, dt, xi, tmp, m_world):
    """Alg. 2 l.3-4 and l.7: xi = log(T_k^-1 T_k+1), mu = dlog(xi)^T G xi / dt, then
    m_world = Ad(T_k)^-T mu. tmp: two 6-vectors of scratch."""
    relative_twist(Rk, pk, R, p, xi)
    for r in range(6):
        tmp[0, r] = xi[r] / dt
    inertia_times_motion(Yb, tmp[0], tmp[1])
    dlog_transpose_apply(xi, tmp[1], tmp[0])
    wrench_to_world(Rk, pk, tmp[0], m_world)


@step
def gravity_wrench(Y, gravity, scale, out):
    """scale * the world-frame gravity wrench on a body with world inertia Y = (m, h, I):
    force m g, moment h x g about the world origin."""
    m = Y[0]
    out[0], out[1], out[2] = scale * m * gravity[0], scale * m * gravity[1], \
        scale * m * gravity[2]
    c0, c1, c2 = cross(Y[1], Y[2], Y[3], gravity[0], gravity[1], gravity[2])
    out[3], out[4], out[5] = scale * c0, scale * c1, scale * c2


@routine
def project_subtree_sums(joint_int, oS, acc, out):
    """Alg. 2 l.8-9 in the world frame: acc_i holds body i's wrench; add each subtree into its
    root (children first) and project: out_k = oS_k . acc_i for the dofs k of joint i (RNEA's
    backward pass)."""
    for i in range(joint_int.shape[0] - 1, -1, -1):
        rnea_backward_step(i, joint_int, oS, acc, out)


@allocating
def del_residual_kernel(joint_int, joint_real, gravity, damping, armature, dt, q_prev, q,
                        q_next, x_prev, x_next, u_prev, u, out):
    """The two-configuration forced DEL residual (Lee et al. 2016, eq. 17), f = D2 Ld(q_prev, q) +
    D1 Ld(q, q_next) + F+(prev) + F-(next), from the same passes the integrator uses (the
    integrator's residual is this with D2 Ld + F+ replaced by the carried momentum p_k)."""
    nj = joint_int.shape[0]
    nv = out.shape[0]
    Yb = np.empty((nj, 10))
    oR = np.empty((3, nj, 3, 3))
    op = np.empty((3, nj, 3))
    oS = np.empty((nv, 6))
    oY = np.empty((nj, 10))
    mom = np.empty((2, nj, 6))
    acc = np.empty((nj, 6))
    xi = np.empty(6)
    tmp = np.empty((2, 6))
    Rq = np.empty((3, 3))
    pq = np.empty(3)
    for i in range(nj):
        body_inertia(joint_real[i], Yb[i])
        pose_step(i, joint_int, joint_real, q_prev, oR[0], op[0], Rq, pq)
        pose_step(i, joint_int, joint_real, q_next, oR[2], op[2], Rq, pq)
        kinematics_step(i, joint_int, joint_real, q, oR[1], op[1], oS, oY, Rq, pq)
    for i in range(nj):
        discrete_momentum(Yb[i], oR[0, i], op[0, i], oR[1, i], op[1, i], dt, xi, tmp, mom[0, i])
        discrete_momentum(Yb[i], oR[1, i], op[1, i], oR[2, i], op[2, i], dt, xi, tmp, mom[1, i])
        gravity_wrench(oY[i], gravity, dt, acc[i])  # dt/2 from each of the two Ld
        for c in range(6):
            acc[i, c] += mom[0, i, c] - mom[1, i, c]
    project_subtree_sums(joint_int, oS, acc, out)
    for k in range(nv):
        # the armature's Ld = a x^2 / (2 dt) adds D2 Ld + D1 Ld = a (x_prev - x_next) / dt
        out[k] += 0.5 * dt * (u_prev[k] + u[k]) - 0.5 * damping[k] * (x_prev[k] + x_next[k]) \
            + armature[k] * (x_prev[k] - x_next[k]) / dt


def del_residual(model, dt: float, q_prev, q, q_next, u_prev=None, u=None) -> np.ndarray:
    """The forced DEL residual at q for the configurations (q_prev, q, q_next) (generalized
    impulse, nv): zero on a trajectory of the variational integrator. For checks and studies;
    the integrator itself runs the same passes inside its step kernel."""
    from .configuration import difference

    q_prev = as_vector(q_prev, model.nq, "q_prev")
    q = as_vector(q, model.nq, "q")
    q_next = as_vector(q_next, model.nq, "q_next")
    zero = np.zeros(model.nv)
    u_prev = zero if u_prev is None else as_vector(u_prev, model.nv, "u_prev")
    u = zero if u is None else as_vector(u, model.nv, "u")
    out = np.empty(model.nv)
    del_residual_kernel(model.joint_int, model.joint_real, model.gravity, model.damping,
                        model.armature, float(dt), q_prev, q, q_next, difference(model, q_prev, q),
                        difference(model, q, q_next), u_prev, u, out)
    return out
