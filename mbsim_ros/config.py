"""Run configuration shared by ``mbsim-ros simulate``, ``inspect`` and the node.

A config file is YAML in either of two shapes, so one file per robot serves all three:

* plain: ``{urdf_path: ..., floating_base: ..., initial_positions: {joint: value}, ...}``
* a ROS 2 parameters file: ``{/**: {ros__parameters: {...}}}`` (or a node name instead of
  ``/**``), which ``ros2 run ... --params-file`` and launch files read directly.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .model import Model
from .model.resources import EXAMPLE_ROBOTS, example_robot_urdf, shipped_urdf


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the key."""


def read_config(path: str | Path) -> dict:
    """The parameters of a config file (see the module docstring), as one flat-keyed mapping
    whose nested mappings (``initial_positions``) stay nested."""
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


def initial_configuration(model: Model, positions: dict | None) -> np.ndarray:
    """The neutral configuration with the given one-DOF joints (by name) set."""
    q = model.neutral()
    for name, value in (positions or {}).items():
        try:
            i = model.joint_index(name)
        except KeyError as exc:
            raise ConfigError(f"initial_positions: {exc.args[0]}") from None
        if model.joint_kinds[i] == "free_flyer":
            raise ConfigError(f"initial_positions: '{name}' is a free-flyer; set its pose "
                              f"with q0")
        try:
            q[model.idx_q[i]] = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"initial_positions.{name}: expected a number, got "
                              f"{value!r}") from None
        if not np.isfinite(q[model.idx_q[i]]):
            raise ConfigError(f"initial_positions.{name}: not finite")
    return q
