"""LU factorisation, in place and without fill-in, of a matrix with a kinematic tree's sparsity:
A[i, j] != 0 only when dof i is dof j, an ancestor or a descendant of it (parent[k] < k, -1 at a
root), as the joint-space inertia and the linearly implicit step's matrix M~ + h dB/dv are.
Eliminating the dofs leaf first (k = n-1 .. 0) updates only the entries between k's ancestors,
which are already there: Featherstone's LTL order (Rigid Body Dynamics Algorithms, Sec. 6.5),
here for a matrix that is not symmetric, without pivoting, as MuJoCo's implicit integrators
factor M - h D (Todorov, Erez, Tassa 2012, "MuJoCo: A physics engine for model-based control";
mju_factorLUSparse). A = U L: U unit upper triangular (U[i, k], i an ancestor of k, above the
diagonal), L lower triangular (L[k, j], j an ancestor of k or k itself, on and below it).

Without pivoting the elimination is as stable as the Cholesky factorisation while the matrix's
symmetric positive definite part dominates (h dB/dv small against M~, the regime where the
linearised step is meant); a pivot that is not positive says it does not, and the caller factors
the matrix by solvers/lu.py's partial pivoting instead. ``pivots[0] == TREE_FACTORS`` marks this
module's factors (lu_factor's pivots[0] is a row index, >= 0), so the solves over either kind
dispatch on it (step_solve; the estimators' solves with the step's factors).
"""
from __future__ import annotations

from .._jit import routine, step
from .lu import lu_solve

TREE_FACTORS = -1  # pivots[0] of tree_lu_factor's factors


@routine
def tree_lu_factor(A, parent, pivots) -> bool:
    """A = U L in place, leaf first (module docstring); pivots[0] = TREE_FACTORS. False (A
    partly eliminated) at a pivot that is not positive."""
    for k in range(A.shape[0] - 1, -1, -1):
        if not (A[k, k] > 0.0):
            return False
        inverse = 1.0 / A[k, k]
        i = parent[k]
        while i >= 0:
            A[i, k] *= inverse  # U[i, k]
            i = parent[i]
        i = parent[k]
        while i >= 0:
            factor = A[i, k]
            j = parent[k]
            while j >= 0:
                A[i, j] -= factor * A[k, j]
                j = parent[j]
            i = parent[i]
    pivots[0] = TREE_FACTORS
    return True


@step
def solve_l(L, parent, x):
    """x <- L^-1 x (forward over the tree) for a lower triangular L with the tree's sparsity
    (tree_lu_factor's, the LTL factorisation's)."""
    for i in range(x.shape[0]):
        s = x[i]
        j = parent[i]
        while j >= 0:
            s -= L[i, j] * x[j]
            j = parent[j]
        x[i] = s / L[i, i]


@step
def tree_lu_solve(A, parent, b):
    """b <- A^-1 b from tree_lu_factor's factors: U y = b leaf first, then L x = y root
    first."""
    for k in range(A.shape[0] - 1, -1, -1):
        i = parent[k]
        while i >= 0:
            b[i] -= A[i, k] * b[k]
            i = parent[i]
    solve_l(A, parent, b)


@routine
def step_solve(A, pivots, parent, b):
    """b <- A^-1 b from the factors of either tree_lu_factor or solvers/lu.py's lu_factor
    (pivots[0] says which)."""
    if pivots[0] == TREE_FACTORS:
        tree_lu_solve(A, parent, b)
    else:
        lu_solve(A, pivots, b)


@step
def subtract_rows(A, B, i, first, last):
    """B[i] -= A[i, s] B[s] for s = first, first - 1, .., last + 1 where that factor is not
    zero, the columns of B side by side."""
    for s in range(first, last, -1):
        factor = A[i, s]
        if factor != 0.0:
            for j in range(B.shape[1]):
                B[i, j] -= factor * B[s, j]
