"""The node's ROS parameters: their table (name, default, description, range), made from the
config schema's NodeSettings (config.py: one table for config files and parameters), the
checked Settings they are read into, and the integrator options that become
'<integrator>.<option>' parameters. Plain declarations: the node (node.py) is the shell that uses
them. docs/CONFIG.md lists them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args, get_origin

from annotated_types import Ge, Le
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.exceptions import ParameterException

from ..config import ActuatorSettings, ConfigError, NodeSettings, config_from
from ..config import integrator_options
from ..schema import nearest, strip_optional

__all__ = ["PARAMETERS", "Settings", "StartupError", "declare_settings", "integrator_options",
           "unknown_parameters"]


class StartupError(RuntimeError):
    """A bad parameter or model at start-up: the node exits non-zero with this one line."""


def _constraints(info) -> dict:
    """A ParameterDescriptor's range from a schema field's bounds."""
    lo = next((m.ge for m in info.metadata if isinstance(m, Ge)), None)
    hi = next((m.le for m in info.metadata if isinstance(m, Le)), None)
    if lo is None or hi is None:
        return {}
    if isinstance(info.default, int) and not isinstance(info.default, bool):
        return {"integer_range": [IntegerRange(from_value=lo, to_value=hi, step=1)]}
    return {"floating_point_range": [FloatingPointRange(from_value=float(lo),
                                                        to_value=float(hi), step=0.0)]}


def _description(info) -> str:
    text = " ".join((info.description or "").split())
    kind = strip_optional(info.annotation)
    if get_origin(kind) is Literal:
        text += f" (one of: {', '.join(get_args(kind))})"
    return text


def _rows(schema, prefix: str = "") -> list[tuple]:
    """(name, default, description, descriptor constraints) of a schema's scalar fields;
    mappings by joint name are declared per joint by the node."""
    rows = []
    for name, info in schema.model_fields.items():
        if name == "actuators":
            rows += _rows(ActuatorSettings, "actuators.")
        elif isinstance(info.default, (bool, int, float, str)):
            rows.append((prefix + name, info.default, _description(info), _constraints(info)))
    return rows


PARAMETERS = _rows(NodeSettings)


@dataclass
class Settings:
    robot_description: str
    urdf_path: str
    floating_base: bool
    balance_inertia: bool
    scene: str
    integrator: str
    dt: float
    rate_hz: float
    pacing: str
    command_timeout: float
    publish_decimation: int
    clock_on_reset: str
    max_catchup: int
    diagnostics_period: float
    print_status: bool
    closures_file: str
    sensors_file: str
    publish_joint_wrenches: bool
    frame_prefix: str
    record: str
    view: int
    actuators_delay_ticks: int
    actuators_velocity_limits: bool


def declare_settings(node) -> Settings:
    """Declare the node's parameters (read-only) and read them into Settings, checked;
    StartupError names a bad one."""
    values = {}
    for name, default, description, constraints in PARAMETERS:
        descriptor = ParameterDescriptor(description=description, read_only=True,
                                         **constraints)
        try:
            values[name.replace(".", "_")] = node.declare_parameter(name, default,
                                                                    descriptor).value
        except ParameterException as exc:
            raise StartupError(f"parameter '{name}': {exc}") from None
    try:
        config_from({name: values[name.replace(".", "_")] for name, *_ in PARAMETERS},
                    "parameters")
    except ConfigError as exc:
        raise StartupError(str(exc)) from None
    s = Settings(**values)
    if abs(s.dt * 1e9 - round(s.dt * 1e9)) > 1e-6:
        raise StartupError(f"parameter 'dt': {s.dt} s is not a whole number of nanoseconds")
    return s


# parameters every rclpy node may carry besides its own
ROS_PARAMETERS = ("use_sim_time", "start_type_description_service", "qos_overrides.")


def unknown_parameters(given, declared) -> list[str]:
    """One line per given parameter that the node does not declare: the valid names beside it
    (the joints of ``armature.<joint>``, an integrator's options) and the nearest one (a
    misspelled parameter is an error, not a silent default)."""
    lines = []
    for name in sorted(set(given) - set(declared)):
        if name.startswith(ROS_PARAMETERS):
            continue
        prefix, _, last = name.rpartition(".")
        siblings = sorted({d.rpartition(".")[2] for d in declared
                           if prefix and d.rpartition(".")[0] == prefix})
        if siblings:
            guess = nearest(last, siblings)
            lines.append(f"parameter '{name}' is not one of the node's: valid after '{prefix}.': "
                         f"{', '.join(siblings)}" + (f" (did you mean {prefix}.{guess}?)"
                                                      if guess else ""))
        else:
            guess = nearest(name, declared)
            lines.append(f"parameter '{name}' is not one of the node's"
                         + (f" (did you mean {guess}?)" if guess else ""))
    return lines
