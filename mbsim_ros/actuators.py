"""Actuator models between the command and the joint (all off by default): a command delay in
ticks, a first-order torque lag, the URDF velocity limits and a torque-speed curve.

Per one-DOF joint j, each step, in this order:

1. delay: the command applied is the one given ``delay_ticks`` steps ago (zero before);
2. lag: tau_j <- tau_j + (1 - exp(-2 pi f_j h)) (command_j - tau_j), a first-order low-pass
   of bandwidth f_j (Hz; the drive's current loop), exact for a command held over the step;
3. bounds from the state at the step's start: the torque-speed curve of a DC motor, |tau| <=
   tau_max (1 - |v| / v_0) while driving (tau v > 0) and tau_max while braking (tau_max: the
   URDF effort limit, v_0: the no-load speed), and the URDF velocity limit as ros_control's
   effort saturation does it (no effort that drives a joint further beyond its velocity
   limit). The bounds clamp the plain efforts and, through the servo table (servo.py), the
   servos' total efforts after their law.

The servos' law itself is not delayed or lagged here (a drive's position loop runs inside
it; its gains are its bandwidth); its targets are delayed by the node, which delays its
whole command (ros/node.py). Docs: CONTROL.md, "Actuators".
"""
from __future__ import annotations

import math

import numpy as np

from ._jit import kernel
from .arrays import copy_into
from .integrators.servo import S_LOWER, S_UPPER


class CommandDelay:
    """A fixed delay of ``ticks`` steps on vectors of one length: ``push(x)`` stores x and
    returns the vector pushed ``ticks`` calls ago (``fill`` before that); no allocation."""

    def __init__(self, size: int, ticks: int, fill: np.ndarray | None = None) -> None:
        if not (isinstance(ticks, int) and ticks >= 0):
            raise ValueError(f"delay_ticks must be a non-negative integer, got {ticks!r}")
        self.ticks = ticks
        self._ring = np.zeros((ticks + 1, size))
        if fill is not None:
            self._ring[:] = fill
        self._next = 0

    def push(self, x: np.ndarray) -> np.ndarray:
        self._ring[self._next] = x
        self._next = (self._next + 1) % (self.ticks + 1)
        return self._ring[self._next]

    def reset(self, fill: np.ndarray | None = None) -> None:
        self._ring[:] = 0.0 if fill is None else fill
        self._next = 0


class Actuators:
    """The actuator models of one Simulator (``Simulator(..., actuators=Actuators(model, dt,
    ...))`` or ``sim.actuators = ...``). ``delay_ticks``: the command delay; ``bandwidth``:
    {joint: Hz} of the torque lag; ``velocity_limits``: enforce the URDF velocity limits;
    ``no_load_speed``: {joint: rad/s (m/s)} of the torque-speed curve (stall torque: the URDF
    effort limit). Module docstring: the order and the laws."""

    def __init__(self, model, dt: float, *, delay_ticks: int = 0,
                 bandwidth: dict | None = None, velocity_limits: bool = False,
                 no_load_speed: dict | None = None) -> None:
        nv = model.nv
        dofs = {model.joint_names[i]: int(model.idx_v[i])
                for i, kind in enumerate(model.joint_kinds) if kind != "free_flyer"}
        self.delay = CommandDelay(nv, delay_ticks)
        self.alpha = np.ones(nv)  # lag factor per DOF; 1: no lag
        for name, hz in _checked(bandwidth, dofs, "bandwidth").items():
            self.alpha[dofs[name]] = 1.0 - math.exp(-2.0 * math.pi * hz * dt)
        self.no_load = np.full(nv, np.inf)
        for name, speed in _checked(no_load_speed, dofs, "no_load_speed").items():
            self.no_load[dofs[name]] = speed
        self.effort_limit = model.effort_limit.copy()
        self.velocity_limit = model.velocity_limit.copy() if velocity_limits \
            else np.full(nv, np.inf)
        self.tau = np.zeros(nv)  # the lagged effort
        self.bounds = np.zeros((2, nv))
        self._actuated = np.zeros(nv, dtype=np.bool_)
        self._actuated[list(dofs.values())] = True

    @property
    def kernels(self) -> tuple:
        """The compiled functions ``apply`` calls (a Simulator loads them when it takes these
        models: Integrator.kernels)."""
        return (actuate,)

    def reset(self) -> None:
        self.delay.reset()
        self.tau[:] = 0.0

    def save_state(self) -> dict:
        """Copies of the delay line and the lagged effort (the Simulator's State)."""
        return {"ring": self.delay._ring.copy(), "next": np.array([self.delay._next]),
                "tau": self.tau.copy()}

    def load_state(self, saved: dict) -> None:
        """Write back what save_state returned."""
        arrays = {"ring": self.delay._ring, "next": np.zeros(1, dtype=np.int64),
                  "tau": self.tau}
        copy_into(arrays, saved, "actuators")
        self.delay._next = int(arrays["next"][0])

    def apply(self, command: np.ndarray, v: np.ndarray, servo: np.ndarray,
              out: np.ndarray) -> np.ndarray:
        """The effort the joints get this step for ``command`` at velocity v (into out), and
        the servo table's effort bounds for this step."""
        delayed = self.delay.push(command)
        actuate(delayed, v, self.alpha, self.effort_limit, self.no_load, self.velocity_limit,
                self._actuated, self.tau, self.bounds, servo[S_LOWER], servo[S_UPPER], out)
        return out


@kernel
def actuate(command, v, alpha, limit, no_load, v_limit, actuated, tau, bounds, lower, upper,
            out) -> None:
    """Lag, then clamp to the bounds of the step-start velocity (module docstring)."""
    for j in range(v.shape[0]):
        if not actuated[j]:
            out[j] = command[j]
            continue
        tau[j] += alpha[j] * (command[j] - tau[j])
        hi, lo = limit[j], -limit[j]
        if no_load[j] < np.inf:
            droop = max(0.0, 1.0 - abs(v[j]) / no_load[j])
            if v[j] > 0.0:
                hi = limit[j] * droop
            elif v[j] < 0.0:
                lo = -limit[j] * droop
        if v[j] > v_limit[j]:
            hi = min(hi, 0.0)
        elif v[j] < -v_limit[j]:
            lo = max(lo, 0.0)
        bounds[0, j], bounds[1, j] = lo, hi
        lower[j], upper[j] = lo, hi
        out[j] = min(hi, max(lo, tau[j]))


def _checked(values: dict | None, dofs: dict, what: str) -> dict:
    """{joint: positive finite value}, or ValueError naming the joint."""
    found = {}
    for name, value in (values or {}).items():
        if name not in dofs:
            raise ValueError(f"{what}: unknown joint '{name}' (joints: {', '.join(dofs)})")
        value = float(value)
        if not (math.isfinite(value) and value > 0.0):
            raise ValueError(f"{what} of '{name}' must be positive and finite, got {value}")
        found[name] = value
    return found
