"""The campaign spec (docs/CAMPAIGNS.md): what a user writes, as input schemas. ``load_spec``
reads a YAML file or a mapping, checks it against ``CampaignSpec`` (SchemaError names every
problem with its path) and then against the model it simulates (``Prepared`` in run.py: joints,
links, the controller's callable and trajectory file), before any run starts."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Union

import yaml
from pydantic import model_validator

from ..schema import (Count, Flag, NonNegative, Positive, Real, Schema, SchemaError, Text,
                      Vector3, load_yaml, validate)

SOURCE = "campaign spec"


class Distribution(Schema):
    """A named distribution: uniform (low, high), normal (mean, std) or choice (values)."""

    dist: Literal["uniform", "normal", "choice"]
    low: Real | None = None
    high: Real | None = None
    mean: Real | None = None
    std: NonNegative | None = None
    values: list[Real] | None = None

    @model_validator(mode="after")
    def _parameters(self) -> "Distribution":
        needs = {"uniform": ("low", "high"), "normal": ("mean", "std"),
                 "choice": ("values",)}[self.dist]
        given = [k for k in ("low", "high", "mean", "std", "values")
                 if getattr(self, k) is not None]
        wrong = [k for k in given if k not in needs]
        missing = [k for k in needs if getattr(self, k) is None]
        if wrong or missing:
            raise ValueError(f"dist {self.dist} takes {', '.join(needs)}"
                             + (f"; missing {', '.join(missing)}" if missing else "")
                             + (f"; not {', '.join(wrong)}" if wrong else ""))
        if self.dist == "uniform" and not self.low <= self.high:
            raise ValueError(f"uniform needs low <= high, got {self.low} > {self.high}")
        if self.dist == "choice" and not self.values:
            raise ValueError("choice needs at least one value")
        return self


Sampled = Union[Real, Distribution]


class JointDraw(Distribution):
    """One draw per joint named (default: every one-DOF joint)."""

    joints: list[Text] | None = None


class LinkDraw(Distribution):
    """One draw per link (body) named (default: every body)."""

    links: list[Text] | None = None


class AxesDraw(Distribution):
    """One draw per axis named (base position: x, y, z in m; orientation: about x, y, z in
    rad)."""

    axes: list[Literal["x", "y", "z"]] = ["x", "y", "z"]


class Push(Schema):
    """An external wrench on ``link`` from ``start`` for ``duration`` s: force (N) and torque
    (N m) in world axes, the force at ``point`` (link frame, m)."""

    link: Text
    start: Sampled
    duration: Sampled
    force: tuple[Sampled, Sampled, Sampled]
    torque: tuple[Sampled, Sampled, Sampled] = (0.0, 0.0, 0.0)
    point: Vector3 = (0.0, 0.0, 0.0)


class Randomize(Schema):
    """What each run draws (seeded by the campaign seed and the run's seed)."""

    joint_positions: JointDraw | None = None
    """offset added to the start (rad or m)"""
    joint_velocities: JointDraw | None = None
    """start velocity"""
    base_position: AxesDraw | None = None
    """offset of the floating base (m)"""
    base_orientation: AxesDraw | None = None
    """rotation of the floating base (rad)"""
    link_mass: LinkDraw | None = None
    """scale of a body's mass and inertia"""
    link_inertia: LinkDraw | None = None
    """scale of a body's rotational inertia only"""
    friction: Distribution | None = None
    """the ground's friction coefficient"""
    ground_stiffness: Distribution | None = None
    """scale of the ground's stiffness / modulus"""
    joint_damping: JointDraw | None = None
    """N m s/rad (absolute)"""
    joint_friction: JointDraw | None = None
    """N m (absolute)"""
    armature: JointDraw | None = None
    """kg m^2 (absolute)"""
    delay: Distribution | None = None
    """command delay, s (whole steps)"""
    lag: Distribution | None = None
    """torque lag bandwidth, Hz (every joint)"""
    gravity_tilt: Distribution | None = None
    """rad about x and about y (two draws)"""
    sensor_noise: Flag = True
    """fresh noise seeds per run (else the spec's)"""
    pushes: list[Push] = []


Gain = Union[NonNegative, dict[Text, NonNegative]]


ROS_KEYS = ("command", "env", "interface", "restart", "reset_service", "ready_timeout",
            "tick_timeout")


class Controller(Schema):
    """hold: servo the start posture; pd: servo a posture; trajectory: play a file's positions
    by joint name over time; python: ``module:function(t, state, readings) -> command``; ros:
    a ROS 2 controller process in the loop, in lockstep (docs/CAMPAIGNS.md)."""

    type: Literal["hold", "pd", "trajectory", "python", "ros"]
    rate: Positive | None = None
    """Hz (default: every step)"""
    mode: Literal["servo", "effort"] = "servo"
    """implicit servo, or explicit PD on readings"""
    kp: Gain | None = None
    kd: Gain | None = None
    omega: Positive | None = None
    """inertia-scaled gains: kp = M_jj w^2, kd = 2 zeta w M_jj"""
    zeta: NonNegative = 0.7
    posture: dict[Text, Real] | None = None
    """pd: targets by joint (others: the start)"""
    file: Text | None = None
    """trajectory: CSV (t, joint...) or YAML {t: [], joints: {}}"""
    function: Text | None = None
    """python: module:function"""
    options: dict[Text, Any] = {}
    """python: given to a factory (function(sim, options))"""
    factory: Flag = False
    """python: function(sim, options) returns the controller"""
    command: list[Text] | None = None
    """ros: the controller's argv (any executable; --ros-args as you write them)"""
    env: dict[Text, Text] = {}
    """ros: extra environment of the controller process"""
    interface: Literal["effort", "joint_commands"] = "effort"
    """ros: efforts on ~/effort_commands, or ~/joint_commands by name (targets: the gains)"""
    restart: Literal["per_run", "per_worker"] = "per_run"
    """ros: a fresh process per run, or one per worker kept between runs"""
    reset_service: Text | None = None
    """ros, per_worker: a std_srvs/Trigger the controller serves, called between runs"""
    ready_timeout: Positive = 60.0
    """ros: wall s for the controller to match joint_states and its command topic"""
    tick_timeout: Positive = 10.0
    """ros: wall s for a command to answer a state"""

    @model_validator(mode="after")
    def _fields_of_type(self) -> "Controller":
        own = {"pd": {"posture"}, "trajectory": {"file"},
               "python": {"function", "options", "factory"}, "ros": set(ROS_KEYS)}
        for key in ("posture", "file", "function", "options", "factory") + ROS_KEYS:
            if key in self.model_fields_set and key not in own.get(self.type, ()):
                raise ValueError(f"{key} is not a key of a '{self.type}' controller")
        needed = {"trajectory": "file", "python": "function", "pd": "posture",
                  "ros": "command"}.get(self.type)
        if needed and getattr(self, needed) is None:
            raise ValueError(f"a '{self.type}' controller needs '{needed}'")
        if self.type == "ros" and not self.command:
            raise ValueError("a 'ros' controller's command is an argv list, not empty")
        if self.type not in ("python", "ros") and self.omega is None and self.kp is None:
            raise ValueError("give gains: kp (and kd), or omega (and zeta)")
        if self.omega is not None and (self.kp is not None or self.kd is not None):
            raise ValueError("give either kp / kd or omega / zeta, not both")
        if self.reset_service is not None and self.restart != "per_worker":
            raise ValueError("reset_service goes with restart: per_worker")
        if self.type == "ros" and self.mode != "servo":
            raise ValueError("a 'ros' controller sends its own efforts: mode is not its key")
        return self


class Threshold(Schema):
    """A bound on a quantity over the run, checked from ``after`` s on."""

    after: NonNegative = 0.0


class Above(Threshold):
    above: Real


class Below(Threshold):
    below: Real


class TrackingBelow(Below):
    joints: list[Text] | None = None


class OnlyFeet(Threshold):
    feet: list[Text]


class Checks(Schema):
    """The predicates each run is judged by (a run passes when every one holds)."""

    base_height: Above | None = None
    """the floating base's height (m)"""
    base_tilt: Below | None = None
    """its tilt from upright (rad)"""
    tracking_rms: TrackingBelow | None = None
    """RMS of position target - q (rad)"""
    tracking_max: TrackingBelow | None = None
    """largest |target - q| (rad)"""
    joint_limit_margin: Above | None = None
    """smallest distance to a position limit"""
    contact_force_peak: Below | None = None
    """largest contact force on one body (N)"""
    only_feet_touch: OnlyFeet | None = None
    """no other body's contact force above zero"""
    energy_gain: Below | None = None
    """energy above the start's (J)"""
    no_solver_failure: Flag = True


METRICS = ("base_height_min", "base_tilt_max", "base_drift", "tracking_rms", "tracking_max",
           "joint_limit_margin_min", "contact_force_peak", "foreign_contact_force",
           "energy_gain_max", "effort_rms")
Metric = Literal["base_height_min", "base_tilt_max", "base_drift", "tracking_rms",
                 "tracking_max", "joint_limit_margin_min", "contact_force_peak",
                 "foreign_contact_force", "energy_gain_max", "effort_rms"]


class Sensors(Schema):
    """The simulated sensors (docs/SENSORS.md): a config's ``sensors:`` list and
    ``encoders:`` mapping, checked by the sensor reader."""

    devices: list[dict[Text, Any]] = []
    encoders: dict[Text, Any] | None = None


class CampaignSpec(Schema):
    """A campaign: what is simulated, how it is driven, what each run draws, how it is
    judged."""

    scene: Text | dict[Text, Any] | None = None
    """a scene file or mapping (Simulator.from_scene)"""
    urdf: Text | None = None
    """or a URDF (shipped name, file)"""
    floating_base: Flag = False
    initial_positions: dict[Text, Real] | None = None
    """with urdf: the start by joint"""
    integrator: Literal["compliant", "rigid", "variational", "euler"] = "compliant"
    integrator_options: dict[Text, Any] = {}
    dt: Positive = 1e-3
    duration: Positive
    controller: Controller
    sensors: Sensors | None = None
    randomize: Randomize = Randomize()
    checks: Checks = Checks()
    metrics: list[Metric] = []
    runs_per_task: Count | None = None
    """default: about 2 s of simulated time per task"""

    @model_validator(mode="after")
    def _one_model(self) -> "CampaignSpec":
        if (self.scene is None) == (self.urdf is None):
            raise ValueError("give either scene or urdf")
        if self.urdf is None and (self.floating_base or self.initial_positions):
            raise ValueError("floating_base and initial_positions go with urdf; a scene "
                             "sets its own")
        return self


def read_spec(spec: str | Path | dict) -> tuple[dict, Path]:
    """(the spec as a mapping with its file references made absolute, its directory)."""
    if isinstance(spec, dict):
        return dict(spec), Path.cwd()
    path = Path(spec)
    try:
        data = load_yaml(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SchemaError(SOURCE, [f"cannot read {path}: {exc}"]) from None
    if not isinstance(data, dict):
        raise SchemaError(SOURCE, [f"{path}: expected a mapping at the top level"])
    return data, path.resolve().parent


def absolute(data: dict, base: Path) -> dict:
    """File references made absolute (the scene, a trajectory file), so the spec means the same
    on every worker and from every directory."""
    out = dict(data)
    if isinstance(out.get("scene"), str) and (base / out["scene"]).exists():
        out["scene"] = str((base / out["scene"]).resolve())
    if isinstance(out.get("urdf"), str) and (base / out["urdf"]).is_file():
        out["urdf"] = str((base / out["urdf"]).resolve())
    controller = out.get("controller")
    if isinstance(controller, dict) and isinstance(controller.get("file"), str):
        out["controller"] = {**controller, "file": str((base / controller["file"]).resolve())}
    if isinstance(controller, dict) and isinstance(controller.get("command"), list):
        out["controller"] = {**out["controller"],
                             "command": [_file_argument(arg, base)
                                         for arg in controller["command"]]}
    return out


def _file_argument(arg, base: Path):
    """An argv entry that names a file beside the spec (``my_controller.py``, ``./node``), made
    absolute; any other entry as it is (``python3``, ``--ros-args``, ``-p``, ``kp:=20``)."""
    if not isinstance(arg, str) or not arg or arg.startswith("-") or Path(arg).is_absolute():
        return arg
    candidate = base / arg
    return str(candidate.resolve()) if candidate.is_file() else arg


def load_spec(spec: str | Path | dict) -> tuple[CampaignSpec, dict]:
    """(the checked spec, its mapping with absolute file references: what workers get)."""
    data, base = read_spec(spec)
    data = absolute(data, base)
    return validate(CampaignSpec, data, SOURCE), data
