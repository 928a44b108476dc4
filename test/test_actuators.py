"""Actuator models (mbsim_ros/actuators.py): command delay, first-order torque lag, the
torque-speed curve and the URDF velocity limits, against their closed forms."""
import math

import numpy as np
import pytest

from mbsim_ros import Simulator
from mbsim_ros.actuators import Actuators
from mbsim_ros.model import load_urdf, shipped_urdf

I_PIVOT = 1.000001  # the shipped pendulum: 1 kg at 1 m, 1e-6 kg m^2 about its centre
H = 1e-3


def pendulum(**actuators):
    """The pendulum without gravity, its limits out of reach (effort 50 N m, velocity 10
    rad/s in its URDF), with the given actuator models."""
    model = load_urdf(shipped_urdf("pendulum").read_text().replace(
        'lower="-3.14159" upper="3.14159"', 'lower="-1000" upper="1000"'))
    model.gravity = np.zeros(3)
    sim = Simulator(model, H, "euler")
    sim.actuators = Actuators(model, H, **actuators)
    return sim


def test_a_delayed_command_arrives_exactly_n_ticks_later():
    sim = pendulum(delay_ticks=3)
    commands = np.arange(1.0, 11.0)
    applied = []
    for tau in commands:
        sim.step([tau])
        applied.append(sim.effort[0])
    assert applied == [0.0, 0.0, 0.0] + list(commands[:-3])


def test_the_torque_lag_is_first_order_with_its_bandwidth():
    """A 10 N m step through a 20 Hz lag: after k steps 10 (1 - e^(-2 pi 20 k h)), exactly
    (the discrete form of the lag is exact for a command held over each step)."""
    sim = pendulum(bandwidth={"joint1": 20.0})
    for k in range(1, 51):
        sim.step([10.0])
        assert sim.effort[0] == pytest.approx(10.0 * (1.0 - math.exp(-2 * math.pi * 20 * k * H)),
                                              rel=1e-12)


def test_full_effort_follows_the_torque_speed_curve():
    """Full command on a DC-motor joint, stall torque 50 N m (the URDF limit), no-load speed 5
    rad/s (below the URDF's 10): I dv/dt = 50 (1 - v/5), v(t) = 5 (1 - e^(-10 t / I)).
    Euler evaluates the bound at the step's start: first order, the error within h times the
    curve's rate (5e-3 of v0)."""
    sim = pendulum(no_load_speed={"joint1": 5.0})
    for _ in range(500):
        sim.step([1000.0])
        expected = 5.0 * (1.0 - math.exp(-10.0 * sim.t / I_PIVOT))
        assert sim.v[0] == pytest.approx(expected, abs=5e-3 * 5.0)
        assert sim.effort[0] == pytest.approx(50.0 * (1.0 - sim.v[0] / 5.0), abs=0.5)
    braking = sim.v[0]
    sim.step([-1000.0])  # braking: the full stall torque, whatever the speed
    assert sim.effort[0] == -50.0 and sim.v[0] < braking


def test_velocity_limit_stops_the_drive_pushing_further():
    """Full effort (50 N m) accelerates the joint to its URDF velocity limit (10 rad/s), and
    then no further than one step's worth beyond it (h 50 / I = 0.05 rad/s); the effort it
    gets there alternates between 0 and the limit, as ros_control's saturation does."""
    sim = pendulum(velocity_limits=True)
    fastest = 0.0
    for _ in range(1000):
        sim.step([1000.0])
        fastest = max(fastest, sim.v[0])
    assert 10.0 <= fastest <= 10.0 + H * 50.0 / I_PIVOT + 1e-12


def test_a_servo_is_bounded_by_the_torque_speed_curve():
    """A position servo far from its target asks for more than the motor gives: its total
    effort stays within the curve at the step's start velocity."""
    sim = pendulum(no_load_speed={"joint1": 5.0})
    sim.servos.set_gains(p={"joint1": 1000.0}, d={"joint1": 10.0})
    sim.servos.command(position={"joint1": 3.0})
    for _ in range(500):
        v = sim.v[0]
        sim.step()
        bound = 50.0 * max(0.0, 1.0 - abs(v) / 5.0) if v > 0 else 50.0
        assert -50.0 - 1e-9 <= sim.effort[0] <= bound + 1e-9
    assert sim.v[0] > 0.0


@pytest.mark.parametrize("options, words", [
    ({"bandwidth": {"elbow": 10.0}}, "bandwidth: unknown joint 'elbow'"),
    ({"bandwidth": {"joint1": -1.0}}, "bandwidth of 'joint1' must be positive"),
    ({"no_load_speed": {"joint1": 0.0}}, "no_load_speed of 'joint1' must be positive"),
    ({"delay_ticks": -1}, "delay_ticks must be a non-negative integer"),
])
def test_bad_actuator_settings_name_the_joint(options, words):
    with pytest.raises(ValueError, match=words):
        pendulum(**options)
