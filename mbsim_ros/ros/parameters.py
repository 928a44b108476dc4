"""The node's ROS parameters: their table (name, default, description, range), the
checked Settings they are read into, and the integrator options that become
'<integrator>.<option>' parameters (the same table as the CLI's flags). Plain declarations:
the node (node.py) is the shell that uses them. docs/NODE.md lists them."""
from __future__ import annotations

from dataclasses import dataclass

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.exceptions import ParameterException

from ..integrators import INTEGRATORS
from ..integrators.base import integrator_options as all_options
from ..model import DEFAULT_ROBOT

PACINGS = ("realtime", "fast", "lockstep")
CLOCK_ON_RESET = ("continue", "restart")


class StartupError(RuntimeError):
    """A bad parameter or model at start-up: the node exits non-zero with this one line."""


def _float_range(lo: float, hi: float) -> dict:
    return {"floating_point_range": [FloatingPointRange(from_value=lo, to_value=hi, step=0.0)]}


def _int_range(lo: int, hi: int) -> dict:
    return {"integer_range": [IntegerRange(from_value=lo, to_value=hi, step=1)]}


# name, default, description, descriptor constraints
PARAMETERS = [
    ("robot_description", "", "URDF XML (the ROS convention); wins over urdf_path", {}),
    ("urdf_path", "", f"URDF file, shipped model name or example-robot-data robot; both this and "
                      f"robot_description empty: the shipped '{DEFAULT_ROBOT}'", {}),
    ("floating_base", False, "add a free-flyer root joint (pose on ~/base_pose)", {}),
    ("balance_inertia", False, "replace link inertias that are not physical by the nearest "
                               "physical ones (a warning names them); a scene sets it per model",
     {}),
    ("scene", "", "scene file (ground, boxes, models; contacts): replaces robot_description "
                  "and urdf_path; needs a contact integrator (compliant)", {}),
    ("integrator", "variational", f"one of: {', '.join(sorted(INTEGRATORS))}; its options are "
                                  f"the parameters '<integrator>.<option>'", {}),
    ("dt", 1e-3, "simulated seconds per step (a whole number of nanoseconds)",
     _float_range(1e-6, 1.0)),
    ("rate_hz", 1000.0, "steps per wall-clock second in realtime pacing (real-time factor = "
                        "dt * rate_hz)", _float_range(1.0, 100000.0)),
    ("pacing", "realtime", "realtime: rate_hz against the wall clock; fast: as fast as it can; "
                           "lockstep: one step per received command or ~/step call", {}),
    ("command_timeout", 0.1, "a command older than this (simulated s) drops to zero effort; "
                             "0 = never", _float_range(0.0, 1e9)),
    ("publish_decimation", 1, "publish joint_states every N steps (/clock every step)",
     _int_range(1, 1000000)),
    ("clock_on_reset", "continue", "after ~/reset, /clock continues monotonically ('continue') "
                                   "or restarts at 0 ('restart')", {}),
    ("max_catchup", 100, "realtime: ticks caught up after a stall; a longer lag is skipped and "
                         "counted as missed", _int_range(1, 1000000)),
    ("diagnostics_period", 1.0, "wall seconds between /diagnostics messages",
     _float_range(0.05, 3600.0)),
    ("print_status", False, "log a status line (rate, real-time factor, jitter) with each "
                            "diagnostics message", {}),
    ("closures_file", "", "YAML with a 'closures' block (frame_a, frame_b, directions on the "
                          "URDF's links): loop closures for the compliant or rigid integrator",
     {}),
    ("publish_joint_wrenches", False, "publish ~/joint_wrenches/<joint> (WrenchStamped, the "
                                      "parent's wrench on the child, joint frame) with the "
                                      "joint states", {}),
    ("frame_prefix", "", "prefix of the link frames' ids in ~/odom, /tf, ~/base_twist and the "
                         "wrench topics (as robot_state_publisher's frame_prefix; 'world' has "
                         "none)", {}),
    ("record", "", "write the run to this MCAP file (a ROS 2 bag of the published topics and "
                   "the received commands, docs/RECORDING.md); empty: no recording", {}),
    ("actuators.delay_ticks", 0, "actuator model: every command reaches the joints this many "
                                 "steps late", _int_range(0, 100000)),
    ("actuators.velocity_limits", False, "actuator model: no effort drives a joint further "
                                         "beyond its URDF velocity limit", {}),
]


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
    publish_joint_wrenches: bool
    frame_prefix: str
    record: str
    actuators_delay_ticks: int
    actuators_velocity_limits: bool


def integrator_options(name: str) -> dict:
    """The keyword options (with defaults) that an integrator takes and a ROS parameter can
    carry (the scene comes from the ``scene`` parameter)."""
    return {key: default for key, default in all_options(name).items()
            if isinstance(default, (bool, int, float, str))}


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
    s = Settings(**values)
    if s.integrator not in INTEGRATORS:
        raise StartupError(f"parameter 'integrator': '{s.integrator}' is not one of "
                           f"{', '.join(sorted(INTEGRATORS))}")
    if s.pacing not in PACINGS:
        raise StartupError(f"parameter 'pacing': '{s.pacing}' is not one of "
                           f"{', '.join(PACINGS)}")
    if s.clock_on_reset not in CLOCK_ON_RESET:
        raise StartupError(f"parameter 'clock_on_reset': '{s.clock_on_reset}' is not one of "
                           f"{', '.join(CLOCK_ON_RESET)}")
    if abs(s.dt * 1e9 - round(s.dt * 1e9)) > 1e-6:
        raise StartupError(f"parameter 'dt': {s.dt} s is not a whole number of nanoseconds")
    return s
