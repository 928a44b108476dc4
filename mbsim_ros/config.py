"""Run configuration shared by ``mbsim-ros simulate``, ``inspect`` and the node.

A config file is YAML in either of two shapes, so one file per robot serves all three:

* plain: ``{urdf_path: ..., floating_base: ..., balance_inertia: ..., initial_positions:
  {joint: value}, armature: {joint: value}, ...}``
* a ROS 2 parameters file: ``{/**: {ros__parameters: {...}}}`` (or a node name instead of
  ``/**``), which ``ros2 run ... --params-file`` and launch files read directly.
"""
from __future__ import annotations

from pathlib import Path

from .model.model import ConfigError
from .model.resources import resolve_urdf
from .model.settings import initial_configuration, set_armature

__all__ = ["ConfigError", "read_config", "resolve_urdf", "initial_configuration", "set_armature"]


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
