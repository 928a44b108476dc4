"""The derivative of the compliant step through its contact solve (docs/ESTIMATION.md,
"Jacobians through contact"): the impulses' sensitivity by the implicit function theorem on the
solve's optimality conditions at its solution (Amos and Kolter 2017, "OptNet: differentiable
optimization as a layer in neural networks": differentiating a QP's KKT conditions; Howell et
al. 2022, "Dojo: a differentiable physics engine for robotics": contact with a friction cone
differentiated implicitly), and the effort Jacobian B of the step built on it.

The impulses gamma solve the last problem of the active set (cone_solver.py, docs/COMPLIANT.md)

    min 1/2 g.P g + q.g,  P = H + H diag(w) H,  q = c + H diag(w) c     (H = W + E^-1)
    over: bilateral rows free, unilateral rows g >= 0, held rows g = 0, per contact the cone
    f(g) = |g_t| - mu g_n <= 0, joint friction |g| <= bound,

with w the penalty on the pushing rows (zero when the active set ended on the convex form).
At the solution each row or contact is on one branch, and the derivative is that branch's:

- held, separating (g = 0) or at a joint friction bound: dg = 0;
- free rows, unilateral rows that push and sticking contacts (|g_t| < mu g_n): stationarity,
  (P dg + dP g + dq)_i = 0;
- sliding contacts (|g_t| = mu g_n, g_n > 0): stationarity with the cone's multiplier lambda,
  (P dg + dP g + dq + dlambda grad f + lambda hess f dg)_block = 0, and grad f . dg = 0, with
  grad f = (-mu, t), hess f = (0, (1 - t t^T) / |g_t|) on the tangents, t = g_t / |g_t|,
  lambda = (P g + q)_n / mu.

A contact exactly at a switch (g_n = 0 while touching, |g_t| = mu g_n while sticking) gets the
one-sided derivative of the branch the solution is classified on (relative thresholds
jacobian_assembly.SEPARATED and SLIDING).
"""
from __future__ import annotations

import copy
import weakref

import numpy as np

from ..codes import OK, BILATERAL
from ..contact.geometry import BOX, SPHERE
from ..dynamics.rnea import rnea
from ..model.model import I_NV, R_MASS
from ..dynamics.crba import crba
from ..dynamics.rnea_derivative import rnea_derivatives
from ..dynamics.workspace import DYNAMICS
from .jacobian_assembly import (JACOBIAN_ARRAYS, NEED_PAIR_ROWS, ROWS_FIND, ROWS_GIVEN,
                                ROWS_NONE, SEPARATED, SINGULAR_BRANCH, SLIDING, SUPPORTED,
                                contact_jacobians_kernel, law_derivatives_kernel)
from .jacobian_kernels import (branch_system, frame_rate_jacobian, integration_kernel,
                               lu_inverse, row_derivatives_kernel)
from ..solvers.cone_qp import I_TRIAL_KIND, M_H, V_C, V_CONVEX, V_TRIAL_MU, V_WEIGHT
from ..integrators.compliant_step import (C_CONTACTS, C_ROWS, L_DAMPING, L_E_STAR, L_H,
                                          L_STIFFNESS)
from ..integrators.impacts import LOADING


def last_problem(integrator, m: int) -> tuple:
    """(H, c, gamma, kind, mu, weight) of the problem whose solution the step took: the
    last request of the active set (weights, held rows), or the convex form when the rounds
    ended unsettled (the solution is then the convex one, copied bit for bit)."""
    buf = integrator._buffers
    mats, vecs, ints = buf.solver
    H, c = mats[M_H][:m, :m].copy(), vecs[V_C][:m].copy()
    gamma = buf.gamma[:m].copy()
    kind, mu = buf.kind[:m].copy(), buf.mu[:m].copy()
    if np.all(kind == BILATERAL) or np.array_equal(gamma, vecs[V_CONVEX][:m]):
        return H, c, gamma, kind, mu, np.zeros(m)
    return (H, c, gamma, ints[I_TRIAL_KIND][:m].copy(), vecs[V_TRIAL_MU][:m].copy(),
            vecs[V_WEIGHT][:m].copy())


class Branch:
    """The solve's optimality conditions at its solution, linearised on the branch each row
    and contact is on (module docstring): ``impulses(stationarity, constraint)`` is the change
    of gamma for given changes of the stationarity residual (m x k: d(P g + q) at fixed g)
    and of the sliding contacts' cone constraints (one row each). The parameters' columns'
    (A and B take jacobian_assembly.branch_factors, compiled)."""

    def __init__(self, H, c, gamma, kind, mu, weight) -> None:
        m = len(c)
        self.H, self.c, self.gamma, self.weight, self.mu = H, c, gamma, weight, mu
        weighted = H * weight[None, :]          # H diag(w)
        P = H + weighted @ H
        gradient = P @ gamma + c + weighted @ c
        sliding, tangent, slip, multiplier = (np.empty(m, dtype=np.int64), np.empty((m, 2)),
                                              np.empty(m), np.empty(m))
        free, K = np.empty(m, dtype=np.int64), np.empty((2 * m, 2 * m))
        n, ns = branch_system(P, gradient, gamma, kind, mu, SEPARATED, SLIDING,
                              np.empty(m, dtype=np.int64), sliding, tangent, slip, multiplier,
                              free, np.empty(m, dtype=np.int64), K)
        self.free, self.K, self.m = free[:n], K[:n + ns, :n + ns], m
        self.sliding = [(int(sliding[s]), tangent[s], float(slip[s]), float(multiplier[s]))
                        for s in range(ns)]  # (normal row, t, |g_t|, lambda)

    def impulses(self, stationarity, constraint=None) -> np.ndarray:
        """d gamma (m x k) for the residuals' changes (module docstring)."""
        n = len(self.free)
        rhs = np.zeros((len(self.K), stationarity.shape[1]))
        rhs[:n] = -stationarity[self.free]
        if constraint is not None:
            rhs[n:] = -constraint
        out = np.zeros((self.m, stationarity.shape[1]))
        out[self.free] = np.linalg.solve(self.K, rhs)[:n]
        return out

    def law_change(self, d_inverse, dc) -> np.ndarray:
        """The stationarity residual's change (m x k) for changes of the rows' compliances
        E^-1 (diagonal of H, m x k) and of c: dP g + dq with dP = D + D w H + H w D,
        dq = dc + D w c + H w dc (D = diag of a column of d_inverse)."""
        w = self.weight[:, None]
        pushed = self.H @ self.gamma + self.c   # the rows' law residuals r
        return (d_inverse * self.gamma[:, None] + d_inverse * w * pushed[:, None]
                + self.H @ (w * (d_inverse * self.gamma[:, None] + dc)) + dc)


class _Assembly:
    """jacobian_assembly.contact_jacobians_kernel's arrays as one JACOBIAN_ARRAYS table: the
    model's tables, the integrator's buffers (bound again when the integrator replaced one:
    its rows or contacts grew) and the workspace (made once per ProcessModel, kept on its
    ContactSteps, and again with a larger row capacity), and the kernel's compiled entry for
    their types (called directly: the dispatcher would type the arguments at every call)."""

    def __init__(self, process) -> None:
        model, nv, nj = process.model, process.nv, process.model.njoints
        self.nv, self.integrator = nv, process._contact.integrators[0]
        self.implicit = self.integrator._implicit is not None
        tables = _tables(model)
        self.model = (model.joint_int, model.joint_real, model.gravity, model.armature,
                      model.damping, tables.free, tables.joint_of, tables.chain, tables.support)
        # (M, frame_rates and rates zeroed once: step_dynamics writes the entries of dofs on
        # one branch only, and the free-flyers' blocks of frame_rates)
        self.dynamics = (np.empty((nj, 3, 3)), np.empty((nj, 3)), np.empty((nv, 6)),
                         np.empty((nj, 10)), np.empty((nj, 10)), np.empty((2 * nj, 6)),
                         np.empty((2 * nj, 6)), np.empty((2 * nj, 6)), np.empty((nj, 6)),
                         np.empty((2 * nj, 6)), np.empty((2 * nj, 6, 6)),
                         np.empty((4, nv, 6)), np.empty((2 * nv, 6)),
                         np.zeros((18, 6)), np.empty((2 * nj, 6)),
                         np.empty(nv), np.empty(nv), np.empty(nv), np.empty(6),
                         np.empty((3, 3)), np.empty(3), np.zeros((nv, nv)),
                         np.zeros((3, nv, nv)), np.empty((2, nv, nv)), np.zeros((2, nv, nv)),
                         np.empty((2, nv)), np.empty((nv, 18)),
                         np.empty((4, 3, 3)), np.empty(nv, dtype=np.int64))
        self.state = np.empty(2 * nv * 3 * nv)
        self.bound, self.capacity, self.contacts, self.entry = (None, None, None), 0, 0, None
        self.no_out = np.empty((0, 0))

    def _rows(self, capacity: int, contacts: int) -> None:
        """The buffers sized by the rows (m <= capacity) and contacts."""
        nv, nj, m = self.nv, self.model[0].shape[0], capacity
        p, k = m + 2, 3 * nv
        self.branch = (np.empty(m * m), np.empty(m * m), np.empty(m * m), np.empty(m),
                       np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64),
                       np.empty((m, 2)), np.empty(m), np.empty(m), np.empty(m, dtype=np.int64),
                       np.empty(m, dtype=np.int64), np.empty(4 * m * m),
                       np.empty(2 * m, dtype=np.int64), np.empty(2 * m * k), np.zeros(m),
                       np.empty(nv), np.empty(4 * m * m), np.empty(4 * m * m),
                       np.empty(2 * m * k), np.empty(2 * m * k), np.empty(2 * m * k))
        self.dG = np.zeros(m * nv * nv)
        self.blocks = (np.empty((nv, nv)), np.empty((nv, nv)), np.empty((nv, nv)), self.dG,
                       np.empty(m), np.empty(m), np.empty(m * k), np.empty(m * nv),
                       np.empty(m * k), np.empty(m * k), np.empty(m * k), np.empty((nv, nv)),
                       np.zeros(m * m), np.empty(3 * contacts), np.empty(nv * k),
                       np.empty((nv, nv)), np.empty(m * k), np.empty(nv * k),
                       np.empty(nv * k), np.empty(m * m))
        # the integration's derivatives off the free-flyers' blocks (the kernel writes those)
        integration_kernel(_tables(self.integrator.model).free,
                           self.integrator._constants[0][L_H], np.zeros(nv), True,
                           np.empty((4, 3, 3)), *self.blocks[:3])
        self.delassus = (np.empty((nv, nv)), np.empty(nv, dtype=np.int64), np.empty(nv * m),
                         np.empty(m), np.empty(nv * p), np.empty(nj * p * 6),
                         np.empty(nj * p * 6), np.empty((nv, 6)), np.empty((nv, nv)),
                         np.empty(m * nv), np.empty(m * nv), np.empty(m * nv), np.empty(nv),
                         np.empty(m * nv), np.empty(m * nv), np.empty(m * nv), np.empty(m * nv),
                         np.empty((nv, 2 * nv)), np.empty(m * nv),
                         np.empty(m * nv, dtype=np.int64), np.empty(m, dtype=np.int64),
                         np.empty(5 * nv * m))
        self.capacity, self.contacts = capacity, contacts

    def table(self) -> np.ndarray:
        """The kernel's JACOBIAN_ARRAYS table (bound again when the integrator replaced a
        buffer)."""
        it = self.integrator
        buf, contact_int, impacts = it._buffers, it._contact_int, it._impacts
        bound = self.bound
        if buf is not bound[0] or contact_int is not bound[1] or impacts is not bound[2]:
            if buf.capacity != self.capacity or len(it._contact_int) != self.contacts:
                self._rows(buf.capacity, len(it._contact_int))
            implicit = it._implicit if self.implicit else (np.empty((0, 0)),
                                                           np.empty(0, dtype=np.int64))
            shapes = it._shape_arrays[0]
            step_arrays = (implicit[0], implicit[1], it._counts, it._contact_int,
                           it._contact_real, shapes[2], shapes[5], it._frames[2], buf.G,
                           buf.directions, buf.kind, buf.mu, buf.gamma, buf.phi, buf.k, buf.b,
                           buf.W, buf.u, *buf.solver, it._impacts.phase, it._constants[0],
                           it._v_star, it._v_step, it._M, it._parent, buf.Z, it._frames[0],
                           it._frames[1], *_step_velocities(it))
            self._bound = JACOBIAN_ARRAYS.bind((*self.model, *step_arrays, *self.dynamics,
                                                *self.branch, *self.blocks, *self.delassus,
                                                self.state))
            self.bound = (buf, contact_int, impacts)
        return self._bound.table

    def __call__(self, x, rows_mode: int, contact_block: bool, out=None, out_u=None) -> int:
        """The kernel on the step just taken (its return code; A and B into ``out`` and
        ``out_u`` as the kernel's docstring says)."""
        table = self.table()
        if out is None:
            out = out_u = self.no_out
        if self.entry is None:
            kernel = contact_jacobians_kernel
            signature = tuple(kernel.typeof_pyval(a) for a in (x, rows_mode, contact_block,
                                                               self.implicit, table, out, out_u))
            kernel.compile(signature)  # (from the compiled-code cache)
            self.entry = kernel.overloads[signature].entry_point
        return self.entry(x, rows_mode, contact_block, self.implicit, table, out, out_u)

    def pair_rows(self) -> bool:
        """The rows' q-derivatives with pairs of shapes (_row_derivatives) into the buffer
        the kernel reads; False where unsupported."""
        m = int(self.integrator._counts[C_ROWS])
        dG = _row_derivatives(self.integrator, m)
        if dG is None:
            return False
        self.dG[:dG.size] = dG.ravel()  # (dG[b]: G's derivative along q_b)
        return True


def _step_velocities(integrator) -> tuple:
    """(ov, H, B, Yc): the bodies' velocities, the subtrees' momenta and velocity-product maps
    at the step's (q, v) and the composite inertias at q that its velocity terms left in its
    workspace (rnea_derivative.velocity_terms: its inverse dynamics' ov, coriolis_composites'
    sums into the ABA views pA, IA, crba_backward's composites in place of the bodies' oY;
    nothing after them in the step writes them)."""
    model = integrator.model
    views = DYNAMICS.views(integrator._ws, model.njoints, model.nv)
    return views.ov, views.pA, views.IA, views.oY


def _assembly(process) -> _Assembly:
    steps = process._contact
    if steps.jacobian_workspace is None:
        steps.jacobian_workspace = _Assembly(process)
    return steps.jacobian_workspace


def _take_step(process, x, u) -> None:
    """One step of the process model's first integrator from x = (q, v) under u (both
    C-ordered float64) with the held memory, its rows left in the buffers: ContactSteps.first,
    the path of ``step``."""
    steps = process._contact
    if steps.first(x, u, process._codes) != OK:
        raise RuntimeError(f"the step failed: {steps.message}")


class _Solved:
    """One step of the process model's first integrator at (x, u) with the held memory, its
    rows left in the buffers: what the parameters' columns are taken at (the branch made
    once per step)."""

    def __init__(self, process, x, u) -> None:
        self.integrator = integrator = process._contact.integrators[0]
        self.model, self.h, nq = process.model, process.dt, process.nq
        self.q, self.v = x[:nq].copy(), x[nq:].copy()
        _take_step(process, *_vectors(x, u))
        self.inverse = _step_matrix_inverse(integrator, self.q)
        self.m = int(integrator._counts[C_ROWS])
        self.G = integrator._buffers.G[:self.m]
        self.to_q, self.to_v, self.turn = _integration_derivatives(process.model, process.dt,
                                                                   integrator._v_step)
        self._branch = None

    def solve(self, B) -> np.ndarray:
        """K^-1 B."""
        return self.inverse @ B

    def branch(self) -> Branch:
        """The solve's branch at its solution."""
        if self._branch is None:
            self._branch = Branch(*last_problem(self.integrator, self.m))
        return self._branch

    def state_change(self, dv1) -> np.ndarray:
        """dx' (ndx x k) for a change dv1 of the step's velocity."""
        nv = len(self.to_q)
        out = np.empty((2 * nv, dv1.shape[1]))
        np.matmul(self.to_q, dv1, out=out[:nv])
        np.matmul(self.to_v, dv1, out=out[nv:])
        return out


def effort_jacobian(process, x, u, contact_block: bool = True) -> np.ndarray:
    """B = d x' / d u of the compliant step at (x, u) with the held memory (ndx x nv), exact:
    v* = v + h K^-1 (u + ...) (K: the step matrix, M~ or M~ + h dB/dv), the rows' free
    velocities G v*, the impulses' sensitivity, v1 = v* + K^-1 G^T gamma, and the
    integration's derivative. ``contact_block`` False drops the impulses' term (a check that
    must fail)."""
    return step_jacobians(process, x, u, contact_block)[2]


def velocity_jacobian(process, x, u) -> np.ndarray:
    """d x' / d v (ndx x nv) of the compliant step with implicit velocity terms, exact. The
    step solves K (v* - v) = h f with K = M~ + h B(v) - h M~ C(v), f = u - b - D v + M~ c(v)
    (B = dB/dv, c: the free-flyers' frame-rate term w x v_lin, C = dc/dv); b and c are
    quadratic in v, so B(v) y and C(v) y are symmetric bilinear: d(B(v) y)/dv = B(y), and the
    same for C. Hence dv*/dv = 1 + h K^-1 (-B(v*) - D + M~ C(v*)), and with the impulses
    z = K^-1 G^T gamma (K z = G^T gamma) dv1/dv = 1 + h K^-1 (-B(v1) - D + M~ C(v1))
    + K^-1 G^T dgamma/dv, where dgamma/dv comes from the rows' free velocities G dv*/dv (and a
    loading impact's closing root, which takes the row's start velocity G v too). The rows
    themselves (G, phi, the laws) depend on q only."""
    if process._contact.integrators[0]._implicit is None:
        raise NotImplementedError("velocity_jacobian: implicit velocity terms only")
    return step_jacobians(process, x, u)[1]


def configuration_jacobian(process, x, u) -> np.ndarray:
    """d x' / d q (ndx x nv, q moved in the tangent space) of the compliant step with implicit
    velocity terms, exact, for contacts of spheres and points (box corners, mesh points) with
    the ground or a heightfield (their normal fixed while q moves: a plane's, a terrain
    cell's) and for the pairs of shapes _pair_motion follows (sphere against sphere, a sphere
    or a point against a static or moving box: their normal turning with them; a box's
    corners on a static box's face): None for the others (box against box otherwise,
    cylinders' and meshes' own pairs) or a limit being recovered. Moving q
    along dof b turns the world motion subspaces of the dofs it supports,
    dS_k = ad(S_b) S_k, moves the contact's sphere centre c by S_b's velocity there (the
    point x = c - r n follows), so dG_r = d_r . (dS_k at x + w_k x dc), dphi = G[:, b]; the
    Hertz law follows the depth; W = G M~^-1 G^T with dM by inverse dynamics' derivatives;
    v* and the impulses through K (dK y = Mq(y) + h d(B y)/dq - h Mq(C(v) y), Mq(a) the
    derivative of M a); the integration turns the free-flyer's step (docs/ESTIMATION.md)."""
    if process._contact.integrators[0]._implicit is None:
        raise NotImplementedError("configuration_jacobian: implicit velocity terms only")
    return step_jacobians(process, x, u)[0]


def step_jacobians(process, x, u, contact_block: bool = True) -> tuple:
    """(d x'/d q, d x'/d v, d x'/d u) from one step at (x, u) and one compiled call
    (jacobian_assembly.contact_jacobians_kernel), the first two with implicit velocity terms
    only (else None; the first None also where the rows' q-derivatives are not known: some
    pairs of shapes, a limit in recovery). Their columns side by side: per block, v* moves
    by dv* (q: K^-1 P(v* - v); v: 1 + h K^-1 (-B(v*) - D + M~ C(v*)); u: h K^-1), the rows'
    free velocities G dv* through G K^-1 (one solve with K^T) and the laws with them (q:
    also the rows, the Delassus matrix and the laws moved with q), the impulses by the
    branch's linearisation (one solve of its system), and v1 by one solve with K of its own
    terms (q: P(v1 - v); v: at v1; u: as v*) plus G^T dgamma (+ dG^T gamma for q).
    ``contact_block`` False drops the impulses' term (a check that must fail)."""
    code = _assembled(process, *_vectors(x, u), contact_block)
    state = _state(process, code)
    blocks = (code == SUPPORTED, process._contact.jacobian_workspace.implicit, True)
    nv = process.nv
    out, first = [], 0
    for on in blocks:
        out.append(state[:, first:first + nv].copy() if on else None)
        first += nv if on else 0
    return tuple(out)


def state_jacobians(process, x, u) -> tuple:
    """(A, B, known) of the compliant step with implicit velocity terms at (x, u) as
    ProcessModel.jacobians checked them (C-ordered float64) from one step and one compiled
    call (step_jacobians' blocks, written into A and B by the call): A (ndx x ndx) with its
    configuration columns where ``known`` (else left for the caller: step_jacobians' first
    None), B (ndx x nv)."""
    nv = process.nv
    A, B = np.empty((2 * nv, 2 * nv)), np.empty((2 * nv, nv))
    code = _assembled(process, x, u, True, A, B)
    if code == SUPPORTED:  # (the call wrote A and B)
        return A, B, True
    state = _state(process, code)
    A[:, nv:] = state[:, :nv]
    B[:, :] = state[:, nv:]
    return A, B, False


def _vectors(x, u) -> tuple:
    """x and u as the compiled calls read them (C-ordered float64; copied where not)."""
    return np.ascontiguousarray(x, dtype=float), np.ascontiguousarray(u, dtype=float)


def _assembled(process, x, u, contact_block: bool, out=None, out_u=None) -> int:
    """The compiled call's code of one step at (x, u) (C-ordered float64: _vectors) and the
    compiled call on it (contact_block: step_jacobians'; out, out_u: _Assembly.__call__'s); its
    output: _state."""
    _take_step(process, x, u)
    assembly = _assembly(process)
    code = assembly(x, ROWS_FIND, contact_block, out, out_u)
    if code == NEED_PAIR_ROWS:
        code = assembly(x, ROWS_GIVEN if assembly.pair_rows() else ROWS_NONE, contact_block,
                        out, out_u)
    if code == SINGULAR_BRANCH:
        raise RuntimeError("the contact solve's branch is singular at its solution")
    return code


def _state(process, code: int) -> np.ndarray:
    """The compiled call's output for its code: 2 nv x k, the blocks' columns side by side
    (the table's state holds the q and v blocks' columns, then the u block's)."""
    assembly, nv = process._contact.jacobian_workspace, process.nv
    k = nv * (1 + assembly.implicit + (code == SUPPORTED))
    state = assembly.state
    return np.concatenate((state[:2 * nv * (k - nv)].reshape((2 * nv, k - nv)),
                           state[2 * nv * (k - nv):2 * nv * k].reshape((2 * nv, nv))), axis=1)


class _Tables:
    """A model's tables for the configuration columns: joint_of (nv), support (nv x nv, 1.0: dof
    b's joint is dof k's joint or an ancestor, so moving b turns S_k), chain (njoints x nv:
    dof k moves body i), free (the free-flyers' first dofs)."""

    def __init__(self, model) -> None:
        nv, nj = model.nv, model.njoints
        self.joint_of = np.zeros(nv, dtype=np.int64)
        for j in range(nj):
            self.joint_of[model.idx_v[j]:model.idx_v[j] + model.joint_int[j, I_NV]] = j
        self.chain = np.zeros((nj, nv))
        for i in range(nj):
            self.chain[i, _body_dofs(model, i)] = 1.0
        self.support = np.ascontiguousarray(self.chain[self.joint_of].T > 0.0,
                                            dtype=float)  # [b, k]: b moves k's joint
        self.free = np.array([model.idx_v[j] for j in range(nj)
                              if model.joint_kinds[j] == "free_flyer"], dtype=np.int64)


_TABLES: dict[int, _Tables] = {}


def _tables(model) -> _Tables:
    """The model's _Tables, made on first use, kept beside it (dropped with it)."""
    tables = _TABLES.get(id(model))
    if tables is None:
        tables = _TABLES[id(model)] = _Tables(model)
        weakref.finalize(model, _TABLES.pop, id(model), None)
    return tables


def _row_derivatives(integrator, m: int):
    """dG (nv, m, nv), dG[b, r, k] = d G[r, k] / d q_b, for the contacts and the joint limit
    and friction rows (constant); None where unsupported (a limit in recovery, _pair_motion's
    None). With the ground and the terrain (their normal
    fixed), all at once in jacobian_kernels.row_derivatives_kernel: on the dofs k, b that move
    the contact's body, dG_r = d_r . (support[b, k] (dv + dw x x) + w_k x dc_b) with
    dS_k = (dv, dw) = ad(S_b) S_k and dc_b = S_b's velocity at the sphere's centre; pairs of
    shapes (_pair_rows) after it, their normal turning with them. (The compiled call does the
    ground's and terrain's alone; this, where pairs of shapes touch.)"""
    model, nv = integrator.model, integrator.model.nv
    n = int(integrator._counts[C_CONTACTS])
    contact_int, contact_real = integrator._contact_int, integrator._contact_real
    buf = integrator._buffers
    if np.any(buf.kind[3 * n:m] == BILATERAL):
        return None  # a limit in recovery
    shapes = integrator._shape_arrays[0]
    kinds, sizes = shapes[2], shapes[5]
    oS = integrator._frames[2]
    tables = _tables(model)
    dG = np.zeros((nv, m, nv))
    if n == 0:
        return dG
    shape = contact_int[:n, 2]
    normal, x = contact_real[:n, 3:6], contact_real[:n, 0:3]
    radius = np.where(kinds[shape] == SPHERE, sizes[shape, 0], 0.0)
    centre = x + radius[:, None] * normal
    row_derivatives_kernel(oS, tables.support, tables.chain, contact_int[:n, 0].copy(),
                           np.ascontiguousarray(x), centre, buf.directions,
                           np.empty((nv, 18)), dG)
    for contact in np.flatnonzero(contact_int[:n, 3] >= 0):
        motion = _pair_motion(integrator, tables, oS, contact)
        if motion is None:
            return None
        _pair_rows(integrator, tables, oS, contact, *motion, dG)
    return dG


def _point_motion(tables, oS, body, point) -> np.ndarray:
    """d p / d q (3 x nv) of a point fixed to a body (-1: the world, zero)."""
    if body < 0:
        return np.zeros((3, oS.shape[0]))
    return ((oS[:, :3] + np.cross(oS[:, 3:], point)) * tables.chain[body][:, None]).T


def _pair_motion(integrator, tables, oS, contact):
    """(dn, dx) (3 x nv each): how a pair contact's normal and point move with q, or None
    (cylinders' and meshes' own pairs, box against box at a clipped point). Sphere a
    against sphere b (contact.detection.shape_pair_contacts): n = (c_a - c_b) / |c_a - c_b|,
    x = c_b + r_b n, so
    dn = (1 - n n^T) (dc_a - dc_b) / |c_a - c_b|, dx = dc_b + r_b dn. A sphere or a point
    against a box (static or moving; point_box_contact): in the box's axes l = R^T (c - o),
    outside n = R e / |e| with e = l - clamp(l), inside (or e along one axis: a face) the
    face's normal; dn = w_box x n + R (1 - m m^T) P dl / |e| on an edge or a corner (P: the
    clamped axes), dl = R^T (dc - do - w_box x (c - o)), and x = c - r n. Box against box:
    _box_vertex_motion."""
    contact_int, contact_real = integrator._contact_int, integrator._contact_real
    body_a, body_b, s, s2 = contact_int[contact]
    shapes, scratch = integrator._shape_arrays[0], integrator._shape_arrays[1]
    kinds, sizes, wR, wp = shapes[2], shapes[5], scratch[0], scratch[1]
    x, n = contact_real[contact, 0:3], contact_real[contact, 3:6]
    if kinds[s] == SPHERE and kinds[s2] == SPHERE:
        r_a, r_b = sizes[s, 0], sizes[s2, 0]
        distance = contact_real[contact, 6] + r_a + r_b
        c_b = x - r_b * n
        moved_b = _point_motion(tables, oS, body_b, c_b)
        relative = _point_motion(tables, oS, body_a, c_b + distance * n) - moved_b
        dn = (relative - np.outer(n, n @ relative)) / distance
        return dn, moved_b + r_b * dn
    if kinds[s] == BOX and kinds[s2] == BOX:
        return _box_vertex_motion(tables, oS, contact_int[contact], x, n, wR, wp, sizes)
    if kinds[s2] != BOX:
        return None
    r = sizes[s, 0] if kinds[s] == SPHERE else 0.0
    centre = x + r * n
    R, origin, half = wR[s2], wp[s2], sizes[s2]
    local = R.T @ (centre - origin)
    outside = np.abs(local) > half
    turn = (oS[:, 3:] * tables.chain[body_b][:, None]).T if body_b >= 0 else np.zeros_like(
        oS[:, 3:].T)                                                     # w_box (3 x nv)
    moved = _point_motion(tables, oS, body_a, centre)
    dn = np.cross(turn.T, n).T
    if np.count_nonzero(outside) >= 2:  # an edge or a corner: the normal follows the point
        e = np.where(outside, local - np.clip(local, -half, half), 0.0)
        gap = np.linalg.norm(e)
        m = e / gap
        dl = R.T @ (moved - _point_motion(tables, oS, body_b, origin)
                    - np.cross(turn.T, centre - origin).T)
        de = dl * outside[:, None]
        dn = dn + R @ ((de - np.outer(m, m @ de)) / gap)
    return dn, moved - r * dn


def _box_vertex_motion(tables, oS, pair, x, n, wR, wp, sizes):
    """(dn, dx) of a box-box contact (detection.box_box) at a vertex of a moving box inside a
    static box's reference face (vertex-face): the normal stays, dn = 0, the vertex moves with
    its box; None for a point the clipping made (on an incident edge, it slides along it) and
    for a moving reference face (dn = w_ref x n: its rows' derivatives agree with differences
    to 4e-10, but A did not, 1e-4 on a box on a box, not understood). The reference face is
    box_box's: of the 6 face axes, the one of least penetration, b's faces first on ties."""
    body_a, body_b, s, s2 = pair
    Ra, Rb, ha, hb = wR[s], wR[s2], sizes[s], sizes[s2]
    offset = wp[s] - wp[s2]
    best_gap, best = -np.inf, 0
    for axis in range(6):
        u = (Rb if axis < 3 else Ra)[:, axis % 3]
        gap = abs(offset @ u) - ha @ np.abs(Ra.T @ u) - hb @ np.abs(Rb.T @ u)
        if gap > best_gap + 1e-9:
            best_gap, best = gap, axis
    reference, incident = (body_b, s) if best < 3 else (body_a, s2)
    corner = np.abs(wR[incident].T @ (x - wp[incident]))
    if reference >= 0 or np.abs(corner - sizes[incident]).max() > 1e-9 * sizes[incident].max():
        return None  # a moving reference face (not checked: see docs), a clipped point
    return np.zeros((3, oS.shape[0])), _point_motion(tables, oS, pair[0] if incident == s
                                                     else pair[1], x)


def _pair_rows(integrator, tables, oS, contact, dn, dx, dG) -> None:
    """The rows of a pair contact (body a pushed along n, body b or the world the other way)
    into dG (dG[b, r, k]): G_r = d_r . (V_a(x) - V_b(x)) with V(x)_k = v_k + w_k x x on the
    body's dofs;
    dd = dn on the normal row, dt = -(t . dn) n on the tangents (turned with the normal; the
    cone and the laws are invariant about it)."""
    body_a, body_b = integrator._contact_int[contact, 0:2]
    x = integrator._contact_real[contact, 0:3]
    rows = slice(3 * contact, 3 * contact + 3)
    directions = integrator._buffers.directions[rows]                      # (3, 3): n, t1, t2
    normal = directions[0]
    turned = -np.einsum("ed,db->eb", directions, dn)[:, None, :] * normal[None, :, None]
    turned[0] = dn                                                          # dd_e (3, 3, nv)
    lin, ang = oS[:, :3], oS[:, 3:]
    dv = np.cross(ang[:, None], lin[None]) + np.cross(lin[:, None], ang[None])  # [b, k]
    dw = np.cross(ang[:, None], ang[None])
    dG[:, rows] = 0.0
    for body, sign in ((body_a, 1.0), (body_b, -1.0)):
        if body < 0:
            continue
        chain = tables.chain[body]
        velocity = (lin + np.cross(ang, x)) * chain[:, None]               # V_k(x) (k, 3)
        changed = (tables.support[:, :, None] * (dv + np.cross(dw, x))).transpose(1, 0, 2)
        changed = (changed + np.cross(ang[:, None, :], dx.T[None, :, :])) * chain[:, None, None]
        dG[:, rows] += sign * (np.einsum("edb,kd->bek", turned, velocity)
                               + np.einsum("ed,kbd->bek", directions, changed))


def _law_derivatives(solved, trace, diagonal, du, dphi):
    """(dE^-1, dc) (m x p) of the rows' laws (cone_solver.prepare_rows) for p changes of the
    Delassus matrix (``trace``: tr dW, ``diagonal``: dW_rr) and of the rows' gaps (dphi) and
    free velocities (du), the rows held: jacobian_assembly.law_derivatives."""
    integrator, m = solved.integrator, solved.m
    buf, p = integrator._buffers, du.shape[1]
    d_inverse, dc = np.empty((m, p)), np.empty((m, p))
    law_derivatives_kernel(buf.kind[:m], buf.k[:m], buf.b[:m], buf.phi[:m], buf.W, buf.G,
                           buf.u, solved.v, integrator._contact_real, integrator._impacts.phase,
                           integrator._constants[0], int(integrator._counts[C_CONTACTS]),
                           np.ascontiguousarray(trace, dtype=float),
                           np.ascontiguousarray(diagonal), np.ascontiguousarray(du),
                           np.ascontiguousarray(dphi), np.zeros((1, 1, 1)), False, np.empty(p),
                           d_inverse, dc)
    return d_inverse, dc


def _body_dofs(model, body) -> list:
    """The dofs of the joints from body to the root."""
    dofs, j = [], body
    while j >= 0:
        dofs.extend(range(model.idx_v[j], model.idx_v[j] + model.joint_int[j, I_NV]))
        j = model.parent[j]
    return dofs


def _frame_rate_jacobian(model, v) -> np.ndarray:
    """C(v) = dc/dv of the free-flyers' frame-rate term c = w x v_lin (on their linear rows):
    [[w]x, -[v_lin]x] (jacobian_kernels.frame_rate_jacobian)."""
    C = np.empty((model.nv, model.nv))
    frame_rate_jacobian(_tables(model).free, np.ascontiguousarray(v, dtype=float), C)
    return C


PARAMETERS = ("friction", "stiffness", "mass:<link>")


def parameter_jacobian(process, x, u, params) -> np.ndarray:
    """d x' / d p (ndx x len(params)) of the compliant step: "mass:<link>" (a link's mass,
    _mass_column) and the scene's material, "friction" (the Coulomb coefficient mu of every
    contact) and "stiffness" (the Hertz effective modulus E*, or a plain-stiffness ground's
    k). The material's two act only through the
    impulses: mu through the sliding contacts' cones (d/dmu of lambda grad f is
    (-lambda, 0, 0), of f is -g_n), the stiffness through the normal rows' laws
    (k = 4/3 E* sqrt(R delta), b = dissipation k delta + damping: E^-1 = 1 / (h (h k + b)),
    c = u + k / (h k + b) phi) and through a loading impact's closing root."""
    names = process.model.body_names
    unknown = [p for p in params if p not in PARAMETERS[:2]
               and not (p.startswith("mass:") and p[5:] in names)]
    if unknown:
        raise ValueError(f"params: {unknown} not among {PARAMETERS} (links: {names})")
    solved = _Solved(process, x, u)
    columns = np.zeros((process.ndx, len(params)))
    if not solved.m:
        return columns
    branch = solved.branch()
    for j, name in enumerate(params):
        stationarity = np.zeros((solved.m, 1))
        constraint = np.zeros((len(branch.sliding), 1))
        if name.startswith("mass:"):
            columns[:, j] = _mass_column(solved, process, branch, names.index(name[5:]))
            continue
        if name == "friction":
            for s, (i, _, _, lam) in enumerate(branch.sliding):
                stationarity[i, 0] = -lam
                constraint[s, 0] = -branch.gamma[i]
        else:
            d_inverse, dc = _stiffness_change(solved)
            stationarity = branch.law_change(d_inverse[:, None], dc[:, None])
        dgamma = branch.impulses(stationarity, constraint)
        columns[:, j] = solved.state_change(solved.solve(solved.G.T @ dgamma))[:, 0]
    return columns


def _mass_column(solved, process, branch, body: int) -> np.ndarray:
    """d x' / d m of a link's mass (its centre of mass and rotational inertia about it held).
    Inverse dynamics is linear in m, so M, b = rnea(q, v, 0) and B = dB/dv move by the
    differences of two evaluations at m -+ dm (exact up to rounding); then as for q:
    K dv* = h (-db + dM c) - dK (v* - v), dK = dM + h dB - h dM C(v), dW = -A^T dM A
    (A = M~^-1 G^T), the rows' laws (the friction rows' regularization, an impact's row
    mass) and the impulses through K."""
    model, h, integrator = process.model, process.dt, solved.integrator
    q, v, nv = solved.q, solved.v, process.nv
    zero = np.zeros(nv)
    step = max(model.joint_real[body, R_MASS], 1e-3)
    parts = []
    for sign in (1.0, -1.0):
        changed = copy.copy(model)
        changed.joint_real = model.joint_real.copy()
        changed.joint_real[body, R_MASS] += sign * step
        parts.append((crba(changed, q), rnea(changed, q, v, zero),
                      rnea_derivatives(changed, q, v, zero)[1]))
    dM, db, dB = ((a - b) / (2.0 * step) for a, b in zip(*parts))
    C = _frame_rate_jacobian(model, v)
    c = C @ v * 0.5
    v_star, v1 = integrator._v_star, integrator._v_step

    def step_matrix(w):  # dK w
        return dM @ w + h * dB @ w - h * dM @ (C @ w)

    force = h * (-db + dM @ c)
    dv_star = solved.solve((force - step_matrix(v_star - v))[:, None])
    dv1 = solved.solve((force - step_matrix(v1 - v))[:, None])
    if solved.m:
        G = solved.G
        A = np.linalg.solve(crba(model, q) + h * np.diag(model.damping), G.T)
        dW = (-A.T @ dM @ A)[:, :, None]
        dc_rows = G @ dv_star
        d_inverse, dc = _law_derivatives(solved, np.trace(dW), np.einsum("rrb->rb", dW),
                                         dc_rows, np.zeros((solved.m, 1)))
        dH = dW[:, :, 0] + np.diag(d_inverse[:, 0])
        pushed = branch.H @ branch.gamma + branch.c
        w = branch.weight
        residual = (dH @ branch.gamma + dH @ (w * pushed)
                    + branch.H @ (w * (dH @ branch.gamma + dc[:, 0])) + dc[:, 0])
        dgamma = branch.impulses(residual[:, None])
        dv1 = dv1 + solved.solve(G.T @ dgamma)
    return solved.state_change(dv1)[:, 0]


def _stiffness_change(solved) -> tuple[np.ndarray, np.ndarray]:
    """d E^-1 and d c (m) per unit of the material's stiffness parameter (E* for Hertz, else
    k), on the contacts' normal rows that take the material's law."""
    integrator, m = solved.integrator, solved.m
    buf, law = integrator._buffers, integrator._constants[0]
    h = integrator.dt
    hertz = law[L_STIFFNESS] < 0.0
    parameter = law[L_E_STAR] if hertz else law[L_STIFFNESS]
    own = integrator._shape_arrays[2][0]
    impacts = integrator._impacts
    d_inverse, dc = np.zeros(m), np.zeros(m)
    for contact in range(int(integrator._counts[C_CONTACTS])):
        r = 3 * contact
        if np.isfinite(own[integrator._contact_int[contact, 2]]):
            continue  # the shape's own law
        if impacts.phase[contact] == LOADING:
            dc[r] = -_closing_root_change(integrator, contact, solved.G, solved.v) / parameter
            continue
        if impacts.phase[contact] != 0:
            continue  # unloading: Newton's target, no stiffness
        k, b, phi = buf.k[r], buf.b[r], buf.phi[r]
        dk = k / parameter if hertz else 1.0
        db = (b - law[L_DAMPING]) / parameter if hertz and b > 0.0 else 0.0
        soft = h * k + b
        dsoft = h * dk + db
        d_inverse[r] = -dsoft / (h * soft * soft)
        dc[r] = (dk * soft - k * dsoft) / (soft * soft) * phi
    return d_inverse, dc


def _closing_root_change(integrator, contact, G, v) -> float:
    """K dw1/dK of a loading impact's target: f(w; K) = 0 with f's K-terms U(d) - U(d0)
    (U = 2/5 K d^(5/2)), so K dw1/dK = -(U(d) - U(d0)) / f'(w1)."""
    buf, law, h = integrator._buffers, integrator._constants[0], integrator.dt
    r = 3 * contact
    mass = 1.0 / buf.W[r, r]
    w0 = float(G[r] @ v)
    w1 = -buf.phi[r] / h
    d0 = -integrator._contact_real[contact, 6]
    d = d0 - h * w1
    K = 4.0 / 3.0 * law[L_E_STAR] * np.sqrt(integrator._contact_real[contact, 7])
    energy = (0.4 * K * d ** 2.5 if d > 0.0 else 0.0) - (0.4 * K * d0 ** 2.5 if d0 > 0.0
                                                         else 0.0)
    slope = mass * w1 - mass * (buf.u[r] - w0) - (h * K * d * np.sqrt(d) if d > 0.0 else 0.0)
    return -energy / slope


def _step_matrix_inverse(integrator, q) -> np.ndarray:
    """K^-1, K the matrix the step applied its forces and impulses through: from the
    implicit step's LU (K = M~ + h dB/dv - h M~ dc/dv), else M~ = M + h D at q."""
    implicit = integrator._implicit
    if implicit is not None:  # from its factors (tree or pivoted LU), inverted once
        inverse = np.empty(implicit.K.shape)
        lu_inverse(implicit.K, implicit.pivots, inverse, np.empty(len(inverse), dtype=np.int64))
        return inverse
    model = integrator.model
    return np.linalg.inv(crba(model, q) + integrator.dt * np.diag(model.damping))


def _integration_derivatives(model, h, v1) -> tuple:
    """(dq'/dv1 in the tangent space at q', dv'/dv1, dq'/dq at fixed v1) of
    integrate_world_aligned: one-dof joints q' = q + h v1, v' = v1; a free-flyer
    p' = p + h R u, R' = R E, E = exp(h [w]), v'_lin = E^T u: in q' (+) (dv, dw) (pinocchio's
    body twist) dv = h E^T du, dw = h Jr(h w) dw1; dv'_lin = E^T du + h E^T [u]x Jr(-h w)
    dw1 (Jr: SO(3)'s right Jacobian); q moved by (dv, dw) in its body axes gives q' moved
    by (E^T (dv - h [u]x dw), E^T dw) (jacobian_kernels.integration_kernel)."""
    nv = model.nv
    to_q, to_v, turn = np.empty((nv, nv)), np.empty((nv, nv)), np.empty((nv, nv))
    integration_kernel(_tables(model).free, h, v1, True, np.empty((4, 3, 3)), to_q, to_v,
                       turn)
    return to_q, to_v, turn
