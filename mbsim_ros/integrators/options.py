"""The integrators' options, one schema each (INTEGRATORS.md): names, types, ranges, choices
and defaults in one place, checked by make_integrator before an integrator is built (a
misspelled option or choice names the nearest valid one). The options that carry Python
objects (a scene, constraints, springs, forces) are the library's, not a config's."""
from __future__ import annotations

from typing import Annotated, Any, Literal

from annotated_types import Ge, Gt, Le, Lt

from ..schema import Count, Flag, Index, NonNegative, Number, Positive, Real, Schema, Whole
from ..solvers.cone_qp import GAP_TOLERANCE, ITERATIONS
from .row_solvers import PGS_TOLERANCE

VELOCITY_TERMS = ("explicit", "implicit")
ROOT_FINDERS = {"riqn": 0, "newton": 1, "broyden": 2}
GUESSES = {"IG1": 1, "IG2": 2, "IG3": 3}
MAX_ANDERSON = 8
CONES = ("true", "pyramid")
QP_SOLVERS = ("interior", "clarabel", "osqp")
LCP_SOLVERS = ("pgs", "pivoting")
IMPACT_LAWS = ("energy", "spring")
LIMIT_RECOVERY = (0.02, 1.0)  # a violated joint limit: time constant (s), speed cap (rad/s, m/s)

OpenUnit = Annotated[Real, Gt(0), Lt(1)]
VelocityTerms = Literal[VELOCITY_TERMS]
Recovery = tuple[Positive, Annotated[Number, Gt(0)]]


class EulerOptions(Schema):
    """Semi-implicit Euler (EULER.md)."""

    velocity_terms: VelocityTerms = "implicit"
    """implicit: damping and Coriolis terms linearised implicitly (finishes every robot of the
    zoo); explicit: Coriolis explicit (MuJoCo's Euler, cheaper, diverges on flailing light
    links)"""


class VariationalOptions(Schema):
    """The variational integrator (VARIATIONAL.md)."""

    solver: Literal[tuple(ROOT_FINDERS)] = "riqn"
    """root finder of the discrete Euler-Lagrange equations"""
    initial_guess: Literal[tuple(GUESSES)] = "IG2"
    """initial guess of the root finder (Lee et al. 2016, section 4)"""
    tolerance: Annotated[Real, Ge(0), Lt(1)] = 0.0
    """on max |r| relative to 1 + max |p_k + dt/2 u|; 0: the order's, 1e-10 at order 2 and
    1e-8 at order 4 (whose substeps give their residual back to the momentum)"""
    max_iterations: Count = 50
    """root-finder iterations per step"""
    anderson: Annotated[Whole, Ge(0), Le(MAX_ANDERSON - 1)] = 0
    """Anderson acceleration history depth (0: plain RIQN)"""
    newton_fallback_iterations: Index = 20
    """exact-Newton iterations after the quasi-Newton method fails"""
    split_levels: Annotated[Whole, Ge(0), Le(10)] = 3
    """how many times a step that cannot be solved is halved before it fails"""
    order: Literal[2, 4] = 2
    """2: the midpoint discrete Lagrangian; 4: composed steps (composition)"""
    composition: Literal["yoshida", "suzuki"] = "yoshida"
    """order 4's steps: yoshida, three (triple jump, one of -1.70 dt); suzuki, five (one of
    -0.66 dt; on a 10-link chain 1/16-1/32 of the energy error at the same dt, for 5/3 of the
    substeps)"""


class ContactOptions(Schema):
    """What the compliant and rigid contact integrators share."""

    scene: Any = None
    """contact.Scene: ground, boxes, shapes, material (library only)"""
    joint_limits: Flag = True
    """URDF joint limits as unilateral rows"""
    constraints: Any = ()
    """PointConstraint / closure elements as bilateral rows (library only)"""
    margin: Positive = 0.01
    """contacts watched before touching (m)"""
    max_contacts: Count = 512
    """the contact buffers' first size (they double when a step fills them)"""
    limit_recovery: Recovery = LIMIT_RECOVERY
    """a violated joint limit is corrected at min(violation / time constant, cap): (time
    constant s, speed cap rad/s or m/s)"""
    joint_friction: Flag = True
    """the URDF's Coulomb joint friction as one bounded row per joint"""
    velocity_terms: VelocityTerms = "implicit"
    """Coriolis and centrifugal forces linearised about the step start's velocity (implicit)
    or taken at the step start (explicit)"""


class CompliantOptions(ContactOptions):
    """The compliant-contact integrator (COMPLIANT.md)."""

    cone: Literal[CONES] = "true"
    """friction cone: true (an SOCP) or pyramid (a QP)"""
    limit_stiffness: Annotated[Number, Gt(0)] = float("inf")
    """joint-limit stiffness (N m/rad or N/m; inf: rigid)"""
    limit_damping: NonNegative = 0.0
    """joint-limit damping (N m s/rad or N s/m)"""
    normal_weight: Positive = 1e3
    """weight of the normal and limit rows' law residual against the friction rows'"""
    hertz_reference_depth: Positive = 1e-8
    """depth at which a Hertz contact's stiffness is taken before it touches (m)"""
    impacts: Literal[IMPACT_LAWS] = "energy"
    """a Hertz row in an impact: set on energy, then on the restitution (energy), or left on
    its spring law, the stiffness at the step-start depth (spring: the law before impacts were
    set on energy, 2.3x Hertz's peak depth at 1 ms; it takes no restitution)"""
    friction_regularization: NonNegative = 1e-7
    """regularisation of the friction rows"""
    solver: Literal[QP_SOLVERS] = "interior"
    """the cone problem's solver: our compiled interior-point method, or clarabel / osqp"""
    springs: Any = ()
    """SpringDamper elements (library only)"""
    forces: Any = ()
    """AppliedForce elements (library only)"""
    project: Flag = True
    """move q back onto the rigid elements' manifold after every step"""
    max_iterations: Count = ITERATIONS
    """interior-point iterations of one solve before the clarabel fallback"""
    tolerance: OpenUnit = GAP_TOLERANCE
    """the interior-point method's surrogate gap, relative to |objective|; with the warm
    start also the Newton solve's natural residual, relative to the impulses"""
    warm_start: Flag = True
    """each cone solve starts from the last step's impulses (semismooth Newton; the
    interior-point method when it does not converge) and ends on its exact solution; false:
    the interior-point method alone"""


class RigidOptions(ContactOptions):
    """The rigid-contact LCP baseline (RIGID.md)."""

    solver: Literal[LCP_SOLVERS] = "pgs"
    """projected Gauss-Seidel (ODE's quickstep) or Dantzig pivoting (ODE's dWorldStep)"""
    erp: Annotated[Real, Ge(0), Le(1)] = 0.2
    """error reduction parameter (ODE)"""
    cfm: NonNegative = 1e-5
    """constraint force mixing (m/(N s), ODE)"""
    max_iterations: Count = 50
    """PGS sweeps"""
    sor: Annotated[Real, Gt(0), Lt(2)] = 1.3
    """PGS over-relaxation"""
    tolerance: OpenUnit = PGS_TOLERANCE
    """a PGS sweep that moves no impulse by more than this (relative) ends it"""
