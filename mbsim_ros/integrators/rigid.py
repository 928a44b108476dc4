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
(ODE's dWorldStep), both in mbsim_ros/solvers/lcp.py.
"""
from __future__ import annotations

import warnings

from ..arena import ArenaPlan
from ..contact.scene import Scene
from .base import register
from .compliant import CompliantIntegrator, gives_restitution
from .options import LIMIT_RECOVERY, RigidOptions
from .row_solvers import PGS_TOLERANCE, LcpRows


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
    options_schema = RigidOptions
    sets_impacts_on_energy = False  # ODE's rows: no Hertz law

    def __init__(self, model, dt: float, *, scene: Scene | None = None, solver: str = "pgs",
                 erp: float = 0.2, cfm: float = 1e-5, max_iterations: int = 50, sor: float = 1.3,
                 tolerance: float = PGS_TOLERANCE,
                 joint_limits: bool = True, constraints: list | tuple = (),
                 margin: float = 0.01, max_contacts: int = 512,
                 limit_recovery: tuple = LIMIT_RECOVERY, joint_friction: bool = True,
                 velocity_terms: str = "implicit", plan: ArenaPlan | None = None) -> None:
        super().__init__(model, dt, scene=scene, joint_limits=joint_limits,
                         constraints=constraints, margin=margin, max_contacts=max_contacts,
                         limit_recovery=limit_recovery, joint_friction=joint_friction,
                         velocity_terms=velocity_terms, plan=plan)
        self.solver = solver
        self.erp, self.cfm = float(erp), float(cfm)
        self.iterations, self.sor = int(max_iterations), float(sor)
        self.tolerance = float(tolerance)
        self.rows = LcpRows(dt, solver, self.erp, self.cfm, self.iterations, self.sor,
                            self.tolerance)
        if scene is not None and gives_restitution(scene):
            warnings.warn("the scene gives a restitution, which the rigid integrator does not "
                          "model: its impacts are plastic (ODE's rows; the compliant "
                          "integrator's impacts take it: docs/COMPLIANT.md#impacts)",
                          stacklevel=2)
