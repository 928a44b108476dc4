"""The compliant step's matrix factored leaf first without fill-in (mbsim_ros/solvers/tree_lu.py):
on Solo12's and Talos's dof trees, K = M~ + h dB/dv - h M~ dc/dv (implicit_system's, at a
moving state), its solves (one vector; the estimators' n x k blocks, transposed, inverse)
against numpy's, no entry off the tree written, and the pivoted LU where a pivot is not
positive."""
import numpy as np
import pytest

from mbsim_ros.dynamics.rnea_derivative import velocity_terms
from mbsim_ros.dynamics.workspace import workspace
from mbsim_ros.estimation.jacobian_kernels import lu_inverse
from mbsim_ros.integrators.compliant_kernels import damped_system, dof_parents, implicit_system
from mbsim_ros.model import example_robot_urdf, load_urdf
from mbsim_ros.solvers.tree_lu import TREE_FACTORS, step_solve, tree_lu_factor

H = 1e-3


def robot(name):
    model = load_urdf(str(example_robot_urdf(name)), floating_base=True)
    return model, dof_parents(model.joint_int)


def on_tree(parent):
    """The pattern of K: dof i with itself, its ancestors and its descendants."""
    n = parent.shape[0]
    pattern = np.zeros((n, n), dtype=bool)
    for k in range(n):
        i = k
        while i >= 0:
            pattern[k, i] = pattern[i, k] = True
            i = parent[i]
    return pattern


def step_matrix(model, rng):
    """K (not factored), its factors and pivots, the force, from implicit_system at a random
    moving state."""
    nv = model.nv
    q = model.neutral()
    q[7:] = rng.uniform(-1.0, 1.0, model.nq - 7)
    v = rng.normal(0.0, 2.0, nv)
    M, dB, bias, crossed = np.zeros((nv, nv)), np.empty((nv, nv)), np.empty(nv), np.empty((nv, 6))
    velocity_terms(model.joint_int, model.joint_real, model.gravity, model.armature, q, v,
                   workspace(model), np.zeros(nv), crossed, bias, M, dB)
    force = np.empty(nv)
    damped_system(model.damping, H, v, np.zeros(nv), bias, M, force)
    return M, dB, v, force


@pytest.mark.parametrize("name", ["solo12", "talos"])
def test_the_step_matrix_factors_solve_as_numpy(name):
    """implicit_system's factors of K = M~ + h dB/dv - h M~ dc/dv are tree_lu's (pivots[0] ==
    TREE_FACTORS), write nothing off the tree, and solve K x = b (step_solve) as numpy's dense
    solve, to 1e-12 of the solution's size (K's condition number is below 1e6 here), and
    give K^-1 to the estimators (lu_inverse)."""
    model, parent = robot(name)
    rng = np.random.default_rng(3)
    M, dB, v, force = step_matrix(model, rng)
    nv = model.nv
    K, pivots = np.zeros((nv, nv)), np.zeros(nv, dtype=np.int64)
    assert implicit_system(model.joint_int, parent, H, v, dB, M, K, pivots, force.copy())
    assert pivots[0] == TREE_FACTORS
    dense = M + H * dB
    iv = 0  # the free-flyer's linear columns: - h M~ dc/dv
    u, w = v[iv:iv + 3], v[iv + 3:iv + 6]
    dense[:, 0:3] -= H * M[:, 0:3] @ np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]],
                                               [-w[1], w[0], 0]])
    dense[:, 3:6] += H * M[:, 0:3] @ np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]],
                                               [-u[1], u[0], 0]])
    assert np.all(K[~on_tree(parent)] == 0.0)
    assert np.linalg.cond(dense) < 1e6
    b = rng.normal(size=nv)
    x = b.copy()
    step_solve(K, pivots, parent, x)
    np.testing.assert_allclose(x, np.linalg.solve(dense, b), rtol=0,
                               atol=1e-12 * np.abs(np.linalg.solve(dense, b)).max())
    inverse = np.empty((nv, nv))
    lu_inverse(K, pivots, inverse, np.empty(nv, dtype=np.int64))
    np.testing.assert_allclose(inverse @ dense, np.eye(nv), rtol=0, atol=1e-9)


def test_a_pivot_that_is_not_positive_takes_the_pivoted_lu():
    """Solo12's K with a leaf's diagonal made negative by its dB/dv (a velocity term that
    dominates the inertia; v = 0 here, so K = M~ + h dB/dv): the tree's elimination refuses
    it, implicit_system factors K by LU with partial pivoting instead (pivots[0] a row), and
    step_solve solves with those factors as numpy's solve does."""
    model, parent = robot("solo12")
    rng = np.random.default_rng(4)
    M, dB, _, force = step_matrix(model, rng)
    nv = model.nv
    dB[nv - 1, nv - 1] = -2.0 * M[nv - 1, nv - 1] / H
    dense = M + H * dB
    assert not tree_lu_factor(dense.copy(), parent, np.zeros(nv, dtype=np.int64))
    K, pivots = np.zeros((nv, nv)), np.zeros(nv, dtype=np.int64)
    assert implicit_system(model.joint_int, parent, H, np.zeros(nv), dB, M, K, pivots, force)
    assert pivots[0] != TREE_FACTORS
    b = rng.normal(size=nv)
    x = b.copy()
    step_solve(K, pivots, parent, x)
    expected = np.linalg.solve(dense, b)
    np.testing.assert_allclose(x, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
