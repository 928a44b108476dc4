"""The plugin's Simulator of a config (mbsim_ros/testing/configured.py): what the shipped
configs say reaches the Simulator (integrator, dt, servo gains by joint, sensors, actuator
models), a scene alone runs the compliant integrator, and bad input is refused by name."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mbsim_ros.config import ConfigError, read_config
from mbsim_ros.testing.configured import configured, load_config

ROOT = Path(__file__).resolve().parents[1]


def test_a_config_s_gains_reach_the_servos_by_joint():
    path = ROOT / "config" / "arm7_ros2_control.yaml"
    built = configured(load_config(path))
    gains = read_config(path).gains
    servos = built.sim.servos
    for joint, values in gains.items():
        dof = servos.dof[joint]
        assert tuple(servos.gains[:, dof]) == (values.p, values.d, values.i), joint
    assert built.suite is None and built.delay_ticks == 0


def test_a_config_s_sensors_make_the_suite():
    built = configured(load_config(ROOT / "config" / "sensors" / "arm7.yaml"))
    assert [device.name for device in built.suite.devices] == ["tool_imu", "wrist_ft"]


def test_a_mapping_sets_integrator_dt_and_actuators():
    built = configured(load_config({
        "urdf_path": "arm7", "integrator": "euler", "dt": 0.002,
        "initial_positions": {"joint2": 0.5},
        "actuators": {"delay_ticks": 3, "bandwidth": {"joint1": 50.0}}}))
    sim = built.sim
    assert type(sim.integrator).__name__ == "SemiImplicitEuler"
    assert (sim.dt, built.delay_ticks) == (0.002, 3)
    assert sim.q[sim.model.idx_q[sim.model.joint_names.index("joint2")]] == 0.5
    assert sim.actuators is not None
    assert sim.actuators.alpha[0] == pytest.approx(1.0 - np.exp(-2.0 * np.pi * 50.0 * 0.002))


def test_a_scene_alone_runs_the_compliant_integrator():
    built = configured(load_config(scene=ROOT / "config" / "scenes" / "ball_drop.yaml"))
    assert type(built.sim.integrator).__name__ == "CompliantIntegrator"
    assert built.sim.scene is not None


@pytest.mark.parametrize("config, scene, error, words", [
    (None, None, ValueError, "give one of config"),
    ({"dt": 0.001}, "x.yaml", ValueError, "give one of config"),
    (None, "no/such/scene.yaml", ConfigError, "no such file"),
    ({"integrator": "rk4"}, None, ConfigError, "integrator"),
])
def test_bad_input_is_refused_by_name(config, scene, error, words):
    with pytest.raises(error, match=words):
        load_config(config, scene)
