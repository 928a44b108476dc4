"""The ``sensors:`` list and the ``encoders:`` mapping of a config (docs/SENSORS.md), checked
into device descriptions; a bad entry is a ConfigError of one line naming it."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..model.model import ConfigError
from ..model import Model
from ..spatial import rpy_matrix
from ..model.constraints import Attachment

COMMON_KEYS = ("type", "name", "topic", "rate", "decimation", "seed")


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


TYPE_KEYS = {
    "imu": ("link", "xyz", "rpy", "frame_id", "gyroscope_noise_density", "gyroscope_random_walk",
            "accelerometer_noise_density", "accelerometer_random_walk", "orientation_noise",
            "orientation"),
    "force_torque": ("joint", "frame_id", "force_noise", "torque_noise"),
    "contact": ("link", "threshold"),
}
ENCODER_KEYS = ("noise", "velocity_noise", "counts_per_revolution", "counts_per_metre",
                "delay_ticks", "seed")


def body_frames(model: Model) -> dict[str, Attachment]:
    """Every body of a model at its joint frame (the links a scene or a builder names)."""
    return {name: Attachment(name, i, np.eye(3), np.zeros(3))
            for i, name in enumerate(model.body_names)}


def parse_sensors(entries, model: Model, dt: float,
                  frames: dict[str, Attachment] | None = None) -> list:
    """Imu / ForceTorque / ContactSwitch from a config's ``sensors:`` list. ``frames``: the
    links sensors may name (default: the model's bodies; a URDF's links merged by fixed
    joints too with model.closures.urdf_frames)."""
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise ConfigError(f"sensors: expected a list of {{type, name, ...}}, got {entries!r}")
    frames = body_frames(model) if frames is None else frames
    devices, names = [], set()
    for k, entry in enumerate(entries):
        device = _parse_entry(k, entry, model, dt, frames)
        if device.name in names:
            raise ConfigError(f"sensors[{k}] '{device.name}': the name is used twice")
        names.add(device.name)
        devices.append(device)
    return devices


def _parse_entry(k: int, entry, model: Model, dt: float, frames: dict):
    if not isinstance(entry, dict):
        raise ConfigError(f"sensors[{k}]: expected a mapping {{type, name, ...}}, got {entry!r}")
    kind = entry.get("type")
    target = entry.get("link", entry.get("joint", ""))
    name = str(entry.get("name", target))
    where = f"sensors[{k}] '{name}'"
    if kind not in TYPE_KEYS:
        raise ConfigError(f"{where}: unknown type {kind!r} (types: {', '.join(TYPE_KEYS)})")
    unknown = sorted(set(entry) - set(COMMON_KEYS) - set(TYPE_KEYS[kind]))
    if unknown:
        raise ConfigError(f"{where}: unknown keys {', '.join(unknown)} (a {kind} takes "
                          f"{', '.join(COMMON_KEYS + TYPE_KEYS[kind])})")
    common = dict(name=name, decimation=_decimation(entry, dt, where),
                  seed=_seed(entry.get("seed"), f"{where}: seed"),
                  topic=str(entry.get("topic", "")))
    if kind == "force_torque":
        joint = _joint(entry, model, where)
        return ForceTorque(joint_name=entry["joint"], joint=joint,
                           frame_id=str(entry.get("frame_id", model.body_names[joint])),
                           force_noise=_per_axis(entry, "force_noise", where),
                           torque_noise=_per_axis(entry, "torque_noise", where), **common)
    frame = _link(entry, frames, where)
    if kind == "contact":
        if frame.joint < 0:
            raise ConfigError(f"{where}: link '{frame.name}' is fixed to the world")
        return ContactSwitch(link=frame.name, body=frame.joint,
                             threshold=_number(entry, "threshold", where), **common)
    rotation = frame.rotation @ rpy_matrix(_vector(entry, "rpy", where))
    position = frame.position + frame.rotation @ _vector(entry, "xyz", where)
    orientation = entry.get("orientation", True)
    if not isinstance(orientation, bool):
        raise ConfigError(f"{where}: orientation must be true or false, got {orientation!r}")
    return Imu(link=frame.name, joint=frame.joint, rotation=rotation, position=position,
               frame_id=str(entry.get("frame_id", frame.name)), orientation=orientation,
               **{key: _number(entry, key, where) for key in TYPE_KEYS["imu"][4:9]}, **common)


def parse_encoders(values) -> Encoders | None:
    """Encoders from a config's ``encoders:`` mapping (None: none, all off)."""
    if values is None:
        return None
    if not isinstance(values, dict):
        raise ConfigError(f"encoders: expected a mapping {{{', '.join(ENCODER_KEYS)}}}, got "
                          f"{values!r}")
    unknown = sorted(set(values) - set(ENCODER_KEYS))
    if unknown:
        raise ConfigError(f"encoders: unknown keys {', '.join(unknown)} (known: "
                          f"{', '.join(ENCODER_KEYS)})")
    numbers = {key: _number(values, key, "encoders") for key in ENCODER_KEYS[:4]}
    delay = values.get("delay_ticks", 0)
    if isinstance(delay, bool) or not isinstance(delay, int) or delay < 0:
        raise ConfigError(f"encoders: delay_ticks must be a whole number >= 0, got {delay!r}")
    return Encoders(**numbers, delay_ticks=delay, seed=_seed(values.get("seed"),
                                                             "encoders: seed"))


def _number(entry: dict, key: str, where: str) -> float:
    """entry[key] (default 0) as a finite number >= 0."""
    value = entry.get(key, 0.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value < 0:
        raise ConfigError(f"{where}: {key} must be a finite number >= 0, got {value!r}")
    return float(value)


def _vector(entry: dict, key: str, where: str) -> np.ndarray:
    try:
        value = np.asarray(entry.get(key, (0.0, 0.0, 0.0)), dtype=float)
    except (TypeError, ValueError):
        value = None
    if value is None or value.shape != (3,) or not np.all(np.isfinite(value)):
        raise ConfigError(f"{where}: {key} must be 3 finite numbers, got {entry.get(key)!r}")
    return value


def _per_axis(entry: dict, key: str, where: str) -> np.ndarray:
    """One std for the three axes, or three."""
    value = entry.get(key, 0.0)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = [value] * 3
    checked = _vector({key: value}, key, where)
    if np.any(checked < 0):
        raise ConfigError(f"{where}: {key} must be >= 0, got {entry[key]!r}")
    return checked


def _decimation(entry: dict, dt: float, where: str) -> int:
    """Steps per sample, from ``decimation`` or ``rate`` (Hz; 1/dt over a whole number)."""
    if "rate" in entry and "decimation" in entry:
        raise ConfigError(f"{where}: give rate or decimation, not both")
    if "decimation" in entry:
        value = entry["decimation"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{where}: decimation must be a whole number >= 1, got {value!r}")
        return value
    rate = entry.get("rate")
    if rate is None:
        return 1
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0:
        raise ConfigError(f"{where}: rate must be a positive number of Hz, got {rate!r}")
    steps = round(1.0 / (rate * dt))
    if steps < 1 or abs(steps * rate * dt - 1.0) > 1e-9:
        raise ConfigError(f"{where}: rate {rate} Hz is not the step rate {1.0 / dt:g} Hz "
                          f"divided by a whole number")
    return steps


def _seed(value, where: str) -> int | None:
    """None or a whole number >= 0 (-1 also means none: ROS parameters have no null)."""
    if value is None or value == -1:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{where} must be a whole number >= 0, got {value!r}")
    return value


def _joint(entry: dict, model: Model, where: str) -> int:
    name = entry.get("joint")
    if name not in model.joint_names:
        raise ConfigError(f"{where}: joint {name!r} is not a joint of the model (joints: "
                          f"{', '.join(model.joint_names)})")
    return model.joint_names.index(name)


def _link(entry: dict, frames: dict, where: str) -> Attachment:
    name = entry.get("link")
    if name not in frames:
        raise ConfigError(f"{where}: link {name!r} is not a link of the model (links: "
                          f"{', '.join(sorted(frames))})")
    return frames[name]
