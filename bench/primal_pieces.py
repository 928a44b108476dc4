"""What the primal (velocity-space) form of the Jacobians through contact would cost, before
building it (docs/ESTIMATION.md, "Jacobians through contact: the primal form"): Solo12 standing
(as bench/jacobian_pieces.py), its real rows, dG and the branch's laws, and the pieces that
form would add to the compiled call, each a numba kernel at the real sizes (nv = 18, m = 12,
k = 3 nv = 54 columns), best and median microseconds over many calls:

- the local laws' Jacobian D (dgamma = D dy; each contact's 3 x 3 block: sticking -E, the
  separating zero, a sliding contact's projected block);
- S = M~ - G^T D G (nv x nv; Castro et al. 2022, "An unconstrained convex formulation of
  compliant contact", the Hessian of its primal cost) and its LU factors (solvers/lu.py);
- the rows' change at fixed velocity, dG_b v~ (over the rows' supports), and the
  right-hand sides' contact part G^T D (dy) for the k columns;
- the k columns' solve by S^-1 and dgemm, refined (refined_solve), or not refined;
- the diagonal of dW (the friction rows' regularisation follows mean(diag W), an impact's
  target 1/W_rr): delassus_changes' diagonal terms alone.

and, apart (not in the sum: an upper bound of a piece the call would do on the step's
kinematics), dM~_b a at a = M~^-1 G^T gamma for every b, which the primal residual needs: the
inverse-dynamics q-derivative at zero velocity and gravity (rnea_derivatives_kernel, with its
own kinematics, allocations and velocity columns).

Run: `.venv/bin/python bench/primal_pieces.py [calls]`; compare with
bench/jacobian_pieces.py's pieces the form would remove (the Delassus changes, the
stationarity change, the branch's solve). `--cases` instead prints, on the Jacobian tests'
cases (test/test_estimation_contact.py), whether the primal form is the same linearisation
(the active set's weights, the laws' residual on the weighted rows, W against G K^-1 G^T,
dgamma/dc both ways) and the two systems' condition numbers.
"""
from __future__ import annotations

import os
import sys

import numpy as np
from numba import njit

from jacobian_pieces import solo12_standing  # (bench/)
from mbsim_ros.estimation.contact_jacobians import Branch, last_problem
from mbsim_ros.estimation.jacobian_assembly import JACOBIAN_ARRAYS, ROWS_FIND, unpack_jacobian
from mbsim_ros.estimation.jacobian_kernels import (lu_inverse, motion_pair, negated_condition,
                                                   refined_solve)
from mbsim_ros.model.model import I_PARENT
from mbsim_ros.dynamics.rnea_derivative import rnea_derivatives_kernel
from mbsim_ros.solvers.lu import lu_factor


@njit(cache=False)
def local_laws(E_inverse, sliding_block, n, D):
    """D = -(E^-1 + the cone's curvature)^-1 on each contact's 3 x 3 block (m = 3 n rows), by
    the block's explicit inverse (the sticking branch's is diagonal; timed at the general
    3 x 3 to bound a sliding contact's)."""
    for contact in range(n):
        r = 3 * contact
        a = np.empty((3, 3))
        for i in range(3):
            for j in range(3):
                a[i, j] = sliding_block[contact, i, j] + (E_inverse[r + i] if i == j else 0.0)
        det = (a[0, 0] * (a[1, 1] * a[2, 2] - a[1, 2] * a[2, 1])
               - a[0, 1] * (a[1, 0] * a[2, 2] - a[1, 2] * a[2, 0])
               + a[0, 2] * (a[1, 0] * a[2, 1] - a[1, 1] * a[2, 0]))
        for i in range(3):
            for j in range(3):
                i1, i2, j1, j2 = (j + 1) % 3, (j + 2) % 3, (i + 1) % 3, (i + 2) % 3
                D[r + i, r + j] = -(a[i1, j1] * a[i2, j2] - a[i1, j2] * a[i2, j1]) / det


@njit(cache=False)
def primal_matrix(M, G, D, n, row_dofs, row_count, S, DG):
    """S = M~ - G^T D G over the rows' supports (D block-diagonal by contact); DG: m x nv."""
    nv, m = M.shape[0], G.shape[0]
    for i in range(nv):
        for j in range(nv):
            S[i, j] = M[i, j]
    for contact in range(n):
        r0 = 3 * contact
        for i in range(3):
            for j in range(nv):
                DG[r0 + i, j] = 0.0
            for e in range(3):
                d = D[r0 + i, r0 + e]
                for t in range(row_count[r0 + e]):
                    k = row_dofs[r0 + e, t]
                    DG[r0 + i, k] += d * G[r0 + e, k]
    for r in range(m):
        for t in range(row_count[r]):
            i = row_dofs[r, t]
            g = G[r, i]
            for s in range(row_count[r]):
                j = row_dofs[r, s]
                S[i, j] -= g * DG[r, j]


@njit(cache=False)
def moved_rows(dG, v, row_dofs, row_count, dy):
    """dy[r, b] = dG_b[r] . v over the rows' supports (the rows' change at fixed velocity):
    jacobian_kernels.row_changes' du, at v~ instead of v*, timed alone."""
    m, nv = dy.shape
    for r in range(m):
        for b in range(nv):
            dy[r, b] = 0.0
        n = row_count[r]
        for s in range(n):
            b = row_dofs[r, s]
            moved = 0.0
            for t in range(n):
                k = row_dofs[r, t]
                moved += dG[b, r, k] * v[k]
            dy[r, b] = moved


@njit(cache=False)
def motion_tables(oS, Yc, joint_int, joint_of, ov, below, tx, mo):
    """tx[b, :, s], mo[b, :, s] = motion_pair's t and h of the call's columns (its
    motion_passes' ov and below), for the dofs of the joints off the world."""
    for b in range(oS.shape[0]):
        joint = joint_of[b]
        parent = joint_int[joint, I_PARENT]
        if parent < 0:
            continue
        for s in range(ov.shape[2]):
            pair = motion_pair(Yc[joint], oS[b], ov[parent], below[joint], s)
            for e in range(6):
                tx[b, e, s], mo[b, e, s] = pair[e], pair[6 + e]


@njit(cache=False)
def contact_rhs(G, D, n, dy, Ddy, rhs):
    """rhs += G^T (D dy) for the k columns (D block-diagonal by contact)."""
    m, k = dy.shape
    for contact in range(n):
        r0 = 3 * contact
        for i in range(3):
            for j in range(k):
                Ddy[r0 + i, j] = (D[r0 + i, r0] * dy[r0, j] + D[r0 + i, r0 + 1] * dy[r0 + 1, j]
                                  + D[r0 + i, r0 + 2] * dy[r0 + 2, j])
    nv = G.shape[1]
    for r in range(m):
        for i in range(nv):
            g = G[r, i]
            if g != 0.0:
                for j in range(k):
                    rhs[i, j] += g * Ddy[r, j]


@njit(cache=False)
def diagonal_changes(dG, A, tx, mo, moves, row_dofs, row_count, diagonal, trace):
    """dW_b[r, r] = 2 dG_b[r] . A[:, r] - A_r^T dM_b A_r (delassus_changes' diagonal terms)."""
    m, nv = A.shape[1], A.shape[0]
    for b in range(nv):
        trace[b] = 0.0
        for r in range(m):
            crossed, mass = 0.0, 0.0
            if moves[r, b]:
                for t in range(row_count[r]):
                    k = row_dofs[r, t]
                    crossed += dG[b, r, k] * A[k, r]
            for e in range(6):
                mass += tx[b, e, r] * mo[b, e, r]
            diagonal[r, b] = 2.0 * crossed + 2.0 * mass
            trace[b] += diagonal[r, b]


@njit(cache=False)
def factor(M, G, D, n, row_dofs, row_count, S, DG, LU, pivots):
    primal_matrix(M, G, D, n, row_dofs, row_count, S, DG)
    LU[:, :] = S
    lu_factor(LU, pivots)


@njit(cache=False)
def solve_refined(LU, pivots, system, rhs, inverse, product, scratch, correction):
    """product = -system^-1 rhs (refined_solve's sign)."""
    lu_inverse(LU, pivots, inverse, np.empty(LU.shape[0], dtype=np.int64))
    negated_condition(system, inverse)
    refined_solve(system, inverse, rhs, product, scratch, correction, True)


@njit(cache=False)
def solve_dgemm(LU, pivots, rhs, inverse, product):
    lu_inverse(LU, pivots, inverse, np.empty(LU.shape[0], dtype=np.int64))
    np.dot(inverse, rhs, product)


@njit(cache=False)
def repeat(piece, args, calls):
    """``calls`` calls of piece(*args) in compiled code (no dispatch between them)."""
    for _ in range(calls):
        piece(*args)


def timed(piece, args, calls: int) -> tuple[float, float]:
    """(best, median) us a call of piece(*args), over rounds of 100 calls in compiled code."""
    import time

    repeat(piece, args, 10)
    rounds = []
    for _ in range(max(calls // 100, 5)):
        begin = time.perf_counter()
        repeat(piece, args, 100)
        rounds.append((time.perf_counter() - begin) * 1e4)
    return float(np.min(rounds)), float(np.median(rounds))


def main(calls: int) -> None:
    process, x, u = solo12_standing()
    process.jacobians(x, u)
    assembly = process._contact.jacobian_workspace
    table = assembly.table()
    assembly(x, ROWS_FIND, True)
    arrays = dict(zip([name for name, _, _ in JACOBIAN_ARRAYS.fields], unpack_jacobian(table)))
    integrator = process._contact.integrators[0]
    nv = process.nv
    m, n = int(integrator._counts[1]), int(integrator._counts[0])
    k = 3 * nv
    G = np.ascontiguousarray(arrays["G_all"][:m])
    H, c, gamma, kind, mu, weight = last_problem(integrator, m)
    W = integrator._buffers.W[:m, :m]
    E_inverse = np.diag(H - W).copy()
    branch = Branch(H, c, gamma, kind, mu, weight)
    M = arrays["M"].copy()  # (the step's M~, step_dynamics')
    dG = arrays["dG_b"][:nv * m * nv].reshape((nv, m, nv))
    row_dofs = arrays["row_dofs_b"][:m * nv].reshape((m, nv))
    row_count = arrays["row_count"][:m]
    moves = np.zeros((m, nv), dtype=np.int64)  # (1 where dof k moves row r)
    for r in range(m):
        moves[r, row_dofs[r, :row_count[r]]] = 1
    A = arrays["A_b"][:nv * m].reshape((nv, m))
    p = m + 2
    nj = arrays["joint_int"].shape[0]
    tx, mo = np.zeros((nv, 6, p)), np.zeros((nv, 6, p))
    motion_tables(arrays["oS_step"], arrays["Yc"], arrays["joint_int"], arrays["joint_of"],
                  arrays["ov_p"][:nj * p * 6].reshape((nj, 6, p)),
                  arrays["below_p"][:nj * p * 6].reshape((nj, 6, p)), tx, mo)
    D, S, DG = np.zeros((m, m)), np.empty((nv, nv)), np.empty((m, nv))
    sliding_block = np.zeros((n, 3, 3))
    LU, pivots = np.empty((nv, nv)), np.empty(nv, dtype=np.int64)
    dy, Ddy, rhs = np.random.default_rng(0).normal(size=(m, k)), np.empty((m, k)), np.zeros((nv, k))
    v = arrays["v1"].copy()
    dy_q = np.empty((m, nv))
    diagonal, trace = np.empty((m, nv)), np.empty(nv)
    inverse, product = np.empty((nv, nv)), np.empty((nv, k))
    local_laws(E_inverse, sliding_block, n, D)
    factor(M, G, D, n, row_dofs, row_count, S, DG, LU, pivots)
    refined, scratch, correction = np.empty((nv, k)), np.empty((nv, k)), np.empty((nv, k))
    pieces = [
        ("the local laws D (4 contacts, general 3 x 3)", local_laws,
         (E_inverse, sliding_block, n, D)),
        ("S = M~ - G^T D G and its LU", factor,
         (M, G, D, n, row_dofs, row_count, S, DG, LU, pivots)),
        ("dG_b v~ (the rows at fixed velocity)", moved_rows,
         (dG, v, row_dofs, row_count, dy_q)),
        ("G^T D dy, 54 columns", contact_rhs, (G, D, n, dy, Ddy, rhs)),
        ("S^-1 times 54 columns (inverse, refined)", solve_refined,
         (LU, pivots, S, rhs, inverse, refined, scratch, correction)),
        ("S^-1 times 54 columns (lu_inverse, dgemm)", solve_dgemm,
         (LU, pivots, rhs, inverse, product)),
        ("diag dW (the regularisation's trace)", diagonal_changes,
         (dG, A, tx, mo, moves, row_dofs, row_count, diagonal, trace))]
    print(f"Solo12 standing (nv = {nv}, m = {m}, {len(branch.free)} free rows, "
          f"{len(branch.sliding)} sliding), the primal form's added pieces, best / median us "
          f"of {calls}; load average {os.getloadavg()[0]:.2f}:")
    total = [0.0, 0.0]
    for label, piece, args in pieces:
        best, median = timed(piece, args, calls)
        print(f"  {label:46s} {best:6.2f} {median:6.2f}")
        if "dgemm" not in label:
            total[0] += best
            total[1] += median
    print(f"  {'added (with the refined solve)':46s} {total[0]:6.2f} {total[1]:6.2f}")
    model = process.model
    a, q = A @ gamma, x[:process.nq].copy()
    bound = timed(rnea_derivatives_kernel, (model.joint_int, model.joint_real, np.zeros(3), q,
                                            np.zeros(nv), a, np.empty((nv, nv)),
                                            np.empty((nv, nv))), calls)
    print(f"  {'(apart) dM~_b a, upper bound':46s} {bound[0]:6.2f} {bound[1]:6.2f}")
    # for comparison, the contact-space branch's solve (bench/jacobian_pieces.py's "the
    # branch's solve") both ways, and how far apart they round
    K_branch = np.ascontiguousarray(branch.K)
    K_lu, K_pivots = K_branch.copy(), np.empty(len(K_branch), dtype=np.int64)
    lu_factor(K_lu, K_pivots)
    rhs_b = np.ascontiguousarray(dy[:len(K_branch)])
    inverse_b = np.empty_like(K_branch)
    product_b, B_b = np.empty_like(rhs_b), np.empty_like(rhs_b)
    scratch_b, correction_b = np.empty_like(rhs_b), np.empty_like(rhs_b)
    rows_b = timed(solve_refined, (K_lu, K_pivots, K_branch, rhs_b, inverse_b, B_b, scratch_b,
                                   correction_b), calls)
    dgemm_b = timed(solve_dgemm, (K_lu, K_pivots, rhs_b, inverse_b, product_b), calls)
    apart = np.abs(B_b + product_b).max() / np.abs(B_b).max()
    print(f"  (the contact-space branch's solve, {len(K_branch)} x 54: refined "
          f"{rows_b[0]:.2f} / {rows_b[1]:.2f}, lu_inverse and dgemm {dgemm_b[0]:.2f} / "
          f"{dgemm_b[1]:.2f}; apart by {apart:.1e})")
    print(f"  cond(S) {np.linalg.cond(S):.2e}, cond of the contact-space branch system "
          f"{np.linalg.cond(branch.K):.2e}; load average {os.getloadavg()[0]:.2f}")


def primal_sensitivity(H, W, c, gamma, kind, mu) -> tuple:
    """(D, dgamma/dc) of the primal form: the rows' local laws E^-1 dg + dy + (the cone's
    terms) = 0 linearised on the same branch (Branch with H -> E^-1, its gradient the same
    H g + c), then dgamma = D (W dgamma + dc)."""
    m = len(c)
    E_inverse = np.diag(np.diag(H - W))
    local = Branch(E_inverse, c + W @ gamma, gamma, kind, mu, np.zeros(m))
    D = local.impulses(np.eye(m))
    return D, np.linalg.solve(np.eye(m) - D @ W, D)


def cases(names: list) -> None:
    """The primal form against the contact-space linearisation on the tests' cases."""
    import pathlib
    import tempfile

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test"))
    import test_estimation_contact as tests
    from mbsim_ros.estimation.contact_jacobians import _Solved

    for case in names:
        sim, u = tests.contact_case(case, pathlib.Path(tempfile.mkdtemp()))
        process, x = tests.exact_process(sim)
        solved = _Solved(process, x, u)
        m, G = solved.m, solved.G
        H, c, gamma, kind, mu, weight = last_problem(solved.integrator, m)
        W = solved.integrator._buffers.W[:m, :m]
        branch = Branch(H, c, gamma, kind, mu, weight)
        residual = np.abs(weight * (H @ gamma + c)).max()
        stepped = np.abs(W - G @ solved.inverse @ G.T).max() / np.abs(W).max()
        D, primal = primal_sensitivity(H, W, c, gamma, kind, mu)
        contact = branch.impulses(np.eye(m) + H * weight[None, :])  # dgamma/dc
        apart = np.abs(primal - contact).max() / np.abs(contact).max()
        K = np.linalg.inv(solved.inverse)
        S = K - G.T @ D @ G
        print(f"{case}: m {m}, weighted rows {np.count_nonzero(weight)}, sliding "
              f"{len(branch.sliding)}, max |w (H g + c)| {residual:.1e}; |W - G K^-1 G^T| / |W| "
              f"{stepped:.1e}; dgamma/dc primal vs contact space {apart:.1e}; cond: contact "
              f"space {np.linalg.cond(branch.K):.1e}, primal {np.linalg.cond(S):.1e}")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    if sys.argv[1:2] == ["--cases"]:
        cases(sys.argv[2:] or ["solo12_standing", "solo12_sliding", "brick_resting",
                               "brick_sliding", "ball_in_impact", "ball_loading", "terrain",
                               "brick_sliding_flat"])
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 3000)
