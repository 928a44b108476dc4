"""The compliant-contact integrator (Drumwright, seed 002, sections 4-6; our derivation in
docs/COMPLIANT.md): joint limits, bilateral point constraints and frictional contacts as
implicit spring-dampers in constraint space; the multibody state advanced semi-explicitly.

One step of length h from (q0, v0):

    M~ = M(q0) + h D,  v* = v0 + h M~^-1 (tau - b(q0, v0) - D v0)         (D: joint damping)
         (free-flyers: v*_lin += h w0 x v0_lin, the velocity in the step-start axes)
    W = G M~^-1 G^T,  u = G v*,  per row: E^-1 = 1 / (h (h k + b)),  c = u + k phi0 / (h k + b)
    gamma = argmin 1/2 |(W + E^-1) gamma + c|^2_Q  over the rows' cones        (COMPLIANT.md)
    v1 = v* + M~^-1 G^T gamma,  q1 = q0 + h v1 (free-flyers: p += h R v_lin, R <- R exp(h w),
         v_lin re-expressed in the new axes: its length kept)

Only bilateral rows: (W + E^-1) gamma = -c, one SPD solve.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from ..contact.detection import detect_contacts
from ..contact.jacobian import contact_directions, point_rows
from ..contact.scene import Scene
from ..dynamics.configuration import frame_rate_correction, integrate_world_aligned
from ..dynamics.closures import ConstraintKinematics, element_rows, project
from ..dynamics.crba import crba_kernel
from ..dynamics.rnea import rnea_kernel
from ..dynamics.workspace import carve, workspace
from ..model.constraints import (AppliedForce, Attachment, Element, FrameConstraint,
                                 SpringDamper, force_wrench, rows_from_wrenches, spring_forces)
from .base import Integrator, StepInfo, register

BILATERAL, UNILATERAL, NORMAL, TANGENT, FIXED = 0, 1, 2, 3, 4  # FIXED: held at zero
CONES = ("true", "pyramid")
RIGID_COMPLIANCE = 1e-12  # E^-1 of rigid bilateral rows, relative to mean(diag W)
QP_SOLVERS = ("clarabel", "osqp")


@dataclass
class Contact:
    """One contact of the last step: where, which way, how deep, what force (world frame)."""

    point: np.ndarray     # on the surface, world frame
    normal: np.ndarray    # unit, pushing body a (link) away from body b
    depth: float          # penetration (m); negative: a gap that the step closed or watched
    force: np.ndarray     # on body a, N, world frame (body b gets the opposite)
    link: str
    other: str


class PointConstraint:
    """A bilateral constraint holding a point of a body (given in the frame of the joint that
    moves it) to a point in the world, in x, y and z: the seed's pendulum."""

    def __init__(self, joint: int, local_point, world_point, stiffness: float = math.inf,
                 damping: float = 0.0) -> None:
        self.joint = int(joint)
        self.local = np.asarray(local_point, dtype=float).reshape(3)
        self.target = np.asarray(world_point, dtype=float).reshape(3)
        self.stiffness, self.damping = float(stiffness), float(damping)

    def as_closure(self, name: str) -> FrameConstraint:
        """The same rows as a closure of the body point on the world point in x, y, z (world
        axes): what the reaction analysis works with."""
        return FrameConstraint(Attachment("world point", -1, np.eye(3), self.target),
                               Attachment(name, self.joint, np.eye(3), self.local),
                               ["x", "y", "z"], stiffness=self.stiffness,
                               damping=self.damping, name=name)


def _checked(item, kind: type, option: str):
    if not isinstance(item, kind):
        raise TypeError(f"{option}: expected {kind.__name__} items, got {type(item).__name__}")
    return item


@register("compliant")
class CompliantIntegrator(Integrator):
    """Options: ``scene`` (contact.Scene: ground, boxes, shapes, material), ``cone`` ("true": an
    SOCP; "pyramid": a QP, |gamma_t1|, |gamma_t2| <= mu gamma_n with t1 along the slip),
    ``qp_solver`` ("clarabel", or "osqp" for QPs: the pyramid and frictionless problems; each
    falls back to the other), ``joint_limits`` (URDF limits as
    unilateral rows), ``limit_stiffness`` / ``limit_damping`` (inf / 0: effectively rigid),
    ``constraints`` (PointConstraint list), ``normal_weight`` (weight of the normal and limit
    rows' law residual against the friction rows'), ``margin`` (m: contacts watched before
    touching), ``max_contacts``, ``hertz_reference_depth`` (m: the depth at which a Hertz
    contact's stiffness is taken before it touches), ``friction_regularization``.
    ``constraints`` may also hold model.constraints elements (DistanceConstraint,
    FrameConstraint: loop closures), bilateral rows like the point constraints; ``springs``
    (SpringDamper list) and ``forces`` (AppliedForce list) are generalized forces J^T f taken at
    the step start (q0, v0); ``project`` moves q back onto the rigid elements' manifold after
    every step (Newton in the least-squares sense, seed 003)."""

    def __init__(self, model, dt: float, *, scene: Scene | None = None, cone: str = "true",
                 joint_limits: bool = True, limit_stiffness: float = math.inf,
                 limit_damping: float = 0.0, constraints: list | tuple = (),
                 normal_weight: float = 1e3, margin: float = 0.01, max_contacts: int = 512,
                 hertz_reference_depth: float = 1e-8,
                 friction_regularization: float = 1e-7, qp_solver: str = "clarabel",
                 springs: list | tuple = (), forces: list | tuple = (),
                 project: bool = True) -> None:
        super().__init__(model, dt)
        if cone not in CONES:
            raise ValueError(f"cone must be one of {CONES}, got {cone!r}")
        if qp_solver not in QP_SOLVERS:
            raise ValueError(f"qp_solver must be one of {QP_SOLVERS}, got {qp_solver!r}")
        for name, value in (("limit_stiffness", limit_stiffness), ("margin", margin),
                            ("normal_weight", normal_weight),
                            ("hertz_reference_depth", hertz_reference_depth)):
            if not (isinstance(value, (int, float)) and value > 0):
                raise ValueError(f"{name} must be positive, got {value!r}")
        if not (isinstance(limit_damping, (int, float)) and limit_damping >= 0):
            raise ValueError(f"limit_damping must be non-negative, got {limit_damping!r}")
        self.scene = scene
        self.cone = cone
        self.qp_solver = qp_solver
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
        self._ws = workspace(model)
        self._M = np.zeros((model.nv, model.nv))
        self._diagonal = np.diag_indices(model.nv)
        self._bias = np.zeros(model.nv)
        self._v_step = np.zeros(model.nv)
        self._zero = np.zeros(model.nv)
        self._contact_int = np.zeros((max_contacts, 3), dtype=np.int64)
        self._contact_real = np.zeros((max_contacts, 8))
        self._scratch = np.zeros((5, 3, 3))
        self._n_contacts = 0
        self._gamma = np.zeros(0)
        self._directions = np.zeros((0, 3, 3))
        self._solvers = {}
        self._patterns = {}
        self._clarabel = {}   # row structure -> (solver, CSC order of A's triplets)
        self._pushing = None  # (row kinds, which rows pushed) of the last step
        self._info = StepInfo()
        one_dof = [i for i in range(model.njoints) if model.joint_kinds[i] != "free_flyer"]
        bounded = [i for i in one_dof if np.isfinite(model.lower_position_limit[model.idx_q[i]])
                   or np.isfinite(model.upper_position_limit[model.idx_q[i]])]
        self._limit_iq = np.array([model.idx_q[i] for i in bounded], dtype=np.int64)
        self._limit_iv = np.array([model.idx_v[i] for i in bounded], dtype=np.int64)

    def reset(self, q: np.ndarray, v: np.ndarray) -> None:
        self._external = (np.zeros((0, self.model.nv)), np.zeros(0))
        self._pushing = None
        self._gamma = np.zeros(0)
        self._n_contacts = 0

    # -- one step ---------------------------------------------------------------------------

    def step(self, q, v, tau, q_out, v_out) -> StepInfo:
        h, m = self.dt, self.model
        info = self._info
        info.iterations, info.residual, info.fallback, info.message = 0, 0.0, False, ""
        rnea_kernel(m.joint_int, m.joint_real, m.gravity, q, v, self._zero, self._ws,
                    self._bias)
        self._M[:] = 0.0
        crba_kernel(m.joint_int, m.joint_real, q, self._ws, self._M)  # leaves kinematics at q
        self._M[self._diagonal] += h * m.damping  # M~ = M + h D
        try:
            factor = scipy.linalg.cho_factor(self._M, check_finite=False)
        except np.linalg.LinAlgError:
            return self._fail("the joint-space inertia is not positive definite")
        force = tau - self._bias - m.damping * v
        if self.springs or self.forces:
            force = force + self._element_forces(v)
        v_star = v + h * scipy.linalg.cho_solve(factor, force, check_finite=False)
        frame_rate_correction(m.joint_int, v, h, v_star)  # free-flyers: axes of the step start
        G, phi, kind, k, b, mu = self._rows(q, v)
        if G.shape[0]:
            Y = scipy.linalg.cho_solve(factor, G.T, check_finite=False)
            gamma = self._solve(G @ Y, G @ v_star, G, phi, kind, k, b, mu)
            if gamma is None:
                return self._fail(info.message)
            v_out[:] = v_star + Y @ gamma
        else:
            gamma = np.zeros(0)
            v_out[:] = v_star
        self._gamma = gamma
        own = 3 * len(self._points) + sum(e.row_count for e in self._elements)
        self._external = (G[:G.shape[0] - own], gamma[:G.shape[0] - own] / h)
        self._v_step[:] = v_out
        integrate_world_aligned(m.joint_int, q, self._v_step, h, q_out, v_out)
        if self.project:  # seed 003: back onto phi = 0 along the fixed directions
            q_out[:] = project(self._kinematics, self._elements, q_out)[0]
        if not (np.all(np.isfinite(q_out)) and np.all(np.isfinite(v_out))):
            return self._fail("diverged: the new state is not finite")
        info.converged = True
        return info

    def _fail(self, message: str) -> StepInfo:
        self._info.converged = False
        self._info.message = message
        return self._info

    # -- rows ---------------------------------------------------------------------------------

    def _rows(self, q, v):
        """(G, phi0, kind, stiffness, damping, mu) of every active row: contacts (n, t1, t2),
        joint limits, point constraints."""
        blocks = [self._contact_rows(v), self._limit_rows(q, v), self._point_rows()]
        blocks = [blk for blk in blocks if blk[0].shape[0]]
        if not blocks:
            return np.zeros((0, self.model.nv)), *(np.zeros(0) for _ in range(5))
        return tuple(np.concatenate([blk[i] for blk in blocks]) for i in range(6))

    def _contact_rows(self, v):
        scene, m = self.scene, self.model
        empty = (np.zeros((0, m.nv)), *(np.zeros(0) for _ in range(5)))
        self._n_contacts = 0
        if scene is None or len(scene.shapes) == 0:
            return empty
        oR, op, _, _, _, _, _, _, _, oS = carve(self._ws, m.njoints, m.nv)[:10]
        s = self._scratch
        shapes = scene.shapes
        # watch what this step can close: the margin plus dt times a speed bound (|v| mixes
        # m/s and rad/s: exact for points within 1 m of a rotation axis)
        margin = self.margin + self.dt * float(np.sqrt(v @ v))
        n = detect_contacts(oR, op, shapes.body, shapes.kind, shapes.R, shapes.p, shapes.size,
                            scene.ground, scene.boxes, 0.005, margin, s[0], s[1, 0],
                            s[2], s[1, 1], s[1, 2], self._contact_int, self._contact_real)
        self._n_contacts = n
        if n == 0:
            return empty
        self._origins = op.copy()  # link frame origins for the wrenches
        ci, cr = self._contact_int[:n], self._contact_real[:n]
        directions = np.empty((3 * n, 3))
        contact_directions(m.joint_int, oS, v, ci, cr, n, s[3, 0], s[3, 1], directions)
        self._directions = directions.reshape(n, 3, 3)
        G = np.zeros((3 * n, m.nv))
        point_rows(m.joint_int, oS, np.repeat(ci[:, 0], 3), np.repeat(ci[:, 1], 3),
                   np.repeat(cr[:, 0:3], 3, axis=0), directions, G)
        distance = cr[:, 6]
        k, b = self._contact_law(distance, cr[:, 7], ci[:, 2])
        kind = np.tile([NORMAL, TANGENT, TANGENT], n)
        phi = np.zeros(3 * n)
        phi[0::3] = distance
        stiffness, damping = np.zeros(3 * n), np.zeros(3 * n)
        stiffness[0::3], damping[0::3] = k, b
        mu = np.zeros(3 * n)
        mu[0::3] = scene.material.friction
        return G, phi, kind, stiffness, damping, mu

    def _contact_law(self, distance, radius, shape):
        """Normal stiffness and damping per contact: Hertz's secant stiffness
        F / delta = 4/3 E* sqrt(R delta) at delta = max(depth, reference depth), Hunt-Crossley
        damping dissipation * F; or the material's plain stiffness and damping; or the shape's
        own (elastic-foundation elements: k_e = E A_e / depth). No damping before touching (the
        row then only stops the gap from closing)."""
        material = self.scene.material
        depth = np.maximum(-distance, self.reference_depth)
        if material.stiffness is not None:
            k = np.full(distance.shape, material.stiffness)
            b = np.where(distance < 0, material.damping, 0.0)
        else:
            k = 4.0 / 3.0 * material.effective_modulus * np.sqrt(radius * depth)
            b = np.where(distance < 0, material.dissipation * k * depth + material.damping, 0.0)
        shapes = self.scene.shapes
        own_k, own_b = shapes.own_law("stiffness")[shape], shapes.own_law("damping")[shape]
        own = np.isfinite(own_k)
        if own.any():
            k = np.where(own, own_k, k)
            b = np.where(own, np.where(distance < 0, own_b, 0.0), b)
        return k, b

    def _limit_rows(self, q, v):
        m = self.model
        nv = m.nv
        if not self.joint_limits or self._limit_iv.size == 0:
            return np.zeros((0, nv)), *(np.zeros(0) for _ in range(5))
        rows, phis = [], []
        for iq, iv in zip(self._limit_iq, self._limit_iv):
            lower, upper = m.lower_position_limit[iq], m.upper_position_limit[iq]
            watch = self.margin + self.dt * abs(v[iv])  # what this step can cover
            if q[iq] - lower < watch:
                rows.append((iv, 1.0))
                phis.append(q[iq] - lower)
            if upper - q[iq] < watch:
                rows.append((iv, -1.0))
                phis.append(upper - q[iq])
        G = np.zeros((len(rows), nv))
        for r, (iv, sign) in enumerate(rows):
            G[r, iv] = sign
        count = len(rows)
        return (G, np.array(phis), np.full(count, UNILATERAL),
                np.full(count, self.limit_stiffness), np.full(count, self.limit_damping),
                np.zeros(count))

    def _element_forces(self, v):
        """Generalized forces of the springs and applied forces at the step start: G^T lambda
        with lambda = -(k phi + c G v) per spring, J^T w per applied force."""
        m = self.model
        oR, op, _, _, _, _, _, _, _, oS = carve(self._ws, m.njoints, m.nv)[:10]
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
        oR, op, _, _, _, _, _, _, _, oS = carve(self._ws, m.njoints, m.nv)[:10]
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

    # -- the constraint solve -------------------------------------------------------------------

    def _solve(self, W, u, G, phi, kind, k, b, mu):
        """gamma (impulses) for the rows; None when no solver succeeds (message in info)."""
        h = self.dt
        soft = h * k + b
        rigid = ~np.isfinite(k)
        with np.errstate(divide="ignore", invalid="ignore"):
            e_inv = np.where(rigid, 0.0, 1.0 / (h * soft))
            erp = np.where(rigid, 1.0 / h, np.where(soft > 0, k / soft, 0.0))
        tangent = kind == TANGENT
        if tangent.any():  # memoryless friction rows: no stiffness, (near) infinite damping
            e_inv[tangent] = self.regularization * max(np.mean(np.diag(W)), 1e-12)
        if rigid.any():  # redundant rigid rows (closures) make W singular: a tiny compliance
            scale = max(float(np.mean(np.diag(W))), 1e-12)
            e_inv[rigid & (kind == BILATERAL)] = RIGID_COMPLIANCE * scale
        H = W + np.diag(e_inv)
        c = u + erp * phi
        if np.all(kind == BILATERAL):
            try:
                return scipy.linalg.solve(H, -c, assume_a="pos")
            except np.linalg.LinAlgError:
                self._info.message = "the bilateral constraint matrix is singular"
                return None
        return self._solve_active_set(H, c, kind, mu)

    def _solve_active_set(self, H, c, kind, mu, max_rounds: int = 8):
        """min 1/2 g.H g + c.g + w/2 sum over pushing rows of r_i^2 (r = H g + c) over the
        rows' cones, the rows that do not push held at zero (docs/COMPLIANT.md). The first part
        alone is the convex, maximal-dissipation form; the penalty holds the pushing rows'
        spring-damper law against the friction cone's pull (no "gliding"). Which rows push:
        those of the convex form's solution, then an active set (a pushing row whose impulse
        comes out zero is held at zero; a held row that would close, r < 0, pushes)."""
        one_sided = (kind == UNILATERAL) | (kind == NORMAL)
        rows_key = kind.tobytes()
        if self._pushing is not None and self._pushing[0] == rows_key:
            pushing, iterations = self._pushing[1], 0   # the same rows as the last step's
        else:
            gamma = self._solve_weighted(H, c, np.zeros(len(kind)), kind, mu)
            if gamma is None:
                return None
            iterations = self._info.iterations
            # interior-point solutions leave non-pushing rows slightly positive
            tolerance = 1e-7 * max(np.abs(gamma).max(), 1e-12)
            pushing = (kind == BILATERAL) | (one_sided & (gamma > tolerance))
        owner = np.arange(len(kind))
        owner[kind == TANGENT] = np.flatnonzero(kind == TANGENT) // 3 * 3  # contacts come first
        for _ in range(max_rounds):
            held = (one_sided & ~pushing)[owner]
            trial_kind = np.where(held, FIXED, kind)
            gamma = self._solve_weighted(H, c, self.normal_weight * pushing, trial_kind,
                                         np.where(held, 0.0, mu))
            if gamma is None:
                return None
            iterations += self._info.iterations
            tolerance = 1e-7 * max(np.abs(gamma).max(), 1e-12)
            r = H @ gamma + c
            leave = one_sided & pushing & (gamma <= tolerance)
            join = one_sided & ~pushing & (r < -1e-7 * max(np.abs(c).max(), 1e-9))
            if not (leave.any() or join.any()):
                break
            pushing = (pushing & ~leave) | join
        self._info.iterations = iterations
        self._pushing = (rows_key, pushing)
        return gamma

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
        upper_rows, upper_cols, indptr = self._upper_pattern(m)
        P_values = P[upper_rows, upper_cols]
        key = (pyramid, kind.tobytes(), (mu > 0).tobytes())
        cached = self._clarabel.get(key)
        if cached is not None and cached[0].is_data_update_allowed():
            solver, order = cached  # same structure: new numbers only, factorization reused
            solver.update(P=P_values, q=q, A=values[order])
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
            solver = clarabel.DefaultSolver(P_upper, q, A, np.zeros(r), cones, settings)
            if len(self._clarabel) > 64:
                self._clarabel.clear()
            self._clarabel[key] = (solver, order)
        solution = solver.solve()
        self._info.iterations = int(solution.iterations)
        status = str(solution.status)
        if "Solved" not in status:
            if "AlmostSolved" in status:
                self._info.fallback = True
            else:
                self._info.message = f"clarabel: {status}"
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
        A = sp.csc_matrix((vals, (rows, cols)), shape=(r, m))
        key = (m, tuple(kind), r)
        solver = self._solvers.get(key)
        if solver is None:
            solver = osqp.OSQP()
            solver.setup(P, q, A, np.array(lower), np.array(upper), verbose=False,
                         eps_abs=1e-10, eps_rel=1e-10, max_iter=20000, polishing=False)
            self._solvers = {key: solver}
        else:
            solver.update(Px=P.data, q=q, Ax=A.data)
        result = solver.solve(raise_error=False)
        self._info.iterations = int(result.info.iter)
        if result.info.status_val not in (1, 2):  # solved, solved inaccurate
            self._info.message = f"osqp: {result.info.status}"
            return self._fallback(H, c, weight, kind, mu, "osqp")
        self._info.fallback |= result.info.status_val == 2
        return np.array(result.x)

    def _fallback(self, H, c, weight, kind, mu, failed: str):
        """The other solver on the same problem (osqp <-> clarabel; the true cone falls back to
        the pyramid), once, flagged in StepInfo; None if it fails too."""
        if self._info.fallback:
            return None
        self._info.fallback = True
        message = self._info.message
        if failed == "clarabel":
            gamma = self._solve_osqp(H, c, weight, kind, mu)
        else:
            gamma = self._solve_clarabel(H, c, weight, kind, mu, self.cone == "pyramid")
        if gamma is None:
            self._info.message = f"{message}; fallback failed too: {self._info.message}"
        return gamma

    # -- outputs ------------------------------------------------------------------------------

    def external_forces(self) -> tuple[np.ndarray, np.ndarray]:
        """The last step's contact and joint-limit forces: (generalized force G^T lambda (nv),
        the contact wrenches on each body (joints, 6): world axes, about the world origin)."""
        G, lam = self._external
        wrenches = np.zeros((self.model.njoints, 6))
        for c, contact in enumerate(self.contacts()):
            for body, sign in ((self._contact_int[c, 0], 1.0), (self._contact_int[c, 1], -1.0)):
                if body >= 0:
                    wrenches[body] += force_wrench(sign * contact.force, contact.point)
        return G.T @ lam, wrenches

    def contact_wrenches(self) -> dict[str, np.ndarray]:
        """Per link in contact: [fx, fy, fz, tx, ty, tz], the total contact force on the link
        and its torque about the link frame's origin, world frame (last step)."""
        out: dict[str, np.ndarray] = {}
        for c, contact in enumerate(self.contacts()):
            for link, body, sign in ((contact.link, self._contact_int[c, 0], 1.0),
                                     (contact.other, self._contact_int[c, 1], -1.0)):
                if body < 0:
                    continue
                force = sign * contact.force
                torque = np.cross(contact.point - self._origins[body], force)
                wrench = out.setdefault(link, np.zeros(6))
                wrench[:3] += force
                wrench[3:] += torque
        return out

    def contacts(self) -> list[Contact]:
        """The contacts of the last step with their forces (gamma / h)."""
        scene = self.scene
        out = []
        if scene is None:
            return out
        names = self.model.body_names
        for c in range(self._n_contacts):
            a, b, _ = self._contact_int[c]
            row = self._contact_real[c]
            g = self._gamma[3 * c:3 * c + 3] / self.dt
            force = self._directions[c].T @ g
            out.append(Contact(point=row[0:3].copy(), normal=row[3:6].copy(),
                               depth=float(-row[6]), force=force,
                               link=names[a], other=names[b] if b >= 0 else "world"))
        return out
