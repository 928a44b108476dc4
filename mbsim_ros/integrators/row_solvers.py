"""The constraint-row solvers a contact step uses, interchangeable: the step (compliant.py)
assembles the rows and their laws (W, u, phi, kind, stiffness, damping, friction) and hands
them to one of these for the impulses.

- ``ConeRows``: the compliant rows (Drumwright 2019): implicit spring-dampers, the friction
  cone, the active set of pushing rows (all compiled in cone_solver.py), each weighted cone
  problem solved by our compiled interior-point solve, or by clarabel or osqp (references and
  fallbacks) with this module driving the same compiled active set.
- ``LcpRows``: ODE's bounded LCP (ERP and CFM) by projected Gauss-Seidel or Dantzig pivoting
  (lcp.py): the rigid baseline.

Each has ``limit_rate(dt, stiffness)`` (how fast a violated rigid limit row is removed),
``solve(rows, m, info) -> bool``: the impulses rows.gamma[:m] from the step's row buffers
(compliant._RowBuffers: W, u, phi, kind, k, b, mu, the solver buffers and memory), and
``compiled``: whether that solve is cone_solver.solve_rows alone, which the compiled compliant
step (compliant_step.py) can call in its place.
"""
from __future__ import annotations

import math

import numpy as np

from ..codes import FIXED, FRICTION, NORMAL, OK, TANGENT, UNILATERAL, message
from .base import StepInfo
from ..solvers.cone_qp import (GAP_TOLERANCE, I_ACTIVE, I_EARLIER, I_FIRST, I_LAST, I_PUSHING,
                      I_TRIAL_KIND, ITERATIONS, M_H, M_LH, V_C, V_CONVEX, V_EINV, V_TRIAL_MU,
                      V_WEIGHT, solver_limits)
from ..solvers.cone_solver import (ACTIVE_SET_ROUNDS, DONE, advance_active_set, begin_active_set,
                          bilateral_solve, prepare_rows, solve_rows_kernel)
from ..solvers.lcp import dantzig_kernel, natural_residual, pgs_kernel

RIGID_COMPLIANCE = 1e-12  # E^-1 of rigid bilateral rows, relative to mean(diag W)
# the clarabel fallback of a failed interior-point solve fails fast: at most this many rows,
# active-set rounds, iterations per clarabel solve (no time limit: a result that depends on
# the machine's load would not repeat)
FALLBACK_ROWS, FALLBACK_ROUNDS, CLARABEL_ITERATIONS = 200, 2, 50
PGS_TOLERANCE = 1e-10   # a sweep that moves no impulse by more than this (relative) ends PGS
PIVOTING_PASSES = 8     # re-solves with the friction bounds from the last normal impulses


class ConeRows:
    """The compliant rows' solve: ``solver`` "interior" (our compiled solve, from the last
    step's impulses when ``warm_start``; clarabel with FALLBACK_ROUNDS rounds when it fails),
    "clarabel" or "osqp". The laws, the reduction and the
    active set are cone_solver.py's, compiled, for all three: with clarabel or osqp this class
    drives the active set's state machine, solving each weighted problem it asks for."""

    # the compiled functions its solve calls (Integrator.kernels)
    kernels = (solve_rows_kernel, prepare_rows, bilateral_solve, begin_active_set,
               advance_active_set)

    def __init__(self, dt: float, solver: str, cone: str, normal_weight: float,
                 regularization: float, max_iterations: int = ITERATIONS,
                 tolerance: float = GAP_TOLERANCE, warm_start: bool = True) -> None:
        self.dt = dt
        self.qp_solver = solver
        self.compiled = solver == "interior"
        self.cone = cone
        self.normal_weight = normal_weight
        self.regularization = regularization
        self.limits = solver_limits(max_iterations, tolerance, warm_start)
        self.info = StepInfo()
        self._solvers = {}
        self._patterns = {}
        self._clarabel = {}   # row structure -> (solver, CSC order of A's triplets)

    def limit_rate(self, dt: float, limit_stiffness: float) -> float:
        """How fast the solve removes a rigid limit row's phi (1/s): 1/h; 0 for soft limits,
        whose spring-damper law is their recovery (no capped recovery)."""
        return 1.0 / dt if math.isinf(limit_stiffness) else 0.0  # np.isinf: 1 us a call

    def solve(self, rows, m: int, info: StepInfo) -> bool:
        """rows.gamma[:m] from the step's rows (W, u, phi, kind, k, b, mu; the active-set
        memory and the solver buffers); False when no solver succeeds (message in info)."""
        self.info = info
        if self.qp_solver != "interior":
            return self._drive(rows, m, ACTIVE_SET_ROUNDS, restart=True)
        status, steps = solve_rows_kernel(
            rows.W, rows.u, rows.phi, rows.kind, rows.k, rows.b, rows.mu, m, self.dt,
            self.regularization, RIGID_COMPLIANCE, self.normal_weight, self.cone == "pyramid",
            self.limits, rows.memory, rows.gamma, *rows.solver)
        info.iterations = steps
        info.residual = float(self.limits[2])
        if status == OK:
            return True
        info.message = f"interior-point solver: {message(status)}"
        info.fallback = True
        if m > FALLBACK_ROWS:  # clarabel would take seconds: fail fast
            info.message += f" ({m} rows: no fallback above {FALLBACK_ROWS})"
            return False
        return self._drive(rows, m, FALLBACK_ROUNDS, restart=False)

    def _drive(self, rows, m: int, max_rounds: int, restart: bool) -> bool:
        """The laws and the active set (cone_solver.py), each weighted problem solved by
        clarabel or osqp (the fallback: at most max_rounds rounds, no second start)."""
        mats, vecs, ints = rows.solver
        H, c, weight, trial_mu = mats[M_H], vecs[V_C], vecs[V_WEIGHT], vecs[V_TRIAL_MU]
        trial_kind, pushing, active = ints[I_TRIAL_KIND], ints[I_PUSHING], ints[I_ACTIVE]
        if prepare_rows(rows.W, rows.u, rows.phi, rows.kind, rows.k, rows.b, m, self.dt,
                        self.regularization, RIGID_COMPLIANCE, vecs[V_EINV], c, H):
            status = bilateral_solve(H, c, m, mats[M_LH], ints[I_FIRST], rows.gamma)
            if status != OK:
                self.info.message = f"bilateral rows: {message(status)}"
            return status == OK
        self.info.iterations = 0
        phase = begin_active_set(rows.kind, rows.mu, m, self.normal_weight, rows.memory, restart,
                                 max_rounds, pushing, active, weight, trial_kind, trial_mu)
        while phase != DONE:
            gamma = self._solve_weighted(H[:m, :m], c[:m], weight[:m], trial_kind[:m],
                                         trial_mu[:m])
            if gamma is None:
                return False
            rows.gamma[:m] = gamma
            phase = advance_active_set(H, c, rows.W, rows.u, rows.kind, rows.mu, m,
                                       self.normal_weight, rows.memory, rows.gamma,
                                       vecs[V_CONVEX], pushing, active,
                                       ints[I_LAST:I_EARLIER + 1], weight, trial_kind,
                                       trial_mu)
        return True

    def _solve_weighted(self, H, c, weight, kind, mu):
        if self.qp_solver == "osqp" and (self.cone == "pyramid" or not (kind == NORMAL).any()):
            return self._solve_osqp(H, c, weight, kind, mu)
        return self._solve_clarabel(H, c, weight, kind, mu, self.cone == "pyramid")

    def _solve_clarabel(self, H, c, weight, kind, mu, pyramid: bool):
        """min 1/2 g.P g + q.g, P = H + H^T Q H, q = c + H^T Q c, over gamma_n >= 0 and, per
        contact, the cone |gamma_t| <= mu gamma_n or the pyramid |gamma_t1|, |gamma_t2| <=
        mu gamma_n (clarabel: an SOCP, or a QP in its nonnegative cone). A solver is kept per row
        structure and updated with the new numbers (its symbolic factorization reused); new
        structures are built from index triplets in one go."""
        import clarabel
        import scipy.sparse as sp

        P = H + H.T @ (weight[:, None] * H)
        q = c + H.T @ (weight * c)
        m = len(kind)
        rows, cols, vals, cones = [], [], [], []
        r = 0
        unilateral = np.flatnonzero((kind == UNILATERAL) | (kind == NORMAL))
        if unilateral.size:  # s = gamma >= 0
            rows.append(np.arange(r, r + unilateral.size)), cols.append(unilateral)
            vals.append(-np.ones(unilateral.size))
            cones.append(clarabel.NonnegativeConeT(unilateral.size))
            r += unilateral.size
        joints = np.flatnonzero(kind == FRICTION)
        offsets = np.zeros(r + 2 * joints.size)
        if joints.size:  # joint friction: bound -+ gamma >= 0
            rows.append(np.arange(r, r + 2 * joints.size)), cols.append(np.repeat(joints, 2))
            vals.append(np.tile([1.0, -1.0], joints.size))
            offsets[r:] = np.repeat(mu[joints], 2)
            cones.append(clarabel.NonnegativeConeT(2 * joints.size))
            r += 2 * joints.size
        normals = np.flatnonzero(kind == NORMAL)
        frictionless = normals[mu[normals] == 0.0]
        held = np.concatenate([frictionless + 1, frictionless + 2, np.flatnonzero(kind == FIXED)])
        if held.size:  # gamma = 0
            rows.append(np.arange(r, r + held.size)), cols.append(held)
            vals.append(np.ones(held.size))
            cones.append(clarabel.ZeroConeT(held.size))
            r += held.size
        rubbing = normals[mu[normals] > 0.0]
        if rubbing.size and pyramid:  # mu gamma_n -+ gamma_t >= 0 for t1 and t2
            block = np.arange(4)
            for i in rubbing:
                rows.append(r + np.repeat(block, 2))
                cols.append(np.array([i, i + 1, i, i + 1, i, i + 2, i, i + 2]))
                vals.append(np.array([-mu[i], -1.0, -mu[i], 1.0, -mu[i], -1.0, -mu[i], 1.0]))
                r += 4
            cones.append(clarabel.NonnegativeConeT(4 * rubbing.size))
        elif rubbing.size:  # (mu gamma_n, gamma_t1, gamma_t2) in the second-order cone
            for i in rubbing:
                rows.append(np.arange(r, r + 3)), cols.append(np.array([i, i + 1, i + 2]))
                vals.append(np.array([-mu[i], -1.0, -1.0]))
                cones.append(clarabel.SecondOrderConeT(3))
                r += 3
        values = np.concatenate(vals)
        offsets = np.concatenate([offsets, np.zeros(r - offsets.size)])
        upper_rows, upper_cols, indptr = self._upper_pattern(m)
        P_values = P[upper_rows, upper_cols]
        key = (pyramid, kind.tobytes(), (mu > 0).tobytes())
        cached = self._clarabel.get(key)
        if cached is not None and cached[0].is_data_update_allowed():
            solver, order = cached  # same structure: new numbers only, factorization reused
            solver.update(P=P_values, q=q, A=values[order], b=offsets)
        else:
            rows, cols = np.concatenate(rows), np.concatenate(cols)
            # where each triplet lands in the CSC data (the matrix sorts its entries)
            slots = sp.csc_matrix((np.arange(values.size, dtype=float), (rows, cols)),
                                  shape=(r, m))
            order = slots.data.astype(np.int64)
            A = sp.csc_matrix((values[order], slots.indices, slots.indptr), shape=(r, m))
            P_upper = sp.csc_matrix((P_values, upper_rows, indptr), shape=(m, m))
            settings = clarabel.DefaultSettings()
            settings.verbose = False
            if self.qp_solver == "interior":  # the fallback: fail fast
                settings.max_iter = CLARABEL_ITERATIONS
            solver = clarabel.DefaultSolver(P_upper, q, A, offsets, cones, settings)
            if len(self._clarabel) > 64:
                self._clarabel.clear()
            self._clarabel[key] = (solver, order)
        solution = solver.solve()
        self.info.iterations += int(solution.iterations)
        status = str(solution.status)
        if status != "Solved":
            if status == "AlmostSolved":  # inaccurate: flagged
                self.info.fallback = True
            else:
                self.info.message = f"clarabel: {status}"
                return self._fallback(H, c, weight, kind, mu, "clarabel")
        return np.array(solution.x)

    def _upper_pattern(self, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Row and column indices (column-major) and column pointers of a dense upper
        triangle of size m, cached."""
        pattern = self._patterns.get(m)
        if pattern is None:
            cols = np.concatenate([np.full(j + 1, j) for j in range(m)]).astype(np.int64)
            rows = np.concatenate([np.arange(j + 1) for j in range(m)]).astype(np.int64)
            indptr = np.concatenate([[0], np.cumsum(np.arange(1, m + 1))]).astype(np.int64)
            pattern = self._patterns[m] = (rows, cols, indptr)
        return pattern

    def _solve_osqp(self, H, c, weight, kind, mu):
        """The same objective over the pyramid -mu gamma_n <= gamma_t1, gamma_t2 <= mu gamma_n
        (t1 along the slip: exact for the sliding direction); osqp, warm-started, with its
        matrices' pattern reused while the rows keep their kinds."""
        import osqp
        import scipy.sparse as sp

        P = sp.triu(sp.csc_matrix(H + H.T @ (weight[:, None] * H))).tocsc()
        q = c + H.T @ (weight * c)
        m = len(kind)
        rows, cols, vals, lower, upper = [], [], [], [], []
        r = 0
        for i in np.flatnonzero((kind == UNILATERAL) | (kind == NORMAL)):
            rows.append(r), cols.append(i), vals.append(1.0)
            lower.append(0.0), upper.append(np.inf)
            r += 1
        for i in np.flatnonzero(kind == NORMAL):
            for t in (i + 1, i + 2):
                for sign in (1.0, -1.0):  # sign * gamma_t - mu gamma_n <= 0
                    rows += [r, r]
                    cols += [t, i]
                    vals += [sign, -mu[i]]
                    lower.append(-np.inf), upper.append(0.0)
                    r += 1
        for i in np.flatnonzero(kind == FIXED):
            rows.append(r), cols.append(i), vals.append(1.0)
            lower.append(0.0), upper.append(0.0)
            r += 1
        for i in np.flatnonzero(kind == FRICTION):  # joint friction: |gamma| <= bound
            rows.append(r), cols.append(i), vals.append(1.0)
            lower.append(-mu[i]), upper.append(mu[i])
            r += 1
        A = sp.csc_matrix((vals, (rows, cols)), shape=(r, m))
        key = (m, tuple(kind), r)
        solver = self._solvers.get(key)
        if solver is None:
            solver = osqp.OSQP()
            solver.setup(P, q, A, np.array(lower), np.array(upper), verbose=False,
                         eps_abs=1e-10, eps_rel=1e-10, max_iter=20000, polishing=False)
            self._solvers = {key: solver}
        else:
            solver.update(Px=P.data, q=q, Ax=A.data, l=np.array(lower), u=np.array(upper))
        result = solver.solve(raise_error=False)
        self.info.iterations += int(result.info.iter)
        if result.info.status_val not in (1, 2):  # solved, solved inaccurate
            self.info.message = f"osqp: {result.info.status}"
            return self._fallback(H, c, weight, kind, mu, "osqp")
        self.info.fallback |= result.info.status_val == 2
        return np.array(result.x)

    def _fallback(self, H, c, weight, kind, mu, failed: str):
        """The other solver on the same problem (osqp <-> clarabel; the true cone falls back to
        the pyramid), once, flagged in StepInfo; None if it fails too."""
        if self.info.fallback:
            return None
        self.info.fallback = True
        first = self.info.message
        if failed == "clarabel":
            gamma = self._solve_osqp(H, c, weight, kind, mu)
        else:
            gamma = self._solve_clarabel(H, c, weight, kind, mu, self.cone == "pyramid")
        if gamma is None:
            self.info.message = f"{first}; fallback failed too: {self.info.message}"
        return gamma


class LcpRows:
    """ODE's bounded LCP on the rows (ERP, CFM): ``solver`` "pgs" (projected Gauss-Seidel with
    SOR, quickstep) or "pivoting" (Dantzig, dWorldStep, falling back to PGS)."""

    compiled = False  # its solve runs in Python (lcp.py's kernels between)
    kernels = (pgs_kernel, dantzig_kernel, natural_residual)  # (Integrator.kernels)

    def __init__(self, dt: float, solver: str, erp: float, cfm: float, max_iterations: int,
                 sor: float, tolerance: float) -> None:
        self.dt = dt
        self.solver = solver
        self.erp, self.cfm = erp, cfm
        self.iterations, self.sor, self.tolerance = max_iterations, sor, tolerance
        self.info = StepInfo()
        self._inverse = np.zeros((0, 0))
        self._reserve(24)

    def limit_rate(self, dt: float, limit_stiffness: float) -> float:
        return self.erp / dt  # a violated row's phi is removed at ERP / h

    def _reserve(self, rows: int) -> None:
        """Workspaces of the LCP solvers for this many rows (grown, never shrunk)."""
        if rows <= self._inverse.shape[0]:
            return
        rows = max(rows, 2 * self._inverse.shape[0])
        self._inverse = np.zeros((rows, rows))
        self._ints = np.zeros((2, rows), dtype=np.int64)
        self._reals = np.zeros((6, rows))
        self._x = np.zeros(rows)

    def solve(self, rows, m: int, info: StepInfo) -> bool:
        """rows.gamma[:m]: the impulses of ODE's bounded LCP for the rows (False: no finite
        solution)."""
        self.info = info
        problem = self._problem(rows.W[:m, :m].copy(), rows.u[:m], rows.phi[:m], rows.kind[:m],
                                rows.mu[:m])
        self._reserve(m)
        x = self._x[:m]
        x[:] = 0.0
        if self.solver == "pivoting":
            self._pivot(problem, x)
        if self.solver == "pgs" or info.fallback:
            info.iterations += pgs_kernel(*problem, self.iterations, self.sor, self.tolerance, x)
        info.residual = natural_residual(*problem[:-1], x)
        if not (np.all(np.isfinite(x)) and np.isfinite(info.residual)):
            info.message = "the LCP solution is not finite"
            return False
        rows.gamma[:m] = x
        return True

    def _problem(self, W, u, phi, kind, mu) -> tuple:
        """(A, c, lo, hi, owner, friction, order) of the kernels in lcp.py."""
        h, n = self.dt, len(kind)
        one_sided = (kind == NORMAL) | (kind == UNILATERAL)
        A = W  # W + CFM / h, in place: E^-1 = CFM / h (docs/RIGID.md)
        A[np.diag_indices(n)] += self.cfm / h
        c = u + np.where(one_sided & (phi > 0.0), 1.0 / h, self.erp / h) * phi
        rubbing = kind == FRICTION
        lo = np.where(one_sided, 0.0, np.where(rubbing, -mu, -np.inf))
        hi = np.where(rubbing, mu, np.inf)
        tangent = kind == TANGENT
        owner = np.where(tangent, np.arange(n) // 3 * 3, -1)  # contacts come first, (n, t1, t2)
        friction = np.where(tangent, mu[np.maximum(owner, 0)], 0.0)
        order = np.argsort(tangent, kind="stable")  # ODE: the friction rows last
        return A, c, lo, hi, owner, friction, order

    def _pivot(self, problem: tuple, x: np.ndarray) -> None:
        """Dantzig pivoting into x; on failure flag the fallback (PGS then starts from x)."""
        info = self.info
        status, pivots = dantzig_kernel(*problem, PIVOTING_PASSES, x, self._inverse,
                                        self._ints, self._reals)
        info.iterations = pivots
        finite = bool(np.all(np.isfinite(x)))
        if status != OK or not finite:
            info.fallback = True
            reason = message(status) if status != OK else "not finite"
            info.message = f"pivoting: {reason}; PGS from its result"
            if not finite:
                x[:] = 0.0
