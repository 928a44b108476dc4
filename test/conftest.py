"""Shared test helpers: pinocchio as the independent oracle, random states, the robot list,
the incline's Coulomb check (box_link_urdf re-exported from mbsim_ros.scenarios)."""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

from mbsim_ros.model import Model, chain_urdf, example_robot_urdf, load_urdf, shipped_urdf
from mbsim_ros.scenarios import DOWNHILL, NORMAL, THETA, G, box_link_urdf  # noqa: F401

# (label, source, floating_base): our models and example-robot-data's (the dynamics targets'
# list + PR2, which has continuous and prismatic joints).
ROBOTS = [
    ("pendulum", lambda: shipped_urdf("pendulum"), False),
    ("double_pendulum", lambda: shipped_urdf("double_pendulum"), False),
    ("arm7", lambda: shipped_urdf("arm7"), False),
    ("arm7_floating", lambda: shipped_urdf("arm7"), True),
    ("chain20", lambda: chain_urdf(20), False),
    ("panda", lambda: example_robot_urdf("panda"), False),
    ("ur5", lambda: example_robot_urdf("ur5"), False),
    ("solo12", lambda: example_robot_urdf("solo12"), True),
    ("talos", lambda: example_robot_urdf("talos"), True),
    ("hyq", lambda: example_robot_urdf("hyq"), True),
    ("pr2", lambda: example_robot_urdf("pr2"), False),
]


def pinocchio_model(source, floating_base: bool) -> pin.Model:
    """The oracle, built by pinocchio directly from the same URDF."""
    text = source if isinstance(source, str) and source.lstrip().startswith("<") else \
        open(source).read()
    if floating_base:
        return pin.buildModelFromXML(text, pin.JointModelFreeFlyer())
    return pin.buildModelFromXML(text)


def to_pinocchio_q(model: Model, q: np.ndarray) -> np.ndarray:
    """Our q -> pinocchio's: a continuous joint's angle becomes (cos, sin)."""
    parts = []
    for i in range(model.njoints):
        iq = model.idx_q[i]
        kind = model.joint_kinds[i]
        if kind == "continuous":
            parts += [np.cos(q[iq]), np.sin(q[iq])]
        elif kind == "free_flyer":
            parts += list(q[iq:iq + 7])
        else:
            parts.append(q[iq])
    return np.array(parts)


def random_configuration(model: Model, rng: np.random.Generator) -> np.ndarray:
    """Within finite limits, anywhere in [-pi, pi] otherwise; unit quaternions."""
    q = np.empty(model.nq)
    for i in range(model.njoints):
        iq = model.idx_q[i]
        if model.joint_kinds[i] == "free_flyer":
            q[iq:iq + 3] = rng.uniform(-1.0, 1.0, 3)
            quat = rng.normal(size=4)
            q[iq + 3:iq + 7] = quat / np.linalg.norm(quat)
            continue
        lo, hi = model.lower_position_limit[iq], model.upper_position_limit[iq]
        lo = lo if np.isfinite(lo) else -np.pi
        hi = hi if np.isfinite(hi) else np.pi
        q[iq] = rng.uniform(lo, hi)
    return q


def relative_error(ours: np.ndarray, reference: np.ndarray) -> float:
    """max |ours - reference| / max(1, max |reference|): relative for large values, absolute
    below 1 (so that near-zero references do not inflate it)."""
    return float(np.abs(ours - reference).max() / max(1.0, np.abs(reference).max()))


@pytest.fixture(params=ROBOTS, ids=[r[0] for r in ROBOTS], scope="module")
def robot(request):
    label, source_fn, floating = request.param
    source = source_fn()
    model = load_urdf(source, floating_base=floating)
    return label, model, pinocchio_model(source if isinstance(source, str) else str(source),
                                         floating)


def independent_discrete_lagrangian(pm, data, q0, q1, dt, armature_model=None):
    """Ld(q0, q1) = sum_i xi_i^T G_i xi_i / (2 dt) - dt/2 (P(q0) + P(q1)), xi_i =
    log(T_i(q0)^-1 T_i(q1)), from pinocchio's kinematics, log6 and inertias (Lee et al. 2016
    eq. 9); with ``armature_model`` also its rotors' sum a x^2 / (2 dt), x = q1 (-) q0."""
    pin.forwardKinematics(pm, data, q0)
    T0 = [data.oMi[i].copy() for i in range(pm.njoints)]
    potential0 = pin.computePotentialEnergy(pm, data, q0)
    pin.forwardKinematics(pm, data, q1)
    kinetic = 0.0
    for i in range(1, pm.njoints):
        xi = pin.log6(T0[i].actInv(data.oMi[i])).vector
        kinetic += xi @ pm.inertias[i].matrix() @ xi / (2.0 * dt)
    if armature_model is not None:
        from mbsim_ros.dynamics import difference

        x = difference(armature_model, q0, q1)
        kinetic += x @ (armature_model.armature * x) / (2.0 * dt)
    return kinetic - 0.5 * dt * (potential0 + pin.computePotentialEnergy(pm, data, q1))


def assert_coulomb_slide(moved: np.ndarray, friction: float) -> None:
    """After 1 s from rest: the slide is Coulomb's g (sin - mu cos) / 2 within 2 % (semi-implicit
    Euler's s_N = a t (t + dt) / 2 is the first-order error: 1 % at 10 ms), or under 0.1 mm of
    creep when friction holds; no lift-off or sinking (1e-5 m)."""
    slide = moved @ DOWNHILL
    acceleration = G * (math.sin(THETA) - friction * math.cos(THETA))
    if acceleration > 0:
        assert abs(slide - 0.5 * acceleration) < 0.02 * 0.5 * acceleration
    else:
        assert 0.0 <= slide < 1e-4, "sticks: below 0.1 mm of creep in 1 s"
    assert abs(moved @ NORMAL) < 1e-5, "no lift-off while sliding"
