"""The Model: a kinematic forest as flat arrays that compiled kernels read directly.

Joint ``i`` connects body ``i`` to its parent body ``parent[i]`` (``-1``: the world). Joints are
ordered so that a parent always comes before its children (pinocchio's depth-first order for a
URDF); several joints may have parent ``-1`` (a forest). Everything a kernel needs is packed into
two arrays, ``joint_int`` and ``joint_real``, one row per joint (column layout below); the named
attributes are views of those rows for Python code. A Model never changes after construction,
except ``gravity`` and ``armature`` (physical parameters that every algorithm reads at call time).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..arena import ArenaPlan
from ..schema import SchemaError, nearest


class ModelError(ValueError):
    """A model that cannot be built or simulated; the message names the element and the reason."""


class ConfigError(SchemaError):
    """A configuration value that cannot be used; the message names the key."""


# Joint types as kernels see them. "continuous" is a revolute joint without position limits.
REVOLUTE = 0
PRISMATIC = 1
FREE_FLYER = 2
JOINT_TYPE_NQ = {REVOLUTE: 1, PRISMATIC: 1, FREE_FLYER: 7}
JOINT_TYPE_NV = {REVOLUTE: 1, PRISMATIC: 1, FREE_FLYER: 6}

# joint_int columns
I_PARENT, I_TYPE, I_IDX_Q, I_IDX_V, I_NQ, I_NV = range(6)
JOINT_INT_COLUMNS = 6
# joint_real columns: joint placement in the parent joint frame (R row-major, p), unit joint
# axis (joint frame), body mass, centre of mass (joint frame), rotational inertia about the centre
# of mass (joint frame; xx, xy, xz, yy, yz, zz).
R_ROT = slice(0, 9)
R_POS = slice(9, 12)
R_AXIS = slice(12, 15)
R_MASS = 15
R_COM = slice(16, 19)
R_INERTIA = slice(19, 25)
JOINT_REAL_COLUMNS = 25


@dataclass(frozen=True)
class JointSpec:
    """One joint as a builder describes it (all frames are the parent joint's)."""

    name: str
    kind: str  # "revolute", "continuous", "prismatic", "free_flyer"
    parent: int
    rotation: np.ndarray  # (3, 3) joint placement rotation
    translation: np.ndarray  # (3,) joint placement translation
    axis: np.ndarray  # (3,) joint axis in the joint frame (ignored for free_flyer)
    mass: float
    com: np.ndarray  # (3,)
    inertia: np.ndarray  # (3, 3) about the centre of mass
    body: str = ""
    lower: float = -np.inf
    upper: float = np.inf
    velocity_limit: float = np.inf
    effort_limit: float = np.inf
    damping: float = 0.0
    friction: float = 0.0
    armature: float = 0.0  # rotor inertia reflected to the joint (added to M's diagonal)


_KIND_TO_TYPE = {"revolute": REVOLUTE, "continuous": REVOLUTE, "prismatic": PRISMATIC,
                 "free_flyer": FREE_FLYER}


class Model:
    """A kinematic forest with its inertias and limits.

    Attributes: ``nq``, ``nv``, ``joint_names``, ``joint_kinds``, ``body_names``, ``gravity``
    (settable 3-vector), ``lower_position_limit`` / ``upper_position_limit`` (nq),
    ``velocity_limit`` / ``effort_limit`` / ``damping`` / ``friction`` (nv), ``armature`` (nv,
    settable: rotor inertia reflected to each 1-DOF joint, added to the diagonal of M as in
    MuJoCo and pinocchio), ``total_mass``.
    Free-flyer joints take ``q = [x, y, z, qx, qy, qz, qw]`` and ``v = [linear, angular]`` in the
    body frame (pinocchio's convention); revolute, continuous and prismatic joints take one q.
    """

    def __init__(self, joints: list[JointSpec], *, name: str = "model",
                 fixed_mass: float = 0.0, gravity=(0.0, 0.0, -9.81)) -> None:
        self.name = name
        nj = len(joints)
        self.joint_int = np.zeros((nj, JOINT_INT_COLUMNS), dtype=np.int64)
        self.joint_real = np.zeros((nj, JOINT_REAL_COLUMNS))
        lower, upper, vel, eff, damp, fric, arm = [], [], [], [], [], [], []
        idx_q = idx_v = 0
        for i, j in enumerate(joints):
            if j.kind not in _KIND_TO_TYPE:
                raise ModelError(f"joint '{j.name}': unsupported joint type '{j.kind}'")
            if not -1 <= j.parent < i:
                raise ModelError(f"joint '{j.name}': its parent must come before it "
                                 f"(parent index {j.parent}, own index {i})")
            jtype = _KIND_TO_TYPE[j.kind]
            nq, nv = JOINT_TYPE_NQ[jtype], JOINT_TYPE_NV[jtype]
            self.joint_int[i] = (j.parent, jtype, idx_q, idx_v, nq, nv)
            row = self.joint_real[i]
            row[R_ROT] = np.asarray(j.rotation, dtype=float).reshape(9)
            row[R_POS] = j.translation
            if jtype != FREE_FLYER:
                norm = float(np.linalg.norm(j.axis))
                if not norm > 0.0:
                    raise ModelError(f"joint '{j.name}': its axis is zero")
                row[R_AXIS] = np.asarray(j.axis, dtype=float) / norm
            row[R_MASS] = j.mass
            row[R_COM] = j.com
            inertia = np.asarray(j.inertia, dtype=float)
            row[R_INERTIA] = (inertia[0, 0], inertia[0, 1], inertia[0, 2], inertia[1, 1],
                              inertia[1, 2], inertia[2, 2])
            idx_q += nq
            idx_v += nv
            if jtype == FREE_FLYER:
                lower += [-np.inf] * 7
                upper += [np.inf] * 7
                vel += [np.inf] * 6
                eff += [np.inf] * 6
                damp += [0.0] * 6
                fric += [0.0] * 6
                arm += [0.0] * 6
                if j.armature != 0.0:
                    raise ModelError(f"joint '{j.name}': armature is for 1-DOF joints, not a "
                                     f"free flyer")
            else:
                lower.append(j.lower)
                upper.append(j.upper)
                vel.append(j.velocity_limit)
                eff.append(j.effort_limit)
                damp.append(j.damping)
                fric.append(j.friction)
                arm.append(_checked_armature(j.armature, j.name))
        self.nq = idx_q
        self.nv = idx_v
        self.njoints = nj
        self.joint_names = [j.name for j in joints]
        self.joint_kinds = [j.kind for j in joints]
        self.body_names = [j.body or j.name for j in joints]
        self.total_mass = float(self.joint_real[:, R_MASS].sum() + fixed_mass)
        self.fixed_mass = float(fixed_mass)
        self._in_arena(lower, upper, vel, eff, damp, fric, gravity, arm)

    def _in_arena(self, lower, upper, vel, eff, damp, fric, gravity, arm) -> None:
        """The Model's arrays moved into its own arena pair (mbsim_ros/arena.py), read-only but
        for gravity and armature, which the setters write in place (``armature`` itself is a
        read-only view of its entry)."""
        plan = ArenaPlan(f"model {self.name}")
        plan.add_array("joint_int", np.array(self.joint_int, dtype=np.int64))
        plan.add_array("joint_real", np.array(self.joint_real, dtype=np.float64))
        for name, values in (("lower_position_limit", lower), ("upper_position_limit", upper),
                             ("velocity_limit", vel), ("effort_limit", eff), ("damping", damp),
                             ("friction", fric), ("gravity", gravity), ("armature", arm)):
            plan.add_array(name, np.array(values, dtype=np.float64))  # (writable copies)
        self.arena = arena = plan.allocate()
        self.joint_int, self.joint_real = arena["joint_int"], arena["joint_real"]
        self.lower_position_limit = arena["lower_position_limit"]
        self.upper_position_limit = arena["upper_position_limit"]
        self.velocity_limit, self.effort_limit = arena["velocity_limit"], arena["effort_limit"]
        self.damping, self.friction = arena["damping"], arena["friction"]
        self._gravity, self._armature = arena["gravity"], arena["armature"]
        self._armature_view = self._armature.view()  # read-only; the setters write in place
        self._armature_view.setflags(write=False)
        arena.read_only_except("gravity", "armature")

    # --- views for Python code -------------------------------------------------------------
    @property
    def parent(self) -> np.ndarray:
        return self.joint_int[:, I_PARENT]

    @property
    def joint_type(self) -> np.ndarray:
        return self.joint_int[:, I_TYPE]

    @property
    def idx_q(self) -> np.ndarray:
        return self.joint_int[:, I_IDX_Q]

    @property
    def idx_v(self) -> np.ndarray:
        return self.joint_int[:, I_IDX_V]

    @property
    def gravity(self) -> np.ndarray:
        return self._gravity

    @gravity.setter
    def gravity(self, value) -> None:
        g = np.asarray(value, dtype=float)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError(f"gravity must be a finite 3-vector, got {value!r}")
        self._gravity[:] = g

    @property
    def armature(self) -> np.ndarray:
        """Rotor inertia reflected to each joint (nv; kg m^2 or kg), added to the diagonal of
        the joint-space inertia by every algorithm (MuJoCo's and pinocchio's meaning). Set it
        whole (``model.armature = values``) or by joint name (``set_armature``); written in
        place, so integrators built on the model see the change at their next step."""
        return self._armature_view

    @armature.setter
    def armature(self, value) -> None:
        a = np.asarray(value, dtype=float)
        if a.shape != (self.nv,):
            raise ValueError(f"armature must have nv = {self.nv} entries, got shape {a.shape}")
        for i in range(self.njoints):
            iv, nv = self.idx_v[i], JOINT_TYPE_NV[int(self.joint_type[i])]
            if nv == 1:
                _checked_armature(float(a[iv]), self.joint_names[i])
            elif np.any(a[iv:iv + nv] != 0.0):
                raise ValueError(f"joint '{self.joint_names[i]}': armature is for 1-DOF "
                                 f"joints, not a free flyer")
        self._armature[:] = a

    def set_armature(self, values: dict[str, float]) -> None:
        """Armature by joint name (joints not named keep theirs)."""
        a = self._armature.copy()
        for name, value in values.items():
            i = self.joint_index(name)
            if self.joint_type[i] == FREE_FLYER:
                raise ValueError(f"joint '{name}': armature is for 1-DOF joints, not a free "
                                 f"flyer")
            a[self.idx_v[i]] = _checked_armature(value, name)
        self.armature = a

    def joint_index(self, name: str) -> int:
        try:
            return self.joint_names.index(name)
        except ValueError:
            guess = nearest(name, self.joint_names)
            raise KeyError(f"no joint named '{name}'" + (f" (did you mean {guess}?)" if guess
                                                          else "")
                           + f" (joints: {', '.join(self.joint_names)})") from None

    def neutral(self) -> np.ndarray:
        """The reference configuration (pinocchio's): zero angles and offsets, identity
        free-flyer pose at the origin."""
        q = np.zeros(self.nq)
        for i in np.flatnonzero(self.joint_type == FREE_FLYER):
            q[self.idx_q[i] + 6] = 1.0
        return q

    def clamped(self, q) -> tuple[np.ndarray, list[str]]:
        """(q with every 1-DOF joint clamped into its position limits, the names of the
        joints that were outside). Free-flyer coordinates are left alone."""
        q = np.asarray(q, dtype=float)
        inside = np.clip(q, self.lower_position_limit, self.upper_position_limit)
        outside = [self.joint_names[i] for i in range(self.njoints)
                   if inside[self.idx_q[i]] != q[self.idx_q[i]]]
        return inside, outside

    def joint_specs(self) -> list[JointSpec]:
        """The joints as specs again (for merging models into a forest)."""
        specs = []
        for i in range(self.njoints):
            row = self.joint_real[i]
            iq, iv = self.idx_q[i], self.idx_v[i]
            xx, xy, xz, yy, yz, zz = row[R_INERTIA]
            specs.append(JointSpec(
                name=self.joint_names[i], kind=self.joint_kinds[i], parent=int(self.parent[i]),
                rotation=row[R_ROT].reshape(3, 3).copy(), translation=row[R_POS].copy(),
                axis=row[R_AXIS].copy(), mass=float(row[R_MASS]), com=row[R_COM].copy(),
                inertia=np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]),
                body=self.body_names[i], lower=float(self.lower_position_limit[iq]),
                upper=float(self.upper_position_limit[iq]),
                velocity_limit=float(self.velocity_limit[iv]),
                effort_limit=float(self.effort_limit[iv]), damping=float(self.damping[iv]),
                friction=float(self.friction[iv]), armature=float(self._armature[iv])))
        return specs

    def __repr__(self) -> str:
        return (f"Model('{self.name}', joints={self.njoints}, nq={self.nq}, nv={self.nv}, "
                f"mass={self.total_mass:.3f} kg)")


class LimitWarning(UserWarning):
    """A start configuration outside the joint limits was clamped into them."""


def start_within_limits(model: Model, q, what: str, *, stacklevel: int = 3) -> np.ndarray:
    """q clamped into the joint limits, with one LimitWarning naming the joints that were
    outside (``what`` says whose start it is). Starts are clamped so that a limit law (a stiff
    spring, a stabilising impulse) does not launch the robot at its first step."""
    inside, outside = model.clamped(q)
    if outside:
        moved = ", ".join(f"{name} {q[model.idx_q[model.joint_index(name)]]:.4g} -> "
                          f"{inside[model.idx_q[model.joint_index(name)]]:.4g}"
                          for name in outside)
        warnings.warn(LimitWarning(f"model '{model.name}': {what} is outside the joint limits "
                                   f"of {len(outside)} joint(s); clamped into them: {moved}"),
                      stacklevel=stacklevel)
    return inside


def _checked_armature(value, joint: str) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ModelError(f"joint '{joint}': armature {value!r} is not a number") from None
    if not (np.isfinite(value) and value >= 0.0):
        raise ModelError(f"joint '{joint}': armature must be finite and >= 0, got {value}")
    return value


def merge(models: list[Model], *, prefixes: list[str] | None = None,
          name: str = "forest") -> Model:
    """One Model holding several trees side by side (a forest), in the given order.

    ``prefixes`` (one per model) are prepended to joint and body names to keep them unique.
    Gravity is taken from the first model.
    """
    if not models:
        raise ModelError("merge: no models given")
    prefixes = prefixes or [""] * len(models)
    specs: list[JointSpec] = []
    for model, prefix in zip(models, prefixes):
        offset = len(specs)
        for s in model.joint_specs():
            parent = s.parent + offset if s.parent >= 0 else -1
            specs.append(JointSpec(**{**s.__dict__, "name": prefix + s.name,
                                      "body": prefix + s.body, "parent": parent}))
    names = [s.name for s in specs]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ModelError(f"merge: joint names {duplicated} occur twice; pass prefixes")
    return Model(specs, name=name, fixed_mass=sum(m.fixed_mass for m in models),
                 gravity=models[0].gravity)
