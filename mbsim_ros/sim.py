"""The Simulator: one Model, one State, one Integrator; what the node and the library drive."""
from __future__ import annotations

import inspect
import warnings

import numpy as np

from .dynamics.checks import all_finite_kernel, as_vector, check_mass_matrix
from .dynamics.energy import energy as _energy
from .integrators import Integrator, StepInfo, make_integrator
from .integrators.base import check_integrator_choice
from .model import LimitWarning, Model, start_within_limits


class _NoMotion(Integrator):
    """A model without degrees of freedom (nv = 0, a static object): a step only advances
    time; no kernel is called (the integrator's options, a scene's included, have nothing to
    act on)."""

    name = "static"

    def __init__(self, model, dt: float) -> None:
        super().__init__(model, dt)
        self._info = StepInfo()

    def step(self, q, v, tau, q_out, v_out) -> StepInfo:
        return self._info


class Simulator:
    """Steps a Model with a named integrator.

    ``Simulator(model, dt=1e-3, integrator="variational", **options)`` (integrators by name:
    ``mbsim_ros.integrators.INTEGRATORS``; options go to the integrator); ``reset(q, v)``;
    ``step(tau) -> StepInfo``; read-only ``q``, ``v``, ``t``; ``energy()``. A step whose result
    is not finite (divergence) or that the integrator cannot complete leaves the state as it was,
    returns ``converged=False`` with a message, and sets ``failed``: later steps raise until
    ``reset``. A model whose joint-space inertia is singular (a joint that moves no mass and
    has no armature) is refused at construction, naming the joints; a model without degrees of
    freedom (nv = 0) gets a Simulator that only advances time, whatever the integrator named.
    Start configurations (``reset``) are clamped into the joint limits with one LimitWarning.
    ``servos``: joint servos (position / velocity targets, docs/CONTROL.md) that the
    integrator evaluates inside its step, tau their feed-forward; ``actuators``: optional
    actuator models (actuators.Actuators); ``effort``: the efforts the last step applied;
    ``acceleration``: its mean joint acceleration (the simulated sensors read it).
    """

    def __init__(self, model: Model, dt: float = 1e-3, integrator: str = "variational",
                 **options) -> None:
        if model.nv == 0:
            self.integrator = _NoMotion(model, check_integrator_choice(integrator, dt))
        else:
            check_mass_matrix(model)
            self.integrator = make_integrator(integrator, model, dt, **options)
        self.model = model
        self.dt = float(dt)
        self.integrator_name = integrator
        self._q = model.neutral()
        self._v = np.zeros(model.nv)
        self._q_next = np.empty(model.nq)
        self._v_next = np.empty(model.nv)
        self._a = np.zeros(model.nv)  # the last step's mean acceleration
        self._zero_tau = np.zeros(model.nv)
        self._tau = np.zeros(model.nv)  # the last command (reaction forces)
        self._reactions = None
        self._kinematics = None
        self._t0 = 0.0
        self.steps = 0
        self.failed: StepInfo | None = None
        self.actuators = None  # actuators.Actuators: delay, lag, velocity and torque-speed limits
        self._actuated = np.zeros(model.nv)
        self.scene = options.get("scene")
        self.reset()

    @property
    def q(self) -> np.ndarray:
        view = self._q.view()
        view.setflags(write=False)
        return view

    @property
    def v(self) -> np.ndarray:
        view = self._v.view()
        view.setflags(write=False)
        return view

    @property
    def acceleration(self) -> np.ndarray:
        """The last step's mean joint acceleration (v_new - v_old) / dt (nv; zero after a
        reset): what the step did, contact and limit impulses included (the simulated sensors
        read it, mbsim_ros.sensors). Free-flyer entries in the body frame, like v."""
        view = self._a.view()
        view.setflags(write=False)
        return view

    @property
    def effort(self) -> np.ndarray:
        """Each DOF's effort in the last step (nv): the command tau, and for servoed joints
        the servo's total (the law's plus tau, within the effort limits)."""
        view = self._tau.view()
        view.setflags(write=False)
        return view

    @property
    def t(self) -> float:
        """Simulated time: the reset time plus steps * dt (no accumulated rounding)."""
        return self._t0 + self.steps * self.dt

    def reset(self, q=None, v=None, t: float = 0.0) -> None:
        """Start again from (q, v) (default: the model's neutral configuration, at rest); q is
        clamped into the joint limits (one LimitWarning names the joints moved)."""
        q = self.model.neutral() if q is None else as_vector(q, self.model.nq, "q")
        v = np.zeros(self.model.nv) if v is None else as_vector(v, self.model.nv, "v")
        if self.model.nv:
            _energy(self.model, q, v)  # validates finiteness and unit quaternions
        q = start_within_limits(self.model, q, "the start configuration")
        self._q[:] = q
        self._v[:] = v
        self._a[:] = 0.0
        self._t0 = float(t)
        self.steps = 0
        self.failed = None
        self._reactions = None
        if self.actuators is not None:
            self.actuators.reset()
        self.integrator.reset(self._q, self._v)
        self.integrator.servos.reset()

    @property
    def servos(self):
        """The joint servos (integrators/servo.py): ``sim.servos.set_gains(p={...}, d={...})``,
        ``sim.servos.command(position={...})``; the step's tau is their feed-forward."""
        return self.integrator.servos

    def step(self, tau=None) -> StepInfo:
        """Advance one step of dt under joint efforts tau (nv; default zero)."""
        if self.failed is not None:
            raise RuntimeError(f"the simulation stopped at t = {self.t:.6f} s: "
                               f"{self.failed.message}; call reset()")
        tau = self._zero_tau if tau is None else as_vector(tau, self.model.nv, "tau")
        if not all_finite_kernel(tau):
            raise ValueError("tau contains NaN or infinity")
        if self.actuators is not None:
            tau = self.actuators.apply(tau, self._v, self.integrator.servos.table,
                                       self._actuated)
        self._tau[:] = tau
        info = self.integrator.step(self._q, self._v, tau, self._q_next, self._v_next)
        if not info.converged:
            self.failed = StepInfo(**info.__dict__)
            return info
        self._q[:] = self._q_next
        np.subtract(self._v_next, self._v, out=self._a)
        self._a *= 1.0 / self.dt
        self._v[:] = self._v_next
        self.integrator.commit()
        servos = self.integrator.servos
        if servos.active:
            servos.after_step(self.dt, self._q, self._v)
            servos.applied(tau, self._tau)
        self.steps += 1
        return info

    @classmethod
    def from_scene(cls, scene, dt: float = 1e-3, integrator: str = "compliant",
                   **options) -> "Simulator":
        """A Simulator for a scene (a YAML path, the same structure as a dict, or a loaded
        contact.Scene): its models merged in the order listed, reset to their poses. The
        integrator must model contact (take a ``scene`` option): "compliant" or "rigid"."""
        from .contact.scene import Scene, load_scene
        from .integrators import INTEGRATORS

        loaded = scene if isinstance(scene, Scene) else load_scene(scene)
        if integrator not in INTEGRATORS:
            make_integrator(integrator, loaded.model, dt)  # raises, listing the names
        if "scene" not in inspect.signature(INTEGRATORS[integrator].__init__).parameters:
            takers = [name for name, maker in INTEGRATORS.items()
                      if "scene" in inspect.signature(maker.__init__).parameters]
            raise ValueError(f"integrator '{integrator}' does not model contact; scenes need "
                             f"one that does ({', '.join(sorted(takers))})")
        with warnings.catch_warnings():  # the neutral start is replaced by the scene's poses
            warnings.simplefilter("ignore", LimitWarning)
            sim = cls(loaded.model, dt, integrator, scene=loaded, **options)
        sim.scene = loaded
        sim.reset(loaded.q0)
        return sim

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
        from .integrators.compliant import PointConstraint

        if self._reactions is None or self._reactions[0] != (self.steps, self._t0):
            integrator = self.integrator
            constraints = getattr(integrator, "constraints", ())
            elements = [c.as_closure(f"point constraint {k}") if isinstance(c, PointConstraint)
                        else c for k, c in enumerate(constraints)]
            if self._kinematics is None:
                self._kinematics = ConstraintKinematics(self.model)
            external = integrator.external_forces() \
                if hasattr(integrator, "external_forces") and self.steps else None
            found = reactions(self._kinematics, self._q, self._v, self._tau,
                              elements, getattr(integrator, "springs", ()),
                              getattr(integrator, "forces", ()), external)
            self._reactions = ((self.steps, self._t0), found)
        return self._reactions[1]

    def energy(self) -> float:
        """Kinetic + gravitational potential energy (J) of the current state."""
        if not self.model.nv:
            return 0.0  # the fixed bodies' energy is left out (dynamics.energy)
        kinetic, potential = _energy(self.model, self._q, self._v)
        return kinetic + potential
