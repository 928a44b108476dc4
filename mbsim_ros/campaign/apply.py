"""A run's parameters applied: a fresh Model (masses, inertias, joint damping, friction and
armature, gravity) and Scene (ground material) per run, never a shared one changed, then the
Simulator started at the drawn pose and velocity."""
from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from ..build import Simulated
from ..contact.scene import Scene
from ..model import FREE_FLYER, LimitWarning, Model
from ..sim import Simulator
from ..spatial import rpy_matrix
from .sampling import by_prefix


def scaled_model(model: Model, params: dict) -> Model:
    """A new Model with the drawn masses and inertias (scales), joint damping, friction and
    armature (values) and gravity tilt; ``model`` is left as it was."""
    mass, inertia = by_prefix(params, "link_mass"), by_prefix(params, "link_inertia")
    damping, friction = by_prefix(params, "joint_damping"), by_prefix(params, "joint_friction")
    armature = by_prefix(params, "armature")
    specs = []
    for spec in model.joint_specs():
        m, i = mass.get(spec.body, 1.0), inertia.get(spec.body, 1.0)
        specs.append(dataclasses.replace(
            spec, mass=spec.mass * m, inertia=spec.inertia * (m * i),
            damping=damping.get(spec.name, spec.damping),
            friction=friction.get(spec.name, spec.friction),
            armature=armature.get(spec.name, spec.armature)))
    return Model(specs, name=model.name, fixed_mass=model.fixed_mass,
                 gravity=tilted_gravity(model.gravity, params))


def tilted_gravity(gravity: np.ndarray, params: dict) -> np.ndarray:
    """Gravity turned by the drawn tilts about x, then y."""
    tilt = by_prefix(params, "gravity_tilt")
    if not tilt:
        return gravity.copy()
    return rpy_matrix((tilt["x"], tilt["y"], 0.0)) @ gravity


def scaled_scene(scene: Scene, model: Model, params: dict) -> Scene:
    """The scene with the run's model and ground material (friction, stiffness scale)."""
    material = scene.material
    scale = params.get("ground_stiffness", 1.0)
    material = dataclasses.replace(
        material, friction=params.get("friction", material.friction),
        stiffness=None if material.stiffness is None else material.stiffness * scale,
        youngs_modulus=None if material.youngs_modulus is None
        else material.youngs_modulus * scale)
    return dataclasses.replace(scene, model=model, material=material, q0=scene.q0.copy())


def start_state(model: Model, q0: np.ndarray, params: dict) -> tuple[np.ndarray, np.ndarray]:
    """(q, v): q0 with the drawn joint offsets and base pose, the drawn joint velocities."""
    q, v = q0.copy(), np.zeros(model.nv)
    offsets, speeds = by_prefix(params, "joint_positions"), by_prefix(params, "joint_velocities")
    for name, value in offsets.items():
        q[model.idx_q[model.joint_index(name)]] += value
    for name, value in speeds.items():
        v[model.idx_v[model.joint_index(name)]] = value
    free = np.flatnonzero(model.joint_type == FREE_FLYER)
    if len(free):
        iq = int(model.idx_q[free[0]])
        for k, axis in enumerate("xyz"):
            q[iq + k] += params.get(f"base_position.{axis}", 0.0)
        turn = by_prefix(params, "base_orientation")
        if turn:
            q[iq + 3:iq + 7] = _turned(q[iq + 3:iq + 7], [turn.get(a, 0.0) for a in "xyz"])
    return q, v


def _turned(quaternion: np.ndarray, rpy: list[float]) -> np.ndarray:
    """(qx, qy, qz, qw) of R(rpy) R(quaternion) (a turn in world axes)."""
    half = 0.5 * np.linalg.norm(rpy)
    axis = np.asarray(rpy) / (2.0 * half) if half > 0.0 else np.zeros(3)
    a = np.concatenate([axis * math.sin(half), [math.cos(half)]])
    b = quaternion
    out = np.array([a[3] * b[0] + a[0] * b[3] + a[1] * b[2] - a[2] * b[1],
                    a[3] * b[1] - a[0] * b[2] + a[1] * b[3] + a[2] * b[0],
                    a[3] * b[2] + a[0] * b[1] - a[1] * b[0] + a[2] * b[3],
                    a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2]])
    return out / np.linalg.norm(out)


def make_run_simulator(simulated: Simulated, q0: np.ndarray, integrator: str, dt: float,
                       options: dict, params: dict) -> Simulator:
    """A Simulator of its own for one run: the drawn model (and scene) started at the drawn
    state (clamped into the joint limits, silently: the draws may reach them)."""
    model = scaled_model(simulated.model, params)
    q, v = start_state(model, q0, params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LimitWarning)
        if simulated.scene is not None:
            sim = Simulator.from_scene(scaled_scene(simulated.scene, model, params), dt=dt,
                                       integrator=integrator, **options)
        else:
            sim = Simulator(model, dt, integrator, **options)
        sim.start_at(q, v)
    return sim
