"""Per-joint settings a config gives by joint name (initial positions, armature), checked:
ConfigError names the config key and the joint."""
from __future__ import annotations

import numpy as np

from .model import ConfigError, Model, start_within_limits


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
