"""A and B of the compliant step through its contact solve in one compiled call after the step
(contact_jacobians.step_jacobians; docs/ESTIMATION.md, "Jacobians through contact: cost and
accuracy"): the step's dynamics (on the step's kinematics), the contact rows' q-derivatives,
the solve's branch and its factors, the three blocks' columns (configuration, velocity,
effort) side by side through K^-1 (from the step matrix's LU factors; the products by BLAS's
dgemm, solvers/blas.gemm), the impulses' change by the implicit function theorem on the
solve's optimality conditions (Amos and Kolter 2017, "OptNet", eq. 6; the branch's system by
its inverse, refined where nearly singular) and the integration's derivatives, compiled
without NRT (its views by layout.leading), over buffers made once per ProcessModel
(contact_jacobians._Assembly) and grown with the integrator's row buffers, all passed as one
JACOBIAN_ARRAYS table. The laws' derivatives (law_derivatives) are also the
material's and the masses' columns' (contact_jacobians.parameter_jacobian)."""
from __future__ import annotations

import numpy as np

from .._jit import kernel, routine, step
from ..codes import BILATERAL, FRICTION, TANGENT
from ..contact.geometry import SPHERE
from ..integrators.compliant_step import (C_CONTACTS, C_ROWS, L_DISSIPATION, L_E_STAR, L_H,
                                          L_REFERENCE_DEPTH, L_REGULARIZATION, L_STIFFNESS)
from ..integrators.impacts import IMPACT_COMPLIANCE, LOADING
from ..solvers.cone_qp import I_TRIAL_KIND, M_H, V_C, V_CONVEX, V_TRIAL_MU, V_WEIGHT
from ..solvers.blas import gemm
from ..solvers.lu import lu_factor
from ..layout import ArrayTable, leading
from .jacobian_kernels import (branch_system, delassus_tables, free_velocity_changes,
                               integration_kernel, law_changes, lu_inverse, mass_pass,
                               negated_condition, refined_solve,
                               row_derivatives_kernel, row_supports, solve_l_columns,
                               state_changes, stationarity_change, step_dynamics)

SEPARATED = 1e-9  # an impulse below this share of the largest is zero (interior-point rounding)
SLIDING = 1e-7    # |g_t| within this share of mu g_n is on the cone's surface
# the branch's solve is refined (jacobian_kernels.refined_solve) where its system's condition
# number |K|_inf |K^-1|_inf is above this: below, the inverse's product is within 1e-10 of
# |K^-1| |S| (Solo12 standing 7e4, sliding 5e7; a brick held at the cone's surface by its
# solve's barrier 1e12: docs/ESTIMATION.md, round 9)
REFINED_ABOVE = 1e6

# what the rows' q-derivatives come from (rows_mode), and what the call found (its return)
ROWS_FIND, ROWS_GIVEN, ROWS_NONE = 0, 1, 2
SUPPORTED, NO_CONFIGURATION, NEED_PAIR_ROWS, SINGULAR_BRANCH = 0, 1, 2, 3


@step
def impact_slope(W, G, u, phi, contact_real, law, v, contact) -> tuple:
    """(m, w0, w1, f'(w1)) of a contact loading in an impact (impacts.py): its normal row's
    target w1 = -phi / h is the closing root of the energy balance f(w; m, w0, u, d0) = 0 with
    m = 1 / W_rr, w0 = G_r v, d0 = -gap, f'(w1) = m w1 - m (u - w0) - h K d^(3/2),
    K = 4/3 E* sqrt(R), d = d0 - h w1 (Hertz's force K d^(3/2), K. L. Johnson 1985,
    "Contact mechanics", eq. 4.23)."""
    r, h = 3 * contact, law[L_H]
    mass = 1.0 / W[r, r]
    w0 = 0.0
    for k in range(v.shape[0]):
        w0 += G[r, k] * v[k]
    w1 = -phi[r] / h
    d = -contact_real[contact, 6] - h * w1
    stiffness = 4.0 / 3.0 * law[L_E_STAR] * np.sqrt(contact_real[contact, 7])
    slope = mass * w1 - mass * (u[r] - w0) - (h * stiffness * d * np.sqrt(d) if d > 0.0
                                              else 0.0)
    return mass, w0, w1, slope


@step
def hertz_force(stiffness, depth) -> float:
    """K d^(3/2) (zero apart)."""
    return stiffness * depth * np.sqrt(depth) if depth > 0.0 else 0.0


@routine
def law_derivatives(kind, k, b, phi, W, G, u, v, contact_real, phase, law, contacts, trace,
                    diagonal, du, dphi, dG, rows_move, friction_change, d_inverse, dc):
    """(dE^-1, dc) (m x p) of the rows' laws (cone_solver.prepare_rows) for p changes: the
    normal rows' Hertz stiffness and damping follow the depth (dphi), the friction rows'
    regularization follows mean(diag W) (``trace``: tr dW per column), rigid limit rows close
    at 1/h (law_changes); a contact's row in an impact (phase) takes its target's change:
    loading, the closing root of f(w; m, w0, u, d0) = 0 (impact_slope; m = 1/W_rr moved by
    ``diagonal[r]`` = dW_rr, w0 = G_r v by v . dG[j, r] when ``rows_move``, u by du, d0 by
    -dphi: dw1 = -df / f'(w1)), unloading Newton's e v_c (held) or, plastic, d0 / h, and
    E^-1 = IMPACT_COMPLIANCE W_rr. du: the rows' free velocities' change, dc's start;
    friction_change: p scratch."""
    m, p = du.shape
    h = law[L_H]
    mean_w = 0.0
    for r in range(m):
        mean_w += W[r, r]
    mean_w = max(mean_w / m, 1e-12)
    for j in range(p):
        friction_change[j] = law[L_REGULARIZATION] * (trace[j] / m if mean_w > 1e-12 else 0.0)
        for r in range(m):
            d_inverse[r, j] = 0.0
            dc[r, j] = du[r, j]
    law_changes(kind, k, b, phi, contacts, law[L_STIFFNESS] < 0.0, law[L_REFERENCE_DEPTH],
                law[L_DISSIPATION], h, friction_change, dphi, d_inverse, dc)
    for contact in range(contacts):
        if phase[contact] == 0:
            continue
        r0 = 3 * contact
        d0 = -contact_real[contact, 6]
        loading = phase[contact] == LOADING
        mass, w0, w1, slope, energy, force = 0.0, 0.0, -phi[r0] / h, 1.0, 0.0, 0.0
        if loading:
            mass, w0, w1, slope = impact_slope(W, G, u, phi, contact_real, law, v, contact)
            stiffness = 4.0 / 3.0 * law[L_E_STAR] * np.sqrt(contact_real[contact, 7])
            depth = d0 - h * w1
            energy = 0.5 * w1 * w1 - (u[r0] - w0) * w1 - 0.5 * w0 * w0  # df/dm
            force = hertz_force(stiffness, depth) - hertz_force(stiffness, d0)
        for r in range(r0, r0 + 3):
            if kind[r] == TANGENT or kind[r] == FRICTION:
                continue
            for j in range(p):
                if loading:
                    dw0 = 0.0
                    if rows_move:
                        for s in range(v.shape[0]):
                            dw0 += v[s] * dG[j, r0, s]
                    dm = -mass * mass * diagonal[r, j]
                    df = (energy * dm + mass * (w1 - w0) * dw0 - mass * w1 * du[r0, j]
                          + force * (-dphi[r0, j]))
                    change = -df / slope
                else:
                    change = -dphi[r0, j] / h if w1 == d0 / h else 0.0
                dc[r, j] = du[r, j] - change
                d_inverse[r, j] = IMPACT_COMPLIANCE * diagonal[r, j]


@kernel
def law_derivatives_kernel(kind, k, b, phi, W, G, u, v, contact_real, phase, law, contacts, trace,
                           diagonal, du, dphi, dG, rows_move, friction_change, d_inverse, dc):
    """law_derivatives (a routine), called from Python (the mass parameter's columns)."""
    law_derivatives(kind, k, b, phi, W, G, u, v, contact_real, phase, law, contacts, trace,
                    diagonal, du, dphi, dG, rows_move, friction_change, d_inverse, dc)


@step
def branch_factors(m, H, c, gamma, kind, mu, weight, weighted, P, dq_dc, gradient, zero,
                   sliding, tangent, slip, multiplier, free, position, K, unfactored,
                   pivots) -> tuple:
    """The solve's branch at its solution (contact_jacobians.Branch; H C-ordered): P = H +
    H diag(w) H (the product by BLAS's dgemm, solvers/blas.gemm),
    dq/dc = 1 + H diag(w), the gradient P g + c + H diag(w) c, branch_system's classification
    and bordered system K, copied into ``unfactored`` (flat, (n + ns)^2 first), factored in
    place (solvers/lu.py). Returns (free rows, sliding contacts, factored)."""
    for r in range(m):
        for s in range(m):
            weighted[r, s] = H[r, s] * weight[s]
    gemm(weighted, H, P)
    for r in range(m):
        total, pushed = 0.0, 0.0
        for s in range(m):
            P[r, s] = H[r, s] + P[r, s]
            dq_dc[r, s] = (1.0 if r == s else 0.0) + weighted[r, s]
        for s in range(m):
            total += P[r, s] * gamma[s]
            pushed += weighted[r, s] * c[s]
        gradient[r] = total + c[r] + pushed
    n, ns = branch_system(P, gradient, gamma, kind, mu, SEPARATED, SLIDING, zero, sliding,
                          tangent, slip, multiplier, free, position, K)
    system = leading(unfactored, (n + ns, n + ns))
    for a in range(n + ns):
        for b in range(n + ns):
            system[a, b] = K[a, b]
    factored = lu_factor(K[:n + ns, :n + ns], pivots)
    return n, ns, factored


# The compiled call's arrays as one argument (layout.ArrayTable; contact_jacobians._Assembly
# binds them): the model's tables; the step's buffers (its step matrix's LU factors, its rows,
# the solve's arrays, the LTL factor of M~ and its rows z_r = L^-T g_r, compliant_step.py; its
# kinematics and what its velocity terms left: the bodies' velocities, the subtrees' momenta
# and velocity-product maps at (q, v), the composite inertias at q); the workspace of the
# step's dynamics, of the branch, of the blocks and of the Delassus changes; the output
F64, I64 = "float64", "int64"
JACOBIAN_ARRAYS = ArrayTable("JacobianArrays", [
    ("joint_int", I64, 2), ("joint_real", F64, 2), ("gravity", F64, 1), ("armature", F64, 1),
    ("damping", F64, 1), ("free_dofs", I64, 1), ("joint_of", I64, 1), ("chain", F64, 2),
    ("support", F64, 2),
    ("K_lu", F64, 2), ("K_pivots", I64, 1), ("counts", I64, 1), ("contact_int", I64, 2),
    ("contact_real", F64, 2), ("shape_kinds", I64, 1), ("shape_sizes", F64, 2), ("oS_step", F64, 2),
    ("G_all", F64, 2), ("directions", F64, 2), ("kind_all", I64, 1), ("mu_all", F64, 1),
    ("gamma_all", F64, 1), ("phi_all", F64, 1), ("k_all", F64, 1), ("b_all", F64, 1),
    ("W_all", F64, 2),
    ("u_all", F64, 1), ("mats", F64, 3), ("vecs", F64, 2), ("ints", I64, 2), ("phase", I64, 1),
    ("law", F64, 1), ("v_star", F64, 1), ("v1", F64, 1), ("L_step", F64, 2), ("parent", I64, 1),
    ("Z_all", F64, 2), ("oR_step", F64, 3), ("op_step", F64, 2), ("ov_step", F64, 2),
    ("momenta_step", F64, 2), ("coriolis_step", F64, 3), ("Yc_step", F64, 2),
    ("oR", F64, 3), ("op", F64, 2), ("oS", F64, 2), ("oY", F64, 2), ("Yc", F64, 2), ("oa", F64, 2),
    ("F_sub", F64, 2), ("ov_y", F64, 2), ("momenta", F64, 2),
    ("composite_momenta", F64, 2), ("coriolis", F64, 3), ("projections", F64, 3),
    ("crossed", F64, 2), ("tmp", F64, 2), ("ow", F64, 2), ("tau", F64, 1),
    ("y", F64, 1),
    ("a", F64, 1), ("a_world", F64, 1), ("Rq", F64, 2), ("pq", F64, 1),
    ("M", F64, 2),
    ("frame_rates", F64, 3), ("shifted", F64, 3), ("rates", F64, 3), ("velocities", F64, 2),
    ("points", F64, 2), ("rotations", F64, 3), ("ends", I64, 1),
    ("weighted_b", F64, 1), ("P_b", F64, 1), ("dq_dc_b", F64, 1), ("gradient", F64, 1),
    ("zero_rows", I64, 1), ("sliding", I64, 1), ("tangent", F64, 2), ("slip", F64, 1),
    ("multiplier", F64, 1), ("free_rows", I64, 1), ("position", I64, 1), ("K_b", F64, 1),
    ("kkt_pivots", I64, 1), ("rhs_b", F64, 1), ("no_weight", F64, 1), ("friction_change", F64, 1),
    ("K_b_inverse", F64, 1), ("K_b_system", F64, 1), ("solved_b", F64, 1), ("refined_b", F64, 1),
    ("correction_b", F64, 1),
    ("to_q", F64, 2), ("to_v", F64, 2), ("turn", F64, 2), ("dG_b", F64, 1), ("scale", F64, 1),
    ("start", F64, 1), ("free_q_b", F64, 1), ("du_b", F64, 1), ("stationarity_b", F64, 1),
    ("changes_b", F64, 1), ("dgamma_b", F64, 1), ("rhs_u", F64, 2), ("zeros_m", F64, 1),
    ("centres_b", F64, 1), ("rhs_nv", F64, 1), ("K_inverse", F64, 2),
    ("moved_b", F64, 1), ("rhs_v1_b", F64, 1), ("pushed_v1_b", F64, 1),
    ("H_b", F64, 1),
    ("M_lu", F64, 2), ("mass_pivots", I64, 1), ("A_b", F64, 1), ("pushed", F64, 1), ("X_b", F64, 1),
    ("ov_p", F64, 1), ("below_p", F64, 1), ("force", F64, 2), ("turned", F64, 2),
    ("dW_gamma_b", F64, 1),
    ("dW_pushed_b", F64, 1), ("diagonal_b", F64, 1), ("trace", F64, 1), ("d_inverse_b", F64, 1),
    ("dc_b", F64, 1), ("scratch_b", F64, 1), ("residual_b", F64, 1), ("both", F64, 2),
    ("gk_b", F64, 1), ("row_dofs_b", I64, 1), ("row_count", I64, 1),
    ("product_b", F64, 1),
    ("state", F64, 1)], __name__)
unpack_jacobian = JACOBIAN_ARRAYS.unpack


@kernel
def contact_jacobians_kernel(x, rows_mode, contact_block, implicit, table, out, out_u):
    """d x' / d (q, v, u) of the compliant step just taken (its buffers in the
    JACOBIAN_ARRAYS ``table``) into the table's ``state``'s first 2 nv k entries (2 nv x k,
    as two blocks one after the other: 2 nv x (k - nv), the configuration columns where
    ``implicit`` and the rows' q-derivatives are known and the velocity columns where
    ``implicit``; 2 nv x nv, the effort columns), by contact_jacobians.
    step_jacobians' rules (its docstring, docs/ESTIMATION.md). rows_mode:
    ROWS_FIND (the ground's and terrain's contacts' rows here; NEED_PAIR_ROWS returned, and
    nothing done, where a pair of shapes is in contact), ROWS_GIVEN (the table's dG written
    by the caller), ROWS_NONE (no configuration columns). Returns SUPPORTED,
    NO_CONFIGURATION (no configuration columns: explicit velocity terms, a limit in recovery,
    ROWS_NONE), NEED_PAIR_ROWS or SINGULAR_BRANCH (the branch's system singular). Where
    SUPPORTED and ``out`` is 2 nv x 2 nv (``out_u``: 2 nv x nv), A and B are written into
    them instead."""
    (joint_int, joint_real, gravity, armature, damping, free_dofs, joint_of, chain, support,
     K_lu, K_pivots, counts, contact_int, contact_real, shape_kinds, shape_sizes, oS_step,
     G_all, directions, kind_all, mu_all, gamma_all, phi_all, k_all, b_all, W_all, u_all, mats,
     vecs, ints, phase, law, v_star, v1, L_step, parent, Z_all, oR_step, op_step, ov_step,
     momenta_step, coriolis_step, Yc_step,
     oR, op, oS, oY, Yc, oa, F_sub, ov_y, momenta, composite_momenta, coriolis,
     projections, crossed, tmp, ow, tau, y,
     a, a_world, Rq, pq, M, frame_rates, shifted, rates, velocities, points,
     rotations, ends,
     weighted_b, P_b, dq_dc_b, gradient, zero_rows, sliding, tangent, slip, multiplier,
     free_rows, position, K_b, kkt_pivots, rhs_b, no_weight, friction_change, K_b_inverse,
     K_b_system, solved_b, refined_b, correction_b,
     to_q, to_v, turn, dG_b, scale, start, free_q_b, du_b, stationarity_b, changes_b, dgamma_b,
     rhs_u, zeros_m, centres_b, rhs_nv, K_inverse, moved_b, rhs_v1_b,
     pushed_v1_b, H_b,
     M_lu, mass_pivots, A_b, pushed, X_b, ov_p, below_p, force, turned, dW_gamma_b,
     dW_pushed_b, diagonal_b, trace, d_inverse_b, dc_b,
     scratch_b, residual_b, both, gk_b, row_dofs_b, row_count, product_b,
     state) = unpack_jacobian(table)
    nv = v_star.shape[0]
    q, v = x[:x.shape[0] - nv], x[x.shape[0] - nv:]
    n, m = counts[C_CONTACTS], counts[C_ROWS]
    h = law[L_H]
    supported = implicit and rows_mode != ROWS_NONE
    if supported:
        for r in range(3 * n, m):
            if kind_all[r] == BILATERAL:
                supported = False  # a limit in recovery
        if supported and rows_mode == ROWS_FIND:
            for contact in range(n):
                if contact_int[contact, 3] >= 0:
                    return NEED_PAIR_ROWS
    k = nv * (1 + implicit + supported)
    G = G_all[:m]
    dG = leading(dG_b, (nv, m, nv))  # dG[b]: G's derivative along q_b
    row_dofs = leading(row_dofs_b, (m, nv))
    if supported:  # dG's nonzero entries
        row_supports(contact_int, chain, n, row_dofs, row_count[:m])
    if supported and rows_mode == ROWS_FIND:
        # dG is read on the rows' supports (row_supports), which row_derivatives_kernel
        # writes where a contact's other side is the ground or the terrain (-1) but on the
        # dofs b that do not turn (their dG_b is zero, and row_changes skips them), and
        # whole by law_derivatives on a loading impact's normal row: zeroed there only
        for contact in range(n):
            if contact_int[contact, 1] >= 0 or phase[contact] == LOADING:
                for b in range(nv):
                    for r in range(3 * contact, 3 * contact + 3):
                        for s in range(nv):
                            dG[b, r, s] = 0.0
        centres = leading(centres_b, (n, 3))  # the spheres' centres, the points
        for contact in range(n):
            shape = contact_int[contact, 2]
            radius = shape_sizes[shape, 0] if shape_kinds[shape] == SPHERE else 0.0
            for e in range(3):
                centres[contact, e] = (contact_real[contact, e]
                                       + radius * contact_real[contact, 3 + e])
        row_derivatives_kernel(oS_step, support, chain, contact_int[:n, 0],
                               contact_real[:n, 0:3], centres, directions, points, dG)
    # the step's dynamics (on its kinematics: oS_step, its composite inertias and its factor
    # of M~) and the factors of its matrix K (M~ with explicit velocity terms), the
    # integration's derivatives
    if implicit:
        for dof in range(nv):
            velocities[0, dof], velocities[1, dof] = v_star[dof], v1[dof]
        step_dynamics(joint_int, joint_real, gravity, free_dofs, chain, h, v, L_step, parent,
                      velocities, oR_step, op_step, oS_step, ov_step, momenta_step,
                      coriolis_step, oY, Yc_step, oa, F_sub, ov_y, momenta, composite_momenta,
                      coriolis, projections, crossed, tmp, ow, tau, y, a, a_world, M,
                      frame_rates, shifted, rates)
        LU, pivots, subspaces, composites = K_lu, K_pivots, oS_step, Yc_step
    else:
        mass_pass(joint_int, joint_real, armature, damping, h, q, oR, op, oS, oY, Yc, tmp[0],
                  Rq, pq, M)
        for r in range(nv):
            for s in range(nv):
                M_lu[r, s] = M[r, s]
        lu_factor(M_lu, mass_pivots)
        LU, pivots, subspaces, composites = M_lu, mass_pivots, oS, Yc
    lu_inverse(LU, pivots, K_inverse, ends)  # (the blocks' products with K^-1 by BLAS)
    # (_Assembly: the rest)
    integration_kernel(free_dofs, h, v1, False, rotations, to_q, to_v, turn)
    # the branch
    impulses = m > 0 and contact_block
    gamma = gamma_all[:m]
    dq_dc = leading(dq_dc_b, (m, m))
    n_free, ns = 0, 0
    H, c = mats[M_H][:m, :m], vecs[V_C][:m]
    kind, mu, weight = kind_all[:m], mu_all[:m], no_weight[:m]
    H_c = leading(H_b, (m, m))
    if impulses:
        convex = True
        for r in range(m):
            if gamma[r] != vecs[V_CONVEX][r]:
                convex = False
        all_bilateral = True
        for r in range(m):
            if kind_all[r] != BILATERAL:
                all_bilateral = False
        if not (all_bilateral or convex):
            kind, mu, weight = ints[I_TRIAL_KIND][:m], vecs[V_TRIAL_MU][:m], vecs[V_WEIGHT][:m]
        for r in range(m):  # (H C-ordered for BLAS)
            for s in range(m):
                H_c[r, s] = H[r, s]
        n_free, ns, factored = branch_factors(
            m, H_c, c, gamma, kind, mu, weight, leading(weighted_b, (m, m)),
            leading(P_b, (m, m)), dq_dc, gradient[:m], zero_rows[:m], sliding[:m],
            tangent[:m], slip[:m], multiplier[:m], free_rows[:m], position[:m],
            leading(K_b, (2 * m, 2 * m)), K_b_system, kkt_pivots)
        if not factored:
            return SINGULAR_BRANCH
    weighted = False  # (a pushing row's penalty: dq/dc is not the identity)
    for r in range(m):
        if weight[r] != 0.0:
            weighted = True
    # the blocks' changes of v* before the impulses', the rows' free velocities
    for r in range(m):
        scale[r], start[r] = 1.0, 0.0
    for contact in range(n):
        if phase[contact] == LOADING:
            mass, w0, w1, slope = impact_slope(W_all, G_all, u_all, phi_all, contact_real, law,
                                               v, contact)
            scale[3 * contact] = 1.0 - mass * w1 / slope
            start[3 * contact] = mass * (w1 - w0) / slope
    free_q = leading(free_q_b, (m, nv))
    du = leading(du_b, (m, nv))
    stationarity = leading(stationarity_b, (m, k))
    first_v = nv if supported else 0
    # (rhs_v1_b: v1's right-hand sides in state_changes; P(w*)'s C-ordered copy here)
    free_velocity_changes(K_inverse, shifted, M, frame_rates, rates, damping, h, supported,
                          implicit, free_dofs, G, scale[:m], start[:m],
                          dq_dc if impulses else leading(zeros_m, (m, m)),
                          impulses and not weighted,
                          leading(rhs_nv, (nv, k - first_v)), leading(rhs_v1_b, (nv, nv)),
                          leading(gk_b, (m, nv)), free_q,
                          leading(changes_b, (m, k - first_v)),
                          leading(moved_b, (m, k - first_v)), stationarity)
    # the configuration block's residual: the rows, the Delassus matrix and the laws moved
    if impulses and supported:
        A = leading(A_b, (nv, m))  # M~^-1 G^T = L^-1 z_r (the step's M~ = L^T L)
        for s in range(nv):
            for r in range(m):
                A[s, r] = Z_all[r, s]
        solve_l_columns(L_step, parent, A)
        p = m + 2
        nj = joint_int.shape[0]
        diagonal = leading(diagonal_b, (m, nv))
        dW_gamma = leading(dW_gamma_b, (m, nv))
        dW_pushed = leading(dW_pushed_b, (m, nv))
        delassus_tables(A, gamma, c, H, weight, subspaces, composites, joint_int, joint_of,
                        leading(ov_p, (nj, 6, p)),
                        leading(below_p, (nj, 6, p)), force,
                        leading(X_b, (nv, p)), pushed[:m], dG, row_dofs,
                        row_count[:m], n, rows_mode == ROWS_FIND, v_star, free_q, du,
                        turned, both,
                        leading(product_b, (5, nv, m)), dW_gamma, dW_pushed,
                        diagonal, trace)
        d_inverse = leading(d_inverse_b, (m, nv))
        dc = leading(dc_b, (m, nv))
        law_derivatives(kind_all[:m], k_all[:m], b_all[:m], phi_all[:m], W_all, G_all, u_all, v,
                        contact_real, phase, law, n, trace, diagonal, du, G, dG, True,
                        friction_change, d_inverse, dc)
        residual = leading(residual_b, (m, nv))
        stationarity_change(H_c, weight, weighted, gamma, pushed[:m], dW_gamma, dW_pushed,
                            d_inverse, dc, leading(scratch_b, (m, nv)), residual)
        for r in range(m):
            for j in range(nv):
                stationarity[r, j] = residual[r, j]
    # the impulses' change: the branch's system for every column at once, by its inverse
    # (one BLAS product; the sliding contacts' bordering rows' right-hand sides are zeros)
    dgamma = leading(dgamma_b, (m, k))
    size = n_free + ns
    in_place = impulses and n_free == m and ns == 0  # (every row free, none sliding: the
    for a_row in range(n_free if in_place else 0):   # system's rows are dgamma's, in order)
        if free_rows[a_row] != a_row:
            in_place = False
    if not in_place:
        for r in range(m):
            for j in range(k):
                dgamma[r, j] = 0.0
    if impulses:
        system = leading(K_b_system, (size, size))
        inverse_b = leading(K_b_inverse, (size, size))
        lu_inverse(leading(K_b, (2 * m, 2 * m))[:size, :size], kkt_pivots, inverse_b,
                   ends)  # (ends: the tree's scratch, unused by a pivoted LU's)
        refine = negated_condition(system, inverse_b) > REFINED_ABOVE
        refined, correction = (leading(refined_b, (size, k)),
                               leading(correction_b, (size, k)))
        if in_place:
            refined_solve(system, inverse_b, stationarity, dgamma, refined, correction, refine)
        else:
            rhs = leading(rhs_b, (size, k))
            solved = leading(solved_b, (size, k))
            for a_row in range(size):
                for j in range(k):
                    rhs[a_row, j] = stationarity[free_rows[a_row], j] if a_row < n_free else 0.0
            refined_solve(system, inverse_b, rhs, solved, refined, correction, refine)
            for a_row in range(n_free):
                for j in range(k):
                    dgamma[free_rows[a_row], j] = solved[a_row, j]
    into, into_u = out, out_u  # (k = 3 nv: A and B)
    if not (supported and out.shape[0] == 2 * nv):  # (the table's state: its q and v blocks'
        # columns, then its u block's)
        into = leading(state, (2 * nv, k - nv))
        into_u = leading(state[2 * nv * (k - nv):], (2 * nv, nv))
    state_changes(K_inverse, shifted, M, frame_rates, rates, damping, h, G, dgamma, turned,
                  impulses, supported, implicit, free_dofs, to_q, to_v, turn,
                  leading(rhs_nv, (nv, nv)),
                  leading(rhs_v1_b, (nv, k - nv)), rhs_u, leading(pushed_v1_b, (nv, k)),
                  into, into_u)
    return SUPPORTED if supported else NO_CONFIGURATION
