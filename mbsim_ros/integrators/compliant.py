"""The compliant-contact integrator (Drumwright 2019, sections 4-6; our derivation in
docs/COMPLIANT.md): joint limits, bilateral point constraints and frictional contacts as
implicit spring-dampers in constraint space; the multibody state advanced semi-explicitly.

One step of length h from (q0, v0), ``velocity_terms="explicit"``:

    M~ = M(q0) + h D,  v* = v0 + h M~^-1 (tau - b(q0, v0) - D v0)         (D: joint damping)
         (free-flyers: v*_lin += h w0 x v0_lin, the velocity in the step-start axes)
    W = G M~^-1 G^T,  u = G v*,  per row: E^-1 = 1 / (h (h k + b)),  c = u + k phi0 / (h k + b)
    gamma = argmin 1/2 |(W + E^-1) gamma + c|^2_Q  over the rows' cones        (COMPLIANT.md)
    v1 = v* + M~^-1 G^T gamma,  q1 = q0 + h v1 (free-flyers: p += h R v_lin, R <- R exp(h w),
         v_lin re-expressed in the new axes: its length kept)

``"implicit"`` (the default) linearises the velocity terms about v0, with the free-flyers'
frame-rate term c = w0 x v0_lin among them (MuJoCo's ``implicit``; COMPLIANT.md, "Velocity
terms"):

    K = M~ + h dB/dv - h M~ dc/dv,  v* = v0 + h K^-1 (tau - b - D v0 + M~ c)  (dense LU)
    W = G M~^-1 G^T as above (symmetric, for the cone solver),  v1 = v* + K^-1 G^T gamma

Only bilateral rows: (W + E^-1) gamma = -c, one SPD solve.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..arena import Arena, ArenaPlan
from ..codes import BILATERAL, DIVERGED, NOT_POSITIVE, SINGULAR
from ..contact.geometry import MESH, candidate_points, with_static_boxes
from ..contact.jacobian import point_rows
from ..contact.scene import Scene
from ..dynamics.checks import all_finite_kernel
from ..dynamics.configuration import frame_rate_correction, integrate_world_aligned
from ..dynamics.closures import ConstraintKinematics, element_rows, project
from ..dynamics.crba import crba_kernel
from ..dynamics.rnea import rnea_kernel
from ..dynamics.rnea_derivative import velocity_terms_kernel
from ..dynamics.workspace import DYNAMICS, workspace_size
from ..model.constraints import (AppliedForce, Element, PointConstraint, SpringDamper,
                                 force_wrench, rows_from_wrenches, spring_forces)
from .base import Integrator, StepInfo, StepRecord, register
from .compliant_kernels import (apply_impulses, body_wrenches, damped_system, delassus,
                                dof_parents, free_velocity, implicit_free_velocity,
                                implicit_impulses, implicit_system, ltl_factor, servo_saturated,
                                servo_system)
from .compliant_step import (COMPLIANT_ARRAYS, C_CONTACTS, C_ROWS, CONTACTS_FULL,
                             F_DETECTION, F_IMPLICIT, F_LIMITS, F_MESH_KIND, F_MESHES,
                             F_PYRAMID, L_CORNER_RADIUS, L_DAMPING, L_DISSIPATION, L_E_STAR,
                             L_FRICTION, L_H, L_INV_DT,
                             L_LIMIT_DAMPING, L_LIMIT_RATE, L_LIMIT_STIFFNESS, L_MARGIN,
                             L_IMPACT_SPEED, L_MESH_BAND, L_NORMAL_WEIGHT, L_REFERENCE_DEPTH,
                             L_REGULARIZATION, L_RESTITUTION, L_RIGID_COMPLIANCE, L_STIFFNESS,
                             N_FLAGS, N_LAW, F_IMPACTS, compliant_advance, detect, fill_rows)
from ..solvers.cone_solver import GAP_TOLERANCE, ITERATIONS, solver_workspace
from .impacts import IMPACT_GRAVITY_STEPS, impact_rows, remember_impacts
from .options import LIMIT_RECOVERY, CompliantOptions
from .row_solvers import RIGID_COMPLIANCE, ConeRows

CORNER_RADIUS = 0.005  # m: the Hertz radius of box corners, cylinder rims and mesh points
MESH_BAND = 1e-3  # m: a mesh pair's points within this of its deepest (at the step's end)
LIMIT_DEADBAND = 1e-6  # rad or m: smaller violations (rounding, CFM) go in one step


@dataclass
class Contact:
    """One contact of the last step: where, which way, how deep, what force (world frame)."""

    point: np.ndarray     # on the surface, world frame
    normal: np.ndarray    # unit, pushing body a (link) away from body b
    depth: float          # penetration (m); negative: a gap that the step closed or watched
    force: np.ndarray     # on body a, N, world frame (body b gets the opposite)
    link: str
    other: str


def _checked(item, kind: type, option: str):
    if not isinstance(item, kind):
        raise TypeError(f"{option}: expected {kind.__name__} items, got {type(item).__name__}")
    return item


class _ImplicitBuffers(NamedTuple):
    """The velocity-implicit step's arrays: K = M~ + h dB/dv (its LU in place) and pivots,
    dB/dv and velocity_jacobian's (nv, 6) scratch."""

    K: np.ndarray
    pivots: np.ndarray
    dB: np.ndarray
    crossed: np.ndarray

    @staticmethod
    def declare(plan: ArenaPlan, nv: int) -> None:
        """Its arrays for nv velocities in an arena (nv = 0: the explicit step's, empty)."""
        plan.add("implicit.K", (nv, nv))
        plan.add("implicit.pivots", (nv,), "int64")
        plan.add("implicit.dB", (nv, nv))
        plan.add("implicit.crossed", (nv, 6))

    @classmethod
    def taken(cls, arena: Arena) -> "_ImplicitBuffers":
        return cls(*(arena[f"implicit.{name}"] for name in cls._fields))


class _ImpactMemory(NamedTuple):
    """The contacts the last step left in an impact phase (impacts.py): bodies, shape and
    phase; point and impact speed; their count; and this step's phase and impact speed per
    contact."""

    keys: np.ndarray
    points: np.ndarray
    count: np.ndarray
    phase: np.ndarray
    speed: np.ndarray

    @classmethod
    def make(cls, capacity: int) -> "_ImpactMemory":
        """One of its own (grown past the arena's: _detect, load_state)."""
        plan = ArenaPlan("impact memory")
        cls.declare(plan, capacity)
        return cls.taken(plan.allocate())

    @staticmethod
    def declare(plan: ArenaPlan, capacity: int) -> None:
        plan.add("impacts.keys", (capacity, 4), "int64")
        plan.add("impacts.points", (capacity, 4))
        plan.add("impacts.count", (1,), "int64")
        plan.add("impacts.phase", (capacity,), "int64")
        plan.add("impacts.speed", (capacity,))

    @classmethod
    def taken(cls, arena: Arena) -> "_ImpactMemory":
        return cls(*(arena[f"impacts.{name}"] for name in cls._fields))

    def grown(self, capacity: int) -> "_ImpactMemory":
        """A larger memory holding this one's contacts."""
        out = _ImpactMemory.make(capacity)
        count = int(self.count[0])
        out.keys[:count], out.points[:count], out.count[0] = (self.keys[:count],
                                                              self.points[:count], count)
        return out


# the row buffers' first capacity (in the arena; they double when a step fills them): at least
# ROW_CAPACITY, and with shapes to touch the rows every step reserves (limits, friction,
# elements) and CONTACT_ROWS more (8 contacts)
ROW_CAPACITY = CONTACT_ROWS = 24


class _RowBuffers:
    """Everything one step's rows need, for up to `capacity` rows: in ``arena`` (the
    integrator's: the first capacity), or in one of their own (grown past it)."""

    def __init__(self, capacity: int, nv: int, arena: Arena | None = None) -> None:
        if arena is None:
            plan = ArenaPlan("rows")
            self.declare(plan, capacity, nv)
            arena = plan.allocate()
        self.capacity = capacity
        (self.G, self.Z, self.support, self.support_size, self.directions, self.phi, self.k,
         self.b, self.mu, self.kind, self.W, self.u, self.gamma, *self.solver, self.memory) = (
            arena[f"rows.{name}"] for name in _ROW_ARRAYS)

    @staticmethod
    def declare(plan: ArenaPlan, capacity: int, nv: int) -> None:
        """Its arrays, in the order of _ROW_ARRAYS (the cone solver's as solver_workspace
        shapes them)."""
        r, solver = capacity, solver_workspace(capacity)
        shapes = ((r, nv), (r, nv), (r, nv), (r,), (r, 3), (r,), (r,), (r,), (r,), (r,),
                  (r, r), (r,), (r,), *(a.shape for a in solver))
        dtypes = ("float64", "float64", "int64", "int64", "float64", "float64", "float64",
                  "float64", "float64", "int64", "float64", "float64", "float64",
                  *(a.dtype.name for a in solver))
        for name, shape, dtype in zip(_ROW_ARRAYS, shapes, dtypes):
            plan.add(f"rows.{name}", shape, dtype)


_ROW_ARRAYS = ("G", "Z", "support", "support_size", "directions", "phi", "k", "b", "mu", "kind",
               "W", "u", "gamma", "mats", "vecs", "ints", "memory")


@register("compliant")
class CompliantIntegrator(Integrator):
    """Options: ``scene`` (contact.Scene: ground, boxes, shapes, material), ``cone``
    ("true": an SOCP; "pyramid": a QP, |gamma_t1|, |gamma_t2| <= mu gamma_n with t1 along
    the slip), ``qp_solver`` ("interior": our compiled interior-point solver,
    cone_solver.py, falling back to clarabel after ``interior_iterations`` iterations of one
    solve (up to FALLBACK_ROWS rows, FALLBACK_ROUNDS active-set rounds and CLARABEL_ITERATIONS
    iterations per clarabel solve); "clarabel"; or "osqp" for QPs: the
    pyramid and frictionless problems; these two fall back to each other), ``warm_start``
    (our solver from the last step's impulses by semismooth Newton, ending on the exact
    solution: cone_solver.weighted_solve; the default; False: the interior-point method alone,
    docs/COMPLIANT.md), ``joint_limits``
    (URDF limits as unilateral rows), ``limit_stiffness`` / ``limit_damping`` (inf / 0:
    effectively rigid), ``limit_recovery`` ((time constant s, speed cap): a rigid limit
    violated by more than LIMIT_DEADBAND is corrected at min(violation / time constant, cap),
    not in one step), ``joint_friction`` (the URDF's Coulomb joint friction as one bounded row
    per joint, |impulse| <= friction h), ``constraints``
    (PointConstraint list), ``normal_weight`` (weight of the normal and limit rows' law
    residual against the friction rows'), ``margin`` (m: contacts watched before touching),
    ``max_contacts`` (the contact buffers' first size: they double when a step fills them),
    ``hertz_reference_depth`` (m: the depth at which a Hertz contact's stiffness is taken
    before it touches), ``friction_regularization``, ``impacts`` ("energy": a Hertz row in
    an impact set on energy and restitution, impacts.py; "spring": left on its spring law, which
    takes no restitution). ``constraints`` may also hold
    model.constraints elements (DistanceConstraint, FrameConstraint: loop closures),
    bilateral rows like the point constraints; ``springs`` (SpringDamper list) and
    ``forces`` (AppliedForce list) are generalized forces J^T f taken at the step start (q0,
    v0); ``project`` moves q back onto the rigid elements' manifold after every step (Newton
    in the least-squares sense: dynamics/closures.py); ``velocity_terms`` ("implicit":
    Coriolis and centrifugal forces linearised about the step start's velocity, as Euler's option;
    "explicit": taken at the step start; module docstring)."""

    models_contact = True
    fused_servos = True  # (Integrator.fused_servos)
    kernels = (compliant_advance, rnea_kernel, crba_kernel, velocity_terms_kernel,
               damped_system, servo_system, servo_saturated, implicit_system, ltl_factor,
               free_velocity, frame_rate_correction, implicit_free_velocity, detect, fill_rows,
               point_rows, delassus, impact_rows, apply_impulses, implicit_impulses,
               integrate_world_aligned, all_finite_kernel, remember_impacts, body_wrenches)
    sets_impacts_on_energy = True  # Hertz rows in an impact (impacts.py); not the rigid LCP
    renamed_options = {"qp_solver": "solver", "interior_iterations": "max_iterations"}
    options_schema = CompliantOptions

    def __init__(self, model, dt: float, *, scene: Scene | None = None, cone: str = "true",
                 joint_limits: bool = True, limit_stiffness: float = math.inf,
                 limit_damping: float = 0.0, constraints: list | tuple = (),
                 normal_weight: float = 1e3, margin: float = 0.01, max_contacts: int = 512,
                 hertz_reference_depth: float = 1e-8,
                 friction_regularization: float = 1e-7, solver: str = "interior",
                 springs: list | tuple = (), forces: list | tuple = (),
                 project: bool = True, max_iterations: int = ITERATIONS,
                 tolerance: float = GAP_TOLERANCE,
                 limit_recovery: tuple = LIMIT_RECOVERY, joint_friction: bool = True,
                 velocity_terms: str = "implicit", impacts: str = "energy",
                 warm_start: bool = True, plan: ArenaPlan | None = None) -> None:
        super().__init__(model, dt, plan)
        if impacts == "spring" and scene is not None and gives_restitution(scene):
            raise ValueError("impacts='spring' takes no restitution: the scene gives one "
                             "(impacts='energy' applies it: docs/COMPLIANT.md#impacts)")
        self.sets_impacts_on_energy = self.sets_impacts_on_energy and impacts == "energy"
        self._recovery = _recovery(limit_recovery)
        self.scene = scene
        self.cone = cone
        self.qp_solver = solver
        self.interior_iterations = max_iterations
        self.tolerance = float(tolerance)
        self.joint_limits = bool(joint_limits)
        self.limit_stiffness, self.limit_damping = float(limit_stiffness), float(limit_damping)
        self.constraints = list(constraints)
        self._points = [c for c in self.constraints if isinstance(c, PointConstraint)]
        self._elements = [c for c in self.constraints if isinstance(c, Element)]
        self.springs = [_checked(s, SpringDamper, "springs") for s in springs]
        self.forces = [_checked(f, AppliedForce, "forces") for f in forces]
        self.project = bool(project) and any(e.rigid for e in self._elements)
        self._kinematics = ConstraintKinematics(model)
        self.normal_weight = float(normal_weight)
        self.margin = float(margin)
        self.reference_depth = float(hertz_reference_depth)
        self.regularization = float(friction_regularization)
        nv, nj = model.nv, model.njoints
        self.velocity_terms = velocity_terms
        self._own_rows = 3 * len(self._points) + sum(e.row_count for e in self._elements)
        self.rows = ConeRows(dt, solver, cone, self.normal_weight, self.regularization,
                             max_iterations, self.tolerance, warm_start)
        self._info = StepInfo()
        one_dof = [i for i in range(model.njoints) if model.joint_kinds[i] != "free_flyer"]
        bounded = [i for i in one_dof if np.isfinite(model.lower_position_limit[model.idx_q[i]])
                   or np.isfinite(model.upper_position_limit[model.idx_q[i]])]
        rubbing = np.flatnonzero(model.friction > 0.0) if joint_friction else np.zeros(0, int)
        detection = self._detection_arrays(scene)
        # (shapes, scratch, (own stiffness, own damping), own restitution) as the compiled
        # pieces take them: empty arrays of the same types without shapes
        shape_arrays = detection or _no_detection()
        # every array in the arena (mbsim_ros/arena.py): declared, allocated once, then taken
        plan = self._plan
        plan.add("compliant.ws", (workspace_size(nj, nv),))
        for name in ("M", "unservoed_M"):
            plan.add(f"compliant.{name}", (nv, nv))
        for name in ("unservoed_force", "bias", "force", "v_star", "v_step", "zero",
                     "scratch_v"):
            plan.add(f"compliant.{name}", (nv,))
        _ImplicitBuffers.declare(plan, nv if velocity_terms == "implicit" else 0)
        plan.add("compliant.contact_int", (max_contacts, 4), "int64")  # detect_contacts
        plan.add("compliant.contact_real", (max_contacts, 8))
        plan.add("compliant.origins", (nj, 3))
        plan.add("compliant.body_wrenches", (nj, 6))
        plan.add("compliant.touching", (nj,), "int64")
        plan.add("compliant.scratch", (2, 3))
        plan.add("compliant.ahead", (max_contacts,))
        _ImpactMemory.declare(plan, max_contacts)
        plan.add("compliant.counts", (3,), "int64")
        plan.add("compliant.stats", (3,), "int64")
        plan.add("compliant.residual", (1,))
        plan.add("compliant.law", (N_LAW,))
        plan.add("compliant.flags", (N_FLAGS,), "int64")
        fixed_rows = 2 * len(bounded) + len(rubbing) + self._own_rows  # (_fill_rows reserves)
        row_capacity = max(ROW_CAPACITY,
                           fixed_rows + (CONTACT_ROWS if detection is not None else 0))
        _RowBuffers.declare(plan, row_capacity, nv)
        for name, array in (
                ("parent", dof_parents(model.joint_int)),
                ("limit_iq", np.array([model.idx_q[i] for i in bounded], dtype=np.int64)),
                ("limit_iv", np.array([model.idx_v[i] for i in bounded], dtype=np.int64)),
                ("friction_iv", rubbing.astype(np.int64)),
                ("friction_bound", model.friction[rubbing] * dt),  # impulse bound per step
                ("recovery", self._recovery), ("limits", self.rows.limits),
                ("ground", scene.ground if scene is not None else _NO_GROUND),
                ("terrain", scene.terrain if scene is not None else _NO_TERRAIN),
                *((f"shape{k}", a) for k, a in enumerate(_flat(shape_arrays)))):
            plan.add_array(f"compliant.{name}", array)
        arena = self._allocate()

        def take(*names):
            return tuple(arena[f"compliant.{name}"] for name in names)
        self._ws, self._M, self._bias, self._force, self._v_star, self._v_step, self._zero = \
            take("ws", "M", "bias", "force", "v_star", "v_step", "zero")
        views = DYNAMICS.views(self._ws, model.njoints, model.nv)
        self._frames = (views[0], views[1], views[9])  # oR, op, oS: the kinematics at q0
        # M~ and the force before the servos' terms: where a step solved again with more
        # servos saturated starts (step)
        self._unservoed = take("unservoed_M", "unservoed_force")
        self._law_flags = take("law", "flags")  # (_constants fills them)
        (self._parent, self._contact_int, self._contact_real, self._origins,
         self._body_wrenches, self._touching, self._scratch, self._ahead, self._counts,
         self._stats, self._residual, self._scratch_v, self._limit_iq, self._limit_iv,
         self._friction_iv, self._friction_bound, self._recovery, self._ground,
         self._terrain) = take(
            "parent", "contact_int", "contact_real", "origins", "body_wrenches", "touching",
            "scratch", "ahead", "counts", "stats", "residual", "scratch_v", "limit_iq",
            "limit_iv", "friction_iv", "friction_bound", "recovery", "ground", "terrain")
        # (scratch: relative velocities of the contact directions; ahead: reachable_contacts'
        # distances at the step's end; counts: contacts, rows, Newton steps (last step);
        # ground, terrain: copies of the scene's, zeros and empty without one)
        self.rows.limits = arena["compliant.limits"]  # (the row solver's, read by the step)
        self._implicit_arrays = _ImplicitBuffers.taken(arena)
        self._implicit = self._implicit_arrays if velocity_terms == "implicit" else None
        self._impacts = _ImpactMemory.taken(arena)
        self._buffers = _RowBuffers(row_capacity, nv, arena)
        self._stats[:] = (0, 0, 1)  # the fused step's record
        self.record = StepRecord(self._stats, self._residual)
        self._shape_arrays = _nested(shape_arrays, take(*(f"shape{k}" for k in range(
            len(_flat(shape_arrays))))))
        self._detection = None if detection is None else self._shape_arrays
        self._has_meshes = self._detection is not None and bool(
            np.any(self._detection[0][2] == MESH))  # mesh patches to cut to their loaded part

    def dispatched_kernels(self) -> tuple:
        """Its own, its servos' and its row solver's (row_solvers.py)."""
        return (*super().dispatched_kernels(), *self.rows.kernels)

    @staticmethod
    def _detection_arrays(scene: Scene | None) -> tuple | None:
        """The shapes (the static boxes appended as world shapes), their candidate points and
        the detection scratch, as detect_contacts takes them, each shape's own normal
        stiffness and damping (NaN: the material's law) and its own restitution (NaN: the
        ground's); None without shapes."""
        if scene is None or len(scene.shapes) == 0:
            return None
        shapes = with_static_boxes(scene.shapes, scene.boxes, scene.box_names,
                                   scene.box_restitution)
        first, local, bound = candidate_points(shapes)
        ns = len(shapes)
        return (shapes.body, shapes.model, shapes.kind, np.ascontiguousarray(shapes.R),
                np.ascontiguousarray(shapes.p), np.ascontiguousarray(shapes.size), first, local,
                bound), (np.zeros((ns, 3, 3)), np.zeros((ns, 3)), np.zeros(3),
                         np.zeros((2, 16, 3))), \
            (shapes.own_law("stiffness").copy(), shapes.own_law("damping").copy()), \
            shapes.own_law("restitution").copy()

    @property
    def impacting_contacts(self) -> int:
        """How many contacts the last step set on energy (in an impact: impacts.py)."""
        return int(self._impacts.count[0])

    @property
    def _n_contacts(self) -> int:
        return int(self._counts[C_CONTACTS])

    @property
    def _row_count(self) -> int:
        return int(self._counts[C_ROWS])

    def reset(self, q: np.ndarray, v: np.ndarray) -> None:
        self._buffers.memory[:] = 0
        self._counts[:] = 0
        self._impacts.count[0] = 0

    def save_state(self) -> dict:
        """The last step's rows, pushing set and impulses (the solve's memory) and the contacts in
        an impact phase."""
        impacts = self._impacts
        count = int(impacts.count[0])
        return {"memory": self._buffers.memory.copy(),
                "impacts": (impacts.keys[:count].copy(), impacts.points[:count].copy())}

    def memory_arrays(self) -> tuple[np.ndarray, tuple]:
        """The live arrays of what a step carries to the next (save_state copies them): the
        solve's memory (4, rows: solver_workspace) and the impact memory (keys, points, count,
        phase, speed), the arrays the compiled step is bound to (fused); replaced when they grow."""
        return self._buffers.memory, tuple(self._impacts)

    def load_state(self, saved: dict) -> None:
        memory = saved["memory"]  # (4, capacity) of the run that saved it (3: before the
        # impulses were kept: its warm start then begins from zero impulses)
        if memory.shape[1] > self._buffers.capacity:  # grown as that run's buffers had
            self._buffers = _RowBuffers(memory.shape[1], self.model.nv)
            self.fused_stale = True
        self._buffers.memory[:] = 0
        self._buffers.memory[:memory.shape[0], :memory.shape[1]] = memory
        keys, points = saved["impacts"]
        count = len(keys)
        if count > len(self._impacts.keys):
            self._impacts = _ImpactMemory.make(count)
            self.fused_stale = True
        self._impacts.keys[:count], self._impacts.points[:count] = keys, points
        self._impacts.count[0] = count

    # -- one step ---------------------------------------------------------------------------

    def step(self, q, v, tau, q_out, v_out) -> StepInfo:
        """One step; with joint servos (self.servos), solved again while a servo's effort at
        the step's end newly saturates (servo.py). Solved again from M~ before the servos'
        terms, with the contacts found: the velocity terms, M and detection depend on (q, v)
        only, so a saturating servo costs the factorisation and the contact solve, not a second
        whole step (bit for bit the same as one)."""
        servos = self.servos
        if servos.active:
            servos.saturated[:] = 0
        info = self._step(q, v, tau, q_out, v_out)
        while (info.converged and servos.active
               and servo_saturated(self.dt, servos.table, servos.iq, servos.saturated, q, tau,
                                   self._v_step)):
            info = self._solve(q, v, tau, q_out, v_out, again=True)
        if info.converged and self._impacts_on_energy:
            impacts = self._impacts
            remember_impacts(self._contact_int, self._contact_real, self._n_contacts,
                             impacts.phase, impacts.speed, impacts.keys, impacts.points,
                             impacts.count)
        return info

    def _step(self, q, v, tau, q_out, v_out) -> StepInfo:
        """The step's dynamics at (q, v), M~ and the force, then _solve."""
        h, m = self.dt, self.model
        L, implicit = self._M, self._implicit
        L[:] = 0.0
        if implicit is None:
            rnea_kernel(m.joint_int, m.joint_real, m.gravity, m.armature, q, v, self._zero,
                        self._ws, self._bias)
            crba_kernel(m.joint_int, m.joint_real, m.armature, q, self._ws, L)  # kinematics at q
        else:  # the same b and M (kinematics at q), and dB/dv
            velocity_terms_kernel(m.joint_int, m.joint_real, m.gravity, m.armature, q, v,
                                  self._ws, self._zero, implicit.crossed, self._bias, L,
                                  implicit.dB)
        damped_system(m.damping, h, v, tau, self._bias, L, self._force)  # M~ = M + h D
        if self.servos.active:
            self._unservoed[0][:] = L
            self._unservoed[1][:] = self._force
        return self._solve(q, v, tau, q_out, v_out, again=False)

    def _solve(self, q, v, tau, q_out, v_out, again: bool) -> StepInfo:
        """The servos' terms, the factorisation, the free velocity, the rows (the contacts
        detected unless ``again``: a step solved again keeps the first pass's), the contact
        solve and the integration. ``again``: from M~ and the force before the servos."""
        h, m = self.dt, self.model
        info = self._info
        info.iterations, info.residual, info.fallback, info.message = 0, 0.0, False, ""
        L, implicit, force = self._M, self._implicit, self._force
        if again:
            L[:] = self._unservoed[0]
            force[:] = self._unservoed[1]
        servos = self.servos
        if servos.active:
            servo_system(h, servos.table, servos.iq, servos.saturated, q, tau, v, L, force,
                         self._scratch_v)
        if implicit is not None and not implicit_system(m.joint_int, self._parent, h, v,
                                                        implicit.dB, L, implicit.K,
                                                        implicit.pivots, force):
            return self._fail(_FAILURES[SINGULAR])
        if not ltl_factor(L, self._parent):
            return self._fail(_FAILURES[NOT_POSITIVE])
        if self.springs or self.forces:
            force += self._element_forces(v)
        v_star = self._v_star
        if implicit is None:
            free_velocity(L, self._parent, v, force, h, v_star)
            frame_rate_correction(m.joint_int, v, h, v_star)  # free-flyers: step-start axes
        else:
            implicit_free_velocity(implicit.K, implicit.pivots, self._parent, v, force, h,
                                   v_star)
        rows = self._fill_rows(q, v, detect=not again)
        self._counts[C_ROWS] = rows
        if rows:
            buf = self._buffers
            delassus(L, self._parent, buf.G, rows, v_star, buf.Z, buf.support,
                     buf.support_size, buf.W, buf.u)
            self._set_impacts_on_energy(v, buf)
            if not self._impulses(rows):
                return self._fail(info.message)
            if implicit is None:
                apply_impulses(L, self._parent, buf.Z, buf.support, buf.support_size,
                               buf.gamma, rows, v_star, self._v_step)
            else:  # W from M~ (symmetric, for the solver), the impulses through K
                implicit_impulses(buf.G, buf.gamma, rows, implicit.K, implicit.pivots,
                                  self._parent, v_star, self._v_step)
        else:
            self._v_step[:] = v_star
        v_out[:] = self._v_step
        integrate_world_aligned(m.joint_int, q, self._v_step, h, q_out, v_out)
        if self.project:  # back onto phi = 0 along the fixed directions (closures.py)
            q_out[:] = project(self._kinematics, self._elements, q_out)[0]
        if not (all_finite_kernel(q_out) and all_finite_kernel(v_out)):
            return self._fail(_FAILURES[DIVERGED])
        info.converged = True
        return info

    def _set_impacts_on_energy(self, v, buf: "_RowBuffers") -> None:
        """The Hertz contacts in an impact: their normal rows set on energy (impacts.py)."""
        if not self._impacts_on_energy:
            return
        law = self._constants[0]
        impacts = self._impacts
        impact_rows(law[L_H], law[L_E_STAR], law[L_RESTITUTION], law[L_IMPACT_SPEED],
                    law[L_MARGIN], self._contact_int, self._contact_real, self._n_contacts,
                    self._shape_arrays[2][0], self._shape_arrays[3], v, buf.G, buf.W, buf.u,
                    buf.phi, buf.k, buf.b,
                    impacts.keys, impacts.points, impacts.count, impacts.phase, impacts.speed)

    def _fail(self, message: str) -> StepInfo:
        self._info.converged = False
        self._info.message = message
        return self._info

    # -- the compiled step (compliant_step.py) ------------------------------------------------

    def fused(self, state, data) -> tuple | None:
        """compliant_advance bound to these buffers, for the steps it covers (no springs,
        applied forces, constraints or projection; rows whose solve is compiled: ConeRows with
        the interior-point solver); None for the others: (compliant_advance, None, (its
        COMPLIANT_ARRAYS table,)). No rollout kernel: Simulator.rollout steps one by one."""
        if (self.springs or self.forces or self.constraints or self.project
                or not self.rows.compiled):
            return None  # (the rigid integrator's LcpRows: its steps stay in Python)
        m, buf, servos = self.model, self._buffers, self.servos
        implicit = self._implicit_arrays  # (the explicit step's: empty)
        (shapes, scratch, (shape_k, shape_b), shape_e), (law, flags) = (self._shape_arrays,
                                                                         self._constants)
        oR, op, oS = self._frames
        self._bound = COMPLIANT_ARRAYS.bind((  # the table's arrays, held while it is used
            m.joint_int, m.joint_real, m.gravity, m.damping, m.armature, law, flags, state.q,
            state.v, self._ws, oR, op, oS, self._M, self._parent, self._bias, self._force,
            self._v_star, self._v_step, self._zero, *implicit, *shapes, *scratch,
            self._contact_int, self._contact_real, self._ahead, shape_k, shape_b, shape_e,
            self._ground, self._terrain, self._scratch[0], self._scratch[1], self._limit_iq,
            self._limit_iv, m.lower_position_limit, m.upper_position_limit, self._recovery,
            self._friction_iv, self._friction_bound, buf.directions, buf.G, buf.phi, buf.kind,
            buf.k, buf.b, buf.mu, buf.Z, buf.support, buf.support_size, buf.W, buf.u,
            buf.gamma, *buf.solver, self.rows.limits, buf.memory, *self._impacts,
            self._origins, self._counts, data.q_next, data.v_next, state.acceleration,
            state.effort, data.bounds.packed, servos.table, servos.iq, servos.saturated,
            self._scratch_v, self._stats, self._residual))
        return compliant_advance, None, (self._bound.table,)

    @functools.cached_property
    def _constants(self) -> tuple[np.ndarray, np.ndarray]:
        """(law, flags): the step's constants as the compiled pieces take them (compliant_step
        L_* and F_*), made on first use (the rigid integrator sets its rows after this class's
        constructor, and the limit rows' rate is theirs)."""
        material = self.scene.material if self.scene is not None else None
        hertz = material is not None and material.stiffness is None
        law, flags = self._law_flags
        law[:] = 0.0
        law[[L_H, L_MARGIN, L_CORNER_RADIUS, L_MESH_BAND, L_REFERENCE_DEPTH, L_LIMIT_STIFFNESS,
             L_LIMIT_DAMPING, L_LIMIT_RATE, L_REGULARIZATION, L_RIGID_COMPLIANCE,
             L_NORMAL_WEIGHT, L_INV_DT]] = (
            self.dt, self.margin, CORNER_RADIUS, MESH_BAND, self.reference_depth,
            self.limit_stiffness, self.limit_damping,
            self.rows.limit_rate(self.dt, self.limit_stiffness), self.regularization,
            RIGID_COMPLIANCE, self.normal_weight, 1.0 / self.dt)
        if material is not None:
            law[[L_FRICTION, L_STIFFNESS, L_DAMPING, L_E_STAR, L_DISSIPATION,
                 L_RESTITUTION]] = (
                material.friction, -1.0 if hertz else material.stiffness, material.damping,
                material.effective_modulus if hertz else 0.0, material.dissipation,
                material.restitution)
        # an impact: a closing speed that gravity does not give in a few steps (the model's
        # gravity when the constants are made)
        law[L_IMPACT_SPEED] = IMPACT_GRAVITY_STEPS * self.dt * float(
            np.linalg.norm(self.model.gravity))
        flags[:] = 0
        flags[[F_IMPLICIT, F_DETECTION, F_MESHES, F_MESH_KIND, F_LIMITS, F_PYRAMID,
               F_IMPACTS]] = (
            self._implicit is not None, self._detection is not None, self._has_meshes, MESH,
            self.joint_limits, self.cone == "pyramid",
            hertz and self._detection is not None and self.sets_impacts_on_energy)
        return law, flags

    @functools.cached_property
    def _impacts_on_energy(self) -> bool:
        """Whether this integrator's Hertz rows in an impact are set on energy (F_IMPACTS), as
        a bool: read every step."""
        return bool(self._constants[1][F_IMPACTS])

    def failure_message(self, code: int) -> str:
        return _FAILURES.get(code, f"kernel code {code}")

    # -- rows ---------------------------------------------------------------------------------

    def _fill_rows(self, q, v, detect: bool = True) -> int:
        """Rows of this step into the buffers: contacts (n, t1, t2) first, joint limits, joint
        friction (compliant_step.fill_rows), then the point constraints and closures; returns
        their count. ``detect`` False: the contacts the last detection found."""
        m = self.model
        n = self._detect(v) if detect else int(self._counts[C_CONTACTS])
        buf = self._row_buffers(3 * n + 2 * self._limit_iv.size + self._friction_iv.size
                                + self._own_rows)
        law, flags = self._constants
        rows = fill_rows(m.joint_int, law, flags, q, v, self._frames[2], n, self._contact_int,
                         self._contact_real, *self._shape_arrays[2], *self._scratch,
                         self._limit_iq, self._limit_iv, m.lower_position_limit,
                         m.upper_position_limit, self._recovery, self._friction_iv,
                         self._friction_bound, buf.directions, buf.G, buf.phi, buf.kind, buf.k,
                         buf.b, buf.mu)
        if self._own_rows:
            G, phi, kind, k, b, mu = self._point_rows()
            end = rows + self._own_rows
            buf.G[rows:end], buf.phi[rows:end], buf.kind[rows:end] = G, phi, kind
            buf.k[rows:end], buf.b[rows:end], buf.mu[rows:end] = k, b, mu
            rows = end
        return rows

    def _detect(self, v) -> int:
        """Contacts within reach of this step (compliant_step.detect), the buffers grown (by
        doubling, rarely) until they hold them all."""
        self._counts[C_CONTACTS] = 0
        if self._detection is None:
            return 0
        oR, op, oS = self._frames
        shapes, scratch = self._detection[:2]
        law, flags = self._constants
        while True:
            n = detect(self.model.joint_int, law, flags, v, oR, op, oS, shapes, scratch,
                       self._contact_int, self._contact_real, self._ahead, self._ground,
                       self._terrain, *self._scratch, self._origins, self._counts)
            if n >= 0:
                return n
            if n == CONTACTS_FULL:
                size = 2 * len(self._contact_int)
                self._contact_int = np.zeros((size, 4), dtype=np.int64)
                self._contact_real = np.zeros((size, 8))
                self._impacts = self._impacts.grown(size)
            else:  # AHEAD_SHORT
                self._ahead = np.zeros(len(self._contact_int))
            self.fused_stale = True

    def _row_buffers(self, rows: int) -> "_RowBuffers":
        """Row buffers for at least `rows` rows (grown by doubling: no allocation per step)."""
        if rows > self._buffers.capacity:
            self._buffers = _RowBuffers(max(rows, 2 * self._buffers.capacity), self.model.nv)
            self.fused_stale = True
        return self._buffers

    def _impulses(self, rows: int) -> bool:
        """buf.gamma[:rows] from W, u and the rows' laws, by the row solver (row_solvers.py)."""
        return self.rows.solve(self._buffers, rows, self._info)

    def _element_forces(self, v):
        """Generalized forces of the springs and applied forces at the step start: G^T lambda
        with lambda = -(k phi + c G v) per spring, J^T w per applied force."""
        oR, op, oS = self._frames
        masks = self._kinematics.masks
        G, phi = element_rows(masks, oR, op, oS, self.springs)
        total = G.T @ spring_forces(self.springs, phi, G @ v)
        for applied in self.forces:
            W = np.stack([applied.wrench(oR, op), np.zeros(6)])[None]
            total += rows_from_wrenches(masks, oS, np.array([applied.at.joint, -1]), W)[0]
        return total

    def _point_rows(self):
        m = self.model
        if not self.constraints:
            return np.zeros((0, m.nv)), *(np.zeros(0) for _ in range(5))
        oR, op, oS = self._frames
        G_e, phi_e = element_rows(self._kinematics.masks, oR, op, oS, self._elements)
        sizes = [e.row_count for e in self._elements]
        k_e = np.repeat([e.stiffness for e in self._elements], sizes)
        b_e = np.repeat([e.damping for e in self._elements], sizes)
        count = 3 * len(self._points)
        G = np.zeros((count, m.nv))
        phi, k, b = np.zeros(count), np.zeros(count), np.zeros(count)
        points = np.zeros((count, 3))
        directions = np.tile(np.eye(3), (len(self._points), 1))
        bodies = np.zeros(count, dtype=np.int64)
        for c, con in enumerate(self._points):
            x = op[con.joint] + oR[con.joint] @ con.local
            rows = slice(3 * c, 3 * c + 3)
            points[rows], bodies[rows] = x, con.joint
            phi[rows] = x - con.target
            k[rows], b[rows] = con.stiffness, con.damping
        point_rows(m.joint_int, oS, bodies, np.full(count, -1), points, directions, G)
        rows = count + len(phi_e)
        return (np.concatenate([G, G_e]), np.concatenate([phi, phi_e]),
                np.full(rows, BILATERAL), np.concatenate([k, k_e]), np.concatenate([b, b_e]),
                np.zeros(rows))

    # -- outputs ------------------------------------------------------------------------------

    def external_forces(self) -> tuple[np.ndarray, np.ndarray]:
        """The last step's contact and joint-limit forces: (generalized force G^T lambda (nv),
        the contact wrenches on each body (joints, 6): world axes, about the world origin)."""
        external = self._row_count - self._own_rows
        buf = self._buffers
        lam = buf.gamma[:external] / self.dt
        wrenches = np.zeros((self.model.njoints, 6))
        for c, contact in enumerate(self.contacts()):
            for body, sign in ((self._contact_int[c, 0], 1.0), (self._contact_int[c, 1], -1.0)):
                if body >= 0:
                    wrenches[body] += force_wrench(sign * contact.force, contact.point)
        return buf.G[:external].T @ lam, wrenches

    def wrench_arguments(self) -> tuple:
        """body_wrenches' arguments bound to the live buffers (bound again after fused_stale),
        the contact count as the counts array (its C_CONTACTS entry): (contact_int,
        contact_real, directions, gamma, counts, h, origins, out, touching). What a compiled
        caller passes to compliant_kernels.body_wrenches (campaign/ticks.py)."""
        buf = self._buffers
        return (self._contact_int, self._contact_real, buf.directions, buf.gamma, self._counts,
                self.dt, self._origins, self._body_wrenches, self._touching)

    def body_wrenches(self) -> np.ndarray:
        """(joints, 6): the last step's contact wrench on every body ([f, torque about the
        body frame's origin], world axes; zero off contact). A view, refilled per call,
        allocation-free: what the node publishes at up to 1 kHz."""
        buf = self._buffers
        body_wrenches(self._contact_int, self._contact_real, buf.directions, buf.gamma,
                      self._n_contacts, self.dt, self._origins, self._body_wrenches,
                      self._touching)
        return self._body_wrenches

    def contact_wrenches(self) -> dict[str, np.ndarray]:
        """Per link in contact: [fx, fy, fz, tx, ty, tz], the total contact force on the link
        and its torque about the link frame's origin, world frame (last step)."""
        wrenches = self.body_wrenches()
        names = self.model.body_names
        return {names[j]: wrenches[j].copy() for j in np.flatnonzero(self._touching)}

    def contacts(self) -> list[Contact]:
        """The contacts of the last step with their forces (gamma / h)."""
        scene = self.scene
        out = []
        if scene is None:
            return out
        names = self.model.body_names
        for c in range(self._n_contacts):
            a, b = self._contact_int[c, :2]
            row = self._contact_real[c]
            g = self._buffers.gamma[3 * c:3 * c + 3] / self.dt
            force = self._buffers.directions[3 * c:3 * c + 3].T @ g
            out.append(Contact(point=row[0:3].copy(), normal=row[3:6].copy(),
                               depth=float(-row[6]), force=force,
                               link=names[a], other=names[b] if b >= 0 else "world"))
        return out


_FAILURES = {SINGULAR: "singular step matrix M~ + h dB/dv (the LU met a zero pivot): joints "
                       "that move no inertia need armature",
             NOT_POSITIVE: "the joint-space inertia is not positive definite",
             DIVERGED: "diverged: the new state is not finite"}


_NO_GROUND = np.zeros(4)
_NO_TERRAIN = np.zeros(0)


def gives_restitution(scene: Scene) -> bool:
    """Whether the scene gives any contact a restitution above zero (the ground's, a shape's
    or a static box's own)."""
    own = np.concatenate([scene.shapes.own_law("restitution"), scene.box_restitution])
    return scene.material.restitution > 0.0 or bool(np.any(np.nan_to_num(own) > 0.0))


def _no_detection() -> tuple:
    """Empty shape arrays of detect_contacts' types, for a compiled step without shapes."""
    shapes = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
              np.zeros(0, dtype=np.int64), np.zeros((0, 3, 3)), np.zeros((0, 3)),
              np.zeros((0, 3)), np.zeros(1, dtype=np.int64), np.zeros((0, 3)), np.zeros(0))
    scratch = (np.zeros((0, 3, 3)), np.zeros((0, 3)), np.zeros(3), np.zeros((2, 16, 3)))
    return shapes, scratch, (np.zeros(0), np.zeros(0)), np.zeros(0)


def _flat(nested) -> list:
    """The arrays of nested tuples of arrays, in order."""
    return [a for item in nested for a in (_flat(item) if isinstance(item, tuple) else [item])]


def _nested(like, arrays):
    """``arrays`` (in _flat's order) in the nesting of ``like``."""
    arrays = iter(arrays)

    def rebuild(item):
        return tuple(rebuild(x) for x in item) if isinstance(item, tuple) else next(arrays)
    return rebuild(like)


def _recovery(value) -> np.ndarray:
    """(time constant, speed cap, deadband) of the violated-limit recovery."""
    constant, cap = (float(x) for x in value)
    return np.array([constant, cap, LIMIT_DEADBAND])
