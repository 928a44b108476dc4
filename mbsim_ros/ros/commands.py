"""Effort commands: which joints take them, validation at the door, and the hand-over slot
between the executor thread (subscriptions) and the simulation loop thread.

Commands are efforts for the one-DOF joints (revolute, continuous, prismatic) in model order;
a free-flyer has no actuator. A command is validated whole (length, names, finiteness) and
either accepted whole or rejected whole: a rejected command leaves the last good one in force.
Accepted efforts are clamped to the URDF effort limits.
"""
from __future__ import annotations

import numpy as np

from ..model import Model


class CommandError(ValueError):
    """Why a command was rejected (the node logs it, throttled)."""


class ActuatedJoints:
    """The one-DOF joints of a model: names, their q / v indices, effort limits."""

    def __init__(self, model: Model) -> None:
        one_dof = [i for i, kind in enumerate(model.joint_kinds) if kind != "free_flyer"]
        self.names = [model.joint_names[i] for i in one_dof]
        self.idx_q = np.array([model.idx_q[i] for i in one_dof], dtype=np.int64)
        self.idx_v = np.array([model.idx_v[i] for i in one_dof], dtype=np.int64)
        self.effort_limit = model.effort_limit[self.idx_v].copy()
        self.index = {name: k for k, name in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)


class CommandSlot:
    """The latest accepted command: efforts (nv, clamped, zero on the free-flyer) and the
    simulated time (ns) it counts from, in one float64 array of nv + 1 entries.

    Lock-free hand-over: the writer fills its own scratch array and publishes it with one
    ``np.copyto`` into ``latest``; the reader takes it with one ``np.copyto`` into its own array.
    Each copy is a single C call made while holding the GIL, so the reader never sees half a
    command, and neither side allocates.
    """

    def __init__(self, model: Model, joints: ActuatedJoints) -> None:
        self.nv = model.nv
        self.joints = joints
        self.latest = np.zeros(model.nv + 1)
        self.latest[-1] = np.nan  # no command yet: zero effort, never stale
        self._scratch = np.zeros(model.nv + 1)
        self._efforts = np.zeros(len(joints))
        self._finite = np.zeros(len(joints), dtype=bool)
        self._lower_limit = -joints.effort_limit

    def clear(self) -> None:
        np.copyto(self.latest, 0.0)
        self.latest[-1] = np.nan

    def put_array(self, efforts, stamp_ns: int) -> None:
        """A full command in model joint order (Float64MultiArray); raises CommandError.
        Allocation-free for a float64 buffer (a message's array.array): it is read in place."""
        efforts = _as_floats(efforts)
        n = len(self.joints)
        if efforts.shape != (n,):
            raise CommandError(f"expected {n} efforts (joints {', '.join(self.joints.names)}), "
                               f"got {efforts.size}")
        if not np.isfinite(efforts, out=self._finite).all():
            raise CommandError("command contains NaN or infinity")
        scratch = self._scratch
        scratch[:self.nv] = 0.0
        np.put(scratch, self.joints.idx_v, efforts)
        self._publish(stamp_ns)

    def put_named(self, names, efforts, stamp_ns: int) -> None:
        """Efforts by joint name, any subset (JointState); the joints it does not name keep
        their current command. Raises CommandError."""
        if len(names) != len(efforts):
            raise CommandError(f"{len(names)} names but {len(efforts)} efforts")
        unknown = [name for name in names if name not in self.joints.index]
        if unknown:
            raise CommandError(f"unknown joint(s) {', '.join(map(repr, unknown))} (joints: "
                               f"{', '.join(self.joints.names)})")
        if len(set(names)) != len(names):
            raise CommandError("a joint is named twice")
        values = np.asarray(efforts, dtype=float)
        if not np.all(np.isfinite(values)):
            raise CommandError("command contains NaN or infinity")
        scratch = self._scratch
        np.copyto(scratch, self.latest)
        for name, value in zip(names, values):
            scratch[self.joints.idx_v[self.joints.index[name]]] = value
        self._publish(stamp_ns)

    def _publish(self, stamp_ns: int) -> None:
        """Clamp to the effort limits and hand the command over (no allocation)."""
        scratch, efforts = self._scratch, self._efforts
        np.take(scratch, self.joints.idx_v, out=efforts)
        np.minimum(efforts, self.joints.effort_limit, out=efforts)
        np.maximum(efforts, self._lower_limit, out=efforts)
        np.put(scratch, self.joints.idx_v, efforts)
        scratch[-1] = float(stamp_ns)
        np.copyto(self.latest, scratch)


def _as_floats(values) -> np.ndarray:
    """A float64 view of a message's array field (no copy), else a converted copy."""
    try:
        view = np.frombuffer(values, dtype=np.float64)
    except (TypeError, ValueError):
        return np.asarray(values, dtype=float).ravel()
    return view if memoryview(values).format == "d" else np.asarray(values, dtype=float)


def take_command(slot: CommandSlot, tau_out: np.ndarray, now_ns: int, timeout_ns: int) -> bool:
    """Copy the latest command into tau_out (nv + 1 entries: efforts, stamp); zero the efforts
    and return True when it is older than timeout_ns of simulated time (timeout 0: never)."""
    np.copyto(tau_out, slot.latest)
    if timeout_ns > 0 and now_ns - tau_out[-1] > timeout_ns:
        tau_out[:-1] = 0.0
        return True
    return False
