"""Run configuration shared by ``mbsim-ros simulate``, ``inspect`` and the node.

A config file is YAML in either of two shapes, so one file per robot serves all three:

* plain: ``{urdf_path: ..., floating_base: ..., balance_inertia: ..., initial_positions:
  {joint: value}, armature: {joint: value}, ...}``
* a ROS 2 parameters file: ``{/**: {ros__parameters: {...}}}`` (or a node name instead of
  ``/**``), which ``ros2 run ... --params-file`` and launch files read directly.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .model import Model, start_within_limits
from .model.resources import EXAMPLE_ROBOTS, example_robot_urdf, shipped_urdf


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the key."""


def read_config(path: str | Path) -> dict:
    """The parameters of a config file (see the module docstring), as one flat-keyed mapping
    whose nested mappings (``initial_positions``, ``armature``) stay nested."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config {path}: expected a mapping at the top level")
    sections = [v["ros__parameters"] for v in data.values()
                if isinstance(v, dict) and "ros__parameters" in v]
    if sections:
        merged: dict = {}
        for section in sections:
            merged.update(section or {})
        data = merged
    data.setdefault("config_dir", str(Path(path).resolve().parent))
    return data


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


def initial_configuration(model: Model, positions: dict | None,
                          q: np.ndarray | None = None,
                          key: str = "initial_positions") -> np.ndarray:
    """q (default: the neutral configuration) with the given one-DOF joints (by name) set,
    clamped into the joint limits (one LimitWarning names the joints moved); ConfigError names
    ``key`` and the joint when one is unknown or not a number."""
    q = model.neutral() if q is None else np.array(q, dtype=float)
    for name, value in _joint_values(model, positions, key).items():
        q[model.idx_q[model.joint_index(name)]] = value
    return start_within_limits(model, q, "the initial configuration")


def set_armature(model: Model, values: dict | None, key: str = "armature") -> None:
    """``armature: {joint: value}`` (rotor inertia reflected to the joint, kg m^2 or kg) into
    ``model.set_armature``; ConfigError names the key of an unknown joint or a bad value."""
    checked = _joint_values(model, values, key)
    for name, value in checked.items():
        if value < 0.0:
            raise ConfigError(f"{key}.{name}: must be >= 0, got {value}")
    model.set_armature(checked)


def _joint_values(model: Model, values: dict | None, key: str) -> dict[str, float]:
    """{joint: float} for one-DOF joints named in a config mapping, checked."""
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ConfigError(f"{key}: expected a mapping {{joint: value}}, got {values!r}")
    checked = {}
    for name, value in values.items():
        try:
            i = model.joint_index(name)
        except KeyError as exc:
            raise ConfigError(f"{key}: {exc.args[0]}") from None
        if model.joint_kinds[i] == "free_flyer":
            raise ConfigError(f"{key}: '{name}' is a free-flyer (one-DOF joints only)")
        try:
            checked[name] = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{key}.{name}: expected a number, got {value!r}") from None
        if not np.isfinite(checked[name]):
            raise ConfigError(f"{key}.{name}: not finite")
    return checked
