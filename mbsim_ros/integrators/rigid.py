"""The rigid-contact integrator : ODE's velocity-level time stepping (the ROS wiki's
"ODE Solvers" page;
docs/RIGID.md). The step is the compliant integrator's (Jacobians, bias and M from the start of
the step, rows for contacts, joint limits and point constraints, free-flyers, outputs); only the
constraint solve differs, ODE's bounded LCP with error reduction (ERP) and constraint force
mixing (CFM):

    r = (W + CFM / h) gamma + u + e phi0,   W = G M~^-1 G^T,  u = G v*,
        e = ERP / h (a violation, phi0 <= 0, and bilateral rows) or 1 / h (a gap: speculative)
    contact normals, joint limits: gamma >= 0, r >= 0, gamma r = 0
    friction t1 (along the slip), t2: |gamma_t| <= mu gamma_n (box bounds, ODE's findex)
    bilateral rows: r = 0
    joint friction: |gamma_j| <= friction_j h (box bounds)

solved by projected Gauss-Seidel with over-relaxation (ODE's quickstep) or Dantzig pivoting
(ODE's dWorldStep), both in mbsim_ros/integrators/lcp.py.
"""
from __future__ import annotations

import numpy as np

from ..codes import FRICTION, NORMAL, OK, TANGENT, UNILATERAL, message
from ..contact.scene import Scene
from .base import register
from .compliant import LIMIT_RECOVERY, CompliantIntegrator
from .lcp import dantzig_kernel, natural_residual, pgs_kernel

SOLVERS = ("pgs", "pivoting")
PGS_TOLERANCE = 1e-10   # a sweep that moves no impulse by more than this (relative) ends PGS
PIVOTING_PASSES = 8     # re-solves with the friction bounds from the last normal impulses


@register("rigid")
class RigidIntegrator(CompliantIntegrator):
    """Options: ``scene`` (contact.Scene), ``solver`` ("pgs": projected Gauss-Seidel with SOR,
    ODE's quickstep; "pivoting": Dantzig principal pivoting, ODE's dWorldStep, falling back to
    PGS, flagged in StepInfo.fallback, when it fails), ``erp`` (error reduction parameter: the
    fraction of a violation removed per step, ODE's 0.2), ``cfm`` (constraint force mixing,
    m/(N s): ODE's single-precision default 1e-5), ``max_iterations`` (PGS sweeps at most),
    ``tolerance`` (a PGS sweep that moves no impulse by more than this, relative, ends it),
    ``sor`` (over-relaxation, ODE's 1.3), ``joint_limits``, ``limit_recovery`` (a violated
    limit comes back at min(violation / time constant, cap): the row's ERP target capped),
    ``joint_friction``, ``constraints`` (PointConstraint list), ``margin`` (m: contacts watched
    before touching), ``max_contacts``, ``velocity_terms`` (as the compliant integrator's:
    "implicit" by default); ``servo()`` as the compliant integrator's."""

    compiled_solve = False  # _solve below replaces the compliant solve
    renamed_options = {"iterations": "max_iterations"}

    def __init__(self, model, dt: float, *, scene: Scene | None = None, solver: str = "pgs",
                 erp: float = 0.2, cfm: float = 1e-5, max_iterations: int = 50, sor: float = 1.3,
                 tolerance: float = PGS_TOLERANCE,
                 joint_limits: bool = True, constraints: list | tuple = (),
                 margin: float = 0.01, max_contacts: int = 512,
                 limit_recovery: tuple = LIMIT_RECOVERY, joint_friction: bool = True,
                 velocity_terms: str = "implicit") -> None:
        _check_options(solver, erp, cfm, max_iterations, sor)
        if not (isinstance(tolerance, (int, float)) and 0.0 < tolerance < 1.0):
            raise ValueError(f"tolerance must be in (0, 1), got {tolerance!r}")
        super().__init__(model, dt, scene=scene, joint_limits=joint_limits,
                         constraints=constraints, margin=margin, max_contacts=max_contacts,
                         limit_recovery=limit_recovery, joint_friction=joint_friction,
                         velocity_terms=velocity_terms)
        self.solver = solver
        self.erp, self.cfm = float(erp), float(cfm)
        self.iterations, self.sor = int(max_iterations), float(sor)
        self.tolerance = float(tolerance)
        self._inverse = np.zeros((0, 0))
        self._reserve(24)

    def _limit_rate(self) -> float:
        return self.erp / self.dt  # a violated row's phi is removed at ERP / h

    def _reserve(self, rows: int) -> None:
        """Workspaces of the LCP solvers for this many rows (grown, never shrunk)."""
        if rows <= self._inverse.shape[0]:
            return
        rows = max(rows, 2 * self._inverse.shape[0])
        self._inverse = np.zeros((rows, rows))
        self._ints = np.zeros((2, rows), dtype=np.int64)
        self._reals = np.zeros((6, rows))
        self._x = np.zeros(rows)

    def _solve(self, W, u, G, phi, kind, k, b, mu):
        """gamma (impulses) of ODE's bounded LCP for the rows (None: no finite solution)."""
        info = self._info
        problem = self._problem(W, u, phi, kind, mu)
        self._reserve(len(kind))
        x = self._x[:len(kind)]
        x[:] = 0.0
        if self.solver == "pivoting":
            self._pivot(problem, x)
        if self.solver == "pgs" or info.fallback:
            info.iterations += pgs_kernel(*problem, self.iterations, self.sor, self.tolerance, x)
        info.residual = natural_residual(*problem[:-1], x)
        if not (np.all(np.isfinite(x)) and np.isfinite(info.residual)):
            info.message = "the LCP solution is not finite"
            return None
        return x.copy()

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
        info = self._info
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


def _check_options(solver: str, erp: float, cfm: float, iterations: int, sor: float) -> None:
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
    if not _is_number(erp) or not 0.0 <= erp <= 1.0:
        raise ValueError(f"erp must be a number in [0, 1], got {erp!r}")
    if not _is_number(cfm) or not 0.0 <= cfm < np.inf:
        raise ValueError(f"cfm must be a non-negative number (m/(N s)), got {cfm!r}")
    if not _is_number(sor) or not 0.0 < sor < 2.0:
        raise ValueError(f"sor must be a number in (0, 2), got {sor!r}")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise ValueError(f"max_iterations must be a positive integer, got {iterations!r}")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
