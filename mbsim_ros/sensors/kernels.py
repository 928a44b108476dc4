"""Compiled sensor passes: one forward pass for the true readings of every IMU and
force-torque sensor, the noise added to them, and the joint encoders.

Readings come from the state after a step and the step's mean joint acceleration
``a = (v_new - v_old) / dt`` (Simulator.acceleration), through the recursive Newton-Euler
forward pass in the world frame (Featherstone 2008, "Rigid Body Dynamics Algorithms",
Table 5.1) with the base accelerating at -g: that makes every spatial acceleration the body's
own minus gravity, so the linear acceleration of a point is at once the specific force an
accelerometer reads (Featherstone 2008, Sec. 2.11: the classical acceleration of a point is the
spatial acceleration plus w x v of the point).

IMU rows (13): the sensor pose (x, y, z; qx, qy, qz, qw: world <- sensor), angular velocity
and specific force, both in the sensor frame. Force-torque rows (6): the wrench the parent
applies to the child through the joint, in the joint frame, torque about its origin.
"""
from __future__ import annotations

import math

from .._jit import kernel, step
from ..dynamics.configuration import rotate_quaternion
from ..dynamics.kinematics import gravity_acceleration, kinematics_step
from ..dynamics.rnea import rnea_forward_step
from ..dynamics.workspace import carve
from ..model.model import I_PARENT

IMU_ROW = 13          # position 3, quaternion 4, angular velocity 3, specific force 3
GYRO, ACCEL = 7, 10   # first column of the angular velocity and of the specific force
IMU_NOISE = 15        # standard normals per IMU sample: orientation, gyro, accel, 2 bias walks


@step
def matrix_quaternion(R, out):
    """out[3:7] = (x, y, z, w) of a rotation matrix, w >= 0 (Shepperd's method: the largest
    of the four squares first, so the division is well conditioned)."""
    trace = R[0, 0] + R[1, 1] + R[2, 2]
    if trace > 0.0:
        s = 2.0 * math.sqrt(1.0 + trace)
        w, x, y, z = 0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, \
            (R[1, 0] - R[0, 1]) / s
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        w, x, y, z = (R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, \
            (R[0, 2] + R[2, 0]) / s
    elif R[1, 1] > R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
        w, x, y, z = (R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, \
            (R[1, 2] + R[2, 1]) / s
    else:
        s = 2.0 * math.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
        w, x, y, z = (R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, \
            (R[1, 2] + R[2, 1]) / s, 0.25 * s
    sign = -1.0 if w < 0.0 else 1.0
    out[3], out[4], out[5], out[6] = sign * x, sign * y, sign * z, sign * w


@step
def imu_truth(j, mount, oR, op, ov, oa, a_world, R, out):
    """The true IMU row (module docstring) of a sensor fixed to body j (-1: the world) at
    ``mount`` = (rotation row-major 9, position 3) in the joint frame; R: 3x3 scratch."""
    for r in range(3):
        for c in range(3):
            R[r, c] = mount[3 * r + c]
    p0, p1, p2 = mount[9], mount[10], mount[11]
    w0 = w1 = w2 = v0 = v1 = v2 = al0 = al1 = al2 = 0.0
    a0, a1, a2 = a_world[0], a_world[1], a_world[2]
    if j >= 0:
        Rj = oR[j]
        x0 = op[j, 0] + Rj[0, 0] * p0 + Rj[0, 1] * p1 + Rj[0, 2] * p2
        x1 = op[j, 1] + Rj[1, 0] * p0 + Rj[1, 1] * p1 + Rj[1, 2] * p2
        x2 = op[j, 2] + Rj[2, 0] * p0 + Rj[2, 1] * p1 + Rj[2, 2] * p2
        p0, p1, p2 = x0, x1, x2
        for c in range(3):
            m0, m1, m2 = R[0, c], R[1, c], R[2, c]
            for r in range(3):
                R[r, c] = Rj[r, 0] * m0 + Rj[r, 1] * m1 + Rj[r, 2] * m2
        v0, v1, v2, w0, w1, w2 = ov[j, 0], ov[j, 1], ov[j, 2], ov[j, 3], ov[j, 4], ov[j, 5]
        a0, a1, a2, al0, al1, al2 = oa[j, 0], oa[j, 1], oa[j, 2], oa[j, 3], oa[j, 4], oa[j, 5]
    # velocity of the point, then its classical acceleration (minus g): a + alpha x p + w x v_p
    vp0 = v0 + w1 * p2 - w2 * p1
    vp1 = v1 + w2 * p0 - w0 * p2
    vp2 = v2 + w0 * p1 - w1 * p0
    f0 = a0 + al1 * p2 - al2 * p1 + w1 * vp2 - w2 * vp1
    f1 = a1 + al2 * p0 - al0 * p2 + w2 * vp0 - w0 * vp2
    f2 = a2 + al0 * p1 - al1 * p0 + w0 * vp1 - w1 * vp0
    out[0], out[1], out[2] = p0, p1, p2
    matrix_quaternion(R, out)
    for c in range(3):
        out[GYRO + c] = R[0, c] * w0 + R[1, c] * w1 + R[2, c] * w2
        out[ACCEL + c] = R[0, c] * f0 + R[1, c] * f1 + R[2, c] * f2


@step
def joint_frame_wrench(i, oR, op, of, out):
    """out = the world-origin wrench of[i] in joint i's frame, torque about the joint origin."""
    f0, f1, f2 = of[i, 0], of[i, 1], of[i, 2]
    n0 = of[i, 3] - (op[i, 1] * f2 - op[i, 2] * f1)
    n1 = of[i, 4] - (op[i, 2] * f0 - op[i, 0] * f2)
    n2 = of[i, 5] - (op[i, 0] * f1 - op[i, 1] * f0)
    R = oR[i]
    for c in range(3):
        out[c] = R[0, c] * f0 + R[1, c] * f1 + R[2, c] * f2
        out[3 + c] = R[0, c] * n0 + R[1, c] * n1 + R[2, c] * n2


@kernel
def sensor_truth(joint_int, joint_real, gravity, q, v, a, ws, count, contact, imu_joint,
                 imu_mount, imu_out, ft_joint, ft_out):
    """True IMU rows (imu_out) and joint wrenches (ft_out) at (q, v) with joint accelerations a.
    ``count``: the forward pass covers joints 0..count-1 (all of them when there are
    force-torque sensors); ``contact`` (joints, 6): the contact wrench on each body over the
    last step ([f, torque about the body frame's origin], world axes), subtracted from the
    subtree's Newton-Euler wrench: F_i = sum over the subtree of (I a + v x* I v) - contacts."""
    nj = joint_int.shape[0]
    oR, op, oY, ov, oa, of, pA, c, IA, oS, U, Dinv, u, Rq, pq, tmp, small = carve(
        ws, nj, v.shape[0])
    a_world = tmp[3]
    gravity_acceleration(gravity, a_world)
    for i in range(count):
        kinematics_step(i, joint_int, joint_real, q, oR, op, oS, oY, Rq, pq)
        rnea_forward_step(i, joint_int, oS, v, a, oY, ov, oa, of, a_world, tmp[4], tmp)
    for k in range(imu_joint.shape[0]):
        imu_truth(imu_joint[k], imu_mount[k], oR, op, ov, oa, a_world, Rq, imu_out[k])
    if ft_joint.shape[0] == 0:
        return
    for i in range(count):
        f0, f1, f2 = contact[i, 0], contact[i, 1], contact[i, 2]
        of[i, 0] -= f0
        of[i, 1] -= f1
        of[i, 2] -= f2
        of[i, 3] -= contact[i, 3] + op[i, 1] * f2 - op[i, 2] * f1
        of[i, 4] -= contact[i, 4] + op[i, 2] * f0 - op[i, 0] * f2
        of[i, 5] -= contact[i, 5] + op[i, 0] * f1 - op[i, 1] * f0
    for i in range(count - 1, -1, -1):
        p = joint_int[i, I_PARENT]
        if p >= 0:
            for r in range(6):
                of[p, r] += of[i, r]
    for m in range(ft_joint.shape[0]):
        joint_frame_wrench(ft_joint[m], oR, op, of, ft_out[m])


FRAMES_DUE, SWITCHES_DUE = 1, 2


@kernel
def due_flags(steps, decimation, frame_sensors, due):
    """due[k] = the sensor k samples at this step (steps a multiple of its decimation); returns
    FRAMES_DUE | SWITCHES_DUE as one of the first ``frame_sensors`` (IMU, force-torque) or of
    the others (contact switches) does."""
    found = 0
    for k in range(due.shape[0]):
        due[k] = steps % decimation[k] == 0
        if due[k]:
            found |= FRAMES_DUE if k < frame_sensors else SWITCHES_DUE
    return found


@kernel
def imu_noise(truth, due, z, white, walk, bias, out):
    """out[k] = truth[k] with noise, for the IMUs sampled now (due[k]): the biases walk first
    (bias += walk * z), then gyro and accelerometer read truth + bias + white * z and the
    orientation turns by the rotation vector white * z in the sensor frame. white[k] =
    (orientation std, gyro, accel densities / sqrt(sample period)); walk[k] = (gyro, accel
    random-walk densities * sqrt(sample period)); z[k]: IMU_NOISE standard normals."""
    for k in range(truth.shape[0]):
        if not due[k]:
            continue
        row, zk, b = out[k], z[k], bias[k]
        for c in range(3):
            b[c] += walk[k, 0] * zk[9 + c]
            b[3 + c] += walk[k, 1] * zk[12 + c]
        for c in range(IMU_ROW):
            row[c] = truth[k, c]
        for c in range(3):
            row[GYRO + c] += b[c] + white[k, 1] * zk[3 + c]
            row[ACCEL + c] += b[3 + c] + white[k, 2] * zk[6 + c]
        if white[k, 0] > 0.0:
            w0, w1, w2 = white[k, 0] * zk[0], white[k, 0] * zk[1], white[k, 0] * zk[2]
            theta = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
            rotate_quaternion(truth[k], 0, w0, w1, w2, theta, row)


@kernel
def wrench_noise(truth, due, z, std, out):
    """out[m] = truth[m] + std[m] * z[m] (per axis) for the sensors sampled now (due[m])."""
    for m in range(truth.shape[0]):
        if due[m]:
            for r in range(6):
                out[m, r] = truth[m, r] + std[m, r] * z[m, r]


@kernel
def contact_switches(wrenches, bodies, threshold2, due, out):
    """out[c] = |force on body c over the last step|^2 > threshold2[c], for the switches sampled
    now (due[c]); wrenches: (joints, 6), force first."""
    for c in range(bodies.shape[0]):
        if due[c]:
            f = wrenches[bodies[c]]
            out[c] = f[0] * f[0] + f[1] * f[1] + f[2] * f[2] > threshold2[c]


@kernel
def encoder_readings(q, v, idx_q, idx_v, resolution, std, z, ring_q, ring_v, head, q_out,
                     v_out):
    """Joint encoders: push (q, v) of the one-DOF joints into the delay ring at ``head[0]``
    (then advance it) and read the oldest entry: q_out = resolution * floor(x / resolution +
    1/2) with x = q + std[0] z (no rounding where resolution is 0), v_out = v + std[1] z';
    entries of other joints (free-flyer) copied from q, v. ring depth = delay + 1."""
    n = idx_q.shape[0]
    depth = ring_q.shape[0]
    slot = head[0]
    for k in range(n):
        ring_q[slot, k] = q[idx_q[k]]
        ring_v[slot, k] = v[idx_v[k]]
    head[0] = (slot + 1) % depth
    oldest = head[0]
    for k in range(q.shape[0]):
        q_out[k] = q[k]
    for k in range(v.shape[0]):
        v_out[k] = v[k]
    for k in range(n):
        x = ring_q[oldest, k] + std[0] * z[k]
        if resolution[k] > 0.0:
            x = resolution[k] * math.floor(x / resolution[k] + 0.5)
        q_out[idx_q[k]] = x
        v_out[idx_v[k]] = ring_v[oldest, k] + std[1] * z[n + k]
