"""Where the URDFs we ship (``urdf/``) and example-robot-data's robots live on this machine."""
from __future__ import annotations

import sys
from pathlib import Path

from .model import ConfigError

DEFAULT_ROBOT = "arm7"


def _candidates(*parts: str) -> list[Path]:
    here = Path(__file__).resolve()
    prefixes = [Path(sys.prefix) / "share" / "mbsim_ros", here.parents[2]]
    try:  # a sourced ROS 2 workspace
        from ament_index_python.packages import get_package_share_directory

        prefixes.insert(0, Path(get_package_share_directory("mbsim_ros")))
    except Exception:  # noqa: BLE001 - not a ROS workspace, or the package is not installed
        pass
    return [p.joinpath(*parts) for p in prefixes]


def shipped_urdf(name: str = DEFAULT_ROBOT) -> Path:
    """Path of one of our own models: 'pendulum', 'double_pendulum', 'arm7'."""
    for path in _candidates("urdf", f"{name}.urdf"):
        if path.is_file():
            return path
    raise FileNotFoundError(f"no shipped URDF named '{name}' (looked in "
                            f"{[str(p.parent) for p in _candidates('urdf')]})")


def example_robot_data_dir() -> Path:
    """The robots/ folder of the example-robot-data package (installed from PyPI via cmeel)."""
    for entry in map(Path, sys.path):
        robots = entry / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if robots.is_dir():
            return robots
    raise FileNotFoundError("example-robot-data is not installed (pip install example-robot-data)")


EXAMPLE_ROBOTS = {
    "panda": "panda_description/urdf/panda.urdf",
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "solo12": "solo_description/robots/solo12.urdf",
    "talos": "talos_data/robots/talos_reduced.urdf",
    "hyq": "hyq_description/robots/hyq_no_sensors.urdf",
    "pr2": "pr2_description/urdf/pr2.urdf",
}


def example_robot_urdf(name: str) -> Path:
    """Path of an example-robot-data URDF by short name (see EXAMPLE_ROBOTS) or relative path."""
    return example_robot_data_dir() / EXAMPLE_ROBOTS.get(name, name)


def resolve_urdf(reference: str, base_dir: str | Path | None = None) -> Path:
    """A URDF path from a config value: a file (absolute, relative to the working directory or to
    the config's directory), else the name of a shipped model ('arm7'), else an
    example-robot-data robot ('panda', 'ur5', ... or a path inside its robots/ folder)."""
    candidates = [Path(reference)]
    if base_dir is not None:
        candidates.append(Path(base_dir) / reference)
    for path in candidates:
        if path.is_file():
            return path
    try:
        return shipped_urdf(reference)
    except FileNotFoundError:
        pass
    try:
        path = example_robot_urdf(reference)
        if path.is_file():
            return path
    except FileNotFoundError:
        pass
    raise ConfigError(f"urdf_path '{reference}': no such file, shipped model or "
                      f"example-robot-data robot ({', '.join(EXAMPLE_ROBOTS)})")
