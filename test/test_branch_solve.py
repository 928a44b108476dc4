"""The contact Jacobians' solve of the branch's system (jacobian_kernels.refined_solve): an
explicit inverse's product refined once, against LAPACK's LU solve (numpy) on systems as
nearly singular as a contact at a switch makes them."""
from __future__ import annotations

import numpy as np
import pytest

from mbsim_ros.estimation.jacobian_kernels import lu_inverse, negated_condition, refined_solve
from mbsim_ros.solvers.lu import lu_factor


def nearly_singular(rng, n: int, condition: float) -> np.ndarray:
    """Q diag(s) Q^T (Q orthogonal, singular values from 1 down to 1 / condition) with its
    rows shuffled (not symmetric; the LU pivots)."""
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    return ((Q * np.logspace(0, -np.log10(condition), n)) @ Q.T)[rng.permutation(n)]


def backward_error(K, S, X) -> float:
    """max over the columns of |S + K x|_inf / (|K|_inf |x|_inf): the relative change of K
    for which x solves K x = -S exactly."""
    residual = np.abs(S + K @ X).max(axis=0)
    return float((residual / (np.abs(K).sum(axis=1).max() * np.abs(X).max(axis=0))).max())


@pytest.mark.parametrize("seed", range(4))
def test_the_refined_inverse_solves_as_lu_does(seed):
    """X = -K^-1 S for 54 columns of a 12 x 12 system of condition number 1e10 (Solo12's four
    feet, k = 3 nv): refined, its backward error is that of a backward-stable solve (below
    1e-13, LAPACK's is ~1e-16) and its error against the true X within 5 times LAPACK's;
    the inverse's product alone is 1e-8 backward (cond x eps): the refinement is what makes
    the difference (this test fails without it)."""
    rng = np.random.default_rng(seed)
    n, k = 12, 54
    K = nearly_singular(rng, n, 1e10)
    X_true = rng.normal(size=(n, k))
    S = -(K @ X_true)
    factors, pivots = K.copy(), np.empty(n, dtype=np.int64)
    assert lu_factor(factors, pivots)
    inverse = np.empty((n, n))
    lu_inverse(factors, pivots, inverse, np.empty(n, dtype=np.int64))
    inverse = -inverse
    X, scratch, correction = np.empty((n, k)), np.empty((n, k)), np.empty((n, k))
    refined_solve(K, inverse, S, X, scratch, correction, True)
    lapack = np.linalg.solve(K, -S)
    assert backward_error(K, S, X) < 1e-13
    assert backward_error(K, S, inverse @ S) > 1e-10
    error = np.abs(X - X_true).max()
    assert error <= 5.0 * np.abs(lapack - X_true).max() + 1e-15


@pytest.mark.parametrize("condition", [1e2, 1e7, 1e12])
def test_the_condition_that_decides_the_refinement(condition):
    """negated_condition: K's infinity-norm condition number as numpy's (to its rounding:
    |K^-1|_inf from the LU inverse, 1e-5 relative at 1e12), and the inverse negated in place
    to the bit (refined_solve's sign); it falls on REFINED_ABOVE's side numpy's does."""
    from mbsim_ros.estimation.jacobian_assembly import REFINED_ABOVE

    rng = np.random.default_rng(7)
    n = 12
    K = nearly_singular(rng, n, condition)
    factors, pivots = K.copy(), np.empty(n, dtype=np.int64)
    assert lu_factor(factors, pivots)
    inverse = np.empty((n, n))
    lu_inverse(factors, pivots, inverse, np.empty(n, dtype=np.int64))
    plain = inverse.copy()
    found = negated_condition(K, inverse)
    expected = np.linalg.cond(K, np.inf)
    assert found == pytest.approx(expected, rel=1e-5)
    assert (found > REFINED_ABOVE) == (expected > REFINED_ABOVE)
    np.testing.assert_array_equal(inverse, -plain)


@pytest.mark.parametrize("seed", range(3))
def test_a_nearer_singular_system_takes_more_steps(seed):
    """At a condition of 1e13 (28 x 28: G1's branch system falling onto its feet is 7e12)
    one refinement leaves a backward error of about 1e-9 (each step multiplies it by about
    the plain product's, 2e-5 here); refined_solve's steps until the correction stops
    shrinking bring it to a backward-stable solve's, below 1e-12, and its error against the
    true X within 5 times LAPACK's (this test fails with one step)."""
    rng = np.random.default_rng(seed)
    n, k = 28, 105
    K = nearly_singular(rng, n, 1e13)
    X_true = rng.normal(size=(n, k))
    S = -(K @ X_true)
    factors, pivots = K.copy(), np.empty(n, dtype=np.int64)
    assert lu_factor(factors, pivots)
    inverse = np.empty((n, n))
    lu_inverse(factors, pivots, inverse, np.empty(n, dtype=np.int64))
    inverse = -inverse
    X, scratch, correction = np.empty((n, k)), np.empty((n, k)), np.empty((n, k))
    refined_solve(K, inverse, S, X, scratch, correction, True)
    assert backward_error(K, S, X) < 1e-12
    lapack = np.linalg.solve(K, -S)
    assert np.abs(X - X_true).max() <= 5.0 * np.abs(lapack - X_true).max()
