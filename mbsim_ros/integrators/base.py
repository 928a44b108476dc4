"""What every integrator provides, and the registry the Simulator and the node pick them from."""
from __future__ import annotations

import math
import warnings
from typing import Callable

import numpy as np

from ..arena import Arena, ArenaPlan
from ..codes import OK, message
from ..dynamics.crba import crba
from ..schema import Schema, validate
from .servo import Servos


class StepInfo:
    """What one step did; the fields mean the same in every integrator (docs/INTEGRATORS.md):

    - ``iterations``: the solver's iterations this step (variational: root-finder iterations,
      all substeps and fallbacks included; compliant: interior-point iterations over the
      active-set rounds; rigid: PGS sweeps or pivots; Euler: 0, it solves nothing iteratively);
    - ``residual``: the solver's final residual, in its own units (variational: max |r| of the
      DEL equation relative to 1 + max |p + h/2 u|; compliant: the cone problem's relative
      duality gap; rigid: the LCP's natural-map residual; Euler: 0.0);
    - ``converged``: False when the step could not be completed; the state was left unchanged
      and ``message`` says why;
    - ``fallback``: a slower path finished the step (variational: Newton or split steps;
      compliant: clarabel; rigid: PGS after pivoting);
    - ``substeps``: pieces the step was split into to be solved (1: none);
    - ``departure``: for a step refused by the divergence guard (its result left the physical
      bounds, codes.OUT_OF_BOUNDS), what left them (bounds.Departure: the joint or body, the
      value, the bound, the step); None otherwise.

    ``Simulator.step`` returns, for a step that succeeded on the compiled path of Euler,
    variational and compliant, the Simulator's own record of its last step (base.StepRecord,
    read from the arrays the step fills in place: no object made per step); ``copy()`` keeps
    one. A failed step's StepInfo is its own."""

    __slots__ = ("iterations", "residual", "converged", "fallback", "message", "substeps",
                 "departure")

    def __init__(self, iterations: int = 0, residual: float = 0.0, converged: bool = True,
                 fallback: bool = False, message: str = "", substeps: int = 1,
                 departure=None) -> None:
        self.iterations = iterations
        self.residual = residual
        self.converged = converged
        self.fallback = fallback
        self.message = message
        self.substeps = substeps
        self.departure = departure

    def copy(self) -> "StepInfo":
        return StepInfo(self.iterations, self.residual, self.converged, self.fallback,
                        self.message, self.substeps, self.departure)

    def __eq__(self, other) -> bool:
        return isinstance(other, StepInfo) and all(
            getattr(self, name) == getattr(other, name) for name in StepInfo.__slots__)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in StepInfo.__slots__)
        return f"StepInfo({fields})"


class StepRecord(StepInfo):
    """The StepInfo of a step that succeeded, read from the arrays its compiled step fills in
    place (no record made per step): ``stats`` = (iterations, fallbacks, pieces) and
    ``residual_out`` = (residual,) as the variational kernel writes them, None for an
    integrator that reports neither (Euler: 0 iterations, residual 0.0, 1 substep). It
    always describes the last step; ``copy()`` keeps one (a plain StepInfo)."""

    __slots__ = ("_stats", "_residual")
    converged = True
    message = ""
    departure = None

    def __init__(self, stats: np.ndarray | None = None,
                 residual_out: np.ndarray | None = None) -> None:
        self._stats, self._residual = stats, residual_out

    @property
    def iterations(self) -> int:
        return 0 if self._stats is None else int(self._stats[0])

    @property
    def fallback(self) -> bool:
        return self._stats is not None and bool(self._stats[1])

    @property
    def substeps(self) -> int:
        return 1 if self._stats is None else int(self._stats[2])

    @property
    def residual(self) -> float:
        return 0.0 if self._residual is None else float(self._residual[0])


class Integrator:
    """Advances (q, v) by one step of length dt under generalized forces tau.

    Implementations own preallocated buffers and write the new state into ``q_out`` / ``v_out``
    (never into their inputs); they must not allocate per step. Their constructor declares its
    float64 and int64 arrays in ``self._plan`` and calls ``_allocate()`` once, then takes its
    views from ``arena`` (mbsim_ros/arena.py). ``servos`` (servo.Servos): the joint servos
    every integrator evaluates inside its step (none active by default), made by _allocate.
    """

    name = "base"
    models_contact = False  # True: takes a ``scene`` and reports contacts (compliant, rigid)
    # option -> its name in this contract, for options an integrator renamed (DeprecationWarning)
    renamed_options: dict[str, str] = {}
    options_schema: type[Schema] = Schema  # its options (options.py)
    # The compiled functions its step can call from Python, on every path (the fused step, the
    # general one, contact, impacts, limits, saturating servos, fallbacks, rollouts) and its
    # outputs: the Simulator loads them at construction, so that no step loads one (a first
    # touchdown loaded 15: 150 ms). An integrator that calls a new one declares it here.
    kernels: tuple = ()
    options: dict = {}  # the options make_integrator built it with (checked)

    def __init__(self, model, dt: float, plan: ArenaPlan | None = None, **options) -> None:
        if options:
            raise ValueError(f"integrator '{self.name}': unknown options {sorted(options)}")
        self.model = model
        self.dt = dt
        # the plan of the arena its arrays (and its servos') are declared in: the Data's, whose
        # own arrays are declared in it first (sim.Data), or one of its own; allocated once by
        # _allocate, when the subclass has declared its arrays
        self._plan = plan if plan is not None else ArenaPlan(f"{self.name} integrator")
        Servos.declare(self._plan, model.nv)

    def _allocate(self) -> Arena:
        """The arena of the plan (``arena``: every array declared in it, the Data's with them
        when the Data passed its plan), and the servos on their arrays in it."""
        self.arena = self._plan.allocate()
        del self._plan
        self.servos = Servos(self.model, self.arena)
        return self.arena

    def dispatched_kernels(self) -> tuple:
        """Every compiled function a step of this integrator can call from Python: its
        ``kernels`` and its servos' (the Simulator loads them from numba's cache at
        construction: _jit.load_cached)."""
        return (*self.kernels, *self.servos.kernels)

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """M(q) with the armature (nv x nv), for the singular-inertia check at construction
        (dynamics.checks.check_mass_matrix): here the CRBA; an integrator that compiles another
        kernel giving M takes it from that one, so that nothing is compiled for the check
        alone (about 0.8 s of a cold start, docs/SPEED.md "Cold compile, round 10")."""
        return crba(self.model, q)

    def reset(self, q: np.ndarray, v: np.ndarray) -> None:
        """Forget any history (multistep integrators keep the previous configuration)."""

    def save_state(self) -> dict:
        """Copies of everything this integrator carries from one step to the next (the
        Simulator's State.integrator): variational's momentum, compliant's active set and warm
        start. Nothing by default."""
        return {}

    def load_state(self, saved: dict) -> None:
        """Write back what save_state returned, so that the next step is bit for bit the step
        the saved run took."""

    def failure_message(self, code: int) -> str:
        """StepInfo.message for a status code of this integrator's kernel (mbsim_ros.codes)."""
        return message(code)

    def step(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray, q_out: np.ndarray,
             v_out: np.ndarray) -> StepInfo:
        raise NotImplementedError

    def commit(self) -> None:
        """The caller accepted the last step (integrators with internal state advance it)."""

    fused_stale = False  # set when the integrator replaced an array its fused step is bound to
    # its fused step evaluates loaded joint servos as its general step does (all but the
    # effort it reports: a servoed joint's is the servo table's effort row, Servos.applied)
    fused_servos = False

    def fused(self, state, data) -> tuple | None:
        """(advance, rollout, arguments) for a step that commits into ``state`` in the same
        compiled call (fused.py): ``advance(tau, *arguments) -> code`` writes q, v,
        acceleration, effort (and this integrator's memory) on success;
        ``rollout(taus, Q, V, *arguments) -> (steps done, code)`` runs len(taus) of them (None:
        Simulator.rollout steps one by one). The arguments are bound to these arrays (state's
        and data's are written in place, never replaced; an integrator that replaces one of its
        own sets ``fused_stale`` and is bound again). ``advance`` returning UNFINISHED hands
        the step back: nothing is committed and sim.step runs the general path. None: no fused
        step (sim.step takes the general path)."""
        return None

    # the StepInfo its fused step fills in place (StepRecord), returned for each step that
    # succeeds; None: step_info(OK) makes one per step
    record: StepInfo | None = None

    def step_info(self, code: int) -> StepInfo:
        """The StepInfo of a fused step that returned ``code``."""
        if code == OK:
            return StepInfo(0, 0.0, True, False, "")
        return StepInfo(0, 0.0, False, False, self.failure_message(code))


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


def make_integrator(name: str, model, dt: float, plan: ArenaPlan | None = None,
                    **options) -> Integrator:
    """The integrator registered under ``name`` for ``model`` with step ``dt``, its options
    checked against its schema (options.py) here, the one door every integrator comes
    through. ``plan``: the arena plan its arrays join (the Data's: mbsim_ros/arena.py); None:
    an arena of its own."""
    dt = check_integrator_choice(name, dt)
    cls = INTEGRATORS[name]
    spec = validate(cls.options_schema, contract_options(name, options), f"integrator '{name}'",
                    key="option")
    options = {key: getattr(spec, key) for key in spec.model_fields_set}
    integrator = cls(model, dt, plan=plan, **options)
    integrator.options = options  # what another of the same (ProcessModel.from_simulator) takes
    return integrator


def integrator_options(name: str) -> dict:
    """The options the integrator registered as ``name`` takes, with their defaults."""
    return {key: info.default
            for key, info in INTEGRATORS[name].options_schema.model_fields.items()}


def contract_options(name: str, options: dict) -> dict:
    """options with renamed ones under their contract name (DeprecationWarning naming the new
    one)."""
    renamed = INTEGRATORS[name].renamed_options
    checked = {}
    for key, value in options.items():
        if key in renamed:
            warnings.warn(f"integrator '{name}': option '{key}' is now '{renamed[key]}'",
                          DeprecationWarning, stacklevel=3)
            key = renamed[key]
        checked[key] = value
    return checked
