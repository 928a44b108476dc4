"""Build a mechanism in Python (after the blog post "Using lots of linear algebra to create a
generalized dynamics solver"): bodies, joints, fixed points, point masses, rigid links,
spring-dampers, applied forces and loop closures, giving the same Model the URDF loader makes
plus the elements between its frames.

    b = Builder(gravity=(0, 0, 0))
    o1 = b.add_point("origin", [0.25, 0.5, 1.0])            # fixed to the world
    o2 = b.add_point("origin2", [0.75, 0.5, 1.0])
    p = b.add_point("free", [0.65, 0.7, 0.5], mass=1.0)     # a point mass: 3 prismatic joints
    b.add_force(p, [0, 0, -1])
    b.add_spring(o1, p, stiffness=8, rest_length=0.5)
    b.add_spring(o2, p, stiffness=8, rest_length=0.5)
    sim = Simulator.from_mechanism(b.build(), dt=0.02)

Fixed joints are merged into their parent body (as urdfdom does for a URDF); their frames stay
addressable by name. A point mass is three prismatic joints ``<name>_x/_y/_z`` whose q is the
point's world position.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .dynamics.closures import ConstraintKinematics
from .model.constraints import (AppliedForce, Attachment, DistanceConstraint, Element,
                                FrameConstraint, SpringDamper)
from .model.model import JointSpec, Model, ModelError
from .spatial import rpy_matrix

JOINT_KINDS = ("revolute", "continuous", "prismatic", "fixed", "free")
WORLD = "world"


def shape_inertia(mass: float, *, box=None, sphere=None, cylinder=None) -> np.ndarray:
    """Rotational inertia about the centre of a solid box (size x, y, z), sphere (radius) or
    cylinder ((radius, length) along z); a point mass when none is given."""
    if box is not None:
        x, y, z = box
        return mass / 12.0 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])
    if sphere is not None:
        return 0.4 * mass * sphere * sphere * np.eye(3)
    if cylinder is not None:
        r, length = cylinder
        side = mass * (3 * r * r + length * length) / 12.0
        return np.diag([side, side, 0.5 * mass * r * r])
    return np.zeros((3, 3))


@dataclass
class _Body:
    mass: float
    com: np.ndarray
    inertia: np.ndarray


@dataclass
class _Joint:
    name: str
    kind: str
    parent: str
    child: str
    rotation: np.ndarray
    translation: np.ndarray
    axis: np.ndarray
    lower: float
    upper: float
    damping: float


@dataclass
class Mechanism:
    """A built model with its frames, constraint and force elements and initial configuration."""

    model: Model
    frames: dict[str, Attachment]
    constraints: list[Element] = field(default_factory=list)
    springs: list[SpringDamper] = field(default_factory=list)
    forces: list[AppliedForce] = field(default_factory=list)
    q0: np.ndarray | None = None


class Builder:
    """Collects bodies, joints, points and elements; ``build()`` makes the Mechanism."""

    def __init__(self, name: str = "mechanism", gravity=(0.0, 0.0, -9.81)) -> None:
        self.name = name
        self.gravity = gravity
        self._bodies: dict[str, _Body] = {}
        self._joints: list[_Joint] = []
        self._points: dict[str, tuple[str, np.ndarray]] = {}
        self._links: list[tuple] = []
        self._springs: list[tuple] = []
        self._forces: list[tuple] = []
        self._closures: list[tuple] = []
        self._positions: dict[str, float | np.ndarray] = {}

    # -- bodies and joints ---------------------------------------------------------------------

    def add_body(self, name: str, mass: float, *, box=None, sphere=None, cylinder=None,
                 inertia=None, com=(0.0, 0.0, 0.0)) -> str:
        """A rigid body: mass (kg, > 0), centre of mass in its frame, and a shape (box size,
        sphere radius, cylinder (radius, length) along z) or a general 3x3 ``inertia`` about
        the centre of mass; neither: a point mass."""
        self._new_name(name)
        if not (isinstance(mass, (int, float)) and math.isfinite(mass) and mass > 0.0):
            raise ModelError(f"body '{name}': the mass must be positive, got {mass!r}")
        I = np.asarray(inertia, dtype=float) if inertia is not None else \
            shape_inertia(mass, box=box, sphere=sphere, cylinder=cylinder)
        if I.shape != (3, 3) or not np.allclose(I, I.T) or np.linalg.eigvalsh(I)[0] < -1e-12:
            raise ModelError(f"body '{name}': the inertia must be a symmetric positive "
                             f"semi-definite 3x3 matrix")
        self._bodies[name] = _Body(float(mass), np.asarray(com, dtype=float).reshape(3), I)
        return name

    def add_joint(self, name: str, kind: str, parent: str, child: str, *,
                  origin=(0.0, 0.0, 0.0), rpy=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0),
                  lower: float = -np.inf, upper: float = np.inf, damping: float = 0.0,
                  position=None) -> str:
        """A joint from ``parent`` (a body or "world") to ``child``, placed at ``origin``/``rpy``
        in the parent's frame: revolute/continuous (about ``axis``), prismatic (along it), fixed,
        or free (``origin``/``rpy`` then give the child's initial pose). ``position``: q0."""
        if kind not in JOINT_KINDS:
            raise ModelError(f"joint '{name}': kind must be one of {JOINT_KINDS}, got {kind!r}")
        if any(j.name == name for j in self._joints):
            raise ModelError(f"joint '{name}' is defined twice")
        for body in (parent, child):
            if body != WORLD and body not in self._bodies:
                raise ModelError(f"joint '{name}': no body named '{body}'")
        if any(j.child == child for j in self._joints) or child == WORLD:
            raise ModelError(f"joint '{name}': body '{child}' already has a parent joint "
                             f"(use add_closure for loops)")
        R, p = rpy_matrix(rpy), np.asarray(origin, dtype=float).reshape(3)
        if kind == "free":
            quaternion = _matrix_quaternion(R)
            self._positions[name] = np.concatenate([p, quaternion])
            R, p = np.eye(3), np.zeros(3)
        self._joints.append(_Joint(name, kind, parent, child, R, p,
                                   np.asarray(axis, dtype=float).reshape(3), lower, upper,
                                   damping))
        if position is not None:
            self._positions[name] = position
        return name

    def add_point(self, name: str, position, *, body: str | None = None,
                  mass: float | None = None) -> str:
        """A named point: fixed to the world (default; ``position`` in world coordinates), on
        ``body`` (``position`` in its frame), or a free point mass (``mass``: three prismatic
        joints, ``position`` its initial world position)."""
        position = np.asarray(position, dtype=float).reshape(3)
        if mass is not None:
            self.add_body(name, mass)
            axes = [f"{name}_x_axis", f"{name}_y_axis"]
            for axis_name in axes:
                self._new_name(axis_name)
                self._bodies[axis_name] = _Body(0.0, np.zeros(3), np.zeros((3, 3)))
            chain = [WORLD, *axes, name]
            for k, coordinate in enumerate("xyz"):
                self.add_joint(f"{name}_{coordinate}", "prismatic", chain[k], chain[k + 1],
                               axis=np.eye(3)[k], position=float(position[k]))
            return name
        owner = body or WORLD
        if owner != WORLD and owner not in self._bodies:
            raise ModelError(f"point '{name}': no body named '{owner}'")
        self._new_name(name)
        self._points[name] = (owner, position)
        return name

    # -- elements ----------------------------------------------------------------------------

    def add_link(self, a: str, b: str, length: float | None = None, *,
                 stiffness: float = math.inf, damping: float = 0.0) -> None:
        """A rigid link (a distance constraint) between two points or frames; ``length``
        defaults to their distance at the initial configuration."""
        self._links.append((a, b, length, stiffness, damping))

    def add_spring(self, a: str, b: str, stiffness: float, damping: float = 0.0,
                   rest_length: float | None = None) -> None:
        """A spring-damper between two points or frames (rest length: the initial distance
        when omitted)."""
        self._springs.append((a, b, stiffness, damping, rest_length))

    def add_force(self, at: str, force) -> None:
        """A constant force (N, world frame) at a point or frame."""
        self._forces.append((at, force))

    def add_closure(self, frame_a: str, frame_b: str, directions=None, *,
                    stiffness: float = math.inf) -> None:
        """A loop closure holding frame_b on frame_a along ``directions`` (x, y, z, rx, ry, rz
        in frame_a's axes; all six when omitted)."""
        self._closures.append((frame_a, frame_b, directions, stiffness))

    def set_position(self, joint: str, value) -> None:
        """The joint's initial position (q0; projected onto the closures by simulator())."""
        self._positions[joint] = value

    # -- build -------------------------------------------------------------------------------

    def build(self) -> Mechanism:
        specs, frames, fixed_mass = self._tree()
        model = Model(specs, name=self.name, fixed_mass=fixed_mass, gravity=self.gravity)
        q0 = self._initial_configuration(model)
        oR, op, _ = ConstraintKinematics(model).evaluate(q0)

        def frame(name: str, role: str) -> Attachment:
            if name not in frames:
                raise ModelError(f"{role}: no point, body or frame named '{name}' (known: "
                                 f"{', '.join(sorted(frames))})")
            return frames[name]

        def distance(a: Attachment, b: Attachment) -> float:
            return float(np.linalg.norm(a.pose(oR, op)[1] - b.pose(oR, op)[1]))

        links = []
        for a, b, length, stiffness, damping in self._links:
            fa, fb = frame(a, f"link {a}-{b}"), frame(b, f"link {a}-{b}")
            links.append(DistanceConstraint(fa, fb, distance(fa, fb) if length is None
                                            else length, stiffness=stiffness, damping=damping))
        springs = []
        for a, b, stiffness, damping, rest in self._springs:
            fa, fb = frame(a, f"spring {a}-{b}"), frame(b, f"spring {a}-{b}")
            if (rest == 0.0 or rest is None) and distance(fa, fb) < 1e-12:
                raise ModelError(f"spring {a}-{b}: zero rest length between coincident points "
                                 f"(its direction is undefined)")
            springs.append(SpringDamper(fa, fb, stiffness, damping,
                                        distance(fa, fb) if rest is None else rest))
        closures = [FrameConstraint(frame(a, f"closure {a}-{b}"), frame(b, f"closure {a}-{b}"),
                                    directions, stiffness=stiffness)
                    for a, b, directions, stiffness in self._closures]
        forces = [AppliedForce(frame(at, f"force at {at}"), force) for at, force in self._forces]
        return Mechanism(model, frames, links + closures, springs, forces, q0)

    def _tree(self) -> tuple[list[JointSpec], dict[str, Attachment], float]:
        """Joint specs in depth-first order (fixed joints merged into their parent body), every
        body and point as an Attachment, and the mass fixed to the world."""
        specs: list[dict] = []
        parts: dict[int, list] = {-1: []}   # joint index -> [(mass, com, inertia)] in its frame
        frames: dict[str, Attachment] = {WORLD: Attachment(WORLD, -1, np.eye(3), np.zeros(3))}

        def place(body: str, joint: int, R: np.ndarray, p: np.ndarray) -> None:
            frames[body] = Attachment(body, joint, R, p)
            if body in self._bodies:
                b = self._bodies[body]
                parts[joint].append((b.mass, p + R @ b.com, R @ b.inertia @ R.T))
            for child in (j for j in self._joints if j.parent == body):
                Rj, pj = R @ child.rotation, p + R @ child.translation
                if child.kind == "fixed":
                    place(child.child, joint, Rj, pj)
                    continue
                specs.append(dict(name=child.name, body=child.child, parent=joint,
                                  kind="free_flyer" if child.kind == "free" else child.kind,
                                  rotation=Rj, translation=pj, axis=child.axis,
                                  lower=child.lower, upper=child.upper, damping=child.damping))
                parts[len(specs) - 1] = []
                place(child.child, len(specs) - 1, np.eye(3), np.zeros(3))

        place(WORLD, -1, np.eye(3), np.zeros(3))
        unreached = sorted(set(self._bodies) - set(frames))
        if unreached:
            raise ModelError(f"bodies {unreached} are not connected to the world by joints")
        for point, (owner, position) in self._points.items():
            base = frames[owner]
            frames[point] = Attachment(point, base.joint, base.rotation,
                                       base.position + base.rotation @ position)
        joint_specs = [JointSpec(**spec, **_combined(parts[i])) for i, spec in enumerate(specs)]
        return joint_specs, frames, sum(m for m, _, _ in parts[-1])

    def _initial_configuration(self, model: Model) -> np.ndarray:
        q = model.neutral()
        for joint, value in self._positions.items():
            i = model.joint_index(joint)
            iq = model.idx_q[i]
            value = np.atleast_1d(np.asarray(value, dtype=float))
            q[iq:iq + value.size] = value
        return q

    def _new_name(self, name: str) -> None:
        if name == WORLD or name in self._bodies or name in self._points:
            raise ModelError(f"'{name}' is already a body or point name")


def _combined(parts: list) -> dict:
    """Mass, centre of mass and inertia about it of rigidly joined parts (parallel axes)."""
    mass = sum(m for m, _, _ in parts)
    if mass <= 0.0:
        return dict(mass=0.0, com=np.zeros(3), inertia=np.zeros((3, 3)))
    com = sum(m * c for m, c, _ in parts) / mass
    inertia = sum(I + m * ((c - com) @ (c - com) * np.eye(3) - np.outer(c - com, c - com))
                  for m, c, I in parts)
    return dict(mass=mass, com=com, inertia=inertia)


def _matrix_quaternion(R: np.ndarray) -> np.ndarray:
    """(x, y, z, w) of a rotation matrix (w >= 0)."""
    w = math.sqrt(max(0.0, 1.0 + R[0, 0] + R[1, 1] + R[2, 2])) / 2.0
    x = math.copysign(math.sqrt(max(0.0, 1.0 + R[0, 0] - R[1, 1] - R[2, 2])) / 2.0,
                      R[2, 1] - R[1, 2])
    y = math.copysign(math.sqrt(max(0.0, 1.0 - R[0, 0] + R[1, 1] - R[2, 2])) / 2.0,
                      R[0, 2] - R[2, 0])
    z = math.copysign(math.sqrt(max(0.0, 1.0 - R[0, 0] - R[1, 1] + R[2, 2])) / 2.0,
                      R[1, 0] - R[0, 1])
    return np.array([x, y, z, w])
