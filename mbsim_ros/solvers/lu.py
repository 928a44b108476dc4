"""Dense LU factorisation with partial pivoting, in place, for compiled kernels (no allocation:
np.linalg inside numba allocates its result and a copy per call). For the general (not
symmetric) matrices of linearly implicit steps."""
from __future__ import annotations

from .._jit import routine

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
