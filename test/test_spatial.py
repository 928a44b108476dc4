"""SE(3) algebra: identities, closed forms against series and finite differences, pinocchio."""
from math import factorial

import numpy as np
import pinocchio as pin
import pytest

from mbsim_ros.spatial import Ad, ad, dexp, dlog, exp_se3, exp_so3, log_se3, log_so3, \
    se3_inverse

rng = np.random.default_rng(7)


def twist_with_angle(theta: float) -> np.ndarray:
    axis = rng.normal(size=3)
    return np.concatenate([rng.normal(size=3), theta * axis / np.linalg.norm(axis)])


ANGLES = [0.0, 1e-12, 1e-8, 1e-5, 5e-3, 9.9e-3, 1.01e-2, 0.05, 0.0999, 0.1001, 0.5, 1.0, 2.0,
          3.0, np.pi - 1e-2, np.pi - 1e-4, np.pi - 1e-7]


def hat6(xi):
    T = np.zeros((4, 4))
    w = xi[3:]
    T[:3, :3] = [[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]]
    T[:3, 3] = xi[:3]
    return T


def series(xi, coefficients):
    A = ad(xi)
    out = np.zeros((6, 6))
    term = np.eye(6)
    for c in coefficients:
        out += c * term
        term = term @ A
    return out


def dexp_series(xi):
    """sum_j ad^j / (j+1)!"""
    return series(xi, [1.0 / factorial(j + 1) for j in range(40)])


def dlog_series(xi):
    """sum_j B_j / j! ad^j (Bernoulli numbers, B_1 = -1/2), Lee et al. 2016, eq. (12)."""
    bernoulli = [1.0, -0.5, 1 / 6, 0.0, -1 / 30, 0.0, 1 / 42, 0.0, -1 / 30, 0.0, 5 / 66, 0.0,
                 -691 / 2730, 0.0, 7 / 6]
    return series(xi, [b / factorial(j) for j, b in enumerate(bernoulli)])


@pytest.mark.parametrize("theta", ANGLES)
def test_exp_log_round_trip(theta):
    for _ in range(5):
        xi = twist_with_angle(theta)
        T = exp_se3(xi)
        np.testing.assert_allclose(T[:3, :3] @ T[:3, :3].T, np.eye(3), atol=1e-14)
        np.testing.assert_allclose(exp_se3(log_se3(T)), T, atol=1e-12)
        np.testing.assert_allclose(log_se3(T), xi, atol=1e-9 if theta > 3.1 else 1e-12)


@pytest.mark.parametrize("theta", ANGLES)
def test_exp_matches_pinocchio(theta):
    xi = twist_with_angle(theta)
    M = pin.exp6(pin.Motion(xi[:3], xi[3:]))
    np.testing.assert_allclose(exp_se3(xi), M.homogeneous, atol=1e-13)
    np.testing.assert_allclose(exp_so3(xi[3:]), pin.exp3(xi[3:]), atol=1e-14)


def test_log_so3_at_exactly_pi():
    for axis in (np.array([1.0, 0, 0]), np.array([0, 1.0, 1.0]) / np.sqrt(2)):
        w = np.pi * axis
        R = exp_so3(w)
        w_back = log_so3(R)
        assert abs(np.linalg.norm(w_back) - np.pi) < 1e-12
        np.testing.assert_allclose(exp_so3(w_back), R, atol=1e-12)


@pytest.mark.parametrize("theta", ANGLES)
def test_dlog_inverts_dexp(theta):
    xi = twist_with_angle(theta)
    np.testing.assert_allclose(dlog(xi) @ dexp(xi), np.eye(6), atol=1e-10)


@pytest.mark.parametrize("theta", [0.0, 1e-6, 5e-3, 0.05, 0.0999, 0.1001, 0.3, 0.8])
def test_closed_forms_match_their_series(theta):
    """Where the series converges fast (|w| < 1), 40 terms are exact to machine precision."""
    xi = twist_with_angle(theta)
    np.testing.assert_allclose(dexp(xi), dexp_series(xi), atol=1e-13)
    np.testing.assert_allclose(dlog(xi), dlog_series(xi), atol=1e-10 if theta > 0.5 else 1e-13)


@pytest.mark.parametrize("theta", [0.0, 1e-6, 0.05, 0.5, 2.0, 3.0])
def test_dexp_is_the_right_trivialized_derivative_of_exp(theta):
    """dexp(xi) eta = d/de exp(xi + e eta) exp(-xi), by central differences."""
    xi = twist_with_angle(theta)
    eps = 1e-6
    D = np.empty((6, 6))
    for k in range(6):
        e = np.zeros(6)
        e[k] = eps
        dT = (exp_se3(xi + e) - exp_se3(xi - e)) / (2 * eps)
        W = dT @ se3_inverse(exp_se3(xi))
        D[:, k] = np.concatenate([W[:3, 3], [W[2, 1], W[0, 2], W[1, 0]]])
    np.testing.assert_allclose(dexp(xi), D, atol=1e-8)


def test_dexp_against_pinocchio_jexp6():
    """pinocchio's Jexp6 is the body-frame (right) Jacobian: dexp = Ad(exp(xi)) Jexp6."""
    for theta in (0.0, 0.3, 2.5):
        xi = twist_with_angle(theta)
        J_right = pin.Jexp6(pin.Motion(xi[:3], xi[3:]))
        np.testing.assert_allclose(dexp(xi), Ad(exp_se3(xi)) @ J_right, atol=1e-12)


def test_adjoint_and_bracket():
    xi, eta = twist_with_angle(0.7), twist_with_angle(1.3)
    T = exp_se3(twist_with_angle(2.0))
    np.testing.assert_allclose(hat6(Ad(T) @ eta), T @ hat6(eta) @ se3_inverse(T), atol=1e-12)
    bracket = hat6(xi) @ hat6(eta) - hat6(eta) @ hat6(xi)
    np.testing.assert_allclose(hat6(ad(xi) @ eta), bracket, atol=1e-12)
    np.testing.assert_allclose(Ad(T), pin.SE3(T).action, atol=1e-13)
