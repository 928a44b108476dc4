"""The controllers a campaign drives its runs with: built-in joint servos (hold the start, PD to
a posture, a trajectory from a file) and a user's ``module:function`` (a user's ROS 2 process:
ros_controller.py). Each is ``attach(sim, suite)``-ed to a run's Simulator, gives a Command
every control period (``controller(step, sim, readings)``; ControllerFailure when it cannot)
and is ``close()``-d after the run; ``CommandLine`` delays the commands by whole steps (the
drawn command delay)."""
from __future__ import annotations

import csv
import importlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..actuators import CommandDelay
from ..dynamics import crba
from ..integrators.servo import EFFORT, POSITION, VELOCITY
from ..model import FREE_FLYER, Model
from ..schema import Real, Schema, Text, load_yaml, validate
from .spec import Controller


class ControllerFailure(RuntimeError):
    """Why a run's controller failed it (a process that exited, hung, or sent a command the
    node would reject): the run's ``failed_check: controller``."""


@dataclass
class Command:
    """One command, per DOF (nv each): the servo interface (EFFORT / POSITION / VELOCITY),
    position and velocity targets, and the feed-forward effort."""

    mode: np.ndarray
    q_target: np.ndarray
    v_target: np.ndarray
    tau: np.ndarray

    @classmethod
    def zeros(cls, nv: int) -> "Command":
        return cls(np.full(nv, EFFORT, dtype=np.int64), np.zeros(nv), np.zeros(nv), np.zeros(nv))


def joint_dofs(model: Model) -> dict[str, tuple[int, int]]:
    """One-DOF joint name -> (q index, v index)."""
    return {model.joint_names[i]: (int(model.idx_q[i]), int(model.idx_v[i]))
            for i in range(model.njoints) if model.joint_type[i] != FREE_FLYER}


class TrajectoryFile(Schema):
    """A trajectory file in YAML: positions by joint name over time."""

    t: list[Real]
    """the times (s), increasing"""
    joints: dict[Text, list[Real]]
    """each joint's positions (rad or m), one per time"""


def load_trajectory(path: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(times, {joint: positions}) from a CSV file (a header ``t,<joint>,...``) or a YAML file
    ``{t: [...], joints: {<joint>: [...]}}``; ValueError says what is wrong."""
    file = Path(path)
    if file.suffix in (".yaml", ".yml"):
        data = validate(TrajectoryFile, load_yaml(file.read_text()), str(path))
        times, joints = data.t, data.joints
    else:
        with file.open() as stream:
            rows = list(csv.reader(stream))
        if not rows or rows[0][0].strip() != "t":
            raise ValueError(f"{path}: expected a CSV header 't,<joint>,...'")
        columns = list(zip(*[[float(x) for x in row] for row in rows[1:]]))
        times = columns[0]
        joints = {name.strip(): columns[k + 1] for k, name in enumerate(rows[0][1:])}
    t = np.asarray(times, dtype=float)
    if t.ndim != 1 or len(t) < 2 or np.any(np.diff(t) <= 0):
        raise ValueError(f"{path}: t must be increasing, with two entries at least")
    out = {name: np.asarray(values, dtype=float) for name, values in joints.items()}
    bad = [name for name, values in out.items() if values.shape != t.shape]
    if bad:
        raise ValueError(f"{path}: joints {bad} do not have one position per time")
    return t, out


def import_callable(text: str):
    """The object named ``module:function``; ValueError says why it cannot be had."""
    module_name, _, attribute = text.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"'{text}' is not of the form module:function")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any failure to import is the user's to read
        raise ValueError(f"cannot import module '{module_name}': {exc}") from None
    found = getattr(module, attribute, None)
    if not callable(found):
        raise ValueError(f"module '{module_name}' has no callable '{attribute}'")
    return found


def gains(spec: Controller, model: Model, q0: np.ndarray,
          dofs: dict[str, tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """(kp, kd) per DOF: the spec's numbers (one for all or by joint), or inertia-scaled from
    the diagonal of M at q0 (kp = M_jj w^2, kd = 2 zeta w M_jj)."""
    kp, kd = np.zeros(model.nv), np.zeros(model.nv)
    iv = np.array([v for _, v in dofs.values()], dtype=int)
    if spec.omega is not None:
        diagonal = np.diag(crba(model, q0))
        kp[iv] = diagonal[iv] * spec.omega ** 2
        kd[iv] = 2.0 * spec.zeta * spec.omega * diagonal[iv]
        return kp, kd
    for out, value in ((kp, spec.kp), (kd, spec.kd)):
        if isinstance(value, dict):
            for name, gain in value.items():
                out[dofs[name][1]] = gain
        elif value is not None:
            out[iv] = value
    return kp, kd


class JointServo:
    """hold / pd / trajectory: position targets per DOF at each control tick, tracked by the
    integrator's servos (mode servo) or by an explicit PD on the encoder readings (effort)."""

    def __init__(self, spec: Controller, model: Model, q0: np.ndarray, dt: float,
                 duration: float, trajectory=None) -> None:
        self.dofs = joint_dofs(model)
        self.explicit = spec.mode == "effort"
        self.kp, self.kd = gains(spec, model, q0, self.dofs)
        self.command = Command.zeros(model.nv)
        self._iq = np.array([q for q, _ in self.dofs.values()], dtype=int)
        self._iv = np.array([v for _, v in self.dofs.values()], dtype=int)
        self.command.mode[self._iv] = EFFORT if self.explicit else POSITION
        self.tracked = self._iv  # the DOFs whose position targets are tracked
        self._targets = self._target_table(spec, q0, dt, duration, trajectory)
        self._speeds = np.gradient(self._targets, dt, axis=0) if len(self._targets) > 1 \
            else np.zeros_like(self._targets)
        self._q_target = np.zeros(model.nv)  # every DOF, for tracking

    def _target_table(self, spec: Controller, q0, dt, duration, trajectory) -> np.ndarray:
        """(ticks, DOFs) of position targets: constant for hold and pd, interpolated from the
        file for a trajectory (joints it does not name hold their start)."""
        start = q0[self._iq].copy()
        if spec.type == "pd":
            names = list(self.dofs)
            for name, value in spec.posture.items():
                start[names.index(name)] = value
        if trajectory is None:
            return start[None, :]
        times, positions = trajectory
        ticks = np.arange(int(round(duration / dt)) + 1) * dt
        table = np.repeat(start[None, :], len(ticks), axis=0)
        for k, name in enumerate(self.dofs):
            if name in positions:
                table[:, k] = np.interp(ticks, times, positions[name])
        return table

    def attach(self, sim, suite=None) -> None:
        if not self.explicit:
            sim.servos.set_gains(p=self.kp, d=self.kd)

    def close(self, failed: bool = False) -> None:
        """Nothing to release (in-process)."""

    def compiled(self, decimation: int) -> tuple:
        """Its law's arrays as campaign/ticks.command_tick takes them (the command's q_target
        10th: what tracking reads)."""
        command = self.command
        return (self._targets, self._speeds, self._iq, self._iv, self.kp, self.kd,
                self.explicit, decimation, command.mode, command.q_target, command.v_target,
                command.tau)

    def __call__(self, step: int, sim, readings) -> Command:
        row = min(step, len(self._targets) - 1)
        q_target, v_target = self._targets[row], self._speeds[row]
        command = self.command
        if self.explicit:
            q, v = (readings.encoder_q, readings.encoder_v) \
                if readings is not None and readings.encoders is not None else (sim.q, sim.v)
            command.tau[self._iv] = self.kp[self._iv] * (q_target - q[self._iq]) \
                + self.kd[self._iv] * (v_target - v[self._iv])
        command.q_target[self._iv] = q_target
        command.v_target[self._iv] = v_target
        return command


class UserController:
    """A user's ``module:function(t, state, readings)`` (or, with factory, the callable that
    ``function(sim, options)`` returns), its result a mapping with any of ``effort``,
    ``position``, ``velocity``: arrays (effort and velocity nv, position nq) or {joint:
    value}. Joints given a position go to position mode (the spec's kp, kd), a velocity alone
    velocity mode; the others take the effort."""

    def __init__(self, spec: Controller, model: Model, q0: np.ndarray) -> None:
        self.function = import_callable(spec.function)
        self.spec = spec
        self.dofs = joint_dofs(model)
        self.kp, self.kd = gains(spec, model, q0, self.dofs) \
            if spec.kp is not None or spec.omega is not None else (None, None)
        self.command = Command.zeros(model.nv)
        self.tracked = np.zeros(0, dtype=int)
        self._call = self.function

    def attach(self, sim, suite=None) -> None:
        if self.spec.factory:
            self._call = self.function(sim, dict(self.spec.options))
        if self.kp is not None:
            sim.servos.set_gains(p=self.kp, d=self.kd)

    def close(self, failed: bool = False) -> None:
        """Nothing to release (in-process)."""

    def __call__(self, step: int, sim, readings) -> Command:
        result = self._call(sim.t, sim, readings) or {}
        command = self.command
        command.mode[:] = EFFORT
        command.tau[:] = self._per_dof(result.get("effort"), by_q=False)
        velocity = result.get("velocity")
        if velocity is not None:
            command.v_target[:] = self._per_dof(velocity, by_q=False)
            command.mode[self._named_dofs(velocity)] = VELOCITY
        position = result.get("position")
        if position is not None:
            command.q_target[:] = self._per_dof(position, by_q=True)
            command.mode[self._named_dofs(position)] = POSITION
        self.tracked = np.flatnonzero(command.mode == POSITION)
        return command

    def _named_dofs(self, values) -> list[int]:
        if isinstance(values, dict):
            return [self.dofs[name][1] for name in values]
        return [v for _, v in self.dofs.values()]

    def _per_dof(self, values, by_q: bool) -> np.ndarray:
        out = np.zeros(self.command.tau.shape[0])
        if values is None:
            return out
        if isinstance(values, dict):
            for name, value in values.items():
                out[self.dofs[name][1]] = value
            return out
        values = np.asarray(values, dtype=float)
        if by_q:
            for q, v in self.dofs.values():
                out[v] = values[q]
            return out
        return values


def make_controller(spec: Controller, model: Model, q0: np.ndarray, dt: float,
                    duration: float, trajectory=None):
    """The controller of the spec (q0: the nominal start, what hold and pd start from)."""
    if spec.type == "python":
        return UserController(spec, model, q0)
    return JointServo(spec, model, q0, dt, duration, trajectory)


class CommandLine:
    """The commands as the joints get them: ``ticks`` steps late (the first command fills the
    line), the servos loaded and the effort returned."""

    def __init__(self, nv: int, ticks: int) -> None:
        self.ticks = ticks
        self._lines = [CommandDelay(nv, ticks) for _ in range(4)]
        self._started = False

    def apply(self, command: Command, sim) -> np.ndarray:
        parts = (command.mode.astype(float), command.q_target, command.v_target, command.tau)
        if not self._started:
            for line, part in zip(self._lines, parts):
                line.reset(part)
            self._started = True
        mode, q_target, v_target, tau = (line.push(part)
                                         for line, part in zip(self._lines, parts))
        if np.any(mode != EFFORT):
            sim.servos.load(mode, q_target, v_target)
        return tau
