"""The package in a ROS 2 workspace: `colcon build --packages-select mbsim_ros` (colcon
from PyPI: colcon-core, colcon-ros, colcon-python-setup-py, colcon-package-selection) in a
temporary workspace, with and without --symlink-install; the install tree that `ros2 run` and
`ros2 launch` rely on (the executables in lib/mbsim_ros, the share folder, the ament index
marker); and the installed `mbsim_node` started as `ros2 run` starts it, with the environment
that sourcing the workspace gives, publishing joint_states over DDS."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ros_harness import ROOT, ros_session, start_node, state_time_ns, warm_kernels

for _module in ("colcon_core", "colcon_ros", "colcon_python_setup_py",
                "colcon_package_selection"):
    pytest.importorskip(_module, reason=f"{_module} does not import: pip install -e '.[test]'")

COLCON = str(Path(sys.executable).with_name("colcon"))
PACKAGE = "mbsim_ros"
SHARED_FOLDERS = ("launch", "config", "urdf")  # what launch files and configs reference
DT_NS = 1_000_000


def colcon_build(workspace: Path, *options: str) -> Path:
    """``colcon build --packages-select mbsim_ros`` in workspace (the source linked into
    src/); returns the install folder."""
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / PACKAGE).symlink_to(ROOT, target_is_directory=True)
    result = subprocess.run([COLCON, "build", "--packages-select", PACKAGE, *options],
                            cwd=workspace, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"colcon build failed:\n{result.stdout}\n{result.stderr}"
    return workspace / "install"


@pytest.fixture(scope="module")
def installs(tmp_path_factory) -> dict[str, Path]:
    """Two workspaces: a plain (copying) build and a --symlink-install build."""
    base = tmp_path_factory.mktemp("colcon")
    return {"copy": colcon_build(base / "copy"),
            "symlink": colcon_build(base / "symlink", "--symlink-install")}


def workspace_environment(install: Path) -> dict[str, str]:
    """The environment after ``. install/local_setup.sh`` (what sourcing the workspace gives a
    shell: PATH, PYTHONPATH, AMENT_PREFIX_PATH)."""
    result = subprocess.run(["bash", "-c", f'. "{install}/local_setup.sh" && env -0'],
                            capture_output=True, check=True, timeout=60)
    return dict(item.split("=", 1) for item in result.stdout.decode().split("\0") if "=" in item)


def launch_robots() -> tuple[str, ...]:
    for node in ast.parse((ROOT / "launch" / "sim.launch.py").read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "ROBOTS":
            return ast.literal_eval(node.value)
    raise AssertionError("sim.launch.py defines no ROBOTS")


@pytest.mark.parametrize("layout", ["copy", "symlink"])
def test_the_install_tree_is_what_ros2_run_and_launch_need(installs, layout):
    prefix = installs[layout] / PACKAGE
    for script in ("mbsim_node", "mbsim-ros"):
        executable = prefix / "lib" / PACKAGE / script
        assert executable.is_file() and os.access(executable, os.X_OK), executable
    assert not (prefix / "bin").exists(), "ros2 run looks in lib/<package>, not bin/"
    assert (prefix / "share" / "ament_index" / "resource_index" / "packages" / PACKAGE).is_file()
    share = prefix / "share" / PACKAGE
    assert (share / "package.xml").read_text() == (ROOT / "package.xml").read_text()
    for folder in SHARED_FOLDERS:  # every file the launch files and configs can name
        source = {p.relative_to(ROOT / folder) for p in (ROOT / folder).rglob("*")
                  if p.is_file()}
        installed = {p.relative_to(share / folder) for p in (share / folder).rglob("*")
                     if p.is_file()}
        assert source and installed == source, f"share/{PACKAGE}/{folder}"
    if layout == "copy":  # every module (find_packages takes only folders with __init__.py)
        site = next((prefix / "lib").glob("python3*/site-packages"))
        modules = {p.relative_to(ROOT) for p in (ROOT / PACKAGE).rglob("*.py")}
        assert {p.relative_to(site) for p in (site / PACKAGE).rglob("*.py")} == modules
    for robot in launch_robots():  # sim.launch.py's robot:=<robot> -> config/<robot>.yaml
        assert (share / "config" / f"{robot}.yaml").is_file(), robot


def test_the_installed_node_runs_from_the_sourced_workspace(installs, tmp_path):
    """As `ros2 run mbsim_ros mbsim_node` does: the package's prefix from the ament index
    (AMENT_PREFIX_PATH of the sourced workspace), then <prefix>/lib/mbsim_ros/mbsim_node, with
    the installed config/arm7.yaml as its parameters file."""
    import rclpy

    install = installs["copy"]
    env = workspace_environment(install)
    probe = ("from ament_index_python.packages import get_package_prefix, "
             "get_package_share_directory\nimport mbsim_ros\nfrom mbsim_ros.model import "
             "shipped_urdf\nprint(get_package_prefix('mbsim_ros'))\n"
             "print(mbsim_ros.__file__)\nprint(shipped_urdf('arm7'))")
    found = subprocess.run([sys.executable, "-c", probe], env=env, cwd=tmp_path,
                           capture_output=True, text=True, check=True, timeout=60).stdout.split()
    prefix = Path(found[0])
    assert prefix == install / PACKAGE
    assert Path(found[1]).is_relative_to(prefix), "the workspace's copy of the package wins"
    assert Path(found[2]).is_relative_to(prefix / "share" / PACKAGE), "URDFs from the share"
    warm_kernels()
    domain, context = ros_session(__name__)
    config = prefix / "share" / PACKAGE / "config" / "arm7.yaml"
    node, client = start_node(domain, context, tmp_path, "--ros-args", "--params-file",
                              str(config), "-p", "pacing:=lockstep", startup_timeout=60.0,
                              command=(str(prefix / "lib" / PACKAGE / "mbsim_node"),), env=env)
    try:
        start = client.states[0]
        assert list(start.name) == [f"joint{k}" for k in range(1, 8)]
        assert start.position[1] == 0.6, "the installed config's initial_positions.joint2"
        client.send_efforts([0.0] * 7)
        client.spin_until(lambda: state_time_ns(client.states[-1]) == DT_NS, 10.0,
                          "the state of the first step")
    finally:
        client.destroy()
        code = node.stop()
        rclpy.shutdown(context=context)
    assert code == 0, node.log()
