"""SE(3) / se(3) algebra as compiled kernels.

Conventions (pinocchio's, used everywhere in mbsim_ros):

* A twist is ``xi = (v, w)``: linear part first, angular part second. Lee et al. 2016
  (Lee et al. 2016) write ``V = (w, v)``; every 6x6 operator here is the paper's with its two 3x3
  block rows and columns swapped.
* A pose ``T`` is a 4x4 homogeneous matrix ``[[R, p], [0, 1]]``.
* ``Ad(T) xi = T [xi] T^-1``; ``ad(xi) eta = [xi] [eta] - [eta] [xi]`` (the Lie bracket).
* ``dexp(xi)`` is the right-trivialized tangent of exp:
  ``d/de exp(xi + e*eta) exp(-xi) |_{e=0} = dexp(xi) eta = sum_j ad(xi)^j eta / (j+1)!``.
  ``dlog(xi) = dexp(xi)^-1 = sum_j B_j / j! ad(xi)^j`` (Lee et al. 2016, eq. (12)-(13)).
  Both are evaluated in closed form (Barfoot's left Jacobian of SE(3)), with Taylor branches
  for small rotation angles; see docs/SPATIAL.md.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ._jit import routine, step

# Below these rotation angles the closed-form coefficients lose digits to cancellation and the
# Taylor series (exact to the printed order, error < 1e-16 relative) is used instead.
_SMALL_ANGLE = 1e-2
_SMALL_ANGLE_HIGH_ORDER = 1e-1


@njit(cache=True, error_model="numpy")
def hat3(w: np.ndarray) -> np.ndarray:
    """Skew-symmetric matrix [w] with [w] x = w x x."""
    W = np.zeros((3, 3))
    W[0, 1] = -w[2]
    W[0, 2] = w[1]
    W[1, 0] = w[2]
    W[1, 2] = -w[0]
    W[2, 0] = -w[1]
    W[2, 1] = w[0]
    return W


@njit(cache=True, error_model="numpy")
def vee3(W: np.ndarray) -> np.ndarray:
    """Inverse of hat3 (reads the skew part only)."""
    return np.array([0.5 * (W[2, 1] - W[1, 2]), 0.5 * (W[0, 2] - W[2, 0]),
                     0.5 * (W[1, 0] - W[0, 1])])


@njit(cache=True, error_model="numpy")
def so3_coefficients(theta: float) -> tuple:
    """a1 = (1-cos)/t^2, a2 = (t-sin)/t^3 of the SO(3) exp and its left Jacobian."""
    t2 = theta * theta
    if theta < _SMALL_ANGLE:
        a1 = 0.5 - t2 / 24.0 + t2 * t2 / 720.0 - t2 * t2 * t2 / 40320.0
        a2 = 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0 - t2 * t2 * t2 / 362880.0
    else:
        a1 = (1.0 - math.cos(theta)) / t2
        a2 = (theta - math.sin(theta)) / (t2 * theta)
    return a1, a2


@njit(cache=True, error_model="numpy")
def so3_inverse_jacobian_coefficient(theta: float) -> float:
    """b = (1 - (t/2) cot(t/2)) / t^2, so that J^-1 = I - [w]/2 + b [w]^2 (finite at t = pi)."""
    t2 = theta * theta
    if theta < _SMALL_ANGLE:
        return 1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0 + t2 * t2 * t2 / 1209600.0
    half = 0.5 * theta
    return (1.0 - half * math.cos(half) / math.sin(half)) / t2


@njit(cache=True, error_model="numpy")
def so3_sine(theta: float) -> float:
    """sin(t)/t, the SO(3) exp's first coefficient."""
    if theta < _SMALL_ANGLE:
        t2 = theta * theta
        return 1.0 - t2 / 6.0 + t2 * t2 / 120.0 - t2 * t2 * t2 / 5040.0
    return math.sin(theta) / theta


@njit(cache=True, error_model="numpy")
def exp_so3(w: np.ndarray) -> np.ndarray:
    """Rodrigues: R = I + sin(t)/t [w] + (1-cos t)/t^2 [w]^2."""
    theta = math.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    W = hat3(w)
    s = so3_sine(theta)
    a1, _ = so3_coefficients(theta)
    return np.eye(3) + s * W + a1 * (W @ W)


@njit(cache=True, error_model="numpy")
def log_so3(R: np.ndarray) -> np.ndarray:
    """Rotation vector w (|w| <= pi) with exp_so3(w) = R, robust near 0 and near pi."""
    cos_theta = 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)
    skew = vee3(R)  # = sin(theta) * axis
    # atan2 keeps full relative precision at small angles, where acos(cos) loses half the digits
    theta = math.atan2(math.sqrt(skew[0] ** 2 + skew[1] ** 2 + skew[2] ** 2), cos_theta)
    if theta < _SMALL_ANGLE:
        t2 = theta * theta
        return skew * (1.0 + t2 / 6.0 + 7.0 * t2 * t2 / 360.0)
    if theta < math.pi - 1e-3:
        return skew * (theta / math.sin(theta))
    # Near pi: the symmetric part (R + R^T)/2 - cos(t) I = (1 - cos t) a a^T gives the axis;
    # the skew part (sin t) a fixes its sign.
    S = 0.5 * (R + R.T) - max(-1.0, cos_theta) * np.eye(3)
    k = 0
    for i in range(1, 3):
        if S[i, i] > S[k, k]:
            k = i
    axis = S[:, k] / math.sqrt(S[k, k])
    axis = axis / math.sqrt(axis[0] ** 2 + axis[1] ** 2 + axis[2] ** 2)
    if axis[0] * skew[0] + axis[1] * skew[1] + axis[2] * skew[2] < 0.0:
        axis = -axis
    return theta * axis


@njit(cache=True, error_model="numpy")
def so3_left_jacobian(w: np.ndarray) -> np.ndarray:
    """J(w) = sum_j [w]^j / (j+1)! = I + a1 [w] + a2 [w]^2."""
    theta = math.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    a1, a2 = so3_coefficients(theta)
    W = hat3(w)
    return np.eye(3) + a1 * W + a2 * (W @ W)


@njit(cache=True, error_model="numpy")
def so3_left_jacobian_inverse(w: np.ndarray) -> np.ndarray:
    """J(w)^-1 = I - [w]/2 + b [w]^2."""
    theta = math.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    b = so3_inverse_jacobian_coefficient(theta)
    W = hat3(w)
    return np.eye(3) - 0.5 * W + b * (W @ W)


@njit(cache=True, error_model="numpy")
def exp_se3(xi: np.ndarray) -> np.ndarray:
    """T = exp([xi]) for xi = (v, w): R = exp_so3(w), p = J(w) v."""
    T = np.eye(4)
    T[:3, :3] = exp_so3(xi[3:])
    T[:3, 3] = so3_left_jacobian(xi[3:]) @ xi[:3]
    return T


@njit(cache=True, error_model="numpy")
def log_se3(T: np.ndarray) -> np.ndarray:
    """xi = log(T) with |w| <= pi: w = log_so3(R), v = J(w)^-1 p."""
    xi = np.empty(6)
    w = log_so3(np.ascontiguousarray(T[:3, :3]))
    xi[3:] = w
    xi[:3] = so3_left_jacobian_inverse(w) @ np.ascontiguousarray(T[:3, 3])
    return xi


@njit(cache=True, error_model="numpy")
def se3_inverse(T: np.ndarray) -> np.ndarray:
    Ti = np.eye(4)
    Rt = np.ascontiguousarray(T[:3, :3].T)
    Ti[:3, :3] = Rt
    Ti[:3, 3] = -(Rt @ np.ascontiguousarray(T[:3, 3]))
    return Ti


@njit(cache=True, error_model="numpy")
def Ad(T: np.ndarray) -> np.ndarray:
    """Adjoint of T acting on twists (v, w): [[R, [p] R], [0, R]]."""
    R = np.ascontiguousarray(T[:3, :3])
    A = np.zeros((6, 6))
    A[:3, :3] = R
    A[3:, 3:] = R
    A[:3, 3:] = hat3(np.ascontiguousarray(T[:3, 3])) @ R
    return A


@njit(cache=True, error_model="numpy")
def ad(xi: np.ndarray) -> np.ndarray:
    """Lie bracket operator of xi = (v, w) on twists: [[ [w], [v] ], [0, [w]]]."""
    A = np.zeros((6, 6))
    Wh = hat3(xi[3:])
    A[:3, :3] = Wh
    A[3:, 3:] = Wh
    A[:3, 3:] = hat3(xi[:3])
    return A


@njit(cache=True, error_model="numpy")
def se3_q_coefficients(theta: float) -> tuple:
    """a2, a3 = (t^2 + 2 cos t - 2)/(2 t^4), a4 = (2t - 3 sin t + t cos t)/(2 t^5) of the Q
    block (Taylor series below 0.1 rad, where the closed forms cancel)."""
    t2 = theta * theta
    _, a2 = so3_coefficients(theta)
    if theta < _SMALL_ANGLE_HIGH_ORDER:
        a3 = 1.0 / 24.0 - t2 / 720.0 + t2 * t2 / 40320.0 - t2 * t2 * t2 / 3628800.0
        a4 = 1.0 / 120.0 - t2 / 2520.0 + t2 * t2 / 120960.0 - t2 * t2 * t2 / 9979200.0
    else:
        a3 = (t2 + 2.0 * math.cos(theta) - 2.0) / (2.0 * t2 * t2)
        a4 = (2.0 * theta - 3.0 * math.sin(theta) + theta * math.cos(theta)) / (
            2.0 * t2 * t2 * theta)
    return a2, a3, a4


@njit(cache=True, error_model="numpy")
def _se3_jacobian_q(xi: np.ndarray) -> np.ndarray:
    """The upper-right block Q(v, w) of the SE(3) left Jacobian (Barfoot 2017, eq. 7.86)."""
    v = xi[:3]
    w = xi[3:]
    theta = math.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    a2, a3, a4 = se3_q_coefficients(theta)
    W = hat3(w)
    Vh = hat3(v)
    WV = W @ Vh
    VW = Vh @ W
    WVW = WV @ W
    WW = W @ W
    return (0.5 * Vh + a2 * (WV + VW + WVW) + a3 * (WW @ Vh + VW @ W - 3.0 * WVW)
            + a4 * (WVW @ W + W @ WVW))


@njit(cache=True, error_model="numpy")
def dexp(xi: np.ndarray) -> np.ndarray:
    """Right-trivialized tangent of exp, sum_j ad(xi)^j / (j+1)!, in closed form."""
    J = so3_left_jacobian(xi[3:])
    D = np.zeros((6, 6))
    D[:3, :3] = J
    D[3:, 3:] = J
    D[:3, 3:] = _se3_jacobian_q(xi)
    return D


@njit(cache=True, error_model="numpy")
def dlog(xi: np.ndarray) -> np.ndarray:
    """dexp(xi)^-1 = sum_j B_j/j! ad(xi)^j (Lee et al. 2016 eq. 13), in closed form:
    [[J^-1, -J^-1 Q J^-1], [0, J^-1]]."""
    Ji = so3_left_jacobian_inverse(xi[3:])
    D = np.zeros((6, 6))
    D[:3, :3] = Ji
    D[3:, 3:] = Ji
    D[:3, 3:] = -(Ji @ _se3_jacobian_q(xi) @ Ji)
    return D


def rpy_matrix(rpy) -> np.ndarray:
    """URDF's roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), \
        math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


@step
def cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@routine
def relative_twist(Rk, pk, R, p, xi):
    """xi = log(T_k^-1 T) for two world poses (Alg. 2 l.3-4 with world placements)."""
    # dR = Rk^T R, dp = Rk^T (p - pk)
    d00 = Rk[0, 0] * R[0, 0] + Rk[1, 0] * R[1, 0] + Rk[2, 0] * R[2, 0]
    d01 = Rk[0, 0] * R[0, 1] + Rk[1, 0] * R[1, 1] + Rk[2, 0] * R[2, 1]
    d02 = Rk[0, 0] * R[0, 2] + Rk[1, 0] * R[1, 2] + Rk[2, 0] * R[2, 2]
    d10 = Rk[0, 1] * R[0, 0] + Rk[1, 1] * R[1, 0] + Rk[2, 1] * R[2, 0]
    d11 = Rk[0, 1] * R[0, 1] + Rk[1, 1] * R[1, 1] + Rk[2, 1] * R[2, 1]
    d12 = Rk[0, 1] * R[0, 2] + Rk[1, 1] * R[1, 2] + Rk[2, 1] * R[2, 2]
    d20 = Rk[0, 2] * R[0, 0] + Rk[1, 2] * R[1, 0] + Rk[2, 2] * R[2, 0]
    d21 = Rk[0, 2] * R[0, 1] + Rk[1, 2] * R[1, 1] + Rk[2, 2] * R[2, 1]
    d22 = Rk[0, 2] * R[0, 2] + Rk[1, 2] * R[1, 2] + Rk[2, 2] * R[2, 2]
    e0, e1, e2 = p[0] - pk[0], p[1] - pk[1], p[2] - pk[2]
    t0 = Rk[0, 0] * e0 + Rk[1, 0] * e1 + Rk[2, 0] * e2
    t1 = Rk[0, 1] * e0 + Rk[1, 1] * e1 + Rk[2, 1] * e2
    t2 = Rk[0, 2] * e0 + Rk[1, 2] * e1 + Rk[2, 2] * e2
    # log_so3, robust at small angles (atan2); near pi from the symmetric part
    s0, s1, s2 = 0.5 * (d21 - d12), 0.5 * (d02 - d20), 0.5 * (d10 - d01)
    sin_t = math.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
    cos_t = 0.5 * (d00 + d11 + d22 - 1.0)
    theta = math.atan2(sin_t, cos_t)
    if theta < 1e-2:
        t2_ = theta * theta
        f = 1.0 + t2_ / 6.0 + 7.0 * t2_ * t2_ / 360.0
        w0, w1, w2 = f * s0, f * s1, f * s2
    elif theta < math.pi - 1e-3:
        f = theta / sin_t
        w0, w1, w2 = f * s0, f * s1, f * s2
    else:
        one_minus = 1.0 - cos_t
        a0 = math.sqrt(max(0.0, (d00 - cos_t) / one_minus))
        a1 = math.sqrt(max(0.0, (d11 - cos_t) / one_minus))
        a2 = math.sqrt(max(0.0, (d22 - cos_t) / one_minus))
        if a0 >= a1 and a0 >= a2:
            a1 = 0.5 * (d01 + d10) / (one_minus * a0)
            a2 = 0.5 * (d02 + d20) / (one_minus * a0)
        elif a1 >= a2:
            a0 = 0.5 * (d01 + d10) / (one_minus * a1)
            a2 = 0.5 * (d12 + d21) / (one_minus * a1)
        else:
            a0 = 0.5 * (d02 + d20) / (one_minus * a2)
            a1 = 0.5 * (d12 + d21) / (one_minus * a2)
        n = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
        sign = 1.0 if a0 * s0 + a1 * s1 + a2 * s2 >= 0.0 else -1.0
        w0, w1, w2 = sign * theta * a0 / n, sign * theta * a1 / n, sign * theta * a2 / n
    # v = J(w)^-1 t with J^-1 = I - [w]/2 + b [w]^2
    b = so3_inverse_jacobian_coefficient(theta)
    c0, c1, c2 = cross(w0, w1, w2, t0, t1, t2)
    cc0, cc1, cc2 = cross(w0, w1, w2, c0, c1, c2)
    xi[0] = t0 - 0.5 * c0 + b * cc0
    xi[1] = t1 - 0.5 * c1 + b * cc1
    xi[2] = t2 - 0.5 * c2 + b * cc2
    xi[3], xi[4], xi[5] = w0, w1, w2
