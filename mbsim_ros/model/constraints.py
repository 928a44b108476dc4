"""Constraints and force elements between frames fixed to bodies (the "generalized dynamics solver"
blog post's points, rigid links,
spring-dampers, loop closures), as plain numpy over the world-frame kinematics (oR, op, oS)
that the dynamics kernels compute.

Every element describes itself by *unit wrenches*: for each of its rows, the spatial force
(f, n about the world origin, world frame) that a unit row force applies to each of its two
bodies. The row's Jacobian follows from them (power = wrench . twist), so G, the generalized
force G^T lambda and the per-body forces of a reaction analysis all come from one description:

    G_r = sum over the two bodies s of  W[r, s] . J_s,   J_s = world twists of body s (6 x nv)

A row's gap phi_r(q) is zero on the constraint manifold and G_r v is its rate.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .model import I_IDX_V, I_NV, I_PARENT, ModelError

DIRECTIONS = ("x", "y", "z", "rx", "ry", "rz")


@dataclass(frozen=True)
class Attachment:
    """A frame fixed to the body of ``joint`` (-1: the world): its rotation and origin in that
    joint's frame."""

    name: str
    joint: int
    rotation: np.ndarray
    position: np.ndarray

    def pose(self, oR: np.ndarray, op: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(R, p) of the frame in the world."""
        if self.joint < 0:
            return self.rotation, self.position
        R = oR[self.joint]
        return R @ self.rotation, op[self.joint] + R @ self.position


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b for 3-vectors (np.cross spends most of its time on axis handling)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def force_wrench(force: np.ndarray, point: np.ndarray) -> np.ndarray:
    """The spatial force (f, x x f) of a force f acting at point x (world origin, world axes)."""
    return np.concatenate([force, cross(point, force)])


def subtree_masks(joint_int: np.ndarray, nv: int) -> np.ndarray:
    """masks[j, k]: velocity coordinate k moves the body of joint j (k on the path to the root)."""
    masks = np.zeros((joint_int.shape[0], nv), dtype=bool)
    for j in range(joint_int.shape[0]):
        i = j
        while i >= 0:
            iv = joint_int[i, I_IDX_V]
            masks[j, iv:iv + joint_int[i, I_NV]] = True
            i = joint_int[i, I_PARENT]
    return masks


def rows_from_wrenches(masks: np.ndarray, oS: np.ndarray, joints: np.ndarray,
                       W: np.ndarray) -> np.ndarray:
    """G (rows x nv) from the unit wrenches W (rows, 2, 6) on the bodies ``joints`` (2,)."""
    G = np.zeros((W.shape[0], oS.shape[0]))
    for side, joint in enumerate(joints):
        if joint >= 0:
            G[:, masks[joint]] += W[:, side, :] @ oS[masks[joint]].T
    return G


class Element:
    """Two attachments and the rows between them; subclasses give ``unit_wrenches``."""

    stiffness = math.inf
    damping = 0.0
    row_count = 1

    def __init__(self, a: Attachment, b: Attachment, name: str) -> None:
        self.a, self.b, self.name = a, b, name
        self.joints = np.array([a.joint, b.joint], dtype=np.int64)

    def unit_wrenches(self, oR, op) -> tuple[np.ndarray, np.ndarray]:
        """(phi (rows,), W (rows, 2, 6)) at the kinematics (oR, op)."""
        raise NotImplementedError

    @property
    def rigid(self) -> bool:
        return not math.isfinite(self.stiffness)


class DistanceConstraint(Element):
    """A rigid (or, with a finite stiffness, compliant) link: phi = |x_a - x_b| - L, one row
    (seed: (q1 - q4)^2 + ... - 1^2 = 0, here in its unsquared form so phi is in metres)."""

    def __init__(self, a: Attachment, b: Attachment, length: float, *,
                 stiffness: float = math.inf, damping: float = 0.0, name: str = "") -> None:
        super().__init__(a, b, name or f"link {a.name}-{b.name}")
        if not length > 0.0:
            raise ModelError(f"{self.name}: the length must be positive, got {length!r}")
        self.length = float(length)
        self.stiffness, self.damping = float(stiffness), float(damping)

    def unit_wrenches(self, oR, op):
        xa, xb = self.a.pose(oR, op)[1], self.b.pose(oR, op)[1]
        d = xa - xb
        distance = float(np.linalg.norm(d))
        if distance < 1e-12:
            raise ModelError(f"{self.name}: its points coincide (direction undefined)")
        n = d / distance
        W = np.stack([force_wrench(n, xa), force_wrench(-n, xb)])[None]
        return np.array([distance - self.length]), W


class SpringDamper(DistanceConstraint):
    """A spring-damper between two points: tension -(k (l - L) + c l_dot) along the line
    (a force element, applied explicitly at the start of a step)."""

    def __init__(self, a: Attachment, b: Attachment, stiffness: float, damping: float = 0.0,
                 rest_length: float = 0.0, *, name: str = "") -> None:
        label = name or f"spring {a.name}-{b.name}"
        if not (math.isfinite(stiffness) and stiffness > 0.0):
            raise ModelError(f"{label}: the stiffness must be positive and finite, "
                             f"got {stiffness!r}")
        if not damping >= 0.0:
            raise ModelError(f"{label}: the damping must be non-negative, got {damping!r}")
        if rest_length < 0.0:
            raise ModelError(f"{label}: the rest length must be non-negative, got "
                             f"{rest_length!r}")
        Element.__init__(self, a, b, label)
        self.length = float(rest_length)
        self.stiffness, self.damping = float(stiffness), float(damping)


def spring_forces(elements: list[Element], phi: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """Row forces of springs and compliant elements, lambda = -(k phi + c phi_dot) (positive
    pushes the gap open; seed: motion_analysis.add_spring_damper(k, b, natural_len))."""
    sizes = [e.row_count for e in elements]
    k = np.repeat([e.stiffness for e in elements], sizes)
    c = np.repeat([e.damping for e in elements], sizes)
    return -(k * phi + c * rate)


class AppliedForce:
    """A constant force (N, world frame) at a point fixed to a body (the post's fixed force)."""

    def __init__(self, at: Attachment, force) -> None:
        self.at = at
        self.force = np.asarray(force, dtype=float).reshape(3)
        if not np.all(np.isfinite(self.force)):
            raise ModelError(f"force at '{at.name}': not finite")

    def wrench(self, oR, op) -> np.ndarray:
        return force_wrench(self.force, self.at.pose(oR, op)[1])


class FrameConstraint(Element):
    """A loop closure holding frame b on frame a along ``directions`` (x, y, z, rx, ry, rz in
    frame a's axes; all six when omitted): translations phi = d_k . (p_b - p_a) with d_k = R_a e_k;
    a rotation about e_k, phi = u . w with u = R_a (e_k x f), w = R_b f, f a free axis when there is
    one (so large turns about the free axes cost nothing) else the next axis; its rate is
    (w x u) . (w_b - w_a), exactly."""

    def __init__(self, a: Attachment, b: Attachment, directions=None, *,
                 stiffness: float = math.inf, damping: float = 0.0, name: str = "") -> None:
        super().__init__(a, b, name or f"closure {a.name}-{b.name}")
        directions = list(DIRECTIONS if directions is None else directions)
        unknown = [d for d in directions if d not in DIRECTIONS]
        if unknown or not directions or len(set(directions)) != len(directions):
            raise ModelError(f"{self.name}: directions must be distinct items of "
                             f"{list(DIRECTIONS)}, got {directions}")
        self.directions = directions
        self.stiffness, self.damping = float(stiffness), float(damping)
        self._translations = [DIRECTIONS.index(d) for d in directions if not d.startswith("r")]
        rotations = [DIRECTIONS.index(d) - 3 for d in directions if d.startswith("r")]
        free = [k for k in range(3) if k not in rotations]
        self._rotations = [(k, free[0] if free else (k + 1) % 3) for k in rotations]
        self.row_directions = [DIRECTIONS[k] for k in self._translations] + \
            [DIRECTIONS[k + 3] for k in rotations]
        self.row_count = len(self.row_directions)

    def unit_wrenches(self, oR, op):
        Ra, pa = self.a.pose(oR, op)
        Rb, pb = self.b.pose(oR, op)
        phi, W = [], []
        for k in self._translations:
            d = Ra[:, k]
            phi.append(d @ (pb - pa))
            W.append([force_wrench(-d, pb), force_wrench(d, pb)])
        eye = np.eye(3)
        for k, f in self._rotations:
            u, w = Ra @ cross(eye[k], eye[f]), Rb @ eye[f]
            phi.append(u @ w)
            torque = cross(w, u)
            W.append([np.concatenate([np.zeros(3), -torque]),
                      np.concatenate([np.zeros(3), torque])])
        return np.array(phi), np.array(W)


class PointConstraint:
    """A bilateral constraint holding a point of a body (given in the frame of the joint that
    moves it) to a point in the world, in x, y and z: Drumwright's pendulum."""

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
