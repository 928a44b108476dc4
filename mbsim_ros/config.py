"""Run configuration shared by ``mbsim-ros simulate``, ``inspect`` and the node, and its schema.

A config file is YAML in either of two shapes, so one file per robot serves all three:

* plain: ``{urdf_path: ..., floating_base: ..., initial_positions: {joint: value}, ...}``
* a ROS 2 parameters file: ``{/**: {ros__parameters: {...}}}`` (or a node name instead of
  ``/**``), which ``ros2 run ... --params-file`` and launch files read directly.

Dotted parameter names (``actuators.delay_ticks``, ``variational.tolerance``) and nested
mappings (``actuators: {delay_ticks: 2}``) are the same key. A file with ``models:`` is a scene
(schema/scene.py): as a config it means ``scene: <that file>``. Every key is checked against
ConfigSpec (docs/CONFIG.md lists them): an unknown one is refused with its path and the
nearest valid key.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from annotated_types import Ge, Le
from pydantic import Field, PrivateAttr, Strict, create_model

from .integrators import INTEGRATORS
from .integrators.base import integrator_options as all_integrator_options
from .model import DEFAULT_ROBOT
from .model.model import ConfigError
from .model.resources import resolve_urdf
from .model.settings import initial_configuration, set_armature
from .schema import Flag, JointValues, NonNegative, Schema, Text, load_yaml, validate
from .schema.closures import ClosureSpec
from .schema.scene import SceneSpec
from .schema.sensors import EncodersSpec, SensorSpec

__all__ = ["ConfigError", "ConfigSpec", "NodeSettings", "read_config", "config_from",
           "resolve_urdf", "initial_configuration", "set_armature", "integrator_options"]

PACINGS = ("realtime", "fast", "lockstep")
CLOCK_ON_RESET = ("continue", "restart")


def _ranged(kind: type, lo, hi):
    return Annotated[kind, Strict(), Ge(lo), Le(hi)]


class ActuatorSettings(Schema):
    """Actuator models between the command and the joints (docs/CONTROL.md)."""

    delay_ticks: _ranged(int, 0, 100000) = 0
    """actuator model: every command reaches the joints this many steps late"""
    velocity_limits: Flag = False
    """actuator model: no effort drives a joint further beyond its URDF velocity limit"""
    bandwidth: JointValues | None = None
    """torque lag bandwidth by joint name (Hz; 0: none)"""
    no_load_speed: JointValues | None = None
    """no-load speed of the torque-speed curve by joint name (rad/s or m/s; 0: none)"""


class NodeSettings(Schema):
    """The node's scalar parameters (one ROS parameter each; ros/parameters.py declares them
    from this table)."""

    robot_description: Text = ""
    """URDF XML (the ROS convention); wins over urdf_path"""
    urdf_path: Text = ""
    """URDF file, shipped model name or example-robot-data robot; both this and
    robot_description empty: the shipped arm7"""
    floating_base: Flag = False
    """add a free-flyer root joint (pose on ~/base_pose)"""
    balance_inertia: Flag = False
    """replace link inertias that are not physical by the nearest physical ones (a warning
    names them); a scene sets it per model"""
    scene: Text = ""
    """scene file (ground, boxes, models; contacts): replaces robot_description and urdf_path;
    needs a contact integrator (compliant)"""
    integrator: Literal[tuple(sorted(INTEGRATORS))] = "variational"
    """the integrator; its options are the parameters '<integrator>.<option>'"""
    dt: _ranged(float, 1e-6, 1.0) = 1e-3
    """simulated seconds per step (a whole number of nanoseconds)"""
    rate_hz: _ranged(float, 1.0, 100000.0) = 1000.0
    """steps per wall-clock second in realtime pacing (real-time factor = dt * rate_hz)"""
    pacing: Literal[PACINGS] = "realtime"
    """realtime: rate_hz against the wall clock; fast: as fast as it can; lockstep: one step
    per received command or ~/step call"""
    command_timeout: _ranged(float, 0.0, 1e9) = 0.1
    """a command older than this (simulated s) drops to zero effort; 0 = never"""
    publish_decimation: _ranged(int, 1, 1000000) = 1
    """publish joint_states every N steps (/clock every step)"""
    clock_on_reset: Literal[CLOCK_ON_RESET] = "continue"
    """after ~/reset, /clock continues monotonically ('continue') or restarts at 0
    ('restart')"""
    max_catchup: _ranged(int, 1, 1000000) = 100
    """realtime: ticks caught up after a stall; a longer lag is skipped and counted as
    missed"""
    diagnostics_period: _ranged(float, 0.05, 3600.0) = 1.0
    """wall seconds between /diagnostics messages"""
    print_status: Flag = False
    """log a status line (rate, real-time factor, jitter) with each diagnostics message"""
    closures_file: Text = ""
    """YAML with a 'closures' block (frame_a, frame_b, directions on the URDF's links): loop
    closures for the compliant or rigid integrator"""
    sensors_file: Text = ""
    """YAML whose 'sensors:' list configures IMUs, force-torque sensors and contact switches
    (docs/SENSORS.md)"""
    publish_joint_wrenches: Flag = False
    """publish ~/joint_wrenches/<joint> (WrenchStamped, the parent's wrench on the child, joint
    frame) with the joint states"""
    frame_prefix: Text = ""
    """prefix of the link frames' ids in ~/odom, /tf, ~/base_twist and the wrench topics (as
    robot_state_publisher's frame_prefix; 'world' has none)"""
    record: Text = ""
    """write the run to this MCAP file (a ROS 2 bag of the published topics and the received
    commands, docs/RECORDING.md); empty: no recording"""
    view: _ranged(int, 0, 65535) = 0
    """serve the live 3D view of the simulation at http://127.0.0.1:PORT (30 Hz,
    docs/VIEW.md); 0: off"""
    actuators: ActuatorSettings = Field(default_factory=ActuatorSettings)
    """actuator models (delay, torque lag, torque-speed curve, velocity limits)"""


class Gains(Schema):
    """A joint servo's gains (docs/CONTROL.md)."""

    p: NonNegative = 0.0
    """position gain (N m/rad or N/m)"""
    d: NonNegative = 0.0
    """velocity gain (N m s/rad or N s/m)"""
    i: NonNegative = 0.0
    """integral gain (N m/(rad s) or N/(m s))"""
    i_clamp: NonNegative | None = None
    """the most effort the integral gives (N m or N; default the joint's effort limit)"""


def integrator_options(name: str) -> dict:
    """The options (with defaults) that an integrator takes and a config or a ROS parameter can
    carry (plain values: the scene, constraints and forces are the library's)."""
    return {key: default for key, default in all_integrator_options(name).items()
            if isinstance(default, (bool, int, float, str))}


def _options_schema(name: str) -> type[Schema]:
    """The options block of one integrator (``variational: {tolerance: 1e-10}``): its options
    schema (integrators/options.py) without the library's object options."""
    schema = INTEGRATORS[name].options_schema
    fields = {key: (info.annotation, info) for key, info in schema.model_fields.items()
              if key in integrator_options(name)}
    return create_model(schema.__name__, __base__=Schema, __doc__=schema.__doc__, **fields)


class ConfigSpec(NodeSettings):
    """A run config: the node's parameters and the blocks that configure a model by joint and
    link name."""

    initial_positions: JointValues | None = None
    """the start posture by joint name (rad or m), clamped into the limits"""
    armature: JointValues | None = None
    """rotor inertia reflected to the joint, by joint name (kg m^2 or kg)"""
    gains: dict[Text, Gains] | None = None
    """joint servo gains by joint name"""
    sensors: list[SensorSpec] = Field(default_factory=list)
    """IMUs, force-torque sensors and contact switches (docs/SENSORS.md)"""
    encoders: EncodersSpec | None = None
    """joint encoders on joint_states (docs/SENSORS.md)"""
    closures: list[ClosureSpec] = Field(default_factory=list)
    """loop closures on the URDF's links (docs/CLOSED_LOOPS.md)"""
    _folder: Path | None = PrivateAttr(default=None)

    @property
    def folder(self) -> Path | None:
        """The folder the config was read from (its relative paths start there)."""
        return self._folder

    def urdf(self) -> Path:
        """The URDF file it names (the shipped default when it names none)."""
        from .model import shipped_urdf

        return resolve_urdf(self.urdf_path, self._folder) if self.urdf_path \
            else shipped_urdf(DEFAULT_ROBOT)


ConfigSpec = create_model(
    "ConfigSpec", __base__=ConfigSpec, __doc__=ConfigSpec.__doc__,
    **{name: (_options_schema(name) | None, None) for name in sorted(INTEGRATORS)})


def read_config(path: str | Path) -> ConfigSpec:
    """The config file at ``path`` (see the module docstring), checked: ConfigError lists
    every problem with its key's path."""
    import yaml

    try:
        data = load_yaml(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from None
    if isinstance(data, dict) and "models" in data:  # a scene file
        validate(SceneSpec, data, f"scene {path}", ConfigError)
        data = {"scene": str(Path(path).resolve())}
    config = config_from(data, f"config {path}")
    config._folder = Path(path).resolve().parent
    return config


def config_from(data, source: str = "config") -> ConfigSpec:
    """A config from a mapping (plain or a ROS 2 parameters file's), checked."""
    if isinstance(data, dict):
        sections = [v["ros__parameters"] for v in data.values()
                    if isinstance(v, dict) and "ros__parameters" in v]
        if sections:
            merged: dict = {}
            for section in sections:
                merged.update(_nested(section or {}))
            data = merged
        else:
            data = _nested(data)
    return validate(ConfigSpec, data, source, ConfigError)


def _nested(flat: dict) -> dict:
    """Dotted keys as nested mappings: {'a.b': 1} -> {'a': {'b': 1}} (ROS parameter names)."""
    out: dict = {}
    for key, value in flat.items():
        parts = str(key).split(".") if isinstance(key, str) else [key]
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                break
        else:
            last = parts[-1]
            if isinstance(value, dict) and isinstance(node.get(last), dict):
                node[last].update(_nested(value))
            else:
                node[last] = _nested(value) if isinstance(value, dict) else value
            continue
        out[key] = value
    return out
