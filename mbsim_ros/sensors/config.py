"""The ``sensors:`` list and the ``encoders:`` mapping of a config (docs/SENSORS.md), checked
into device descriptions; a bad entry is a ConfigError of one line naming it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..model.model import ConfigError
from ..model import Model
from ..spatial import rpy_matrix
from ..model.constraints import Attachment
from ..schema import nearest, validate
from ..schema.sensors import SensorsBlock


@dataclass(kw_only=True)
class Sensor:
    """What every sensor entry has: its name, the node's topic ("": ``~/<type>/<name>``), one
    sample every ``decimation`` steps, the seed of its own noise generator (None: unseeded)."""

    kind: ClassVar[str] = ""
    name: str
    topic: str = ""
    decimation: int = 1
    seed: int | None = None


@dataclass(kw_only=True)
class Imu(Sensor):
    """An inertial measurement unit fixed to the body of ``joint`` (-1: the world) at
    (rotation, position) in that joint's frame. Noise parameters as Kalibr names them:
    white-noise densities (gyro rad/s/sqrt(Hz), accel m/s^2/sqrt(Hz)) and bias random-walk
    densities (rad/s^2/sqrt(Hz), m/s^3/sqrt(Hz)); ``orientation_noise``: rad per axis (std)."""

    kind: ClassVar[str] = "imu"
    link: str
    joint: int
    rotation: np.ndarray
    position: np.ndarray
    frame_id: str
    gyroscope_noise_density: float = 0.0
    gyroscope_random_walk: float = 0.0
    accelerometer_noise_density: float = 0.0
    accelerometer_random_walk: float = 0.0
    orientation_noise: float = 0.0
    orientation: bool = True


@dataclass(kw_only=True)
class ForceTorque(Sensor):
    """A six-axis force-torque sensor at a joint: the wrench the parent applies to the child,
    in the joint frame (``frame_id``: the child link); white noise std per axis (N, N m)."""

    kind: ClassVar[str] = "force_torque"
    joint_name: str
    joint: int
    frame_id: str
    force_noise: np.ndarray = field(default_factory=lambda: np.zeros(3))
    torque_noise: np.ndarray = field(default_factory=lambda: np.zeros(3))


@dataclass(kw_only=True)
class ContactSwitch(Sensor):
    """A link's contact switch: true while the contact force on the link over the last step
    is larger than ``threshold`` (N; 0: any contact force at all)."""

    kind: ClassVar[str] = "contact"
    link: str
    body: int
    threshold: float = 0.0


@dataclass
class Encoders:
    """Joint encoders on every one-DOF joint: position noise (std, rad or m) before
    quantisation to ``counts_per_revolution`` (revolute) / ``counts_per_metre`` (prismatic;
    0: none), velocity noise (std), and a delay of ``delay_ticks`` steps."""

    noise: float = 0.0
    velocity_noise: float = 0.0
    counts_per_revolution: float = 0.0
    counts_per_metre: float = 0.0
    delay_ticks: int = 0
    seed: int | None = None

    @property
    def active(self) -> bool:
        return bool(self.noise or self.velocity_noise or self.counts_per_revolution
                    or self.counts_per_metre or self.delay_ticks)


def body_frames(model: Model) -> dict[str, Attachment]:
    """Every body of a model at its joint frame (the links a scene or a builder names)."""
    return {name: Attachment(name, i, np.eye(3), np.zeros(3))
            for i, name in enumerate(model.body_names)}


def parse_sensors(entries, model: Model, dt: float,
                  frames: dict[str, Attachment] | None = None) -> list:
    """Imu / ForceTorque / ContactSwitch from a config's ``sensors:`` list (schema:
    schema/sensors.py). ``frames``: the links sensors may name (default: the model's bodies; a
    URDF's links merged by fixed joints too with model.closures.urdf_frames)."""
    if entries is None:
        return []
    specs = validate(SensorsBlock, {"sensors": entries}, "", ConfigError).sensors
    frames = body_frames(model) if frames is None else frames
    devices, names = [], set()
    for k, spec in enumerate(specs):
        device = _device(k, spec, model, dt, frames)
        if device.name in names:
            raise ConfigError(f"sensors[{k}].name: '{device.name}' is used twice")
        names.add(device.name)
        devices.append(device)
    return devices


def _device(k: int, spec, model: Model, dt: float, frames: dict):
    where = f"sensors[{k}]"
    common = dict(name=spec.name or getattr(spec, "link", None) or spec.joint,
                  decimation=_decimation(spec, dt, where), seed=_seed(spec.seed),
                  topic=spec.topic)
    if spec.type == "force_torque":
        joint = _joint(spec.joint, model, where)
        return ForceTorque(joint_name=spec.joint, joint=joint,
                           frame_id=spec.frame_id or model.body_names[joint],
                           force_noise=_per_axis(spec.force_noise),
                           torque_noise=_per_axis(spec.torque_noise), **common)
    frame = _link(spec.link, frames, where)
    if spec.type == "contact":
        if frame.joint < 0:
            raise ConfigError(f"{where}.link: '{frame.name}' is fixed to the world")
        return ContactSwitch(link=frame.name, body=frame.joint, threshold=spec.threshold,
                             **common)
    rotation = frame.rotation @ rpy_matrix(np.array(spec.rpy))
    position = frame.position + frame.rotation @ np.array(spec.xyz)
    return Imu(link=frame.name, joint=frame.joint, rotation=rotation, position=position,
               frame_id=spec.frame_id or frame.name, orientation=spec.orientation,
               gyroscope_noise_density=spec.gyroscope_noise_density,
               gyroscope_random_walk=spec.gyroscope_random_walk,
               accelerometer_noise_density=spec.accelerometer_noise_density,
               accelerometer_random_walk=spec.accelerometer_random_walk,
               orientation_noise=spec.orientation_noise, **common)


def parse_encoders(values) -> Encoders | None:
    """Encoders from a config's ``encoders:`` mapping (None: none, all off)."""
    if values is None:
        return None
    spec = validate(SensorsBlock, {"encoders": values}, "", ConfigError).encoders
    return Encoders(noise=spec.noise, velocity_noise=spec.velocity_noise,
                    counts_per_revolution=spec.counts_per_revolution,
                    counts_per_metre=spec.counts_per_metre, delay_ticks=spec.delay_ticks,
                    seed=_seed(spec.seed))


def _per_axis(value: tuple) -> np.ndarray:
    return np.array(value, dtype=float)


def _decimation(spec, dt: float, where: str) -> int:
    """Steps per sample, from ``decimation`` or ``rate`` (Hz; 1/dt over a whole number)."""
    if spec.rate is None:
        return spec.decimation or 1
    steps = round(1.0 / (spec.rate * dt))
    if steps < 1 or abs(steps * spec.rate * dt - 1.0) > 1e-9:
        raise ConfigError(f"{where}.rate: {spec.rate} Hz is not the step rate {1.0 / dt:g} Hz "
                          f"divided by a whole number")
    return steps


def _seed(value: int | None) -> int | None:
    """None for none or -1 (ROS parameters have no null)."""
    return None if value is None or value == -1 else value


def _joint(name: str, model: Model, where: str) -> int:
    if name not in model.joint_names:
        raise ConfigError(f"{where}.joint: {name!r} is not a joint of the model"
                          f"{_suggest(name, model.joint_names)}")
    return model.joint_names.index(name)


def _link(name: str, frames: dict, where: str) -> Attachment:
    if name not in frames:
        raise ConfigError(f"{where}.link: {name!r} is not a link of the model"
                          f"{_suggest(name, sorted(frames))}")
    return frames[name]


def _suggest(name: str, names) -> str:
    guess = nearest(name, names)
    return f" (did you mean {guess}? valid: {', '.join(names)})" if guess else \
        f" (valid: {', '.join(names)})"
