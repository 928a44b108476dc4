"""The configuration manifold: q (+) v for every joint type (the free-flyer on SE(3))."""
from __future__ import annotations

import math

import numpy as np

from .._jit import allocating, kernel, routine, step
from ..model.model import FREE_FLYER, I_IDX_Q, I_IDX_V, I_TYPE
from ..spatial import relative_twist, so3_coefficients
from .checks import OK, as_vector, input_code, raise_for
from .kinematics import quaternion_matrix


@step
def rotate_quaternion(q, iq, w0, w1, w2, theta, q_out):
    """q_out's quaternion = q's quaternion * quat(exp([w])), theta = |w| (normalized)."""
    x, y, z, qw = q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]
    half = 0.5 * theta
    s = math.sin(half) / theta if theta > 1e-8 else 0.5 - theta * theta / 48.0
    bx, by, bz, bw = s * w0, s * w1, s * w2, math.cos(half)
    nx = qw * bx + x * bw + y * bz - z * by
    ny = qw * by - x * bz + y * bw + z * bx
    nz = qw * bz + x * by - y * bx + z * bw
    nw = qw * bw - x * bx - y * by - z * bz
    norm = math.sqrt(nx * nx + ny * ny + nz * nz + nw * nw)
    q_out[iq + 3], q_out[iq + 4] = nx / norm, ny / norm
    q_out[iq + 5], q_out[iq + 6] = nz / norm, nw / norm


@step
def translate_in_body_axes(q, iq, t0, t1, t2, q_out):
    """q_out's position = q's position + R(q's quaternion) t."""
    x, y, z, qw = q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]
    q_out[iq] = q[iq] + (1 - 2 * (y * y + z * z)) * t0 + 2 * (x * y - z * qw) * t1 \
        + 2 * (x * z + y * qw) * t2
    q_out[iq + 1] = q[iq + 1] + 2 * (x * y + z * qw) * t0 + (1 - 2 * (x * x + z * z)) * t1 \
        + 2 * (y * z - x * qw) * t2
    q_out[iq + 2] = q[iq + 2] + 2 * (x * z - y * qw) * t0 + 2 * (y * z + x * qw) * t1 \
        + (1 - 2 * (x * x + y * y)) * t2


@step
def integrate_free_flyer(q, iq, v, iv, dt, q_out):
    """M(q) exp(dt [v]) with v = (linear, angular) in the body frame (pinocchio's integrate):
    p' = p + R J(dt w) dt v_lin with J the SO(3) left Jacobian, quat' = quat * quat(exp(dt w))."""
    w0, w1, w2 = dt * v[iv + 3], dt * v[iv + 4], dt * v[iv + 5]
    u0, u1, u2 = dt * v[iv], dt * v[iv + 1], dt * v[iv + 2]
    theta = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    a1, a2 = so3_coefficients(theta)
    # J u = u + a1 w x u + a2 w x (w x u)
    c0, c1, c2 = w1 * u2 - w2 * u1, w2 * u0 - w0 * u2, w0 * u1 - w1 * u0
    d0, d1, d2 = w1 * c2 - w2 * c1, w2 * c0 - w0 * c2, w0 * c1 - w1 * c0
    t0, t1, t2 = u0 + a1 * c0 + a2 * d0, u1 + a1 * c1 + a2 * d1, u2 + a1 * c2 + a2 * d2
    translate_in_body_axes(q, iq, t0, t1, t2, q_out)
    rotate_quaternion(q, iq, w0, w1, w2, theta, q_out)


@kernel
def integrate_kernel(joint_int, q, v, dt, q_out):
    for i in range(joint_int.shape[0]):
        iq = joint_int[i, I_IDX_Q]
        iv = joint_int[i, I_IDX_V]
        if joint_int[i, I_TYPE] == FREE_FLYER:
            integrate_free_flyer(q, iq, v, iv, dt, q_out)
        else:
            q_out[iq] = q[iq] + dt * v[iv]


def integrate(model, q, v, dt: float = 1.0) -> np.ndarray:
    """The configuration reached from q by moving with velocity v for dt (q (+) dt v)."""
    q = as_vector(q, model.nq, "q")
    v = as_vector(v, model.nv, "v")
    code = input_code(model.joint_int, q, v, v)
    if code != OK:
        raise_for(code, ("q", "v"), model)
    q_out = np.empty(model.nq)
    integrate_kernel(model.joint_int, q, v, float(dt), q_out)
    return q_out


@routine
def difference_step(joint_int, q0, q1, x, R3, xi):
    """x = q1 (-) q0, the tangent vector with q0 (+) x = q1 (free-flyer: log(M0^-1 M1))."""
    for i in range(joint_int.shape[0]):
        iq = joint_int[i, I_IDX_Q]
        iv = joint_int[i, I_IDX_V]
        if joint_int[i, I_TYPE] == FREE_FLYER:
            quaternion_matrix(q0, iq, R3[0])
            quaternion_matrix(q1, iq, R3[1])
            relative_twist(R3[0], q0[iq:iq + 3], R3[1], q1[iq:iq + 3], xi)
            for r in range(6):
                x[iv + r] = xi[r]
        else:
            x[iv] = q1[iq] - q0[iq]


@allocating
def difference_kernel(joint_int, q0, q1, x):
    difference_step(joint_int, q0, q1, x, np.empty((2, 3, 3)), np.empty(6))


def difference(model, q0, q1) -> np.ndarray:
    """The tangent vector x with q0 (+) x = q1 (inverse of integrate with dt = 1)."""
    q0 = as_vector(q0, model.nq, "q0")
    q1 = as_vector(q1, model.nq, "q1")
    x = np.empty(model.nv)
    difference_kernel(model.joint_int, q0, q1, x)
    return x


@kernel
def frame_rate_correction(joint_int, v0, dt, v):
    """v += dt (w0 x v0_lin) on every free-flyer: removes the frame-rotation term -w x v_lin
    that an explicit step puts into a body-frame linear velocity, so that v_lin then moves as
    the velocity of the body origin in axes fixed at the step's start (integrate_world_aligned
    rotates it into the new body frame exactly)."""
    for i in range(joint_int.shape[0]):
        if joint_int[i, I_TYPE] != FREE_FLYER:
            continue
        iv = joint_int[i, I_IDX_V]
        w0, w1, w2 = v0[iv + 3], v0[iv + 4], v0[iv + 5]
        u0, u1, u2 = v0[iv], v0[iv + 1], v0[iv + 2]
        v[iv] += dt * (w1 * u2 - w2 * u1)
        v[iv + 1] += dt * (w2 * u0 - w0 * u2)
        v[iv + 2] += dt * (w0 * u1 - w1 * u0)


@kernel
def integrate_world_aligned(joint_int, q, v, dt, q_out, v_out):
    """The free-flyer moved with a constant origin velocity and angular velocity given in the
    body axes at the step's start: p' = p + dt R v_lin, R' = R exp(dt [w]); v_out is the same
    motion in the new body axes (v_lin rotated by exp(-dt [w]), w unchanged), so the linear
    velocity keeps its length (no energy from the frame's rotation). Other joints: q + dt v."""
    for i in range(joint_int.shape[0]):
        iq = joint_int[i, I_IDX_Q]
        iv = joint_int[i, I_IDX_V]
        if joint_int[i, I_TYPE] != FREE_FLYER:
            q_out[iq] = q[iq] + dt * v[iv]
            v_out[iv] = v[iv]
            continue
        u0, u1, u2 = v[iv], v[iv + 1], v[iv + 2]
        translate_in_body_axes(q, iq, dt * u0, dt * u1, dt * u2, q_out)
        w0, w1, w2 = dt * v[iv + 3], dt * v[iv + 4], dt * v[iv + 5]
        theta = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
        rotate_quaternion(q, iq, w0, w1, w2, theta, q_out)
        # v_lin in the new axes: exp(-[dt w]) u (Rodrigues)
        a1, a2 = so3_coefficients(theta)  # (1 - cos t)/t^2, (t - sin t)/t^3
        sinc = 1.0 - theta * theta * a2   # sin t / t
        c0, c1, c2 = w1 * u2 - w2 * u1, w2 * u0 - w0 * u2, w0 * u1 - w1 * u0
        d0, d1, d2 = w1 * c2 - w2 * c1, w2 * c0 - w0 * c2, w0 * c1 - w1 * c0
        v_out[iv] = u0 - sinc * c0 + a1 * d0
        v_out[iv + 1] = u1 - sinc * c1 + a1 * d1
        v_out[iv + 2] = u2 - sinc * c2 + a1 * d2
        v_out[iv + 3], v_out[iv + 4], v_out[iv + 5] = v[iv + 3], v[iv + 4], v[iv + 5]
