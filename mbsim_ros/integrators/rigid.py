"""The rigid-contact integrator: ODE's velocity-level time stepping (the ROS wiki's "ODE
Solvers" page; docs/RIGID.md). It is a configuration of the constraint-row step (compliant.py:
Jacobians, bias and M from the start of the step, rows for contacts, joint limits and point
constraints, free-flyers, outputs) with another row solver, row_solvers.LcpRows: ODE's bounded
LCP with error reduction (ERP) and constraint force mixing (CFM):

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

from ..contact.scene import Scene
from .base import register
from .compliant import LIMIT_RECOVERY, CompliantIntegrator
from .row_solvers import PGS_TOLERANCE, LcpRows

SOLVERS = ("pgs", "pivoting")


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
    "implicit" by default)."""

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
        self.rows = LcpRows(dt, solver, self.erp, self.cfm, self.iterations, self.sor,
                            self.tolerance)


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
