"""What every integrator provides, and the registry the Simulator and the node pick them from."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .servo import Servos


@dataclass
class StepInfo:
    """What one step did. ``iterations``/``residual`` describe the root finder or constraint
    solver (0 / 0.0 for explicit integrators); ``converged`` is False when the step could not be
    completed, in which case the state was left unchanged and ``message`` says why.
    An integrator returns the same StepInfo object every step (no allocation per tick):
    copy it (``dataclasses.replace(info)``) to keep one."""

    iterations: int = 0
    residual: float = 0.0
    converged: bool = True
    fallback: bool = False
    message: str = ""
    substeps: int = 1  # pieces the step was split into to be solved (variational; 1: none)


class Integrator:
    """Advances (q, v) by one step of length dt under generalized forces tau.

    Implementations own preallocated buffers and write the new state into ``q_out`` / ``v_out``
    (never into their inputs); they must not allocate per step. ``servos`` (servo.Servos):
    the joint servos every integrator evaluates inside its step (none active by default).
    """

    name = "base"

    def __init__(self, model, dt: float, **options) -> None:
        if options:
            raise ValueError(f"integrator '{self.name}': unknown options {sorted(options)}")
        self.model = model
        self.dt = dt
        self.servos = Servos(model)

    def reset(self, q: np.ndarray, v: np.ndarray) -> None:
        """Forget any history (multistep integrators keep the previous configuration)."""

    def step(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray, q_out: np.ndarray,
             v_out: np.ndarray) -> StepInfo:
        raise NotImplementedError

    def commit(self) -> None:
        """The caller accepted the last step (integrators with internal state advance it)."""


INTEGRATORS: dict[str, Callable[..., Integrator]] = {}


def register(name: str):
    """Class decorator: make an integrator available by name to Simulator and the node."""
    def wrap(cls):
        cls.name = name
        INTEGRATORS[name] = cls
        return cls
    return wrap


def check_integrator_choice(name: str, dt) -> float:
    """dt as a float, or ValueError for a dt that is not a positive finite number of seconds or
    a name that is not registered."""
    if not (isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0.0):
        raise ValueError(f"dt must be a positive finite number of seconds, got {dt!r}")
    if name not in INTEGRATORS:
        raise ValueError(f"unknown integrator '{name}' (available: "
                         f"{', '.join(sorted(INTEGRATORS))})")
    return float(dt)


def make_integrator(name: str, model, dt: float, **options) -> Integrator:
    """The integrator registered under ``name`` for ``model`` with step ``dt`` (checked here,
    the one door every integrator comes through)."""
    dt = check_integrator_choice(name, dt)
    return INTEGRATORS[name](model, dt, **options)
