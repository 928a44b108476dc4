"""mbsim-ros simulate / inspect / plot, run as a user runs them (a subprocess)."""
import json
import subprocess
import sys

import numpy as np
import pytest
import yaml

from mbsim_ros.model import example_robot_urdf, shipped_urdf


def mbsim(*args, check=True):
    result = subprocess.run([sys.executable, "-m", "mbsim_ros.cli", *map(str, args)],
                            capture_output=True, text=True, timeout=300)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def test_inspect_json_of_a_floating_robot():
    out = json.loads(mbsim("inspect", "--urdf", example_robot_urdf("solo12"),
                           "--floating-base", "--json").stdout)
    assert (out["nq"], out["nv"], out["dof"]) == (19, 18, 18)
    assert out["mass"] == pytest.approx(2.5, abs=0.3)
    assert out["joints"][0] == {**out["joints"][0], "name": "root_joint", "type": "free_flyer",
                                "lower": None}
    knee = next(j for j in out["joints"] if j["name"] == "FL_KFE")
    assert knee["type"] == "revolute" and set(knee) >= {"name", "type", "lower", "upper",
                                                        "effort", "velocity"}


def test_inspect_text_lists_every_joint():
    out = mbsim("inspect", "--urdf", shipped_urdf("arm7")).stdout
    assert "nq = 7, nv = 7, dof = 7, mass = 22.8000 kg" in out
    for k in range(1, 8):
        assert f"joint{k}" in out


def test_simulate_writes_the_trajectory_and_plot_draws_it(tmp_path):
    out = tmp_path / "arm.npz"
    config = tmp_path / "arm.yaml"
    config.write_text("initial_positions: {joint2: 0.5, joint4: -1.0}\n")
    result = mbsim("simulate", "--urdf", shipped_urdf("arm7"), "--config", config,
                   "--integrator", "euler", "--dt", 0.002, "--steps", 250, "--out", out)
    assert "250 steps" in result.stdout and "energy" in result.stdout
    data = np.load(out)
    assert data["q"].shape == (251, 7) and data["v"].shape == (251, 7)
    assert data["tau"].shape == (251, 7) and data["t"][-1] == pytest.approx(0.5)
    assert data["q"][0, 1] == 0.5 and data["q"][0, 3] == -1.0
    assert np.abs(data["q"][-1] - data["q"][0]).max() > 1e-3  # it moved under gravity
    png = tmp_path / "arm.png"
    mbsim("plot", out, "--out", png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_simulate_with_q0_and_the_variational_integrator(tmp_path):
    out = tmp_path / "p.npz"
    result = mbsim("simulate", "--urdf", shipped_urdf("pendulum"), "--q0", "0.2", "--v0", "0",
                   "--integrator", "variational", "--order", "4", "--steps", 500, "--out", out)
    assert "integrator variational, order = 4" in result.stdout
    data = np.load(out)
    assert data["q"][0, 0] == 0.2
    assert np.abs(data["energy"] - data["energy"][0]).max() < 1e-6 * abs(data["energy"][0])


def test_errors_are_messages_not_tracebacks(tmp_path):
    bad = tmp_path / "bad.urdf"
    bad.write_text('<robot name="r"><link name="a"/><joint name="j" type="planar">'
                   '<parent link="a"/><child link="a"/></joint></robot>')
    result = mbsim("inspect", "--urdf", bad, check=False)
    assert result.returncode != 0
    assert "joint 'j'" in result.stderr and "Traceback" not in result.stderr
    config = tmp_path / "c.yaml"
    config.write_text("initial_positions: {elbow: 1.0}\n")
    result = mbsim("simulate", "--urdf", shipped_urdf("arm7"), "--config", config,
                   "--out", tmp_path / "x.npz", check=False)
    assert result.returncode != 0 and "no joint named 'elbow'" in result.stderr
    result = mbsim("simulate", "--urdf", shipped_urdf("arm7"), "--q0", "1,2",
                   "--out", tmp_path / "x.npz", check=False)
    assert result.returncode != 0 and "q must have shape (7,)" in result.stderr


def test_simulate_records_a_configs_sensors_and_names_a_bad_one(tmp_path):
    """A plain config's sensors: the pendulum's IMU at the bob reads g + l th'^2 along the rod
    (a noise-free IMU: its z is the rod's pull per kg), the encoder positions are whole
    counts; a link that is not the model's is one line naming it."""
    config = tmp_path / "pendulum.yaml"
    sensors = [{"type": "imu", "name": "bob", "link": "link1", "xyz": [0, 0, -1]},
               {"type": "force_torque", "name": "pivot", "joint": "joint1"}]
    config.write_text(yaml.safe_dump({"urdf_path": "pendulum", "initial_positions":
                                      {"joint1": 1.0}, "sensors": sensors,
                                      "encoders": {"counts_per_revolution": 4096}}))
    out = tmp_path / "run.npz"
    mbsim("simulate", "--config", config, "--steps", 200, "--out", out)
    data = np.load(out)
    theta, rate = data["q"][-1, 0], data["v"][-1, 0]
    assert data["sensor_bob"].shape == (201, 13) and data["sensor_pivot"].shape == (201, 6)
    assert data["sensor_bob"][-1, 12] == pytest.approx(rate ** 2 + 9.81 * np.cos(theta), abs=1e-9)
    assert data["sensor_pivot"][-1, 2] == pytest.approx(data["sensor_bob"][-1, 12], rel=1e-5)
    counts = data["encoder_q"][:, 0] / (2 * np.pi / 4096)
    assert np.array_equal(counts.round(6), np.round(counts))
    sensors[0]["link"] = "nope"
    config.write_text(yaml.safe_dump({"urdf_path": "pendulum", "sensors": sensors}))
    result = mbsim("simulate", "--config", config, "--steps", 5, "--out", out, check=False)
    assert result.returncode == 2 and "sensors[0].link" in result.stderr \
        and "'nope'" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_cli_takes_every_integrator_option_the_node_takes():
    """One table: every scalar option of every integrator (the node's '<integrator>.<option>'
    parameters) is a --flag of `simulate`, parsed to the option's type."""
    from mbsim_ros.cli import build_parser, integrator_options_from
    from mbsim_ros.integrators import INTEGRATORS
    from mbsim_ros.integrators.base import integrator_options

    parser = build_parser()
    for name in INTEGRATORS:
        for option, default in integrator_options(name).items():
            if not isinstance(default, (bool, int, float, str)):
                continue  # scene, constraints, springs, forces: from the config
            text, value = {bool: ("false", False), int: ("7", 7), float: ("0.25", 0.25),
                           str: ("x", "x")}[type(default)]
            args = parser.parse_args(["simulate", "--integrator", name,
                                      f"--{option.replace('_', '-')}", text])
            assert integrator_options_from(args) == {option: value}


def test_simulate_passes_contract_options_and_names_a_wrong_one(tmp_path):
    out = tmp_path / "rigid.npz"
    result = mbsim("simulate", "--config", "config/scenes/ball_drop.yaml", "--integrator",
                   "rigid", "--max-iterations", "20", "--tolerance", "1e-8", "--steps", "20",
                   "--out", out)
    assert "max_iterations = 20" in result.stdout and "tolerance = 1e-08" in result.stdout
    result = mbsim("simulate", "--integrator", "euler", "--erp", "0.3", "--steps", "2",
                   "--out", tmp_path / "x.npz", check=False)
    assert result.returncode == 2
    assert "erp: unknown option" in result.stderr and "velocity_terms" in result.stderr


def test_help_lists_the_commands_a_user_types():
    """'campaign replay' reaches its parser through main's words; the top-level help lists
    neither a 'campaign-replay' command nor argparse's ==SUPPRESS== placeholder for it."""
    text = mbsim("--help").stdout
    assert "SUPPRESS" not in text and "campaign-replay" not in text
    assert all(f"\n    {command} " in text for command in ("simulate", "campaign", "view"))
    assert "usage: mbsim-ros campaign replay" in mbsim("campaign", "replay", "--help").stdout
