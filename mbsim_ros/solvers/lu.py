"""Dense LU factorisation with partial pivoting, in place, for compiled kernels (no allocation:
np.linalg inside numba allocates its result and a copy per call). For the general (not
symmetric) matrices of linearly implicit steps."""
from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.np.linalg import F_INT_nbtype, F_INT_nptype, ensure_lapack

from .._jit import routine, step

# A pivot this small relative to the matrix's largest entry: singular to working precision.
PIVOT_TOLERANCE = 1e-14


@routine
def lu_factor(A, pivots) -> bool:
    """P A = L U in place (L unit lower triangular below the diagonal, U on and above it);
    pivots[k] is the row swapped with row k at step k. False when A is singular (a pivot at or
    below PIVOT_TOLERANCE times the largest |entry|, or not finite)."""
    n = A.shape[0]
    scale = 0.0
    for i in range(n):
        for j in range(n):
            scale = max(scale, abs(A[i, j]))
    tiny = PIVOT_TOLERANCE * scale
    for k in range(n):
        p, big = k, abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > big:
                p, big = i, abs(A[i, k])
        pivots[k] = p
        if not big > tiny:
            return False
        if p != k:
            for j in range(n):
                A[k, j], A[p, j] = A[p, j], A[k, j]
        inverse = 1.0 / A[k, k]
        for i in range(k + 1, n):
            factor = A[i, k] * inverse
            A[i, k] = factor
            if factor != 0.0:
                for j in range(k + 1, n):
                    A[i, j] -= factor * A[k, j]
    return True


@routine
def lu_solve(A, pivots, b) -> None:
    """b <- A^-1 b from lu_factor's A and pivots."""
    n = A.shape[0]
    for k in range(n):
        p = pivots[k]
        if p != k:
            b[k], b[p] = b[p], b[k]
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= A[i, j] * b[j]
        b[i] = s
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= A[i, j] * b[j]
        b[i] = s / A[i, i]


# LAPACK's dgesv through numba's own binding of it (numba.np.linalg's numba_xgesv, which calls
# scipy's LAPACK): what np.linalg.solve calls inside numba.
_GESV = types.ExternalFunction("numba_xgesv", types.intc(
    types.char, types.intp, types.intp, types.CPointer(types.float64), types.intp,
    types.CPointer(F_INT_nbtype), types.CPointer(types.float64), types.intp))
_DOUBLE = ord("d")
LAPACK_INT = F_INT_nptype  # the integer type of LAPACK's pivots (lapack_solve_into)
ensure_lapack()  # (scipy's LAPACK, as np.linalg does)


@step
def lapack_solve_into(A, b, fortran, x, pivots) -> None:
    """x = np.linalg.solve(A, b) for a float64 matrix and vector, into preallocated scratch:
    the same LAPACK dgesv on the same copies (A in Fortran order into ``fortran``, n x n; b into
    ``x``; ``pivots``: n LAPACK integers), so the same bits and the same LinAlgError for a
    matrix or vector that is not finite or a singular matrix, without numba's generic checks,
    shapes and messages around it (about 5 s of a cold compile) and without allocating (a
    routine compiled without numba's reference counting can call it)."""
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            if not math.isfinite(A[i, j]):
                raise np.linalg.LinAlgError("Array must not contain infs or NaNs.")
    for i in range(n):
        if not math.isfinite(b[i]):
            raise np.linalg.LinAlgError("Array must not contain infs or NaNs.")
    for i in range(n):  # row j of fortran: column j of A
        for j in range(n):
            fortran[j, i] = A[i, j]
    for i in range(n):
        x[i] = b[i]
    if n > 0 and _GESV(_DOUBLE, n, 1, fortran.ctypes, n, pivots.ctypes, x.ctypes, n) != 0:
        raise np.linalg.LinAlgError("Matrix is singular to machine precision.")
