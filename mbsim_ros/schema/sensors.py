"""The ``sensors:`` list and the ``encoders:`` mapping of a config (docs/SENSORS.md): IMUs,
force-torque sensors, contact switches, joint encoders. Which link or joint exists is checked
against the model after this (sensors/config.py)."""
from __future__ import annotations

from typing import Annotated, Literal, Union

from annotated_types import Ge
from pydantic import BeforeValidator, Field, WithJsonSchema, model_validator

from .base import Count, Flag, NonNegative, Positive, Schema, Text, Vector3

# -1 also means "no seed": ROS parameters have no null
Seed = Annotated[int, Field(strict=True), Ge(-1)]


def _three(value):
    """One number for the three axes."""
    return [value] * 3 if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else value


PerAxis = Annotated[tuple[NonNegative, NonNegative, NonNegative], BeforeValidator(_three),
                    WithJsonSchema({"anyOf": [
                        {"type": "number", "minimum": 0},
                        {"type": "array", "items": {"type": "number", "minimum": 0},
                         "minItems": 3, "maxItems": 3}]})]


class SensorBase(Schema):
    name: Text | None = None
    """Name of the sensor (topic ~/<type>/<name>); default its link or joint."""
    topic: Text = ""
    """The node's topic instead of ~/<type>/<name>."""
    rate: Positive | None = None
    """Samples per second (Hz): the step rate divided by a whole number."""
    decimation: Count | None = None
    """One sample every this many steps (instead of rate)."""
    seed: Seed | None = None
    """Seed of the sensor's own noise generator (none or -1: unseeded)."""

    @model_validator(mode="after")
    def _one_rate(self):
        if self.rate is not None and self.decimation is not None:
            raise ValueError("give rate or decimation, not both")
        return self


class ImuSpec(SensorBase):
    """An inertial measurement unit on a link (noise densities as Kalibr names them)."""

    type: Literal["imu"]
    link: Text
    """Link (or frame merged by a fixed joint) it is fixed to."""
    xyz: Vector3 = (0.0, 0.0, 0.0)
    """Position in the link frame (m)."""
    rpy: Vector3 = (0.0, 0.0, 0.0)
    """Orientation in the link frame, roll-pitch-yaw (rad)."""
    frame_id: Text | None = None
    """frame_id of its messages; default the link."""
    gyroscope_noise_density: NonNegative = 0.0
    """White noise of the gyroscope (rad/s/sqrt(Hz))."""
    gyroscope_random_walk: NonNegative = 0.0
    """Bias random walk of the gyroscope (rad/s^2/sqrt(Hz))."""
    accelerometer_noise_density: NonNegative = 0.0
    """White noise of the accelerometer (m/s^2/sqrt(Hz))."""
    accelerometer_random_walk: NonNegative = 0.0
    """Bias random walk of the accelerometer (m/s^3/sqrt(Hz))."""
    orientation_noise: NonNegative = 0.0
    """Orientation noise per axis (rad, std)."""
    orientation: Flag = True
    """Publish an orientation estimate (false: zero, covariance[0] = -1)."""


class ForceTorqueSpec(SensorBase):
    """A six-axis force-torque sensor at a joint (the parent's wrench on the child)."""

    type: Literal["force_torque"]
    joint: Text
    """Joint it measures."""
    frame_id: Text | None = None
    """frame_id of its messages; default the child link."""
    force_noise: PerAxis = (0.0, 0.0, 0.0)
    """Force white noise, std (N): one for all axes or three."""
    torque_noise: PerAxis = (0.0, 0.0, 0.0)
    """Torque white noise, std (N m): one for all axes or three."""


class ContactSpec(SensorBase):
    """A link's contact switch."""

    type: Literal["contact"]
    link: Text
    """Link whose contact force it senses."""
    threshold: NonNegative = 0.0
    """Contact force above which it is on (N; 0: any contact force)."""


SensorSpec = Annotated[Union[ImuSpec, ForceTorqueSpec, ContactSpec], Field(discriminator="type")]


class EncodersSpec(Schema):
    """Joint encoders on every one-DOF joint (their readings are what joint_states shows)."""

    noise: NonNegative = 0.0
    """Position noise, std (rad or m), before quantisation."""
    velocity_noise: NonNegative = 0.0
    """Velocity noise, std (rad/s or m/s)."""
    counts_per_revolution: NonNegative = 0.0
    """Quantisation of revolute joints (0: none)."""
    counts_per_metre: NonNegative = 0.0
    """Quantisation of prismatic joints (0: none)."""
    delay_ticks: Annotated[int, Field(strict=True), Ge(0)] = 0
    """Readings are this many steps old."""
    seed: Seed | None = None
    """Seed of the encoders' noise generator (none or -1: unseeded)."""


class SensorsBlock(Schema):
    """A config's sensor blocks, as they are checked on their own (the node's sensors_file)."""

    sensors: list[SensorSpec] = Field(default_factory=list)
    """IMUs, force-torque sensors and contact switches."""
    encoders: EncodersSpec | None = None
    """Joint encoders (none: exact joint states)."""
