"""The Simulator: one Model, one State, one Integrator; what the node and the library drive."""
from __future__ import annotations

import warnings

import numpy as np
from numpy import ndarray

from ._jit import compiling_for, load_cached
from .arena import ArenaPlan
from .arrays import read_only
from .codes import BAD_ARG0, OK, OUT_OF_BOUNDS, UNFINISHED, message
from .dynamics.checks import (FLOAT64, all_finite_kernel, as_vector, check_mass_matrix,
                              check_state)
from .dynamics.energy import energy as _energy
from .dynamics.energy import energy_kernel
from .dynamics.kinematics import wrenches_in_body_axes
from .dynamics.workspace import new_workspace
from .integrators import Integrator, StepInfo, make_integrator
from .integrators.base import check_integrator_choice
from .integrators.bounds import PhysicalBounds
from .integrators.fused import bound_entry, commit_state
from .model import LimitWarning, Model, start_within_limits
from .state import State


class _NoMotion(Integrator):
    """A model without degrees of freedom (nv = 0, a static object): a step only advances
    time; no kernel is called (the integrator's options, a scene's included, have nothing to
    act on)."""

    name = "static"

    def __init__(self, model, dt: float, plan: ArenaPlan | None = None) -> None:
        super().__init__(model, dt, plan)
        self._allocate()
        self._info = StepInfo()

    def step(self, q, v, tau, q_out, v_out) -> StepInfo:
        return self._info


class Data:
    """The workspaces of one simulation (MuJoCo's mjData without the state): the integrator
    with its preallocated buffers, the step's output arrays and the actuator models. One per
    Simulator (and per ProcessModel); two simulations of one Model share nothing mutable.
    ``arena``: its arrays, the State's, the bounds', the integrator's and its servos' in one
    float64 and one int64 buffer (mbsim_ros/arena.py; declared here first, then by the
    integrator, which allocates it)."""

    def __init__(self, model: Model, dt: float, integrator: str, **options) -> None:
        compiling_for(f"the {integrator} integrator's")  # the compile notice (_jit.py)
        nq, nv = model.nq, model.nv
        plan = ArenaPlan("data")
        for name, size in DATA_ARRAYS:
            plan.add(name, (nq if size == "nq" else nv,))
        PhysicalBounds.declare(plan, model)
        if model.nv == 0:
            self.integrator = _NoMotion(model, check_integrator_choice(integrator, dt), plan)
        else:
            self.integrator = make_integrator(integrator, model, dt, plan, **options)
            check_mass_matrix(model, self.integrator.mass_matrix)
        self.arena = arena = self.integrator.arena
        self.q_next, self.v_next = arena["data.q_next"], arena["data.v_next"]
        # the divergence guard
        self.bounds = PhysicalBounds(model, options.get("scene"), arena)
        self.actuated = arena["data.actuated"]
        self.actuators = None  # actuators.Actuators
        self.external = None   # (nv,) generalized force of the external wrenches, or None
        self.tau_sum = arena["data.tau_sum"]  # tau + external (a buffer)
        self._bound_to = None  # the State that _fused is bound to
        self._fused = None     # integrator.fused(state, self): (advance, rollout, arguments)
        # every compiled function a step can call, loaded now: none is loaded at a later step
        # (a first touchdown loaded 15, 150 ms: docs/SPEED.md)
        self.loaded = load_cached((*self.integrator.dispatched_kernels(), *STEP_KERNELS))

    def fused(self, state: State) -> tuple | None:
        """The integrator's fused step bound to ``state`` and these buffers, or None when it has
        none or the step needs Python around it (active servos, actuator models)."""
        integrator = self.integrator
        if self.actuators is not None or integrator.servos.active:
            return None
        if self._bound_to is not state or integrator.fused_stale:
            integrator.fused_stale = False
            self._fused, self._bound_to = integrator.fused(state, self), state
            if self._fused is not None:  # the advance's compiled entry (fused.bound_entry)
                advance, rollout, arguments = self._fused
                self._fused = (bound_entry(advance, arguments, state.v.shape[0]), rollout,
                               arguments)
        return self._fused

    def ready(self, state: State) -> tuple | None:
        """What ``Simulator.step`` calls while the fused step serves it as it is (no external
        wrench to add, no actuator models, servos inactive, the binding fresh):
        (entry, arguments, record, servos, integrator), the last two for the checks it makes
        per step (``servos.active``, ``integrator.fused_stale``); None when the step needs the
        general path or Python around the entry (the external efforts)."""
        fused = self.fused(state)
        integrator = self.integrator
        if fused is None or self.external is not None or integrator.record is None:
            return None
        return fused[0], fused[2], integrator.record, integrator.servos, integrator

    def state_arrays(self) -> tuple[np.ndarray, ...]:
        """The State's q, v, acceleration and effort, in this Data's arena."""
        return tuple(self.arena[f"state.{name}"] for name in STATE_ARRAYS)


# the arrays a Data declares in its arena first: the State's and its own (sizes nq or nv)
STATE_ARRAYS = ("q", "v", "acceleration", "effort")
DATA_ARRAYS = (("state.q", "nq"), ("state.v", "nv"), ("state.acceleration", "nv"),
               ("state.effort", "nv"), ("data.q_next", "nq"), ("data.v_next", "nv"),
               ("data.actuated", "nv"), ("data.tau_sum", "nv"), ("data.external", "nv"),
               ("data.zero_tau", "nv"))

# the compiled functions that step() and the Simulator's outputs call from Python, beside the
# integrator's (Integrator.kernels)
STEP_KERNELS = (all_finite_kernel, commit_state, wrenches_in_body_axes, energy_kernel)


def step(model: Model, data: Data, state: State, tau: np.ndarray) -> StepInfo:
    """One step of the state under joint efforts tau (a C-contiguous float64 vector of nv:
    the compiled entry points read it so; ValueError before anything changes when it is not
    finite): the one step function the Simulator, and through it the node, use
    (``Simulator.step`` calls the fused entry directly while ``Data.ready`` holds). On
    success q, v, the acceleration and the applied effort are written into ``state`` in
    place and the step count advances; a step that fails leaves q and v as they were and
    returns converged=False; so does a step whose result leaves the physical bounds
    (data.bounds, mbsim_ros/integrators/bounds.py: the divergence guard), its StepInfo's
    ``departure`` saying what left them."""
    integrator = data.integrator
    fused = data.fused(state)
    if fused is not None:  # one compiled call: the step and the state's update
        if data.external is not None:
            tau = np.add(tau, data.external, out=data.tau_sum)
        code = fused[0](tau, *fused[2])
        if code == OK:
            state.steps += 1
            record = integrator.record
            return integrator.step_info(OK) if record is None else record
        if code != UNFINISHED:
            return fused_failure(code, data, state)
    elif not all_finite_kernel(tau):  # (UNFINISHED: the general path finishes the step)
        raise ValueError("tau contains NaN or infinity")
    return general_step(data, state, tau, fused is not None)


def general_step(data: Data, state: State, tau: np.ndarray, fused: bool) -> StepInfo:
    """step() on the general path: the integrator's step with Python around it (servos,
    actuator models, external efforts), for a finite tau; ``fused``: a fused step was tried
    and handed the step back (UNFINISHED), its tau already holding the external efforts."""
    integrator = data.integrator
    servos = integrator.servos
    if data.actuators is not None:
        tau = data.actuators.apply(tau, state.v, servos.table, data.actuated)
    if data.external is not None and not fused:  # (the fused path's tau has it already)
        tau = np.add(tau, data.external, out=data.tau_sum)
    state.effort[:] = tau
    info = integrator.step(state.q, state.v, tau, data.q_next, data.v_next)
    info = info.copy()
    if not info.converged:
        return info
    if not commit_state(state.q, state.v, data.q_next, data.v_next, state.acceleration,
                        1.0 / state.dt, data.bounds.packed):
        return departed(data, state)
    integrator.commit()
    if servos.active:
        servos.after_step(state.dt, state.q, state.v)
        servos.applied(tau, state.effort)
    state.steps += 1
    return info


def fused_failure(code: int, data: Data, state: State) -> StepInfo:
    """The StepInfo of a fused step that answered ``code``, neither OK nor UNFINISHED:
    ValueError for a tau that is not finite (BAD_ARG0, nothing changed), the departure for
    OUT_OF_BOUNDS, else the integrator's."""
    if code == BAD_ARG0:
        raise ValueError("tau contains NaN or infinity")
    if code == OUT_OF_BOUNDS:
        return departed(data, state)
    return data.integrator.step_info(code)


def departed(data: Data, state: State) -> StepInfo:
    """The StepInfo of a step refused for leaving the physical bounds (OUT_OF_BOUNDS): its
    result is still in data.q_next, v_next, the state is the step before."""
    steps = state.steps + 1
    departure = data.bounds.departure(data.q_next, data.v_next, steps,
                                      state.t0 + steps * state.dt)
    info = StepInfo(converged=False, message=f"{message(OUT_OF_BOUNDS)}: "
                    f"{departure.describe() if departure else 'no entry named'}")
    info.departure = departure
    return info


class Simulator:
    """Steps a Model with a named integrator.

    ``Simulator(model, dt=1e-3, integrator="variational", **options)`` (integrators by name:
    ``mbsim_ros.integrators.INTEGRATORS``; options go to the integrator); ``reset(q, v)``;
    ``step(tau) -> StepInfo``; read-only ``q``, ``v``, ``t``; ``energy()``. A step whose result
    leaves the physical bounds (``bounds``: speeds far beyond the URDF's velocity limits, a
    floating base outside the scene's box; mbsim_ros/integrators/bounds.py), is not finite, or
    that the integrator cannot complete leaves the state as it was, returns
    ``converged=False`` with a message (and for the bounds a ``departure``), and sets
    ``failed``: later steps raise until ``reset``. A model whose joint-space inertia is
    singular (a joint that moves no mass and has no armature) is refused at construction,
    naming the joints; a model without degrees of freedom (nv = 0) gets a Simulator that
    only advances time, whatever the integrator named.
    Start configurations (``reset``) are clamped into the joint limits with one LimitWarning.
    ``servos``: joint servos (position / velocity targets, docs/CONTROL.md) that the
    integrator evaluates inside its step, tau their feed-forward; ``actuators``: optional
    actuator models (actuators.Actuators); ``effort``: the efforts the last step applied;
    ``acceleration``: its mean joint acceleration (the simulated sensors read it).
    """

    def __init__(self, model: Model, dt: float = 1e-3, integrator: str = "variational",
                 **options) -> None:
        self.data = Data(model, dt, integrator, **options)
        self.integrator = self.data.integrator
        self.model = model
        self.dt = float(dt)
        self.integrator_name = integrator
        nv = model.nv
        self.state = State(0.0, 0, self.dt, *self.data.state_arrays())
        self.state.q[:] = model.neutral()
        self._zero_tau = self.data.arena["data.zero_tau"]  # step()'s default tau
        self._reactions = None
        self._kinematics = None
        self._no_wrenches = np.zeros((model.njoints, 6))
        self._body_axes = None  # (workspace, out) of body_wrenches(axes="body")
        self.scene = options.get("scene")
        self._initial = None
        self._wrenches: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # body -> (point, w)
        self._wrench_kinematics = None  # dynamics.closures.ConstraintKinematics
        self._external = self.data.arena["data.external"]
        self._tau_shape = (nv,)
        # Data.ready's (entry, arguments, record, servos, integrator): step()'s compiled call,
        # bound once; None until a step on the general path binds it (and whenever a wrench or
        # actuator models need Python around the entry)
        self._ready = None
        self._q_view = self._v_view = (None, None)  # (the state's array, its read-only view)
        self.reset()

    @property
    def q(self) -> np.ndarray:
        """The state's q, read-only (one view per state array, kept with the array it views: a
        controller reads it every step; the view's ``base`` is the arena's buffer, not q)."""
        q, (of, view) = self.state.q, self._q_view
        if of is not q:
            view = read_only(q)
            self._q_view = (q, view)
        return view

    @property
    def v(self) -> np.ndarray:
        """The state's v, read-only (as q)."""
        v, (of, view) = self.state.v, self._v_view
        if of is not v:
            view = read_only(v)
            self._v_view = (v, view)
        return view

    @property
    def acceleration(self) -> np.ndarray:
        """The last step's mean joint acceleration (v_new - v_old) / dt (nv; zero after a
        reset): what the step did, contact and limit impulses included (the simulated sensors
        read it, mbsim_ros.sensors). Free-flyer entries in the body frame, like v."""
        return read_only(self.state.acceleration)

    @property
    def effort(self) -> np.ndarray:
        """Each DOF's effort in the last step (nv): the command tau, and for servoed joints
        the servo's total (the law's plus tau, within the effort limits)."""
        return read_only(self.state.effort)

    @property
    def t(self) -> float:
        """Simulated time: the reset time plus steps * dt (no accumulated rounding)."""
        return self.state.t

    @property
    def steps(self) -> int:
        """Steps taken since the last reset."""
        return self.state.steps

    @property
    def failed(self) -> StepInfo | None:
        """The StepInfo of the step that stopped the simulation (None while it runs)."""
        return self.state.failed

    @property
    def bounds(self) -> PhysicalBounds:
        """The divergence guard's bounds (``speed``, ``lower``, ``upper``: editable in place,
        numpy.inf turns one off): a step whose result leaves them is refused."""
        return self.data.bounds

    @property
    def actuators(self):
        """Optional actuator models (actuators.Actuators) between the command and the joints."""
        return self.data.actuators

    @actuators.setter
    def actuators(self, value) -> None:
        self.data.actuators = value
        self._ready = None
        if value is not None:
            load_cached(value.kernels)

    def reset(self, q=None, v=None, t: float = 0.0) -> None:
        """Start again from (q, v) at time t; with no q and v, from where the Simulator
        started (after ``from_scene`` the scene's poses, after ``from_mechanism`` its projected
        q0; else the neutral configuration at rest). v defaults to rest; q is clamped into the
        joint limits (one LimitWarning names the joints moved). Servo integrals, the
        integrator's memory and the actuators' delay line and lag start afresh; servo gains
        and targets stay."""
        initial = getattr(self, "_initial", None)
        if q is None and v is None and initial is not None:
            q, v = initial
        q = self.model.neutral() if q is None else as_vector(q, self.model.nq, "q")
        v = np.zeros(self.model.nv) if v is None else as_vector(v, self.model.nv, "v")
        if self.model.nv:
            check_state(self.model, q, v)  # finite, unit quaternions
        q = start_within_limits(self.model, q, "the start configuration")
        self._check_within_bounds(q, v, "reset")
        state = self.state
        state.q[:] = q
        state.v[:] = v
        state.acceleration[:] = 0.0
        state.t0 = float(t)
        state.steps = 0
        state.failed = None
        self._reactions = None
        if self.actuators is not None:
            self.actuators.reset()
        self.integrator.reset(state.q, state.v)
        self.integrator.servos.reset()

    def _check_within_bounds(self, q: np.ndarray, v: np.ndarray, what: str) -> None:
        """ValueError when (q, v) is outside the physical bounds the step guards (the
        divergence guard, integrators/bounds.py): a start the first step would refuse."""
        departure = self.data.bounds.departure(q, v, 0, 0.0)
        if departure is not None:
            raise ValueError(f"{what}: {departure.beyond()} (the divergence guard's bound; "
                             f"nothing changed)")

    def start_at(self, q, v=None) -> None:
        """reset(q, v), and make it the start that reset() without arguments returns to."""
        self.reset(q, v)
        self._initial = (self.state.q.copy(), self.state.v.copy())

    def get_state(self) -> State:
        """A copy of everything that evolves (mbsim_ros.state.State): t, q, v, the last step's
        acceleration and effort, the integrator's memory (variational momentum, compliant
        active set and warm start), the servos' targets, gains and integrals, the actuators'
        delay line and lag. ``set_state`` of it resumes bit for bit."""
        state = self.state
        return State(state.t0, state.steps, state.dt, state.q.copy(), state.v.copy(),
                     state.acceleration.copy(), state.effort.copy(),
                     self.integrator.save_state(), self.integrator.servos.save_state(),
                     None if self.actuators is None else self.actuators.save_state(),
                     None if state.failed is None else state.failed.copy())

    def set_state(self, saved: State) -> None:
        """Continue from a State of ``get_state`` (this Simulator's or another's on the same
        model, integrator and options); ValueError when it does not fit."""
        if saved.dt != self.dt:
            raise ValueError(f"set_state: the state was saved at dt = {saved.dt}, this "
                             f"simulation steps dt = {self.dt}")
        if (saved.actuators is None) != (self.actuators is None):
            raise ValueError("set_state: the state and this simulation differ in having "
                             "actuator models")
        state = self.state
        names = ("q", "v", "acceleration", "effort")
        for name in names:  # every check before anything changes
            live, value = getattr(state, name), getattr(saved, name)
            if live.shape != value.shape:
                raise ValueError(f"set_state: {name} has shape {value.shape}, this model's "
                                 f"{live.shape}")
        if self.model.nv:
            check_state(self.model, saved.q, saved.v)
        self._check_within_bounds(saved.q, saved.v, "set_state")
        for name in names:
            getattr(state, name)[:] = getattr(saved, name)
        state.t0, state.steps = saved.t0, saved.steps
        state.failed = None if saved.failed is None else saved.failed.copy()
        self.integrator.load_state(saved.integrator)
        self.integrator.servos.load_state(saved.servos)
        if self.actuators is not None:
            self.actuators.load_state(saved.actuators)
        self._reactions = None

    @property
    def servos(self):
        """The joint servos (integrators/servo.py): ``sim.servos.set_gains(p={...}, d={...})``,
        ``sim.servos.command(position={...})``; the step's tau is their feed-forward."""
        return self.integrator.servos

    def step(self, tau=None) -> StepInfo:
        """Advance one step of dt under joint efforts tau (nv; default zero). The StepInfo of
        a step that succeeded on the compiled path (Euler, variational, compliant) is this
        Simulator's record of its last step, filled in place (``info.copy()`` keeps one).
        While the fused step serves as it is (``Data.ready``: bound on the first step, checked
        per step for active servos and a stale binding) the step is one compiled call after the
        checks of tau's type and shape; the kernel refuses a tau that is not finite."""
        state = self.state
        if state.failed is not None:
            raise RuntimeError(f"the simulation stopped at t = {self.t:.6f} s: "
                               f"{state.failed.message}; call reset()")
        if tau is None:
            tau = self._zero_tau
        elif not (type(tau) is ndarray and tau.dtype is FLOAT64 and tau.shape == self._tau_shape
                  and tau.flags.c_contiguous):
            tau = np.ascontiguousarray(as_vector(tau, self.model.nv, "tau"))  # (or ValueError)
        ready = self._ready
        if ready is not None and not ready[3].active and not ready[4].fused_stale:
            code = ready[0](tau, *ready[1])  # the fused step (step() below, its first branch)
            if code == OK:
                state.steps += 1
                return ready[2]
            info = general_step(self.data, state, tau, True) if code == UNFINISHED \
                else fused_failure(code, self.data, state)
        else:
            if self._wrenches:
                self._external_efforts()
            info = step(self.model, self.data, state, tau)
            self._ready = self.data.ready(state)
        if not info.converged:
            state.failed = info.copy()
        return info

    def rollout(self, taus) -> tuple[np.ndarray, np.ndarray]:
        """Steps under each row of taus (N x nv): (Q (N x nq), V (N x nv)), the state after
        each step; the Simulator ends at the last. Euler and variational run all N in one
        compiled call with no Python between steps (MuJoCo's rollout; the same bits as N
        ``step`` calls); with active servos, actuator models or another integrator the steps
        run one by one. A step that fails stops the rollout: its row and the rows after it are
        NaN and ``failed`` says why."""
        state = self.state
        if state.failed is not None:
            raise RuntimeError(f"the simulation stopped at t = {self.t:.6f} s: "
                               f"{state.failed.message}; call reset()")
        taus = np.ascontiguousarray(taus, dtype=float)
        if taus.ndim != 2 or taus.shape[1] != self.model.nv:
            raise ValueError(f"taus must have shape (N, {self.model.nv}), got {taus.shape}")
        if not all_finite_kernel(taus.reshape(-1)):
            raise ValueError("taus contains NaN or infinity")
        Q = np.full((len(taus), self.model.nq), np.nan)
        V = np.full((len(taus), self.model.nv), np.nan)
        fused = self.data.fused(state)
        if fused is not None and fused[1] is not None:
            done, code = fused[1](taus, Q, V, *fused[2])
            state.steps += done
            if done < len(taus):
                state.failed = departed(self.data, state) if code == OUT_OF_BOUNDS \
                    else self.integrator.step_info(code)
            return Q, V
        for s, tau in enumerate(taus):
            if not self.step(tau).converged:
                break
            Q[s], V[s] = state.q, state.v
        return Q, V

    def set_wrench(self, link: str, force, torque=(0.0, 0.0, 0.0),
                   point=(0.0, 0.0, 0.0)) -> None:
        """An external wrench on the body ``link`` (a name of ``model.body_names``) from the
        next step on, until ``clear_wrench``: ``force`` (N) and ``torque`` (N m) in world axes,
        the force acting at ``point`` (m, in the link's frame; default its origin). Each step
        adds its generalized force J(q)^T w (J: the point's world Jacobian at the step's
        start) to tau after the actuator models (a push is neither delayed nor lagged), so
        every integrator takes it; ``effort`` includes it, and on a servoed joint it shares
        the servo's effort bounds. Replaces an earlier wrench on the same link."""
        if link not in self.model.body_names:
            raise ValueError(f"set_wrench: no body named '{link}' (bodies: "
                             f"{', '.join(self.model.body_names)})")
        wrench = np.concatenate([as_vector(force, 3, "force"), as_vector(torque, 3, "torque")])
        if not np.all(np.isfinite(wrench)):
            raise ValueError("set_wrench: the force and torque must be finite")
        self._wrenches[self.model.body_names.index(link)] = (as_vector(point, 3, "point"),
                                                              wrench)
        self.data.external = self._external
        self._ready = None  # (the fused step's tau needs the external efforts added)

    def clear_wrench(self, link: str | None = None) -> None:
        """Remove the external wrench on ``link`` (all of them by default)."""
        if link is None:
            self._wrenches.clear()
        else:
            self._wrenches.pop(self.model.body_names.index(link), None)
        if not self._wrenches:
            self.data.external = None

    def _external_efforts(self) -> None:
        """data.external = sum over the wrenches of J^T w at the current q: each wrench moved
        to the world origin (f, torque + x p f) against the world-frame motion subspace
        columns of the joints between its body and the root."""
        from .dynamics.closures import ConstraintKinematics

        if self._wrench_kinematics is None:
            self._wrench_kinematics = ConstraintKinematics(self.model)
        kinematics = self._wrench_kinematics
        oR, op, oS = kinematics.evaluate(self.state.q)
        external = self._external
        external[:] = 0.0
        for body, (point, wrench) in self._wrenches.items():
            x = op[body] + oR[body] @ point
            at_origin = np.concatenate([wrench[:3], wrench[3:] + np.cross(x, wrench[:3])])
            external += np.where(kinematics.masks[body], oS @ at_origin, 0.0)

    @classmethod
    def from_scene(cls, scene, dt: float = 1e-3, integrator: str = "compliant",
                   **options) -> "Simulator":
        """A Simulator for a scene (a YAML path, the same structure as a dict, or a loaded
        contact.Scene): its models merged in the order listed, started at their poses (and
        ``reset()`` returns there). The integrator must model contact: "compliant" or
        "rigid"."""
        from .contact.scene import Scene, load_scene
        from .integrators import INTEGRATORS

        loaded = scene if isinstance(scene, Scene) else load_scene(scene)
        if integrator not in INTEGRATORS:
            make_integrator(integrator, loaded.model, dt)  # raises, listing the names
        if not INTEGRATORS[integrator].models_contact:
            takers = [name for name, maker in INTEGRATORS.items() if maker.models_contact]
            raise ValueError(f"integrator '{integrator}' does not model contact; scenes need "
                             f"one that does ({', '.join(sorted(takers))})")
        with warnings.catch_warnings():  # the neutral start is replaced by the scene's poses
            warnings.simplefilter("ignore", LimitWarning)
            sim = cls(loaded.model, dt, integrator, scene=loaded, **options)
        sim.scene = loaded
        sim.start_at(loaded.q0)
        return sim

    @classmethod
    def from_mechanism(cls, mechanism, dt: float = 1e-3, integrator: str = "compliant",
                       **options) -> "Simulator":
        """A Simulator of a built mechanism (mechanism.Builder().build()): its constraints,
        springs and forces go to the integrator (compliant: the one that takes them), started
        at the mechanism's q0 projected onto its closures (and ``reset()`` returns there)."""
        from .dynamics.closures import ConstraintKinematics, project

        elements = {"constraints": mechanism.constraints, "springs": mechanism.springs,
                    "forces": mechanism.forces}
        sim = cls(mechanism.model, dt, integrator,
                  **{k: v for k, v in elements.items() if v}, **options)
        q0 = mechanism.model.neutral() if mechanism.q0 is None else mechanism.q0
        sim.start_at(project(ConstraintKinematics(mechanism.model), mechanism.constraints, q0)[0])
        return sim

    def body_wrenches(self, axes: str = "world") -> np.ndarray:
        """(joints, 6): the last step's contact wrench on every body ([force, torque about the
        body frame's origin]; zero off contact and for integrators without contact) in world
        axes, or with ``axes="body"`` in each body's own axes at the current q (ROS's
        WrenchStamped in the link's frame: what the node publishes). A buffer refilled per
        call, allocation-free."""
        if axes not in ("world", "body"):
            raise ValueError(f"axes must be 'world' or 'body', got {axes!r}")
        world = self.integrator.body_wrenches() if self.integrator.models_contact \
            else self._no_wrenches
        if axes == "world":
            return world
        if self._body_axes is None:
            self._body_axes = (new_workspace(self.model), np.zeros((self.model.njoints, 6)))
        ws, out = self._body_axes
        wrenches_in_body_axes(self.model.joint_int, self.model.joint_real, self.state.q,
                              self.model.nv, ws, world, out)
        return out

    def contacts(self) -> list:
        """The contacts of the last step (point, normal, depth, force, link): empty for an
        integrator without contact."""
        contacts = getattr(self.integrator, "contacts", None)
        return contacts() if contacts else []

    def contact_wrenches(self) -> dict:
        """Link name -> [fx, fy, fz, tx, ty, tz]: the contact force on the link and its torque
        about the link frame's origin, world frame (last step)."""
        wrenches = getattr(self.integrator, "contact_wrenches", None)
        return wrenches() if wrenches else {}

    def joint_wrenches(self) -> dict:
        """Joint name -> [fx, fy, fz, tx, ty, tz]: the wrench the parent body applies to the
        child through the joint, in the joint frame, torque about the joint origin; at the
        current state under the last command, the integrator's closures enforced at
        acceleration level, its contact and joint-limit forces those of the last step
        (dynamics/reactions.py)."""
        return self._reaction_forces().joint_wrenches if self.model.nv else {}

    def closure_forces(self) -> dict:
        """Constraint element name (closures, rigid links; ``point constraint <k>`` for the
        k-th PointConstraint) -> its row forces (N, N m; positive pushes the gap open: for a
        rigid link the tension is minus its one value), same state as joint_wrenches()."""
        return self._reaction_forces().element_forces if self.model.nv else {}

    def _reaction_forces(self):
        from .dynamics.closures import ConstraintKinematics
        from .dynamics.reactions import reactions
        from .model.constraints import PointConstraint

        if self._reactions is None or self._reactions[0] != (self.steps, self.state.t0):
            integrator = self.integrator
            constraints = getattr(integrator, "constraints", ())
            elements = [c.as_closure(f"point constraint {k}") if isinstance(c, PointConstraint)
                        else c for k, c in enumerate(constraints)]
            if self._kinematics is None:
                self._kinematics = ConstraintKinematics(self.model)
            external = integrator.external_forces() \
                if hasattr(integrator, "external_forces") and self.steps else None
            found = reactions(self._kinematics, self.state.q, self.state.v, self.state.effort,
                              elements, getattr(integrator, "springs", ()),
                              getattr(integrator, "forces", ()), external)
            self._reactions = ((self.steps, self.state.t0), found)
        return self._reactions[1]

    def energy(self) -> float:
        """Kinetic + gravitational potential energy (J) of the current state."""
        if not self.model.nv:
            return 0.0  # the fixed bodies' energy is left out (dynamics.energy)
        kinetic, potential = _energy(self.model, self.state.q, self.state.v)
        return kinetic + potential
