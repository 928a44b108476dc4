"""Compiled loops of the Jacobians through contact (contact_jacobians.py, docs/ESTIMATION.md
"Jacobians through contact: cost and accuracy"): solves with the step matrix's LU factors
(its inverse, K^-1 B, K^-T B), the world-aligned integration's derivatives, the contact rows'
q-derivatives and which dofs move which rows, the
composite inertias and the mass matrix's q-derivative as a bilinear form (one pass over the
bodies for every column), the Delassus matrix's q-derivative where the solve's linearisation
needs it, and the rows' laws' q-derivatives. numpy's per-call overhead on these 3-, 6- and
18-vectors was most of their cost. And the step's dynamics on the step's own kinematics
(step_dynamics): the mass matrix, the composite inertias, inverse dynamics' q-derivative with
its velocity products polarised at the two velocities the implicit step's right-hand side
needs (docs/ESTIMATION.md, "fewer operations in the call") and its v-derivative at two
velocities, with dynamics/'s compiled passes. jacobian_assembly calls them
all from one compiled call.
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel, routine, step
from ..dynamics.crba import crba_backward
from ..dynamics.kinematics import (gravity_acceleration, inertia_times_motion, kinematics_step,
                                   world_inertia)
from ..dynamics.rnea_derivative import coriolis_numbers, coriolis_projection
from ..codes import FIXED, FRICTION, NORMAL, TANGENT, UNILATERAL
from ..model.model import I_IDX_V, I_NV, I_PARENT
from ..solvers.blas import gemm
from ..solvers.tree_lu import TREE_FACTORS, subtract_rows
from ..spatial import so3_coefficients, so3_sine


@step
def turns(oS, b) -> bool:
    """Whether dof b turns what it moves (its world motion subspace's w nonzero; a
    free-flyer's translations do not)."""
    return oS[b, 3] != 0.0 or oS[b, 4] != 0.0 or oS[b, 5] != 0.0


@kernel
def row_derivatives_kernel(oS, support, chain, bodies, x, centre, directions, points, dG):
    """dG[b, 3c + e, k] = d G[3c + e, k] / d q_b (dG[b]: G's derivative along dof b) for
    contacts c of a sphere's centre or a point with a fixed normal (contact_jacobians.
    _row_derivatives), G's row r = d_r . V_k(x) with V_k(x) = v_k + w_k x x (S_k = (v_k, w_k)
    at the contact point x = c - radius n). On the dofs k, b that move the contact's body,
    moving q_b turns S_k by S_b x S_k where b turns k (support[b, k]; Featherstone 2008,
    "Rigid body dynamics algorithms", eq. 2.31) and moves the centre c by V_b(c), so by the
    Jacobi identity dG_b[r, k] = d_r . (w_b x V_k(x) + w_k x (w_b x (c - x))) where b turns
    k, d_r . (w_k x V_b(c)) elsewhere, taken as triple products with d_r x w_b, d_r x w_k.
    A dof b that does not turn (w_b = 0: a free-flyer's translations) moves c and x alike
    and turns no S_k, so its dG_b is zero: left as it is, as dG's other entries (zero where
    the caller zeroed dG; row_changes skips such a b). points: nv x 18 scratch (per dof of
    the contact's body: V_k(x), V_k(c), w_k x (c - x), d_r x w_k for the contact's rows)."""
    nv = oS.shape[0]
    for c in range(bodies.shape[0]):
        a = bodies[c]
        x0, x1, x2 = x[c, 0], x[c, 1], x[c, 2]
        c0, c1, c2 = centre[c, 0], centre[c, 1], centre[c, 2]
        r0, r1, r2 = c0 - x0, c1 - x1, c2 - x2
        for k in range(nv):
            if chain[a, k] == 0.0:
                continue
            v0, v1, v2, w0, w1, w2 = oS[k, 0], oS[k, 1], oS[k, 2], oS[k, 3], oS[k, 4], oS[k, 5]
            P = points[k]
            P[0], P[1], P[2] = v0 + w1 * x2 - w2 * x1, v1 + w2 * x0 - w0 * x2, \
                v2 + w0 * x1 - w1 * x0  # V_k(x)
            P[3], P[4], P[5] = v0 + w1 * c2 - w2 * c1, v1 + w2 * c0 - w0 * c2, \
                v2 + w0 * c1 - w1 * c0  # V_k(c)
            P[6], P[7], P[8] = w1 * r2 - w2 * r1, w2 * r0 - w0 * r2, w0 * r1 - w1 * r0
            for e in range(3):
                d0, d1, d2 = directions[3 * c + e, 0], directions[3 * c + e, 1], \
                    directions[3 * c + e, 2]
                P[9 + 3 * e] = d1 * w2 - d2 * w1  # d_r x w_k
                P[10 + 3 * e] = d2 * w0 - d0 * w2
                P[11 + 3 * e] = d0 * w1 - d1 * w0
        r = 3 * c
        for b in range(nv):
            if chain[a, b] == 0.0:
                continue
            if not turns(oS, b):
                continue
            B = points[b]  # (held in locals: a store to dG would reload them)
            u0, u1, u2, s0, s1, s2 = B[3], B[4], B[5], B[6], B[7], B[8]
            f0, f1, f2, g0, g1, g2 = B[9], B[10], B[11], B[12], B[13], B[14]
            t0, t1, t2 = B[15], B[16], B[17]
            for k in range(nv):
                if chain[a, k] == 0.0:
                    continue
                K = points[k]
                if support[b, k] == 0.0:  # S_k not turned by S_b: d_r . (w_k x V_b(c))
                    dG[b, r, k] = u0 * K[9] + u1 * K[10] + u2 * K[11]
                    dG[b, r + 1, k] = u0 * K[12] + u1 * K[13] + u2 * K[14]
                    dG[b, r + 2, k] = u0 * K[15] + u1 * K[16] + u2 * K[17]
                    continue
                # d_r . (w_b x V_k(x)) + d_r . (w_k x (w_b x (c - x)))
                k0, k1, k2 = K[0], K[1], K[2]
                dG[b, r, k] = (k0 * f0 + k1 * f1 + k2 * f2
                               + (s0 * K[9] + s1 * K[10] + s2 * K[11]))
                dG[b, r + 1, k] = (k0 * g0 + k1 * g1 + k2 * g2
                                   + (s0 * K[12] + s1 * K[13] + s2 * K[14]))
                dG[b, r + 2, k] = (k0 * t0 + k1 * t1 + k2 * t2
                                   + (s0 * K[15] + s1 * K[16] + s2 * K[17]))


@kernel
def motion_passes(oS, Yc, X, joint_int, joint_of, ov, below, force):
    """The passes under the mass matrix's q-derivative's bilinear form over the columns x of X
    (nv x p; motion_pair): the bodies' velocities ov[i, :, s] = ov_i(x) (njoints x 6 x p, a
    forward pass) and below[i, :, s], the sum over joint i's subtree's dofs k of
    Yc_(joint k) S_k x_k (njoints x 6 x p, a backward pass; not made for a joint on the
    world nor summed into one, not being read; ov not made for a joint without children,
    not being read either); force (nv x 6): Yc_(joint k) S_k (kinematics'
    inertia_times_motion). Each entry's sum over the joint's dofs in order, a row at a time
    with the columns innermost (one X row, one row of ov and of below: loops the compiler
    takes two columns at a time); a joint on the world leaves out its dofs' zero entries'
    products (a free-flyer's translations: w = 0), its sums starting at +0."""
    nv, columns = X.shape
    nj = joint_int.shape[0]
    for k in range(nv):
        inertia_times_motion(Yc[joint_of[k]], oS[k], force[k])
    for i in range(nj):  # parents first
        parent = joint_int[i, I_PARENT]
        first = joint_int[i, I_IDX_V]
        leaf = True
        for j in range(i + 1, nj):
            if joint_int[j, I_PARENT] == i:
                leaf = False
                break
        if leaf and parent < 0:  # (nothing of it read)
            continue
        for k in range(first, first + joint_int[i, I_NV]):
            x = X[k]
            for r in range(6):
                a, f = oS[k, r], force[k, r]
                O, B = ov[i, r], below[i, r]
                if leaf:  # (its velocities not read)
                    if k == first:
                        for s in range(columns):
                            B[s] = 0.0 + f * x[s]
                    else:
                        for s in range(columns):
                            B[s] += f * x[s]
                    continue
                if parent < 0:  # (a joint on the world: its velocities only)
                    if k == first:
                        for s in range(columns):
                            O[s] = 0.0 + a * x[s]
                    elif a != 0.0:  # (a zero product left out of a sum from +0)
                        for s in range(columns):
                            O[s] += a * x[s]
                    continue
                if k == first:
                    P = ov[parent, r]
                    for s in range(columns):
                        O[s] = P[s] + a * x[s]
                        B[s] = 0.0 + f * x[s]
                    continue
                for s in range(columns):
                    O[s] += a * x[s]
                    B[s] += f * x[s]
    for i in range(nj - 1, 0, -1):  # children first: the subtrees' sums (below a joint on
        parent = joint_int[i, I_PARENT]  # the world: not read)
        if parent >= 0 and joint_int[parent, I_PARENT] >= 0:
            for r in range(6):
                B, C = below[parent, r], below[i, r]
                for s in range(columns):
                    B[s] += C[s]


@step
def motion_pair(Y, x, w, below, s) -> tuple:
    """For a column x_s of motion_passes' X and a dof b (x = S_b, of joint l, parent lambda,
    not on the world; Y = Yc_l, w = ov_lambda, below = motion_passes' below_l), the twist
    t = S_b x ov_lambda(x_s) and the subtree's momentum h = h_l(x_s) = Yc_l ov_lambda(x_s) +
    sum over the subtree's dofs k of Yc_(joint k) S_k x_k, as (t_0..t_5, h_0..h_5), from
    which the mass matrix's q-derivative's bilinear form follows: moving dof b turns l's
    subtree rigidly by S_b, so the kinetic form x^T M x changes by -2 t . h, and by
    polarisation y^T dM_b z = -(t(y) . h(z) + t(z) . h(y)) (Featherstone 2008, "Rigid body
    dynamics algorithms", eq. 2.25 and 6.1; zero for a free-flyer's own dofs, whose parent is
    the world)."""
    m, hx, hy, hz = Y[0], Y[1], Y[2], Y[3]
    v0, v1, v2, w0, w1, w2 = w[0, s], w[1, s], w[2, s], w[3, s], w[4, s], w[5, s]
    return (x[4] * v2 - x[5] * v1 + x[1] * w2 - x[2] * w1,  # S_b x ov_lambda
            x[5] * v0 - x[3] * v2 + x[2] * w0 - x[0] * w2,  # (motion_cross_motion)
            x[3] * v1 - x[4] * v0 + x[0] * w1 - x[1] * w0,
            x[4] * w2 - x[5] * w1,
            x[5] * w0 - x[3] * w2,
            x[3] * w1 - x[4] * w0,
            m * v0 - (hy * w2 - hz * w1) + below[0, s],  # Yc_l ov_lambda
            m * v1 - (hz * w0 - hx * w2) + below[1, s],  # (inertia_times_motion), + below
            m * v2 - (hx * w1 - hy * w0) + below[2, s],
            hy * v2 - hz * v1 + Y[4] * w0 + Y[5] * w1 + Y[6] * w2 + below[3, s],
            hz * v0 - hx * v2 + Y[5] * w0 + Y[7] * w1 + Y[8] * w2 + below[4, s],
            hx * v1 - hy * v0 + Y[6] * w0 + Y[8] * w1 + Y[9] * w2 + below[5, s])


@step
def so3_factors(w0, w1, w2, W, W2) -> tuple:
    """W = [w]x, W2 = [w]x^2 (3 x 3, written) and the coefficients (sin t / t, a1, a2) of
    exp([w]x) = 1 + sin t / t W + a1 W2 and the left Jacobian 1 + a1 W + a2 W2, t = |w|
    (spatial.exp_so3, spatial.so3_left_jacobian, without their allocations)."""
    theta = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    sine = so3_sine(theta)
    a1, a2 = so3_coefficients(theta)
    W[0, 0], W[0, 1], W[0, 2] = 0.0, -w2, w1
    W[1, 0], W[1, 1], W[1, 2] = w2, 0.0, -w0
    W[2, 0], W[2, 1], W[2, 2] = -w1, w0, 0.0
    for r in range(3):
        for c in range(3):
            W2[r, c] = W[r, 0] * W[0, c] + W[r, 1] * W[1, c] + W[r, 2] * W[2, c]
    return sine, a1, a2


@kernel
def integration_kernel(free, h, v1, whole, rotations, to_q, to_v, turn):
    """The derivatives of integrate_world_aligned at v1 (contact_jacobians._integration_
    derivatives, _integration_turn): one-dof joints to_q = h, to_v = 1, turn = 1; a
    free-flyer at dofs iv (``free``: their first dofs), u = v1_lin, w = v1_ang,
    E = exp(h [w]): to_q = (h E^T, h Jr(h w)), to_v = (E^T, h E^T [u]x Jr(-h w)) and the turn
    at fixed v1 (E^T, -h E^T [u]x; E^T). to_q, to_v, turn (the turn's upper nv x nv) are
    written whole where ``whole``, else their free-flyers' blocks only (the rest, which does
    not depend on v1, as a whole call left it). rotations: 4 x 3 x 3 scratch ([h w]x, its
    square, E, the Jacobians)."""
    nv = v1.shape[0]
    for r in range(nv if whole else 0):
        for c in range(nv):
            one = 1.0 if r == c else 0.0
            to_q[r, c] = h * one
            to_v[r, c] = one
            turn[r, c] = one
    W, W2, E, J = rotations[0], rotations[1], rotations[2], rotations[3]
    for f in range(free.shape[0]):
        iv = free[f]
        u = v1[iv:iv + 3]
        sine, a1, a2 = so3_factors(h * v1[iv + 3], h * v1[iv + 4], h * v1[iv + 5], W, W2)
        for r in range(3):
            for c in range(3):
                one = 1.0 if r == c else 0.0
                E[r, c] = one + sine * W[r, c] + a1 * W2[r, c]
                J[r, c] = one - a1 * W[r, c] + a2 * W2[r, c]  # Jr(h w) = Jl(-h w)
        for r in range(3):
            for c in range(3):
                to_q[iv + r, iv + c] = h * E[c, r]
                to_q[iv + 3 + r, iv + 3 + c] = h * J[r, c]
                to_v[iv + r, iv + c] = E[c, r]
                turn[iv + r, iv + c] = E[c, r]
                turn[iv + 3 + r, iv + 3 + c] = E[c, r]
        for r in range(3):  # E^T [u]x: row r of E^T crossed
            for c in range(3):
                # (E^T [u]x)[r, c] = E[:, r] . (u x e_c) = (E[:, r] x u)_c
                a0, a1_, a2_ = E[0, r], E[1, r], E[2, r]
                if c == 0:
                    value = a1_ * u[2] - a2_ * u[1]
                elif c == 1:
                    value = a2_ * u[0] - a0 * u[2]
                else:
                    value = a0 * u[1] - a1_ * u[0]
                turn[iv + r, iv + 3 + c] = -h * value
        for r in range(3):
            for c in range(3):
                J[r, c] = (1.0 if r == c else 0.0) + a1 * W[r, c] + a2 * W2[r, c]  # Jr(-h w)
        for r in range(3):
            for c in range(3):
                total = 0.0
                for j in range(3):
                    total += -turn[iv + r, iv + 3 + j] * J[j, c]  # h E^T [u]x Jr(-h w)
                to_v[iv + r, iv + 3 + c] = total


@step
def subtract_row(B, i, s, factor):
    """B[i] -= factor B[s], the columns side by side (upper_solve_rows)."""
    for j in range(B.shape[1]):
        B[i, j] -= factor * B[s, j]


@step
def upper_solve_rows(LU, B):
    """B <- U^-1 B (n x k, in place; U: LU's upper triangle, solvers/lu.py's factors), row by
    row from the last, the k columns side by side (lu_inverse)."""
    n, k = B.shape
    for i in range(n - 1, -1, -1):
        for s in range(i + 1, n):
            factor = LU[i, s]
            if factor != 0.0:
                subtract_row(B, i, s, factor)
        for j in range(k):
            B[i, j] = B[i, j] / LU[i, i]


@step
def solve_l_columns(L, parent, X):
    """X <- L^-1 X (n x m, in place) for a lower triangular L with the tree's sparsity
    (solvers/tree_lu.py's solve_l: the LTL factorisation's), the m columns side by side, each
    column's sums in solve_l's order."""
    n, m = X.shape
    for i in range(n):
        j = parent[i]
        while j >= 0:
            factor = L[i, j]
            for c in range(m):
                X[i, c] -= factor * X[j, c]
            j = parent[j]
        diagonal = L[i, i]
        for c in range(m):
            X[i, c] = X[i, c] / diagonal


@kernel
def lu_inverse(LU, pivots, out, ends):
    """out = K^-1 = U^-1 L^-1 P from solvers/lu.py's factors of K (P K = L U): L^-1 over its
    lower triangle (its row s is zero right of s), U^-1 times it, then P's row swaps as
    column swaps in reverse order. Each entry is an LU solve's on the identity (the same
    sums; its products with those zeros skipped), a third fewer operations. The compliant
    step's K factored leaf first (pivots[0] == TREE_FACTORS, A = U L): U^-1 from the leaves
    (U's row i moves row i of U^-1 by the rows s right of i where U[i, s] != 0: its
    descendants), each row s of it zero outside [s, ends[s]) with ends[i] = the largest
    ends[s] of those s (i + 1 at a leaf: the subtrees read from the factors' zeros; ends: n
    int64 scratch), then L^-1 times it root first, as solvers/tree_lu.py's solve
    (tree_lu_solve's order) on the identity, each row times its diagonal's reciprocal (one
    division per row)."""
    n = LU.shape[0]
    for i in range(n):
        for j in range(n):
            out[i, j] = 1.0 if i == j else 0.0
    if pivots.shape[0] and pivots[0] == TREE_FACTORS:
        for i in range(n - 1, -1, -1):  # U^-1, upper triangular: row s is zero left of s
            end = i + 1
            for s in range(n - 1, i, -1):
                factor = LU[i, s]
                if factor != 0.0:
                    end = max(end, ends[s])
                    for j in range(s, ends[s]):
                        out[i, j] -= factor * out[s, j]
            ends[i] = end
        for i in range(n):
            subtract_rows(LU, out, i, i - 1, -1)
            reciprocal = 1.0 / LU[i, i]
            for j in range(n):
                out[i, j] *= reciprocal
        return
    for i in range(n):
        for s in range(i):
            factor = LU[i, s]
            if factor != 0.0:
                for j in range(s + 1):
                    out[i, j] -= factor * out[s, j]
    upper_solve_rows(LU, out)
    for k in range(n - 1, -1, -1):  # P = S_(n-1) ... S_0: Z P swaps Z's columns k, p_k
        p = pivots[k]
        if p != k:
            for i in range(n):
                out[i, k], out[i, p] = out[i, p], out[i, k]


@step
def row_supports(contact_int, chain, n, row_dofs, row_count):
    """Which dofs move which rows (m rows), as lists: row r's dofs row_dofs[r, :row_count[r]],
    in increasing order, those k that move one of the bodies of row r's contact (the model's
    chain table; a joint limit's or joint friction's row is constant: none), so dG_b's row r
    is zero unless b is one of them, and zero off them. A contact's three rows share its
    list (found once, copied)."""
    m, nv = row_dofs.shape
    for r in range(m):
        row_count[r] = 0
    for contact in range(n):
        first, second = contact_int[contact, 0], contact_int[contact, 1]
        r, count = 3 * contact, 0
        for k in range(nv):
            if ((first >= 0 and chain[first, k] != 0.0)
                    or (second >= 0 and chain[second, k] != 0.0)):
                row_dofs[r, count] = k
                count += 1
        for e in range(1, 3):
            for i in range(count):
                row_dofs[r + e, i] = row_dofs[r, i]
        for e in range(3):
            row_count[r + e] = count


@routine
def delassus_changes(A, oS, Yc, joint_int, joint_of, ov, below, turned, both, product, dW_gamma,
                     dW_pushed, diagonal, trace):
    """The Delassus matrix W = G M~^-1 G^T's q-derivative where the solve's linearisation
    needs it (contact_jacobians.step_jacobians), m rows, A = M~^-1 G^T (nv x m), from
    row_changes' contractions of dG (dG_b A g, dG_b A p in dW_gamma, dW_pushed, dG_b[r] .
    A[:, r] in diagonal, both = [dG_b^T g | dG_b^T p]): turned = dG_b^T g (nv x nv, column b);
    dW_b g, dW_b p (m x nv) with dW_b y = dG_b A y + A^T dG_b^T y - A^T dM_b A y;
    diagonal[r, b] = dW_b[r, r] and trace[b] = tr dW_b. A^T dG_b^T (g, p) (product[0:2]:
    2 x nv x m) by BLAS's dgemm (solvers/blas.gemm). The mass matrix's part by motion_pair
    over motion_passes' columns of X = [A, A g, A p] (ov, below: njoints x 6 x (m + 2)),
    y^T dM_b z = -(t(y) . h(z) + t(z) . h(y)), zero for the dofs of a joint on the world:
    each column's t and h taken where they are used (each entry's sum over the 6 in order),
    the columns r of one dof b side by side (a loop the compiler takes two at a time),
    its three sums into product[2:5, b] (product: 5 x nv x m), then added in (a pass over
    the rows r, the dofs b side by side)."""
    m, nv = A.shape[1], A.shape[0]
    for k in range(nv):
        for b in range(nv):
            turned[k, b] = both[k, b]
    gemm(both.T, A, product[:2].reshape((2 * nv, m)))
    for b in range(nv):
        joint = joint_of[b]
        parent = joint_int[joint, I_PARENT]
        row_g, row_p, row_d = product[2, b], product[3, b], product[4, b]
        if parent < 0:  # (dM_b = 0: the mass part's zeros)
            for r in range(m):
                row_g[r], row_p[r], row_d[r] = 0.0, 0.0, 0.0
            continue
        Y, x, w, under = Yc[joint], oS[b], ov[parent], below[joint]
        at_gamma, at_pushed = motion_pair(Y, x, w, under, m), motion_pair(Y, x, w, under, m + 1)
        for r in range(m):
            pair = motion_pair(Y, x, w, under, r)  # (t, h of A's column r)
            gamma, pushed, own = 0.0, 0.0, 0.0  # (A^T dM_b A g = -gamma)
            for e in range(6):
                gamma += pair[e] * at_gamma[6 + e] + pair[6 + e] * at_gamma[e]
                pushed += pair[e] * at_pushed[6 + e] + pair[6 + e] * at_pushed[e]
                own += pair[e] * pair[6 + e]
            row_g[r], row_p[r], row_d[r] = gamma, pushed, own
    for b in range(nv):
        trace[b] = 0.0
    for r in range(m):
        for b in range(nv):
            dW_gamma[r, b] = product[0, b, r] + (dW_gamma[r, b] + product[2, b, r])
            dW_pushed[r, b] = product[1, b, r] + (dW_pushed[r, b] + product[3, b, r])
            diagonal[r, b] = 2.0 * diagonal[r, b] + 2.0 * product[4, b, r]
            trace[b] += diagonal[r, b]


@kernel
def law_changes(kind, k, b, phi, contacts, hertz, reference, dissipation, h, friction_change,
                dphi, d_inverse, dc):
    """The rows' laws' q-derivatives (cone_solver.prepare_rows; jacobian_assembly.
    law_derivatives), rows not in an impact: friction and tangent rows' regularization
    E^-1 = regularization mean(diag W) (friction_change: its derivative, nv); rigid rows
    (k = inf) close at 1/h, dc += dphi / h; soft rows E^-1 = 1 / (h (h k + b)),
    c = u + k / (h k + b) phi, the contacts' Hertz stiffness k = a sqrt(depth) above the
    reference depth (hertz) with damping b = dissipation k depth + damping. dphi (m x nv):
    the gap's gradient (G); d_inverse zero and dc = d(G v*)/dq on entry."""
    m, nv = dphi.shape
    for r in range(m):
        if kind[r] == TANGENT or kind[r] == FRICTION:
            for j in range(nv):
                d_inverse[r, j] = friction_change[j]
            continue
        if not np.isfinite(k[r]):
            for j in range(nv):
                dc[r, j] += dphi[r, j] / h
            continue
        depth = -phi[r]
        stiff = hertz and r < 3 * contacts and depth > reference
        soft = h * k[r] + b[r]
        for j in range(nv):
            dk = -k[r] / (2.0 * depth) * dphi[r, j] if stiff else 0.0
            db = 0.0
            if stiff and b[r] > 0.0:
                db = dissipation * (dk * depth - k[r] * dphi[r, j])
            dsoft = h * dk + db
            d_inverse[r, j] = -dsoft / (h * soft * soft)
            dc[r, j] += ((dk * soft - k[r] * dsoft) / (soft * soft) * phi[r]
                         + k[r] / soft * dphi[r, j])


@kernel
def frame_rate_jacobian(free, v, C):
    """C = dc/dv (nv x nv, written whole) of the free-flyers' frame-rate term c = w x v_lin on
    their linear rows (free: their first dofs): [[w]x, -[v_lin]x]
    (compliant_kernels.step_matrix)."""
    nv = v.shape[0]
    for r in range(nv):
        for c in range(nv):
            C[r, c] = 0.0
    frame_rate_blocks(free, v, C)


@step
def frame_rate_blocks(free, v, C):
    """frame_rate_jacobian's nonzero entries (the free-flyers' [w]x and -[v_lin]x but their
    diagonals), the others left as they are (step_dynamics: zero, the workspace's)."""
    for f in range(free.shape[0]):
        iv = free[f]
        for half in range(2):  # [w]x on the linear dofs, -[v_lin]x on the angular ones
            a = v[iv + 3 - 3 * half:iv + 6 - 3 * half]
            sign = 1.0 if half == 0 else -1.0
            col = iv + 3 * half
            C[iv, col + 1] = -sign * a[2]
            C[iv, col + 2] = sign * a[1]
            C[iv + 1, col] = sign * a[2]
            C[iv + 1, col + 2] = -sign * a[0]
            C[iv + 2, col] = -sign * a[1]
            C[iv + 2, col + 1] = sign * a[0]


@step
def joint_motion(oS, first, last, x) -> tuple:
    """S_i x_i = the sum of S_k x_k over the joint's dofs k in [first, last) as a 6-tuple
    (kinematics.joint_velocity's sums, in its order)."""
    t0, t1, t2, t3, t4, t5 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    for k in range(first, last):
        xk, S = x[k], oS[k]
        t0, t1, t2 = t0 + S[0] * xk, t1 + S[1] * xk, t2 + S[2] * xk
        t3, t4, t5 = t3 + S[3] * xk, t4 + S[4] * xk, t5 + S[5] * xk
    return t0, t1, t2, t3, t4, t5


@step
def joint_difference(oS, first, last, y, x) -> tuple:
    """joint_motion of y - x (each y_k - x_k, then as joint_motion sums)."""
    t0, t1, t2, t3, t4, t5 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    for k in range(first, last):
        xk, S = y[k] - x[k], oS[k]
        t0, t1, t2 = t0 + S[0] * xk, t1 + S[1] * xk, t2 + S[2] * xk
        t3, t4, t5 = t3 + S[3] * xk, t4 + S[4] * xk, t5 + S[5] * xk
    return t0, t1, t2, t3, t4, t5


@step
def store6(row, t):
    """row[:6] = the 6-tuple t."""
    row[0], row[1], row[2], row[3], row[4], row[5] = t[0], t[1], t[2], t[3], t[4], t[5]


@step
def polarized_body(i, p, Y, ov_i, hv_i, sv, sw, sa, a_world, ow, oa, F):
    """Body i of inverse dynamics' forward pass (rnea.rnea_forward_step) with its velocity
    products polarised at one w, Q(v, v) -> Q(v, v + 2 w) (step_dynamics' R(w); rows i and its
    parent's p of ow, oa, F, p < 0 at the world): given ov_i, hv_i = Y_i ov_i at v and the
    joint's sv = S v_i, sw = S w_i, sa = S a_i (6-tuples), ow_i = ow_p + sw,
    oa_i = (oa_p + sa) + (ov_i x (sw + sv) + ow_i x sv) and
    F_i = Y_i oa_i + (ov_i x* (hv_i + Y_i ow_i) + ow_i x* hv_i), the values in registers and
    written once."""
    if p >= 0:
        P, A = ow[p], oa[p]
        o = (sw[0] + P[0], sw[1] + P[1], sw[2] + P[2], sw[3] + P[3], sw[4] + P[4],
             sw[5] + P[5])
        b = (sa[0] + A[0], sa[1] + A[1], sa[2] + A[2], sa[3] + A[3], sa[4] + A[4],
             sa[5] + A[5])
    else:
        o = (sw[0] + 0.0, sw[1] + 0.0, sw[2] + 0.0, sw[3] + 0.0, sw[4] + 0.0, sw[5] + 0.0)
        b = (sa[0] + a_world[0], sa[1] + a_world[1], sa[2] + a_world[2], sa[3] + a_world[3],
             sa[4] + a_world[4], sa[5] + a_world[5])
    y = (sw[0] + sv[0], sw[1] + sv[1], sw[2] + sv[2], sw[3] + sv[3], sw[4] + sv[4],
         sw[5] + sv[5])
    c = cross_motion(ov_i, y)
    d = cross_motion(o, sv)
    acc = (b[0] + (c[0] + d[0]), b[1] + (c[1] + d[1]), b[2] + (c[2] + d[2]),
           b[3] + (c[3] + d[3]), b[4] + (c[4] + d[4]), b[5] + (c[5] + d[5]))
    hw = inertia_motion(Y, o)
    f = inertia_motion(Y, acc)
    t = (hv_i[0] + hw[0], hv_i[1] + hw[1], hv_i[2] + hw[2], hv_i[3] + hw[3],
         hv_i[4] + hw[4], hv_i[5] + hw[5])
    g = cross_force(ov_i, t)
    e = cross_force(o, hv_i)
    store6(ow[i], o)
    store6(oa[i], acc)
    store6(F[i], (f[0] + (g[0] + e[0]), f[1] + (g[1] + e[1]), f[2] + (g[2] + e[2]),
                  f[3] + (g[3] + e[3]), f[4] + (g[4] + e[4]), f[5] + (g[5] + e[5])))


@routine
def polarized_passes(joint_int, oS, v, velocities, a0, a1, oY, ov, momenta, a_world, ow, oa,
                     F):
    """Inverse dynamics' passes at (v, w, a) with its velocity products polarised at both w
    (step_dynamics: w = velocities[g] - v, a = a0, a1; rows g nj + i of ow, oa, F): the
    forward pass body by body (polarized_body), both w side by side on the v-parts they
    share (S v_i, ov_i, hv_i = momenta[i]), then the backward pass's subtree sums of F
    (rnea.rnea_backward_step's, its tau not taken: nothing reads it)."""
    nj = joint_int.shape[0]
    for i in range(nj):
        p = joint_int[i, I_PARENT]
        first = joint_int[i, I_IDX_V]
        last = first + joint_int[i, I_NV]
        sv = joint_motion(oS, first, last, v)
        Y, ov_i, hv_i = oY[i], ov[i], momenta[i]
        sw = joint_difference(oS, first, last, velocities[0], v)
        sa = joint_motion(oS, first, last, a0)
        polarized_body(i, p, Y, ov_i, hv_i, sv, sw, sa, a_world, ow, oa, F)
        sw = joint_difference(oS, first, last, velocities[1], v)
        sa = joint_motion(oS, first, last, a1)
        polarized_body(nj + i, nj + p if p >= 0 else -1, Y, ov_i, hv_i, sv, sw, sa, a_world,
                       ow, oa, F)
    for i in range(nj - 1, -1, -1):
        p = joint_int[i, I_PARENT]
        if p >= 0:
            for o in range(0, 2 * nj, nj):
                for r in range(6):
                    F[o + p, r] += F[o + i, r]


@step
def body_velocities(joint_int, oS, v, ov):
    """ov (nj, 6) = the bodies' velocities at v (rnea_forward_step's ov, to the bit: S_i v_i
    summed as joint_velocity sums it, plus the parent's), held in registers."""
    for i in range(joint_int.shape[0]):
        lam, iv = joint_int[i, I_PARENT], joint_int[i, I_IDX_V]
        t0, t1, t2, t3, t4, t5 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        for k in range(iv, iv + joint_int[i, I_NV]):
            vk, S = v[k], oS[k]
            t0, t1, t2 = t0 + S[0] * vk, t1 + S[1] * vk, t2 + S[2] * vk
            t3, t4, t5 = t3 + S[3] * vk, t4 + S[4] * vk, t5 + S[5] * vk
        V = ov[i]
        if lam >= 0:
            P = ov[lam]
            V[0], V[1], V[2] = t0 + P[0], t1 + P[1], t2 + P[2]
            V[3], V[4], V[5] = t3 + P[3], t4 + P[4], t5 + P[5]
        else:
            V[0], V[1], V[2] = t0 + 0.0, t1 + 0.0, t2 + 0.0
            V[3], V[4], V[5] = t3 + 0.0, t4 + 0.0, t5 + 0.0


@step
def coriolis_sums(joint_int, oY, ov, momenta, coriolis):
    """rnea_derivative.coriolis_composites to the bit, the maps summed by their nine numbers:
    per body i, h_i = Y_i ov_i into momenta (nj, 6) and B_i = [[0, -[a]x], [[a]x, D]]
    (coriolis_numbers: a = m v + w x h, D symmetric) as a into coriolis[i, 0, :3] and D
    into coriolis[i, 1] (diagonal, then (0, 1), (0, 2), (1, 2)); summed over subtrees (parents
    come before children, so body i's sum is whole when the reverse pass reaches it), and each
    sum written out as its 6x6 map (coriolis (nj, 6, 6)) there. A sum of the maps' entries is
    the sum of the numbers they hold (negation is exact), so every entry is coriolis_composites'
    (Featherstone 2008, "Rigid body dynamics algorithms", Sec. 2.9)."""
    nj = joint_int.shape[0]
    for i in range(nj):
        inertia_times_motion(oY[i], ov[i], momenta[i])
        C = coriolis[i]
        (C[0, 0], C[0, 1], C[0, 2], C[1, 0], C[1, 1], C[1, 2], C[1, 3], C[1, 4],
         C[1, 5]) = coriolis_numbers(oY[i], ov[i])
    for i in range(nj - 1, -1, -1):
        p = joint_int[i, I_PARENT]
        C = coriolis[i]
        ax, ay, az = C[0, 0], C[0, 1], C[0, 2]
        d0, d1, d2, d3, d4, d5 = C[1, 0], C[1, 1], C[1, 2], C[1, 3], C[1, 4], C[1, 5]
        if p >= 0:
            for r in range(6):
                momenta[p, r] += momenta[i, r]
            P = coriolis[p]
            P[0, 0], P[0, 1], P[0, 2] = P[0, 0] + ax, P[0, 1] + ay, P[0, 2] + az
            P[1, 0], P[1, 1], P[1, 2] = P[1, 0] + d0, P[1, 1] + d1, P[1, 2] + d2
            P[1, 3], P[1, 4], P[1, 5] = P[1, 3] + d3, P[1, 4] + d4, P[1, 5] + d5
        C[0, 0], C[0, 1], C[0, 2], C[0, 3], C[0, 4], C[0, 5] = 0.0, 0.0, 0.0, 0.0, az, -ay
        C[1, 0], C[1, 1], C[1, 2], C[1, 3], C[1, 4], C[1, 5] = 0.0, 0.0, 0.0, -az, 0.0, ax
        C[2, 0], C[2, 1], C[2, 2], C[2, 3], C[2, 4], C[2, 5] = 0.0, 0.0, 0.0, ay, -ax, 0.0
        C[3, 0], C[3, 1], C[3, 2], C[3, 3], C[3, 4], C[3, 5] = -0.0, -az, ay, d0, d3, d4
        C[4, 0], C[4, 1], C[4, 2], C[4, 3], C[4, 4], C[4, 5] = az, -0.0, -ax, d3, d1, d5
        C[5, 0], C[5, 1], C[5, 2], C[5, 3], C[5, 4], C[5, 5] = -ay, ax, -0.0, d4, d5, d2


@step
def change_wrench(Y, C, H, s, z, u) -> tuple:
    """rnea_derivative.velocity_change_wrench's out to the bit, as a 6-tuple: u = s x z
    (into u) and Y u + z x* H + B z (Y = Yc_l, B = C and H = coriolis_sums' map and
    momentum of l's subtree, s = ov_l + ov_lambda, z = S_b), each sum in its order with the
    zero terms of B's (coriolis_sums') left out."""
    s0, s1, s2, s3, s4, s5 = s
    z0, z1, z2, z3, z4, z5 = z[0], z[1], z[2], z[3], z[4], z[5]
    u0 = s4 * z2 - s5 * z1 + s1 * z5 - s2 * z4
    u1 = s5 * z0 - s3 * z2 + s2 * z3 - s0 * z5
    u2 = s3 * z1 - s4 * z0 + s0 * z4 - s1 * z3
    u3, u4, u5 = s4 * z5 - s5 * z4, s5 * z3 - s3 * z5, s3 * z4 - s4 * z3
    u[0], u[1], u[2], u[3], u[4], u[5] = u0, u1, u2, u3, u4, u5
    m, hx, hy, hz = Y[0], Y[1], Y[2], Y[3]
    o0 = m * u0 - (hy * u5 - hz * u4)
    o1 = m * u1 - (hz * u3 - hx * u5)
    o2 = m * u2 - (hx * u4 - hy * u3)
    o3 = hy * u2 - hz * u1 + Y[4] * u3 + Y[5] * u4 + Y[6] * u5
    o4 = hz * u0 - hx * u2 + Y[5] * u3 + Y[7] * u4 + Y[8] * u5
    o5 = hx * u1 - hy * u0 + Y[6] * u3 + Y[8] * u4 + Y[9] * u5
    f0, f1, f2, f3, f4, f5 = H[0], H[1], H[2], H[3], H[4], H[5]
    o0 += z4 * f2 - z5 * f1
    o1 += z5 * f0 - z3 * f2
    o2 += z3 * f1 - z4 * f0
    o3 += z4 * f5 - z5 * f4 + z1 * f2 - z2 * f1
    o4 += z5 * f3 - z3 * f5 + z2 * f0 - z0 * f2
    o5 += z3 * f4 - z4 * f3 + z0 * f1 - z1 * f0
    o0 = (o0 + C[0, 4] * z4) + C[0, 5] * z5
    o1 = (o1 + C[1, 3] * z3) + C[1, 5] * z5
    o2 = (o2 + C[2, 3] * z3) + C[2, 4] * z4
    o3 = ((((o3 + C[3, 1] * z1) + C[3, 2] * z2) + C[3, 3] * z3) + C[3, 4] * z4) + C[3, 5] * z5
    o4 = ((((o4 + C[4, 0] * z0) + C[4, 2] * z2) + C[4, 3] * z3) + C[4, 4] * z4) + C[4, 5] * z5
    o5 = ((((o5 + C[5, 0] * z0) + C[5, 1] * z1) + C[5, 3] * z3) + C[5, 4] * z4) + C[5, 5] * z5
    return o0, o1, o2, o3, o4, o5


@step
def projection(C, H, S, q):
    """q = B^T S - S x* H: rnea_derivative.coriolis_projection to the bit (B = C, H: the
    subtree's coriolis_sums), the zero terms of B's left out."""
    x0, x1, x2, x3, x4, x5 = S[0], S[1], S[2], S[3], S[4], S[5]
    f0, f1, f2, f3, f4, f5 = H[0], H[1], H[2], H[3], H[4], H[5]
    q[0] = (-(x4 * f2 - x5 * f1) + C[4, 0] * x4) + C[5, 0] * x5
    q[1] = (-(x5 * f0 - x3 * f2) + C[3, 1] * x3) + C[5, 1] * x5
    q[2] = (-(x3 * f1 - x4 * f0) + C[3, 2] * x3) + C[4, 2] * x4
    q[3] = ((((-(x4 * f5 - x5 * f4 + x1 * f2 - x2 * f1) + C[1, 3] * x1) + C[2, 3] * x2)
             + C[3, 3] * x3) + C[4, 3] * x4) + C[5, 3] * x5
    q[4] = ((((-(x5 * f3 - x3 * f5 + x2 * f0 - x0 * f2) + C[0, 4] * x0) + C[2, 4] * x2)
             + C[3, 4] * x3) + C[4, 4] * x4) + C[5, 4] * x5
    q[5] = ((((-(x3 * f4 - x4 * f3 + x0 * f1 - x1 * f0) + C[0, 5] * x0) + C[1, 5] * x1)
             + C[3, 5] * x3) + C[4, 5] * x4) + C[5, 5] * x5


@step
def subspace_dot(S, w0, w1, w2, w3, w4, w5) -> float:
    """S . w, summed from 0.0 in the order of S's entries."""
    return (((((0.0 + S[0] * w0) + S[1] * w1) + S[2] * w2) + S[3] * w3) + S[4] * w4) + S[5] * w5


@routine
def velocity_jacobians(joint_int, parent, oS, Yc, ov, momenta, coriolis, crossed, p, q, out):
    """rnea_derivative.velocity_jacobian at two velocities side by side, to the bit: out[g] =
    dB/dv (nv x nv) at the velocity whose bodies' velocities are ov[g nj:(g + 1) nj] and
    coriolis_sums' momenta[g nj:...], coriolis[g nj:...] (Yc: the composite inertias;
    ``parent``: the dofs' parents). Both share the dofs' loops and p_a = Yc_j S_a, kept in p
    (nv x 6); q[g] (nv x 6) keeps q_a = B_j^T S_a - S_a x* H_j for the dofs of the joints
    off the world (composite_columns', coriolis_projections' rows; the others' left). Entry
    (a, b) for a dof b of joint l, u_b = (ov_l + ov_lambda) x S_b: S_a . (Yc_l u_b + B_l S_b
    + S_b x* H_l) (change_wrench) for the dofs a of l and of its ancestors, p_a . u_b +
    q_a . S_b for those of l's descendants (Carpentier and Mansard 2018, "Analytical
    derivatives of rigid body dynamics algorithms"); the entries between dofs on different
    branches are zero and not written: out holds zeros there from its caller (the
    workspace's). crossed: (2 nv, 6) scratch (the u_b of each velocity)."""
    nj, nv = joint_int.shape[0], oS.shape[0]
    for l in range(nj):
        lv, ln, lam = joint_int[l, I_IDX_V], joint_int[l, I_NV], joint_int[l, I_PARENT]
        k, kam = nj + l, nj + lam
        if lam >= 0:  # s = ov_l + ov_lambda at each velocity
            s = (ov[l, 0] + ov[lam, 0], ov[l, 1] + ov[lam, 1], ov[l, 2] + ov[lam, 2],
                 ov[l, 3] + ov[lam, 3], ov[l, 4] + ov[lam, 4], ov[l, 5] + ov[lam, 5])
            t = (ov[k, 0] + ov[kam, 0], ov[k, 1] + ov[kam, 1], ov[k, 2] + ov[kam, 2],
                 ov[k, 3] + ov[kam, 3], ov[k, 4] + ov[kam, 4], ov[k, 5] + ov[kam, 5])
        else:
            s = (ov[l, 0] + 0.0, ov[l, 1] + 0.0, ov[l, 2] + 0.0, ov[l, 3] + 0.0,
                 ov[l, 4] + 0.0, ov[l, 5] + 0.0)
            t = (ov[k, 0] + 0.0, ov[k, 1] + 0.0, ov[k, 2] + 0.0, ov[k, 3] + 0.0,
                 ov[k, 4] + 0.0, ov[k, 5] + 0.0)
        for b in range(lv, lv + ln):
            v0, v1, v2, v3, v4, v5 = change_wrench(Yc[l], coriolis[l], momenta[l], s, oS[b],
                                                   crossed[b])
            w0, w1, w2, w3, w4, w5 = change_wrench(Yc[l], coriolis[k], momenta[k], t, oS[b],
                                                   crossed[nv + b])
            for a in range(lv, lv + ln):
                out[0, a, b] = subspace_dot(oS[a], v0, v1, v2, v3, v4, v5)
                out[1, a, b] = subspace_dot(oS[a], w0, w1, w2, w3, w4, w5)
            a = parent[lv]
            while a >= 0:
                out[0, a, b] = subspace_dot(oS[a], v0, v1, v2, v3, v4, v5)
                out[1, a, b] = subspace_dot(oS[a], w0, w1, w2, w3, w4, w5)
                a = parent[a]
    for j in range(nj):
        jv = joint_int[j, I_IDX_V]
        for a in range(jv, jv + joint_int[j, I_NV]):
            inertia_times_motion(Yc[j], oS[a], p[a])
            b = parent[jv]
            if b >= 0:  # (a joint off the world: q_a has entries to write)
                projection(coriolis[j], momenta[j], oS[a], q[0, a])
                projection(coriolis[nj + j], momenta[nj + j], oS[a], q[1, a])
            while b >= 0:
                total0, total1 = 0.0, 0.0
                for r in range(6):
                    total0 += p[a, r] * crossed[b, r] + q[0, a, r] * oS[b, r]
                    total1 += p[a, r] * crossed[nv + b, r] + q[1, a, r] * oS[b, r]
                out[0, a, b] = total0
                out[1, a, b] = total1
                b = parent[b]


@step
def coriolis_projections(joint_int, oS, coriolis, momenta, tmp, out):
    """out[a] = q_a = B_j^T S_a - S_a x* H_j for the dofs a of the joints off the world
    (rnea_derivative.velocity_jacobian's q_a; B_j, H_j: coriolis_composites' subtree sums at
    one velocity). tmp: a 6-vector."""
    for j in range(joint_int.shape[0]):
        if joint_int[j, I_PARENT] < 0:
            continue
        for a in range(joint_int[j, I_IDX_V], joint_int[j, I_IDX_V] + joint_int[j, I_NV]):
            coriolis_projection(oS[a], momenta[j], coriolis[j], tmp, out[a])


@step
def cross_motion(x, y) -> tuple:
    """x cross y for twists (kinematics.motion_cross_motion's formula) as a 6-tuple."""
    return (x[4] * y[2] - x[5] * y[1] + x[1] * y[5] - x[2] * y[4],
            x[5] * y[0] - x[3] * y[2] + x[2] * y[3] - x[0] * y[5],
            x[3] * y[1] - x[4] * y[0] + x[0] * y[4] - x[1] * y[3],
            x[4] * y[5] - x[5] * y[4],
            x[5] * y[3] - x[3] * y[5],
            x[3] * y[4] - x[4] * y[3])


@step
def cross_force(x, f) -> tuple:
    """x cross* f (kinematics.motion_cross_force's formula) as a 6-tuple."""
    return (x[4] * f[2] - x[5] * f[1],
            x[5] * f[0] - x[3] * f[2],
            x[3] * f[1] - x[4] * f[0],
            x[4] * f[5] - x[5] * f[4] + x[1] * f[2] - x[2] * f[1],
            x[5] * f[3] - x[3] * f[5] + x[2] * f[0] - x[0] * f[2],
            x[3] * f[4] - x[4] * f[3] + x[0] * f[1] - x[1] * f[0])


@step
def inertia_motion(Y, x) -> tuple:
    """Y x (kinematics.inertia_times_motion's formula) as a 6-tuple."""
    m, hx, hy, hz = Y[0], Y[1], Y[2], Y[3]
    v0, v1, v2, w0, w1, w2 = x[0], x[1], x[2], x[3], x[4], x[5]
    return (m * v0 - (hy * w2 - hz * w1),
            m * v1 - (hz * w0 - hx * w2),
            m * v2 - (hx * w1 - hy * w0),
            hy * v2 - hz * v1 + Y[4] * w0 + Y[5] * w1 + Y[6] * w2,
            hz * v0 - hx * v2 + Y[5] * w0 + Y[7] * w1 + Y[8] * w2,
            hx * v1 - hy * v0 + Y[6] * w0 + Y[8] * w1 + Y[9] * w2)


@step
def turned_terms(ov_lambda, ow_lambda, oa_lambda, zeta, e) -> tuple:
    """(e_w, c) of composite_columns at one w: e_w = ow_lambda x zeta, e' = e + e_w,
    c = ov_lambda x e' + (ow_lambda x e - zeta x oa_lambda)."""
    ew = cross_motion(ow_lambda, zeta)
    e1 = (ew[0] + e[0], ew[1] + e[1], ew[2] + e[2], ew[3] + e[3], ew[4] + e[4], ew[5] + e[5])
    c = cross_motion(ov_lambda, e1)
    t = cross_motion(ow_lambda, e)
    u = cross_motion(zeta, oa_lambda)
    return ew, (c[0] + (t[0] - u[0]), c[1] + (t[1] - u[1]), c[2] + (t[2] - u[2]),
                c[3] + (t[3] - u[3]), c[4] + (t[4] - u[4]), c[5] + (t[5] - u[5]))


@step
def subtree_change(zeta, F_l, Yc_l, c, e, H_y, ew, H_v) -> tuple:
    """df_l of composite_columns at one w but its B products: zeta x* F_l + Yc_l c +
    (e x* H_l(y) + e_w x* H_l(v))."""
    f = cross_force(zeta, F_l)
    y = inertia_motion(Yc_l, c)
    s = cross_force(e, H_y)
    t = cross_force(ew, H_v)
    return (f[0] + y[0] + (s[0] + t[0]), f[1] + y[1] + (s[1] + t[1]),
            f[2] + y[2] + (s[2] + t[2]), f[3] + y[3] + (s[3] + t[3]),
            f[4] + y[4] + (s[4] + t[4]), f[5] + y[5] + (s[5] + t[5]))


@step
def root_columns(joint_int, chain, oS, p, l, a_world, h, shifted):
    """P(w)'s columns b = -h R(w)'s (step_dynamics) for the dofs b (zeta = S_b) of a joint l
    on the world (a free-flyer, a fixed base's first joint), the same at both w: written into
    shifted[0, b] and shifted[1, b] (their entries a). l's subtree turns rigidly by zeta and
    only the gravity term a_world stays, so the subtree sums change by df_j = zeta x* F_j -
    Yc_j (zeta x a_world) (Yc: composite inertias) and, as (zeta x S_a) . F_j =
    -S_a . (zeta x* F_j) (Featherstone 2008, "Rigid body dynamics algorithms", Sec. 2.9:
    x* = -x^T), R's entry (a, b) = S_a . df_j + (zeta x S_a) . F_j = -S_a . Yc_j (zeta x
    a_world) = -p_a . (zeta x a_world) (Yc_j symmetric; p[a] = p_a = Yc_j S_a,
    velocity_jacobians') on the subtree's dofs a (of the joints j that l's first dof moves:
    chain[j, l's first dof] != 0), 0 elsewhere: independent of the velocities
    and accelerations, one product per entry, where the body-by-body derivative
    (rnea_derivative.subtree_wrench_derivatives) walks the whole tree. Each entry is
    -h (-(the sum over the 6 in order)) = h times it; a dof that does not turn (turns:
    zeta's w = 0; a free-flyer's translations) has zeta x a_world = 0 (a_world = (-g, 0)),
    its sums +0 (the products with those zeros not taken)."""
    nj = joint_int.shape[0]
    outside = -h * 0.0
    lv = joint_int[l, I_IDX_V]
    for b in range(lv, lv + joint_int[l, I_NV]):
        t = cross_motion(oS[b], a_world)
        turning = turns(oS, b)
        column0, column1 = shifted[0, b], shifted[1, b]
        for j in range(nj):
            jv = joint_int[j, I_IDX_V]
            inside = chain[j, lv] != 0.0
            for a in range(jv, jv + joint_int[j, I_NV]):
                value = outside
                if inside:
                    total = 0.0
                    if turning:
                        for r in range(6):
                            total += p[a, r] * t[r]
                    value = h * total
                column0[a] = value
                column1[a] = value


@step
def composite_columns(joint_int, chain, oS, Yc, ov, ow, oa, F, coriolis_y, momenta_y,
                      coriolis_v, momenta_v, p, q_v, q_y, l, b, scale, tmp, columns):
    """Column b of R(w) at the two w side by side times ``scale`` (columns[g], written whole;
    from ow, oa, F, coriolis_y, momenta_y at rows g nj + i and q_y[g], each entry's sums in the
    order written below, then times scale; e = ov_lambda x zeta, the same at both, once; the
    entries off the subtree and the ancestors scale times 0). Column b (zeta = S_b, a dof of
    joint l not on the world, parent lambda) of R(w) = Q(v, v + 2 w) + Mq(a) + g_q (step_dynamics;
    polarized_passes' ov, ow, oa and F, the subtree sums) from the subtrees'
    composites. Moving q_b turns l's subtree rigidly about its parent's ov_lambda, oa_lambda:
    for one velocity a body's d ov_i = zeta x ov_i + e
    and d oa_i = zeta x oa_i + c + e x ov_i with e = ov_lambda x zeta,
    c = ov_lambda x e - zeta x oa_lambda (the Jacobi identity), so its wrench changes by
    d of_i = zeta x* of_i + Y_i c + t_i, t_i = B_i(ov_i) e + e x* h_i (B_i(x) y =
    x x* (Y_i y) - Y_i (x x y), coriolis_map, linear in x), and over the subtree of j by
    df_j = zeta x* F_j + Yc_j c + T_j. Polarised as F is (e, e_w: e at v, w; e' = e + e_w;
    c = ov_lambda x e' + ow_lambda x e - zeta x oa_lambda), t_i = B_i(ov_i) e' + B_i(ow_i) e +
    e' x* hv_i + e x* hw_i, and summed, with y = v + w and B, H linear in the velocity,
    T_j = B_j(y) e + e x* H_j(y) + B_j(v) e_w + e_w x* H_j(v): coriolis_composites' subtree
    sums at y (coriolis_y, momenta_y, as dB/dv at y takes them) and at v. The column:
    S_a . (Yc_j c + T_j) = p_a . c + q_a(y) . e + q_a(v) . e_w for the dofs a of a joint j in
    l's subtree (chain[j, b] != 0; the zeta x* F_j terms cancel (zeta x S_a) . F_j,
    Featherstone 2008, "Rigid body dynamics algorithms", Sec. 2.9: x* = -x^T), with
    p[a] = p_a = Yc_j S_a, q_v[a] = q_a(v), q_y[a] = q_a(y) (coriolis_projections, as
    velocity_jacobian's); S_a . df_l for those of l's
    ancestors; 0 elsewhere (the structure of Carpentier and Mansard 2018, "Analytical
    derivatives of rigid body dynamics algorithms"). O(1) per entry of the subtree, where the
    body-by-body t_i took 3 inertia and 6 cross products per body. e, e_w, c and df_l's terms
    but B's products are values (turned_terms, subtree_change: kept in registers; in scratch
    rows, every store to them reloaded what might alias them, 0.4 us of 2.9 on Solo12).
    tmp: >= 2 x 6 scratch (df_l at both w)."""
    nj = joint_int.shape[0]
    zeta = oS[b]
    lam = joint_int[l, I_PARENT]
    e = cross_motion(ov[lam], zeta)
    ew0, c0 = turned_terms(ov[lam], ow[lam], oa[lam], zeta, e)
    ew1, c1 = turned_terms(ov[lam], ow[nj + lam], oa[nj + lam], zeta, e)
    s0 = subtree_change(zeta, F[l], Yc[l], c0, e, momenta_y[l], ew0, momenta_v[l])
    s1 = subtree_change(zeta, F[nj + l], Yc[l], c1, e, momenta_y[nj + l], ew1, momenta_v[l])
    df0, df1 = tmp[0], tmp[1]
    By0, By1, Bv = coriolis_y[l], coriolis_y[nj + l], coriolis_v[l]
    for r in range(6):  # df_l: the two w side by side (B_l(v)'s entries read once)
        total0, total1 = s0[r], s1[r]
        for k in range(6):
            v_rk, e_k = Bv[r, k], e[k]
            total0 += By0[r, k] * e_k + v_rk * ew0[k]
            total1 += By1[r, k] * e_k + v_rk * ew1[k]
        df0[r], df1[r] = total0, total1
    q0, q1 = q_y[0], q_y[1]
    column0, column1 = columns[0], columns[1]
    outside = scale * 0.0
    for j in range(nj):
        first = joint_int[j, I_IDX_V]
        last = first + joint_int[j, I_NV]
        if j >= l and chain[j, b] != 0.0:  # l's subtree
            for a in range(first, last):
                total0, total1 = 0.0, 0.0
                for r in range(6):
                    total0 += p[a, r] * c0[r] + q0[a, r] * e[r] + q_v[a, r] * ew0[r]
                    total1 += p[a, r] * c1[r] + q1[a, r] * e[r] + q_v[a, r] * ew1[r]
                column0[a] = scale * total0
                column1[a] = scale * total1
        elif j < l and first < last and chain[l, first] != 0.0:  # l's ancestors
            for a in range(first, last):
                total0, total1 = 0.0, 0.0
                for r in range(6):
                    total0 += oS[a, r] * df0[r]
                    total1 += oS[a, r] * df1[r]
                column0[a] = scale * total0
                column1[a] = scale * total1
        else:
            for a in range(first, last):
                column0[a] = outside
                column1[a] = outside


@routine
def shift_columns(joint_int, chain, oS, Yc, ov, ow, oa, F, coriolis_y, momenta_y, coriolis_v,
                  momenta_v, projections, a_world, h, tmp, shifted):
    """P(w) = -h R(w)'s columns at the two w (shifted[g, b]: column b at w_g; step_dynamics'
    arrays): root_columns for the dofs of the joints on the world, composite_columns for the
    others, -h folded into their entries (projections (4, nv, 6): p_a, q_a(v), q_a(y) at both
    w). One call for all the columns: the steps inlined here, where a call per column passed
    its 20 arrays each time (0.5 us of 3.7 on Solo12). tmp: >= 2 x 6 scratch."""
    for l in range(joint_int.shape[0]):
        lam = joint_int[l, I_PARENT]
        if lam < 0:  # (the same for both w: once)
            root_columns(joint_int, chain, oS, projections[0], l, a_world, h, shifted)
            continue
        lv = joint_int[l, I_IDX_V]
        for b in range(lv, lv + joint_int[l, I_NV]):
            composite_columns(joint_int, chain, oS, Yc, ov, ow, oa, F, coriolis_y, momenta_y,
                              coriolis_v, momenta_v, projections[0], projections[1],
                              projections[2:], l, b, -h, tmp, shifted[:, b])


@step
def mass_pass(joint_int, joint_real, armature, damping, h, q, oR, op, oS, oY, Yc, tmp, Rq, pq, M):
    """One kinematics pass at q (oR, op, oS, oY) and composite_mass."""
    for i in range(joint_int.shape[0]):
        kinematics_step(i, joint_int, joint_real, q, oR, op, oS, oY, Rq, pq)
    composite_mass(joint_int, armature, damping, h, oS, oY, Yc, tmp, M)


@step
def composite_mass(joint_int, armature, damping, h, oS, oY, Yc, tmp, M):
    """M = M(q) + h diag(damping) by the composite-rigid-body algorithm (crba_backward;
    Featherstone 2008, "Rigid body dynamics algorithms", Sec. 6.2) from the bodies' world
    inertias oY and motion subspaces oS: Yc the composite inertias. tmp: a 6-vector."""
    nv = M.shape[0]
    for i in range(joint_int.shape[0]):
        for r in range(10):
            Yc[i, r] = oY[i, r]
    for r in range(nv):
        for c in range(nv):
            M[r, c] = 0.0
    crba_backward(joint_int, armature, oS, Yc, tmp, M)  # Yc: composite from here on
    for k in range(nv):
        M[k, k] += h * damping[k]


@step
def ltl_product(L, parent, M):
    """M = L^T L (n x n) for a lower triangular L with the tree's sparsity
    (compliant_kernels.ltl_factor's factor of M~ = M + h D; Featherstone 2008, "Rigid body
    dynamics algorithms", Sec. 6.5): row k of L is nonzero on k and its ancestors, so M[i, j]
    = sum of L[k, i] L[k, j] over the k below i (i an ancestor-or-self of k) for j = i and its
    ancestors, in increasing k, summed in a register over k in [i, end) (end: past the last
    k with L[k, i] != 0; the products of the other k there are zeros, which do not change the
    sum) and written to M[i, j] and M[j, i]. The entries between dofs on different branches
    are left as they are: zero, the workspace's (contact_jacobians._Assembly)."""
    n = M.shape[0]
    for i in range(n):
        end = i + 1
        for k in range(i + 1, n):
            if L[k, i] != 0.0:
                end = k + 1
        j = i
        while j >= 0:
            total = 0.0
            for k in range(i, end):
                total += L[k, i] * L[k, j]
            M[i, j] = total
            M[j, i] = total
            j = parent[j]


@kernel
def step_dynamics(joint_int, joint_real, gravity, free, chain, h, v, L, parent, velocities,
                  oR, op, oS, ov, momenta_v, coriolis_v, oY, Yc, oa, F, ov_y, momenta,
                  composite_momenta, coriolis, projections, crossed, tmp, ow, tau, y, a,
                  a_world, M, frame_rates, shifted, rates):
    """The compliant step's dynamics at q (jacobian_assembly.contact_jacobians_kernel) from the
    step's own kinematics at q (oR, op, oS: its placements and world motion subspaces), the
    bodies' velocities ov at v and the subtrees' momenta and velocity-product maps at (q, v)
    its velocity terms left (momenta_v, coriolis_v: coriolis_composites' sums,
    rnea_derivative.velocity_terms), the composite inertias Yc its mass matrix left
    (crba_backward) and its LTL factor L of M~ (``parent``: the dofs' parents), for the
    velocities v* and v1
    (``velocities``, 2 x nv): the bodies' world inertias oY (the step's turned into Yc in
    place), M = M(q) + h diag(damping) = M~ = L^T L (ltl_product: the step's M~ to its
    factor's rounding, in place of the composite-rigid-body algorithm; its entries between
    dofs on different branches left as they are: zero, the workspace's); frame_rates
    (3, nv, nv) = C at v, v*, v1 (frame_rate_blocks: the free-flyers' blocks, the other
    entries left as they are, zero); rates[g] = dB/dv at velocities[g]
    (velocity_jacobians, both side by side; its entries between dofs on different branches
    left as they are: zero, the workspace's) from the bodies' velocities there (ov_y[g nj:
    (g + 1) nj]) and coriolis_composites' sums (coriolis_sums: coriolis[g nj:(g + 1) nj],
    composite_momenta's);
    shifted[g] = P(w)^T (shifted[g, b]: P(w)'s column b), w = velocities[g] - v, the implicit
    step's right-hand side moved with q, P(w) = -h R(w), R(w) = Q(v, v + 2 w) + Mq(a) + g_q
    with a = -(h c(v) - w + h C(v) w) / h, c(v) = C(v) v / 2 (Q: the symmetric bilinear
    q-derivative of inverse dynamics' velocity product, Mq(a) that of M a, g_q gravity's):
    inverse dynamics' q-derivative with its velocity products polarised, one forward pass at
    (v, w, a) for both w at once and the backward sums (polarized_passes, after the bodies'
    velocities and momenta at v, shared by both w), each w into its own rows (a at v*, v1 in
    a and tau, C v in y), then shift_columns: composite_columns
    (both w side by side) from the composites at v and at velocities[g] (projections
    (4, nv, 6): p_a, q_a(v), q_a(v*), q_a(v1), the q_a on the dofs of joints off the world),
    root_columns for the dofs of joints on the world (R's columns there hold gravity only:
    the same at both w).
    Scratch: oY, momenta (njoints x 6), oa, F, ow, ov_y, composite_momenta (2 njoints x 6),
    coriolis (2 njoints x 6 x 6), crossed (2 nv x 6), tmp (18 x 6), tau, y, a (nv), a_world."""
    nj, nv = joint_int.shape[0], v.shape[0]
    gravity_acceleration(gravity, a_world)
    for i in range(nj):
        world_inertia(joint_real[i], oR[i], op[i], oY[i])
    ltl_product(L, parent, M)
    frame_rate_blocks(free, v, frame_rates[0])
    for g in range(2):
        frame_rate_blocks(free, velocities[g], frame_rates[g + 1])
    C = frame_rates[0]
    for i in range(nj):  # the bodies' momenta Y ov at v
        inertia_times_motion(oY[i], ov[i], momenta[i])
    coriolis_projections(joint_int, oS, coriolis_v, momenta_v, tmp[9], projections[1])
    for g in range(2):  # dB/dv at v* and v1 from the composites there
        o = g * nj
        body_velocities(joint_int, oS, velocities[g], ov_y[o:o + nj])
        coriolis_sums(joint_int, oY, ov_y[o:o + nj], composite_momenta[o:o + nj],
                      coriolis[o:o + nj])
    velocity_jacobians(joint_int, parent, oS, Yc, ov_y, composite_momenta, coriolis, crossed,
                       projections[0], projections[2:], rates)
    for k in range(nv):  # C v into y, C w into a and tau (w at v*, v1): C is zero but on
        y[k], a[k], tau[k] = 0.0, 0.0, 0.0  # the free-flyers' linear rows and their own
    for f in range(free.shape[0]):  # columns (frame_rate_jacobian; the zero terms, left
        iv = free[f]  # out, would add +-0 to the sums)
        for k in range(iv, iv + 3):
            rate, moved0, moved1 = 0.0, 0.0, 0.0
            for j in range(iv, iv + 6):
                rate += C[k, j] * v[j]
                moved0 += C[k, j] * (velocities[0, j] - v[j])
                moved1 += C[k, j] * (velocities[1, j] - v[j])
            y[k], a[k], tau[k] = rate, moved0, moved1
    for k in range(nv):  # a at both w
        a[k] = -(h * (y[k] * 0.5) - (velocities[0, k] - v[k]) + h * a[k]) / h
        tau[k] = -(h * (y[k] * 0.5) - (velocities[1, k] - v[k]) + h * tau[k]) / h
    polarized_passes(joint_int, oS, v, velocities, a, tau, oY, ov, momenta, a_world, ow, oa, F)
    shift_columns(joint_int, chain, oS, Yc, ov, ow, oa, F, coriolis, composite_momenta,
                  coriolis_v, momenta_v, projections, a_world, h, tmp, shifted)


@kernel
def branch_system(P, gradient, gamma, kind, mu, separated_share, sliding_share, zero, sliding,
                  tangent, slip, multiplier, free, position, K):
    """The solve's optimality conditions linearised on the branch of its solution
    (contact_jacobians.Branch, whose docstring states the rules), from P = H + H diag(w) H
    and the gradient P g + c + H diag(w) c: ``zero`` the rows held at zero (held,
    separated, at a joint friction bound, a frictionless contact's tangents); the sliding
    contacts (|g_t| >= (1 - sliding_share) mu g_n): their normal rows, unit tangents t,
    |g_t| and cone multipliers lambda = gradient_n / mu; ``free`` the other rows
    (``position``: a row's index among them) and K (n + ns square, its upper left block
    written): P on the free rows, lambda (1 - t t^T) / |g_t| added on each sliding
    contact's tangents, and its cone's gradient (-mu, t) as a bordering row and column
    (Amos and Kolter 2017, "OptNet", eq. 6: a QP's KKT conditions differentiated). Returns
    (n, ns)."""
    m = P.shape[0]
    largest = 0.0
    for i in range(m):
        largest = max(largest, abs(gamma[i]))
    scale = max(largest, 1e-300)
    for i in range(m):
        frictionless = kind[i] == NORMAL and mu[i] == 0.0
        separated = gamma[i] <= separated_share * scale
        zero[i] = (kind[i] == FIXED or ((kind[i] == UNILATERAL or frictionless) and separated)
                   or (kind[i] == FRICTION and abs(gamma[i]) >= (1.0 - sliding_share) * mu[i]))
    ns = 0
    for i in range(m):
        if kind[i] != NORMAL:
            continue
        if mu[i] == 0.0 or gamma[i] <= separated_share * scale:
            zero[i + 1] = True  # a frictionless contact's tangents are held
            zero[i + 2] = True
            if mu[i] != 0.0:
                zero[i] = True
            continue
        norm = np.sqrt(gamma[i + 1] * gamma[i + 1] + gamma[i + 2] * gamma[i + 2])
        if norm >= (1.0 - sliding_share) * mu[i] * gamma[i]:
            sliding[ns] = i
            tangent[ns, 0], tangent[ns, 1] = gamma[i + 1] / norm, gamma[i + 2] / norm
            slip[ns] = norm
            multiplier[ns] = gradient[i] / mu[i]
            ns += 1
    n = 0
    for i in range(m):
        position[i] = n
        if not zero[i]:
            free[n] = i
            n += 1
    for a in range(n + ns):
        for b in range(n + ns):
            K[a, b] = P[free[a], free[b]] if a < n and b < n else 0.0
    for s in range(ns):
        i = sliding[s]
        lam, t = multiplier[s], tangent[s]
        for a in range(2):
            for b in range(2):
                K[position[i + 1 + a], position[i + 1 + b]] += (
                    lam * ((1.0 if a == b else 0.0) - t[a] * t[b]) / slip[s])
        for e in range(3):
            value = -mu[i] if e == 0 else t[e - 1]
            K[position[i + e], n + s] = value
            K[n + s, position[i + e]] = value
    return n, ns


@step
def flyer_rows(iv, to_q, to_v, into):
    """A free-flyer's six rows of [to_q dv1; to_v dv1] in place (integrated; iv: its first
    dof, dv1 in into's lower half), its 6 x 6 blocks' zeros left out: to_q = diag(h E^T,
    h Jr(h w)), to_v = (E^T, h E^T [u]x Jr(-h w); 0, 1) (integration_kernel). The blocks'
    entries held in locals and each column's six values read once (a store into ``into``
    would reload them); each sum over the block's columns in order."""
    nv, c = to_q.shape[0], into.shape[1]
    a00, a01, a02 = to_q[iv, iv], to_q[iv, iv + 1], to_q[iv, iv + 2]
    a10, a11, a12 = to_q[iv + 1, iv], to_q[iv + 1, iv + 1], to_q[iv + 1, iv + 2]
    a20, a21, a22 = to_q[iv + 2, iv], to_q[iv + 2, iv + 1], to_q[iv + 2, iv + 2]
    j3 = iv + 3
    b00, b01, b02 = to_q[j3, j3], to_q[j3, j3 + 1], to_q[j3, j3 + 2]
    b10, b11, b12 = to_q[j3 + 1, j3], to_q[j3 + 1, j3 + 1], to_q[j3 + 1, j3 + 2]
    b20, b21, b22 = to_q[j3 + 2, j3], to_q[j3 + 2, j3 + 1], to_q[j3 + 2, j3 + 2]
    e00, e01, e02 = to_v[iv, iv], to_v[iv, iv + 1], to_v[iv, iv + 2]
    e10, e11, e12 = to_v[iv + 1, iv], to_v[iv + 1, iv + 1], to_v[iv + 1, iv + 2]
    e20, e21, e22 = to_v[iv + 2, iv], to_v[iv + 2, iv + 1], to_v[iv + 2, iv + 2]
    f00, f01, f02 = to_v[iv, j3], to_v[iv, j3 + 1], to_v[iv, j3 + 2]
    f10, f11, f12 = to_v[iv + 1, j3], to_v[iv + 1, j3 + 1], to_v[iv + 1, j3 + 2]
    f20, f21, f22 = to_v[iv + 2, j3], to_v[iv + 2, j3 + 1], to_v[iv + 2, j3 + 2]
    Q0, Q1, Q2, Q3, Q4, Q5 = into[iv], into[iv + 1], into[iv + 2], into[j3], into[j3 + 1], \
        into[j3 + 2]
    V0, V1, V2, V3, V4, V5 = into[nv + iv], into[nv + iv + 1], into[nv + iv + 2], \
        into[nv + j3], into[nv + j3 + 1], into[nv + j3 + 2]
    for j in range(c):
        x0, x1, x2, x3, x4, x5 = V0[j], V1[j], V2[j], V3[j], V4[j], V5[j]
        Q0[j] = a00 * x0 + a01 * x1 + a02 * x2
        Q1[j] = a10 * x0 + a11 * x1 + a12 * x2
        Q2[j] = a20 * x0 + a21 * x1 + a22 * x2
        Q3[j] = b00 * x3 + b01 * x4 + b02 * x5
        Q4[j] = b10 * x3 + b11 * x4 + b12 * x5
        Q5[j] = b20 * x3 + b21 * x4 + b22 * x5
        V0[j] = e00 * x0 + e01 * x1 + e02 * x2 + f00 * x3 + f01 * x4 + f02 * x5
        V1[j] = e10 * x0 + e11 * x1 + e12 * x2 + f10 * x3 + f11 * x4 + f12 * x5
        V2[j] = e20 * x0 + e21 * x1 + e22 * x2 + f20 * x3 + f21 * x4 + f22 * x5


@step
def integrated(free, to_q, to_v, into):
    """into = [to_q dv1; to_v dv1] in place, dv1 in into's lower half (nv x c): to_q and to_v
    diagonal but on the free-flyers' 6 x 6 blocks (``free``: their first dofs, in increasing
    order), whose rows flyer_rows makes; the other rows scaled."""
    nv, c = to_q.shape[0], into.shape[1]
    dv1 = into[nv:]
    start = 0
    for f in range(free.shape[0] + 1):
        end = free[f] if f < free.shape[0] else nv
        for r in range(start, end):
            d, e = to_q[r, r], to_v[r, r]
            for j in range(c):
                into[r, j] = d * dv1[r, j]
            if e != 1.0:
                for j in range(c):
                    dv1[r, j] = e * dv1[r, j]
        if f < free.shape[0]:
            flyer_rows(end, to_q, to_v, into)
            start = end + 6


@step
def velocity_rhs(half, free, M, frame_rates, rates, damping, h, out):
    """The v block's right-hand side of v*'s (half 0) or v1's (half 1) change before the
    impulses' (K dv = out, nv x nv): h (M~ C(y) - B(y) - D) at y = v*, v1 (frame_rates[half +
    1], rates[half]; the identity of dv/dv is added after the solve), row by row. C is zero
    but on the free-flyers' linear rows and their own columns (frame_rate_jacobian; ``free``:
    their first dofs): M~ C's entries are summed over those rows (C's zeros, whose products
    would add +-0, left out)."""
    nv = M.shape[0]
    C, B = frame_rates[half + 1], rates[half]
    for r in range(nv):
        for b in range(nv):
            out[r, b] = 0.0
        for f in range(free.shape[0]):
            iv = free[f]
            for b in range(iv, iv + 6):
                total = 0.0
                for s in range(iv, iv + 3):
                    total += M[r, s] * C[s, b]
                out[r, b] = total
        for b in range(nv):
            out[r, b] = h * (out[r, b] - B[r, b] - (damping[r] if r == b else 0.0))


@step
def row_changes(dG, row_dofs, row_count, contacts, oS, ground, v, X, gamma, pushed, free, du,
                dW_gamma, dW_pushed, diagonal, both):
    """The contractions of dG (dG[b] = dG_b, m x nv) that the configuration block needs, in
    one pass over its entries on the rows' supports (row_supports' lists: dG_b's row r is
    zero unless dof b moves the row's bodies, and then zero off the dofs k that move them;
    a contact's three rows share theirs, the rows after the contacts' have none), with
    X = [A, A g, A p] (A = M~^-1 G^T, nv x m): the rows' free velocities' change
    du = dG_b v* + free (free: G dv*_q, m x nv), dG_b A g, dG_b A p (dW_gamma, dW_pushed)
    and dG_b[r] . A[:, r] (diagonal), each sum over the row's dofs k in order (0 where b
    does not move row r; the dofs b and a contact's rows side by side, so that the sums do
    not wait on one another's additions), and both = [dG_b^T g | dG_b^T p] (nv x 2 nv,
    columns b and nv + b, a second loop over the row's dofs), each sum over the rows in
    order. The dofs from the lists index unsigned (no wraparound test for a negative
    index). Where ``ground`` (the rows are the ground's and terrain's,
    row_derivatives_kernel's) the dofs b that do not turn (oS[b]'s w = 0) are skipped:
    their dG_b is zero, and so are their contractions."""
    m, nv = du.shape
    for r in range(m):
        for b in range(nv):
            du[r, b], dW_gamma[r, b], dW_pushed[r, b], diagonal[r, b] = \
                0.0 + free[r, b], 0.0, 0.0, 0.0
    for k in range(nv):
        for j in range(2 * nv):
            both[k, j] = 0.0
    for contact in range(contacts):
        r = 3 * contact
        n = row_count[r]
        dofs = row_dofs[r]
        g0, g1, g2 = gamma[r], gamma[r + 1], gamma[r + 2]
        p0, p1, p2 = pushed[r], pushed[r + 1], pushed[r + 2]
        for s in range(n):
            b = np.uint64(dofs[s])
            if ground and not turns(oS, b):
                continue
            D0, D1, D2 = dG[b, r], dG[b, r + 1], dG[b, r + 2]
            moved0, moved1, moved2 = 0.0, 0.0, 0.0
            gamma0, gamma1, gamma2 = 0.0, 0.0, 0.0
            pushed0, pushed1, pushed2 = 0.0, 0.0, 0.0
            crossed0, crossed1, crossed2 = 0.0, 0.0, 0.0
            for t in range(n):
                k = np.uint64(dofs[t])
                d0, d1, d2 = D0[k], D1[k], D2[k]
                x = X[k]
                y, yg, yp = v[k], x[m], x[m + 1]
                moved0 += d0 * y
                moved1 += d1 * y
                moved2 += d2 * y
                gamma0 += d0 * yg
                gamma1 += d1 * yg
                gamma2 += d2 * yg
                pushed0 += d0 * yp
                pushed1 += d1 * yp
                pushed2 += d2 * yp
            column = np.uint64(nv + dofs[s])
            for t in range(n):
                k = np.uint64(dofs[t])
                d0, d1, d2 = D0[k], D1[k], D2[k]
                x = X[k]
                crossed0 += d0 * x[r]
                crossed1 += d1 * x[r + 1]
                crossed2 += d2 * x[r + 2]
                both[k, b] = ((both[k, b] + d0 * g0) + d1 * g1) + d2 * g2
                both[k, column] = ((both[k, column] + d0 * p0) + d1 * p1) + d2 * p2
            du[r, b], du[r + 1, b], du[r + 2, b] = \
                moved0 + free[r, b], moved1 + free[r + 1, b], moved2 + free[r + 2, b]
            dW_gamma[r, b], dW_gamma[r + 1, b], dW_gamma[r + 2, b] = gamma0, gamma1, gamma2
            dW_pushed[r, b], dW_pushed[r + 1, b], dW_pushed[r + 2, b] = pushed0, pushed1, pushed2
            diagonal[r, b], diagonal[r + 1, b], diagonal[r + 2, b] = crossed0, crossed1, crossed2


@routine
def free_velocity_changes(inverse, shifted, M, frame_rates, rates, damping, h, configuration,
                          implicit, free_dofs, G, scale, start, dq_dc, plain, rhs, square,
                          GK, free_q, changes, moved, stationarity):
    """The rows' free velocities' changes before the impulses' (contact_jacobians.
    step_jacobians), the blocks' columns side by side (q if ``configuration``, v if
    ``implicit``, u; each nv wide), G dv* with dv* = K^-1 times the q block's right-hand side
    P(w) (shifted[0]: its transpose) and the v block's (velocity_rhs) (+ 1 on the v block), h
    K^-1 on the u block, taken as (G K^-1) times the right-hand sides (``inverse``: K^-1;
    GK: m x nv) by BLAS's dgemm (solvers/blas.gemm): the q block's into ``free_q`` (m x nv,
    which row_changes makes the rows' change du), the v and u blocks' (``rhs``: their
    right-hand sides, nv x c) into ``changes`` (m x c) as the laws' change dc = scale G dv*,
    plus start G for v (a loading impact's closing root); then the stationarity residual's
    change dq/dc dc (by dgemm into ``moved``, m x c; skipped where ``plain``: the identity,
    no pushing row's penalty) into stationarity's last c columns (its q columns are left).
    free_dofs: the free-flyers' first dofs (velocity_rhs); square: nv x nv scratch."""
    nv, m, c = inverse.shape[0], G.shape[0], changes.shape[1]
    first_v = stationarity.shape[1] - c
    v_columns = c - nv  # (nv where implicit, else none)
    gemm(G, inverse, GK)
    if configuration:  # (P(w) C-ordered into ``square``: BLAS's product of two is faster)
        for r in range(nv):
            for s in range(nv):
                square[r, s] = shifted[0, s, r]
        gemm(GK, square, free_q)
    if implicit:
        velocity_rhs(0, free_dofs, M, frame_rates, rates, damping, h, rhs)  # (rhs[:, :nv])
    for r in range(nv):
        for j in range(nv):
            rhs[r, v_columns + j] = h if r == j else 0.0
    gemm(GK, rhs, changes)
    for r in range(m):
        for j in range(v_columns):  # (the v block: dv* = 1 + K^-1 (...))
            changes[r, j] = scale[r] * (changes[r, j] + G[r, j]) + start[r] * G[r, j]
        for j in range(v_columns, c):
            changes[r, j] = scale[r] * changes[r, j]
    if not plain:
        gemm(dq_dc, changes, moved)
    for r in range(m):
        for j in range(c):
            stationarity[r, first_v + j] = changes[r, j] if plain else moved[r, j]


@step
def negated_condition(K, inverse) -> float:
    """inverse <- -inverse (refined_solve's sign) and K's condition number in the infinity
    norm, |K|_inf |K^-1|_inf (the largest row sums of |K| and |K^-1|; N. J. Higham 2002,
    "Accuracy and stability of numerical algorithms", Sec. 6.2), in one pass."""
    norm, inverse_norm = 0.0, 0.0
    for a in range(K.shape[0]):
        total, inverse_total = 0.0, 0.0
        for b in range(K.shape[1]):
            inverse[a, b] = -inverse[a, b]
            total += abs(K[a, b])
            inverse_total += abs(inverse[a, b])
        norm, inverse_norm = max(norm, total), max(inverse_norm, inverse_total)
    return norm * inverse_norm


REFINEMENTS = 4  # refined_solve's steps at the most (a system of condition 1e13 takes three)


@routine
def refined_solve(K, inverse, S, X, T, D, refine):
    """X = -K^-1 S for the columns of S side by side from ``inverse`` = -K^-1, where
    ``refine`` with iterative refinement (X += -K^-1 (S + K X)): an explicit inverse's
    product is accurate to about cond(K) u relative to |K^-1| |S|, which loses the entries
    much smaller than that on a nearly singular K; each step multiplies the backward error by
    about the plain product's, so one step makes it a backward-stable solve's (a solve with
    K's LU factors) up to a condition of about 1e10 and more take over above (N. J. Higham
    2002, "Accuracy and stability of numerical algorithms", Sec. 12.1 and 14.1): steps until
    the correction is within the rounding of X or stops halving, REFINEMENTS at the most.
    The products by BLAS's dgemm (solvers/blas.gemm). T, D: scratch of S's shape."""
    gemm(inverse, S, X)
    if not refine:
        return
    previous = np.inf
    for _ in range(REFINEMENTS):
        gemm(K, X, T)
        for r in range(S.shape[0]):
            for j in range(S.shape[1]):
                T[r, j] += S[r, j]
        gemm(inverse, T, D)
        correction, size = 0.0, 0.0
        for r in range(S.shape[0]):
            for j in range(S.shape[1]):
                X[r, j] += D[r, j]
                correction = max(correction, abs(D[r, j]))
                size = max(size, abs(X[r, j]))
        if correction <= 2.2e-16 * size or correction > 0.5 * previous:
            return
        previous = correction


@routine
def state_changes(inverse, shifted, M, frame_rates, rates, damping, h, G, dgamma, turned,
                  impulses, configuration, implicit, free, to_q, to_v, turn, velocity, rhs,
                  rhs_u, pushed, state, state_u):
    """dx' of the blocks (contact_jacobians.step_jacobians, k columns): dv1 = K^-1 (the q
    block's right-hand side P(w) at v1 (shifted[1]: its transpose), the v block's
    (velocity_rhs, into ``velocity``: nv x nv), h on the u block, + G^T dgamma
    (+ dG^T gamma = ``turned`` on the configuration columns) when ``impulses``) (+ 1 on the v
    block), each right-hand side's entry written in one pass where it can, by
    BLAS's dgemm (solvers/blas.gemm) (``inverse``: K^-1) straight into the lower halves of
    where the caller wants them, ``state`` (2 nv x (k - nv): the q and v blocks' columns; their
    right-hand sides ``rhs``, nv x (k - nv)) and ``state_u`` (2 nv x nv: the u block's;
    ``rhs_u``), then [to_q dv1; to_v dv1] in place (integrated: the integration's
    derivatives) and, on the configuration columns, the turn of the free-flyer's step at
    fixed v1 (``turn``). pushed: nv x k (G^T dgamma)."""
    nv, k = inverse.shape[0], dgamma.shape[1]
    first_v = nv if configuration else 0
    solved = k - nv if implicit else 0
    if implicit:
        velocity_rhs(1, free, M, frame_rates, rates, damping, h, velocity)
    if impulses:
        gemm(G.T, dgamma, pushed)
    for r in range(nv):  # (each entry's sum in the order shifted, pushed, turned)
        if impulses:
            for j in range(first_v):
                rhs[r, j] = (shifted[1, j, r] + pushed[r, j]) + turned[r, j]
            for j in range(first_v, solved):
                rhs[r, j] = velocity[r, j - first_v] + pushed[r, j]
            for j in range(nv):
                rhs_u[r, j] = (h if r == j else 0.0) + pushed[r, k - nv + j]
        else:
            for j in range(first_v):
                rhs[r, j] = shifted[1, j, r]
            for j in range(first_v, solved):
                rhs[r, j] = velocity[r, j - first_v]
            for j in range(nv):
                rhs_u[r, j] = h if r == j else 0.0
    if k > nv:
        gemm(inverse, rhs, state[nv:])
        for r in range(nv if implicit else 0):  # (dv1 += 1 on the v block)
            state[nv + r, first_v + r] += 1.0
        integrated(free, to_q, to_v, state)
    gemm(inverse, rhs_u, state_u[nv:])
    integrated(free, to_q, to_v, state_u)
    if configuration:
        for r in range(nv):
            for j in range(nv):
                state[r, j] += turn[r, j]


@routine
def delassus_tables(A, gamma, c, H, weight, oS, Yc, joint_int, joint_of, ov, below, force,
                    X, pushed, dG, row_dofs, row_count, contacts, ground, v_star, free, du,
                    turned, both, product, dW_gamma, dW_pushed, diagonal, trace):
    """The configuration block's Delassus changes (jacobian_assembly.contact_jacobians_kernel) from
    A = M~^-1 G^T (nv x m): pushed = g + w (H g + c) (g + w r, r the law's residual),
    X = [A, A g, A pushed], row_changes' contractions of dG (the rows of ``contacts``
    contacts, row_derivatives_kernel's where ``ground``; with the rows' change du at v*, from
    free: G dv*_q), motion_passes under the mass matrix's q-derivative's bilinear form over
    X's columns, then delassus_changes.
    Scratch: ov, below (njoints x 6 x (m + 2)), force (nv x 6), both (nv x 2 nv), product
    (5 x nv x m)."""
    nv, m = A.shape
    for r in range(m):
        total = 0.0
        for s in range(m):
            total += H[r, s] * gamma[s]
        pushed[r] = gamma[r] + weight[r] * (total + c[r])
    for k in range(nv):
        moved_gamma, moved_pushed = 0.0, 0.0
        for r in range(m):
            X[k, r] = A[k, r]
            moved_gamma += A[k, r] * gamma[r]
            moved_pushed += A[k, r] * pushed[r]
        X[k, m], X[k, m + 1] = moved_gamma, moved_pushed
    row_changes(dG, row_dofs, row_count, contacts, oS, ground, v_star, X, gamma, pushed,
                free, du, dW_gamma, dW_pushed, diagonal, both)
    motion_passes(oS, Yc, X, joint_int, joint_of, ov, below, force)
    delassus_changes(A, oS, Yc, joint_int, joint_of, ov, below, turned, both, product, dW_gamma,
                     dW_pushed, diagonal, trace)


@routine
def stationarity_change(H, weight, weighted, gamma, pushed, dW_gamma, dW_pushed, d_inverse, dc,
                        scratch, out):
    """The stationarity residual's change as q moves (jacobian_assembly.contact_jacobians_kernel),
    dH_b (g + w r) + H w (dH_b g + dc_b) + dc_b with dH_b = dW_b + dE^-1_b (m x nv; scratch:
    m x nv; H: C-ordered). H's product by BLAS's dgemm (solvers/blas.gemm), where ``weighted``
    (some w nonzero: else that term is zero)."""
    m, nv = dc.shape
    if weighted:
        for r in range(m):
            for b in range(nv):
                scratch[r, b] = weight[r] * (dW_gamma[r, b] + d_inverse[r, b] * gamma[r]
                                             + dc[r, b])
        gemm(H, scratch, out)
    for r in range(m):
        for b in range(nv):
            pushing = out[r, b] if weighted else 0.0
            out[r, b] = dW_pushed[r, b] + d_inverse[r, b] * pushed[r] + pushing + dc[r, b]
