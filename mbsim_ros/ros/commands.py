"""Joint commands: which joints take them, validation at the door, and the hand-over slot
between the executor thread (subscriptions) and the simulation loop thread.

Commands are for the one-DOF joints (revolute, continuous, prismatic); a free-flyer has no
actuator. Each joint takes an effort, a position target or a velocity target (the joint
servos of integrators/servo.py, with the effort as feed-forward). A command is validated whole
(lengths, names, finiteness, the gains a target needs) and either accepted whole or rejected
whole: a rejected command leaves the last good one in force. Efforts are clamped to the URDF
effort limits (a servo's total effort is clamped again after its law, in the step).
"""
from __future__ import annotations

import numpy as np

from ..integrators.servo import EFFORT, POSITION, VELOCITY
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

    def indices(self, names) -> list[int]:
        """Each name's index among the joints; CommandError for an unknown or repeated one."""
        unknown = [name for name in names if name not in self.index]
        if unknown:
            raise CommandError(f"unknown joint(s) {', '.join(map(repr, unknown))} (joints: "
                               f"{', '.join(self.names)})")
        if len(set(names)) != len(names):
            raise CommandError("a joint is named twice")
        return [self.index[name] for name in names]


def named_values(joints: ActuatedJoints, names, fields: dict) -> tuple[list[int], dict]:
    """A JointState's fields (e.g. position, velocity, effort: each empty or one entry per
    name) checked whole: (the names' joint indices, {field: float array} of the non-empty
    fields). Raises CommandError naming the reason: a length that is neither 0 nor one per
    name, no field given, an unknown or repeated joint, NaN or infinity."""
    n = len(names)
    listed = ", ".join(fields)
    for field, values in fields.items():
        if len(values) not in (0, n):
            raise CommandError(f"{field} has {len(values)} entries for {n} names (each of "
                               f"{listed}: empty or one per name)")
    if not any(len(values) for values in fields.values()):
        *first, last = fields
        raise CommandError(f"the message carries no {', '.join(first)} or {last}")
    indices = joints.indices(names)
    values = {field: np.asarray(v, dtype=float) for field, v in fields.items() if len(v)}
    for field, array in values.items():
        if not np.all(np.isfinite(array)):
            bad = names[int(np.flatnonzero(~np.isfinite(array))[0])]
            raise CommandError(f"{field} of '{bad}' is NaN or infinite")
    return indices, values


class CommandSlot:
    """The latest accepted command, in one float64 array: per DOF (nv each) the effort
    (clamped; zero on the free-flyer), the position and velocity targets and the interface
    (servo.EFFORT / POSITION / VELOCITY), then the simulated time (ns) it counts from.

    Lock-free hand-over: the writer fills its own scratch array and publishes it with one
    ``np.copyto`` into ``latest``; the reader takes it with one ``np.copyto`` into its own array.
    Each copy is a single C call made while holding the GIL, so the reader never sees half a
    command, and neither side allocates.
    """

    def __init__(self, model: Model, joints: ActuatedJoints, gains: np.ndarray) -> None:
        nv = self.nv = model.nv
        self.joints = joints
        self.initial = np.zeros(4 * nv + 1)  # the command before any arrives (hold_start)
        self.initial[-1] = np.nan  # never stale
        self.latest = self.initial.copy()
        self._scratch = np.zeros(4 * nv + 1)
        self._efforts = np.zeros(len(joints))
        self._finite = np.zeros(len(joints), dtype=bool)
        self._lower_limit = -joints.effort_limit
        # per actuated joint: can it take a position / a velocity target (servo gains)?
        self._takes_position = gains[0, joints.idx_v] > 0.0
        self._takes_velocity = (gains[1, joints.idx_v] > 0.0) | (gains[2, joints.idx_v] > 0.0)

    def clear(self) -> None:
        """Back to the initial command (zero effort, or holding the start: hold_start)."""
        np.copyto(self.latest, self.initial)

    def hold_start(self, q: np.ndarray) -> list[str]:
        """Make the initial command hold configuration q: every joint with a position gain
        starts as a position servo on its start position (drives holding at power-on, until
        a controller commands them); returns those joints."""
        nv, held = self.nv, []
        for a, name in enumerate(self.joints.names):
            if self._takes_position[a]:
                j = self.joints.idx_v[a]
                self.initial[nv + j] = q[self.joints.idx_q[a]]
                self.initial[3 * nv + j] = POSITION
                held.append(name)
        self.clear()
        return held

    def put_array(self, efforts, stamp_ns: int) -> None:
        """A full effort command in model joint order (Float64MultiArray): every joint in
        effort mode; raises CommandError. Allocation-free for a float64 buffer (a message's
        array.array): it is read in place."""
        efforts = _as_floats(efforts)
        n = len(self.joints)
        if efforts.shape != (n,):
            raise CommandError(f"expected {n} efforts (joints {', '.join(self.joints.names)}), "
                               f"got {efforts.size}")
        if not np.isfinite(efforts, out=self._finite).all():
            raise CommandError("command contains NaN or infinity")
        scratch = self._scratch
        scratch[:] = 0.0
        np.put(scratch, self.joints.idx_v, efforts)
        self._publish(stamp_ns)

    def put_joint_state(self, names, position, velocity, effort, stamp_ns: int) -> None:
        """A JointState command: each of position / velocity / effort is empty or one entry
        per name. Per joint, a position makes it a position servo (with the velocity as its
        velocity target and the effort as feed-forward, when given), a velocity alone a
        velocity servo, an effort alone a plain effort; the joints it does not name keep their
        current command. Raises CommandError (nothing changes) naming the reason."""
        indices, values = named_values(self.joints, names, {
            "position": position, "velocity": velocity, "effort": effort})
        mode = POSITION if "position" in values else VELOCITY if "velocity" in values \
            else EFFORT
        needs = {POSITION: (self._takes_position, "a position target needs gains.{}.p > 0"),
                 VELOCITY: (self._takes_velocity, "a velocity target needs gains.{}.d or "
                                                  ".i > 0")}.get(mode)
        if needs is not None:
            missing = [names[k] for k, a in enumerate(indices) if not needs[0][a]]
            if missing:
                raise CommandError(f"joint '{missing[0]}': " + needs[1].format(missing[0]))
        scratch, nv = self._scratch, self.nv
        np.copyto(scratch, self.latest)
        for k, a in enumerate(indices):
            j = self.joints.idx_v[a]
            scratch[j] = values["effort"][k] if "effort" in values else 0.0
            scratch[nv + j] = values["position"][k] if "position" in values else 0.0
            scratch[2 * nv + j] = values["velocity"][k] if "velocity" in values else 0.0
            scratch[3 * nv + j] = mode
        self._publish(stamp_ns)

    def _publish(self, stamp_ns: int) -> None:
        """Clamp the efforts to the effort limits and hand the command over (no allocation)."""
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
        return _converted(values).ravel()
    return view if memoryview(values).format == "d" else _converted(values)


def _converted(values) -> np.ndarray:
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise CommandError(f"efforts must be numbers, got {values!r:.80}") from None


def take_command(slot: CommandSlot, command: np.ndarray, now_ns: int, timeout_ns: int) -> bool:
    """Copy the latest command into command (the slot's layout); when it is older than
    timeout_ns of simulated time (timeout 0: never), zero its efforts and velocity targets
    (position servos hold their targets, velocity servos brake to rest) and return True."""
    np.copyto(command, slot.latest)
    if timeout_ns > 0 and now_ns - command[-1] > timeout_ns:
        nv = slot.nv
        command[:nv] = 0.0
        command[2 * nv:3 * nv] = 0.0
        return True
    return False
