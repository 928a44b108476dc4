"""solvers/blas.gemm: numba's np.dot(a, b, out) as a statement, in code compiled without NRT
(the contact Jacobians' kernels), against numpy's product."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from mbsim_ros.solvers.blas import gemm


def test_gemm_is_numpys_product_without_nrt():
    """C- and F-ordered sides, a matrix and a one-column right side (BLAS's dgemv), each equal
    to numpy's product to rounding; a shape that does not agree is a ValueError."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(12, 18)), rng.normal(size=(18, 7))

    @njit(cache=False, _nrt=False)
    def run(a, b, column, out, out_t, out_column):
        gemm(a, b, out)
        gemm(a.T, out, out_t)
        gemm(a, column, out_column)

    out, out_t, out_column = np.empty((12, 7)), np.empty((18, 7)), np.empty((12, 1))
    column = np.ascontiguousarray(b[:, :1])
    run(a, b, column, out, out_t, out_column)
    np.testing.assert_allclose(out, a @ b, rtol=1e-14, atol=1e-13)
    np.testing.assert_allclose(out_t, a.T @ (a @ b), rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(out_column, a @ column, rtol=1e-14, atol=1e-13)
    with pytest.raises(ValueError, match="incompatible"):
        run(a, b[:7], column, out, out_t, out_column)
