"""The launch files: checked statically here (launch / launch_ros are not on PyPI), and loaded
where launch_ros imports. Every config, URDF and executable they name must exist, and every
parameter a shipped config sets must be one the node declares."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mbsim_ros.config import read_config
from mbsim_ros.model import load_urdf
from mbsim_ros.ros.commands import ActuatedJoints

ROOT = Path(__file__).resolve().parents[1]
LAUNCH_FILES = sorted((ROOT / "launch").glob("*.launch.py"))
CONFIGS = sorted((ROOT / "config").glob("*.yaml"))


def constants(path: Path) -> dict:
    """The module-level NAME = literal assignments of a launch file."""
    out = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return out


def console_scripts() -> set[str]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    scripts = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and " = " in node.value:
            scripts.add(node.value.split(" = ")[0])
    return scripts


def node_parameters() -> set[str]:
    from mbsim_ros.ros.parameters import PARAMETERS

    return {name for name, *_ in PARAMETERS}


def test_sim_launch_names_an_installed_executable_and_shipped_configs():
    sim = constants(ROOT / "launch" / "sim.launch.py")
    assert sim["PACKAGE"] == "mbsim_ros"
    assert sim["EXECUTABLE"] in console_scripts()
    for robot in sim["ROBOTS"]:
        assert (ROOT / "config" / f"{robot}.yaml").is_file(), robot


def test_one_launch_file_per_shipped_robot_config():
    robots = set(constants(ROOT / "launch" / "sim.launch.py")["ROBOTS"])
    per_robot = {constants(p)["ROBOT"] for p in LAUNCH_FILES if p.name != "sim.launch.py"}
    assert per_robot == robots == {p.stem for p in CONFIGS}


@pytest.mark.parametrize("config", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_each_config_loads_its_model_and_names_only_its_joints(config):
    """The config schema has checked the keys; the joints it names are the model's."""
    values = read_config(config)
    model = load_urdf(values.urdf(), floating_base=values.floating_base)
    joints = set(ActuatedJoints(model).names)
    assert set(values.initial_positions or {}) <= joints
    assert set(values.armature or {}) <= joints
    assert set(values.gains or {}) <= joints


def test_every_scalar_node_setting_is_a_declared_parameter():
    from mbsim_ros.config import NodeSettings

    scalars = {name for name, info in NodeSettings.model_fields.items() if name != "actuators"}
    assert scalars | {"actuators.delay_ticks", "actuators.velocity_limits"} == node_parameters()


def test_setup_installs_the_launch_files_and_configs():
    text = (ROOT / "setup.py").read_text()
    for pattern in ('glob("launch/*.launch.py")', 'glob("config/*.yaml")', 'glob("urdf/*.urdf")'):
        assert pattern in text


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=[p.name for p in LAUNCH_FILES])
def test_launch_file_loads_where_launch_ros_imports(path):
    pytest.importorskip("launch_ros", reason="launch_ros is not installable from PyPI")
    from launch import LaunchContext
    from launch.launch_description_sources import PythonLaunchDescriptionSource

    description = PythonLaunchDescriptionSource(str(path)).get_launch_description(
        LaunchContext())
    assert description.entities
