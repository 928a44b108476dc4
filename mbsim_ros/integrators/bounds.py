"""The physical bounds a simulation's state must stay within: the divergence guard.

A step whose new state leaves them is refused before it is written (the compiled steps test it
inside the same call, ``integrators.fused.commit_state``): the State keeps the last sane step,
the StepInfo says ``diverged`` with what left its bound, the value, the bound and the step.
An unstable simulation (an explicit controller a step late on light legs, a too-stiff spring
at a too-long dt) grows geometrically, by a factor per step; a bound far above any motion the
robot can make is reached within a few steps of the departure, long before the state stops
being finite (where the solvers would fail with a message about the wrong thing).

The bounds, per degree of freedom, in the joint's units:

- a joint with a URDF velocity limit: ``SPEED_FACTOR`` (10) times it, and at least
  ``SPEED_FLOOR`` (2000 rad/s; ``LINEAR_SPEED_FLOOR``, 100 m/s, for a prismatic joint). A URDF's
  limit rates the motor, not the mechanism: a fall or an impact may backdrive a joint past it,
  ten times it no drive survives. The floor is for light links moving freely: an unpowered
  robot of the example-robot-data zoo, falling from its neutral posture without joint limits,
  swings a 1.8e-5 kg m^2 wrist at 300 rad/s (G1) and a thumb at 920 rad/s (G1 with hands)
  while the energy stays within 1e-3 of its scale (the variational step, 2 s); ten times their
  ratings, 22 and 12 rad/s, would flag them.
- a joint without a limit (none in the URDF, or a non-positive one): ``UNLIMITED_SPEED``
  (10^4 rad/s, about 95,000 rpm), ``BASE_SPEED`` (10^3 m/s) for a prismatic one; the same
  10^4 rad/s for a floating base's angular velocity (a spinning free body at 1500 rad/s is a
  legitimate test).
- a floating base's linear velocity: ``BASE_SPEED`` (10^3 m/s, three times the speed of sound;
  a free fall without ground reaches it after 100 s).
- a floating base's position, in a scene: the box around the scene (the origin, its static
  boxes, its models' start positions) grown by ``SCENE_MARGIN`` (1 km) on every side; a
  simulation without a scene has no box (free space).

The kinetic energy is not evaluated per step: it takes a pass over the bodies at the new state
(a mass-matrix product) on the 1 kHz path, and an energy that rises by orders of magnitude in a
step is a speed that rises by their square root: in the diverging Solo12 of
test/test_divergence.py the speed bound trips at the step where the energy rose 230-fold.
``Simulator.bounds`` (``speed``, ``lower``, ``upper``) may be edited in place: the step reads
them at every call (``numpy.inf`` turns a bound off).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arena import Arena, ArenaPlan
from ..model import FREE_FLYER, PRISMATIC, Model

SPEED_FACTOR = 10.0        # times the URDF velocity limit
SPEED_FLOOR = 2000.0       # rad/s: the least bound of a revolute joint with a URDF limit
LINEAR_SPEED_FLOOR = 100.0  # m/s: the same for a prismatic joint
UNLIMITED_SPEED = 1e4      # rad/s: a revolute joint without a limit, a base's angular velocity
BASE_SPEED = 1e3           # m/s: a floating base's linear velocity, a prismatic joint without
SCENE_MARGIN = 1e3       # m: the scene's box grown by this on every side

_BASE_AXES = ("linear x", "linear y", "linear z", "angular x", "angular y", "angular z")


@dataclass(frozen=True)
class Departure:
    """What left its bound in a refused step: ``what`` (words naming the joint or body and the
    quantity), ``value``, ``bound`` (the side it crossed), ``unit``, the ``step`` (1 = the first
    after the reset) and its time ``t`` (s)."""

    what: str
    value: float
    bound: float
    unit: str
    step: int
    t: float

    def beyond(self) -> str:
        """What is beyond which bound, in words."""
        return (f"{self.what} {self.value:.4g} {self.unit} is beyond its bound "
                f"{self.bound:.4g} {self.unit}")

    def describe(self) -> str:
        return (f"{self.beyond()} at step {self.step} (t = {self.t:.6f} s); the state kept is "
                f"the step before")


class PhysicalBounds:
    """The bounds of one simulation (module docstring): ``speed`` (nv), ``lower`` and
    ``upper`` (nq), views of one array ``packed`` = [speed, lower, upper] that the step kernels
    read; ``departure(q, v, step, t)`` names the first entry of a refused state outside them."""

    @staticmethod
    def declare(plan: ArenaPlan, model: Model) -> None:
        """``packed``, in the arena of the simulation it guards."""
        plan.add("bounds.packed", (model.nv + 2 * model.nq,))

    def __init__(self, model: Model, scene=None, arena: Arena | None = None) -> None:
        nv, nq = model.nv, model.nq
        self.packed = np.empty(nv + 2 * nq) if arena is None else arena["bounds.packed"]
        self.speed = self.packed[:nv]
        self.lower, self.upper = self.packed[nv:nv + nq], self.packed[nv + nq:]
        self.lower[:] = -np.inf
        self.upper[:] = np.inf
        self._names: list[tuple[str, str]] = [("", "")] * nv  # (what, unit) per DOF
        self._q_names: dict[int, str] = {}
        box = scene_box(scene)
        for i, name in enumerate(model.joint_names):
            kind, iq, iv = model.joint_type[i], model.idx_q[i], model.idx_v[i]
            if kind == FREE_FLYER:
                self.speed[iv:iv + 3] = BASE_SPEED
                self.speed[iv + 3:iv + 6] = UNLIMITED_SPEED
                body = model.body_names[i]
                for k, axis in enumerate(_BASE_AXES):
                    self._names[iv + k] = (f"the {axis} velocity of the floating base "
                                           f"'{body}' (joint '{name}', body axes)",
                                           "m/s" if k < 3 else "rad/s")
                if box is not None:
                    self.lower[iq:iq + 3], self.upper[iq:iq + 3] = box
                    for k, axis in enumerate("xyz"):
                        self._q_names[iq + k] = f"the {axis} position of the floating base " \
                                                f"'{body}' (joint '{name}', the scene's box)"
                continue
            limit, linear = model.velocity_limit[iv], kind == PRISMATIC
            floor, unlimited = (LINEAR_SPEED_FLOOR, BASE_SPEED) if linear \
                else (SPEED_FLOOR, UNLIMITED_SPEED)
            self.speed[iv] = max(SPEED_FACTOR * limit, floor) \
                if np.isfinite(limit) and limit > 0.0 else unlimited
            self._names[iv] = (f"the speed of joint '{name}'", "m/s" if linear else "rad/s")

    def departure(self, q: np.ndarray, v: np.ndarray, step: int, t: float) -> Departure | None:
        """The first speed, then the first position, of (q, v) outside the bounds (a value
        that is not finite counts); None when all are within."""
        outside = ~(np.abs(v) <= self.speed)
        if outside.any():
            k = int(np.argmax(outside))
            what, unit = self._names[k]
            return Departure(what, float(v[k]), float(self.speed[k]), unit, step, t)
        outside = ~((self.lower <= q) & (q <= self.upper))
        if outside.any():
            k = int(np.argmax(outside))
            side = self.lower[k] if not q[k] >= self.lower[k] else self.upper[k]
            return Departure(self._q_names.get(k, f"q[{k}]"), float(q[k]), float(side), "m",
                             step, t)
        return None


def scene_box(scene) -> tuple[np.ndarray, np.ndarray] | None:
    """(lower, upper) corners of the box a scene's floating bases stay in: the origin, its
    static boxes and its models' start positions, grown by SCENE_MARGIN; None without a
    scene."""
    if scene is None:
        return None
    model = scene.model
    points = [np.zeros(3)]
    for i in np.flatnonzero(model.joint_type == FREE_FLYER):
        iq = model.idx_q[i]
        points.append(scene.q0[iq:iq + 3])
    for box in scene.boxes:  # R row-major, centre, half extents
        reach = np.linalg.norm(box[12:15])
        points += [box[9:12] - reach, box[9:12] + reach]
    points = np.array(points)
    return points.min(axis=0) - SCENE_MARGIN, points.max(axis=0) + SCENE_MARGIN
