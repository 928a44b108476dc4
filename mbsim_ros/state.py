"""A simulation's State: everything that evolves from one step to the next, apart from the
Model (what is simulated) and the Data (the workspaces a step writes and reads back within the
step: MuJoCo's split of mjModel / mjData, with the state taken out of the data).

``Simulator.get_state()`` returns a State of copies; ``Simulator.set_state(state)`` writes one
back, into the same Simulator or another on the same model, integrator and options: the run
then resumes bit for bit as if it had never stopped (test/test_state.py).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np


@dataclass
class State:
    """t = t0 + steps * dt; q, v; the last step's mean acceleration and applied effort (what
    the sensors read); ``integrator``: the integrator's own memory (variational: the momentum
    ``p``; compliant: the active set and the cone solver's warm start; Integrator.save_state);
    ``servos``: targets, gains, integrals and saturation (Servos.save_state); ``actuators``:
    the command delay line and the torque lag (Actuators.save_state; None without actuators);
    ``failed``: the StepInfo of the step that stopped the run (None while it runs)."""

    t0: float
    steps: int
    dt: float
    q: np.ndarray
    v: np.ndarray
    acceleration: np.ndarray
    effort: np.ndarray
    integrator: dict = field(default_factory=dict)
    servos: dict = field(default_factory=dict)
    actuators: dict | None = None
    failed: object = None

    @property
    def t(self) -> float:
        return self.t0 + self.steps * self.dt

    def copy(self) -> "State":
        """A deep copy (arrays and the integrator's memory included)."""
        return copy.deepcopy(self)
