"""Reaction forces (dynamics/reactions.py, Simulator.joint_wrenches / closure_forces): a
pendulum's rod tension against the analytic m (g cos th + L th_dot^2), through its joint and
through a rigid link, and a closure's force against a static balance."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mbsim_ros.mechanism import Builder
from mbsim_ros.sim import Simulator

MASS, LENGTH, G = 0.7, 0.8, 9.81


def tension(theta: float, rate: float) -> float:
    return MASS * (G * math.cos(theta) + LENGTH * rate ** 2)


def test_a_pendulum_joint_carries_the_rod_tension():
    """A point mass at L below a revolute joint about y: in the joint frame (rod along -z) the
    parent pulls the bob up its rod with the tension and applies no torque."""
    b = Builder("pendulum")
    b.add_body("bob", MASS, com=(0, 0, -LENGTH))
    b.add_joint("hinge", "revolute", "world", "bob", axis=(0, 1, 0), position=1.2)
    sim = Simulator.from_mechanism(b.build(), dt=1e-3)
    worst = 0.0
    for _ in range(1500):
        assert sim.step().converged
        wrench = sim.joint_wrenches()["hinge"]
        worst = max(worst, abs(wrench[2] - tension(sim.q[0], sim.v[0])))
        np.testing.assert_allclose(wrench[[0, 1, 3, 4, 5]], 0.0, atol=1e-9)
    assert worst < 1e-9 * MASS * G


def test_a_rigid_link_carries_the_rod_tension():
    """A free point mass on a rigid link to a fixed point (the blog post's pendulum): the link's
    force, at acceleration level, is minus the tension."""
    b = Builder("point_pendulum")
    pivot = b.add_point("pivot", [0, 0, 1.0])
    theta0 = 1.2
    bob = b.add_point("bob", [LENGTH * math.sin(theta0), 0, 1.0 - LENGTH * math.cos(theta0)],
                      mass=MASS)
    b.add_link(pivot, bob)
    sim = Simulator.from_mechanism(b.build(), dt=1e-3)
    worst = 0.0
    for _ in range(1500):
        assert sim.step().converged
        x, z = sim.q[0], sim.q[2] - 1.0
        theta = math.atan2(x, -z)
        rate = (sim.v[0] * -z + x * sim.v[2]) / (x * x + z * z)  # d/dt atan2(x, -z)
        force = sim.closure_forces()["link pivot-bob"]
        worst = max(worst, abs(-force[0] - tension(theta, rate)))
    assert worst < 1e-6 * MASS * G


def test_a_four_bar_held_by_a_closure_passes_its_weight_to_the_ground():
    """The four-bar with its crank's turn closed on the world (0 DOF, at rest): the two ground
    joints carry the whole weight (the holding closure only applies a torque)."""
    from mbsim_ros.scenarios import MASS as BARS, four_bar

    sim = Simulator.from_mechanism(four_bar(hold_crank=True), dt=1e-3)
    assert sim.step().converged
    np.testing.assert_allclose(sim.v, 0.0, atol=1e-10)
    wrenches = sim.joint_wrenches()
    lift = 0.0
    for name, angle in (("crank_joint", sim.q[0]), ("rocker_joint", sim.q[2])):
        turn = np.array([[math.cos(angle), 0, math.sin(angle)], [0, 1, 0],
                         [-math.sin(angle), 0, math.cos(angle)]])   # joint frame -> world
        lift += (turn @ wrenches[name][:3])[2]
    assert lift == pytest.approx(sum(BARS.values()) * G, rel=1e-9)
    assert set(sim.closure_forces()) == {"closure coupler_end-rocker_end", "closure world-crank"}


def test_a_point_constraint_holds_a_pendulum_through_its_joint():
    """The compliant integrator's PointConstraint (Drumwright's pendulum) in the reaction
    analysis: a hinged bob also pinned where it hangs. The pin's vertical and lateral rows
    repeat the hinge (zero rows: they carry nothing, least squares); the hinge carries the
    weight, and the pin's one working row nothing at rest."""
    from mbsim_ros import Simulator
    from mbsim_ros.model.constraints import PointConstraint

    b = Builder("pinned")
    b.add_body("bob", MASS, com=(0, 0, -LENGTH))
    b.add_joint("hinge", "revolute", "world", "bob", axis=(0, 1, 0))
    model = b.build().model
    sim = Simulator(model, 1e-3, "compliant",
                    constraints=[PointConstraint(0, [0, 0, -LENGTH], [0, 0, -LENGTH])])
    sim.step()
    pin = sim.closure_forces()["point constraint 0"]
    hinge = sim.joint_wrenches()["hinge"]
    np.testing.assert_allclose(pin, 0.0, atol=1e-9)
    np.testing.assert_allclose(hinge, [0, 0, MASS * G, 0, 0, 0], atol=1e-9)


def test_a_pendulum_resting_on_its_limit_passes_its_weight_and_torque_to_the_joint():
    """Gravity holds the bob against its lower limit (0.5 rad): the limit's torque is in the
    hinge's wrench, which then carries the whole weight and its moment about the hinge."""
    b = Builder("leaning")
    b.add_body("bob", MASS, com=(0, 0, -LENGTH))
    b.add_joint("hinge", "revolute", "world", "bob", axis=(0, 1, 0), lower=0.5, upper=1.0,
                position=0.6)
    sim = Simulator.from_mechanism(b.build(), dt=1e-3)
    for _ in range(3000):
        assert sim.step().converged
    assert abs(sim.v[0]) < 1e-9
    theta = sim.q[0]
    hinge = sim.joint_wrenches()["hinge"]
    weight = MASS * G * np.array([-math.sin(theta), 0, math.cos(theta)])  # joint frame, upward
    np.testing.assert_allclose(hinge[:3], weight, atol=1e-6)
    np.testing.assert_allclose(hinge[3:], np.cross([0, 0, -LENGTH], weight), atol=1e-6)


def test_a_resting_ball_transmits_nothing_through_its_free_joint():
    """A ball on the ground (a scene): its contact force is an external force, so the free
    joint carries nothing."""
    from mbsim_ros import Simulator

    sim = Simulator.from_scene({"ground": {"friction": 0.5}, "models": [
        {"sphere": {"radius": 0.05, "mass": 2.0}, "position": [0, 0, 0.05], "name": "ball"}]},
        dt=1e-3)
    for _ in range(200):
        assert sim.step().converged
    (wrench,) = sim.joint_wrenches().values()
    np.testing.assert_allclose(wrench, 0.0, atol=1e-6)
