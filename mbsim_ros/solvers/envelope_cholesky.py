"""Dense Cholesky inside a matrix's envelope: L L^T = A[:n, :n] where row i of L starts at
first[i] (the first non-zero column of A's row i), so the zeros left of the envelope cost
nothing; and the two triangular solves. The linear algebra of the cone solver (cone_qp.py,
cone_solver.py), which factors the same pattern many times per step."""
from __future__ import annotations

import math

from .._jit import step


@step
def cholesky(A, n, L, first) -> bool:
    """L (lower) with L L^T = A[:n, :n], computed inside A's envelope (first[i]: the first
    non-zero column of row i; L has the same envelope, so banded problems such as stacks cost
    O(n b^2)); False when A is not numerically positive definite."""
    for i in range(n):
        first[i] = i
        for k in range(i):
            if A[i, k] != 0.0:
                first[i] = k
                break
    for j in range(n):
        s = A[j, j]
        for k in range(first[j], j):
            s -= L[j, k] * L[j, k]
        if not (s > 0.0):
            return False
        d = math.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, n):
            if first[i] > j:
                L[i, j] = 0.0
                continue
            s = A[i, j]
            for k in range(max(first[i], first[j]), j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    return True


@step
def cholesky_solve(L, n, first, x):
    """x <- A^-1 x for A = L L^T (envelope first), in place."""
    for i in range(n):
        s = x[i]
        for k in range(first[i], i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            if first[k] <= i:
                s -= L[k, i] * x[k]
        x[i] = s / L[i, i]
