"""examples/launch_testing/test_solo12_pd.launch.py, the launch_testing form of docs/TESTING.md's
test: checked statically here (launch_testing, launch_ros and ament_index are not on PyPI), and
loaded where launch_testing imports. Everything it names must exist: the executable, the
scene in the package's share folder, the controller script, the parameters of both nodes (and
their values must be ones the node accepts), the topic it listens to."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mbsim_ros.config import config_from
from test_launch import console_scripts, constants, node_parameters

ROOT = Path(__file__).resolve().parents[1]
LAUNCH_TEST = ROOT / "examples" / "launch_testing" / "test_solo12_pd.launch.py"
NAMES = constants(LAUNCH_TEST)


def declared_parameters(path: Path) -> dict:
    """name -> default of every ``declare_parameter("name", default)`` in a node's source."""
    found = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "declare_parameter":
            name, default = (ast.literal_eval(arg) for arg in node.args[:2])
            found[name] = default
    return found


def test_it_starts_the_installed_node_on_a_shipped_scene():
    assert NAMES["PACKAGE"] == "mbsim_ros"
    assert NAMES["EXECUTABLE"] in console_scripts()
    scene = ROOT / NAMES["SCENE"]
    assert scene.is_file()
    assert 'glob("config/scenes/*.yaml")' in (ROOT / "setup.py").read_text()  # installed


def test_the_node_parameters_are_declared_and_valid():
    parameters = NAMES["PARAMETERS"]
    assert set(parameters) | {"scene"} <= node_parameters()
    settings = config_from({**parameters, "scene": str(ROOT / NAMES["SCENE"])})
    assert settings.pacing == "lockstep" and settings.integrator == "compliant"


def test_the_controller_exists_and_takes_its_parameters():
    controller = (LAUNCH_TEST.parent / NAMES["CONTROLLER"]).resolve()
    assert controller == ROOT / "examples" / "controllers" / "solo12_pd.py"
    declared = declared_parameters(controller)
    for name, value in NAMES["CONTROLLER_PARAMETERS"].items():
        assert name in declared and type(value) is type(declared[name]), name


def test_it_listens_to_the_node_s_base_pose():
    """The node publishes ~/base_pose (ros/state_outputs.py) under its name."""
    assert NAMES["BASE_POSE_TOPIC"] == f"/{NAMES['NODE_NAME']}/base_pose"
    assert '"~/base_pose"' in (ROOT / "mbsim_ros" / "ros" / "state_outputs.py").read_text()
    assert 'super().__init__("mbsim"' in (ROOT / "mbsim_ros" / "ros" / "node.py").read_text()
    assert NAMES["NODE_NAME"] == "mbsim"


def test_it_loads_where_launch_testing_imports():
    pytest.importorskip("launch_testing", reason="launch_testing is not installable from PyPI "
                                                 "(a ROS 2 installation has it)")
    from importlib.machinery import SourceFileLoader

    from launch_testing.loader import LoadTestsFromPythonModule

    module = SourceFileLoader("test_solo12_pd", str(LAUNCH_TEST)).load_module()
    runs = LoadTestsFromPythonModule(module, name="test_solo12_pd.launch_tests")
    assert len(runs) == 1
    assert runs[0].pre_shutdown_tests.countTestCases() == 1
    assert runs[0].post_shutdown_tests.countTestCases() == 1
