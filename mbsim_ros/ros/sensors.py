"""The node's simulated sensors (docs/SENSORS.md): the parameters that configure them, and one
publisher per sensor fed from mbsim_ros.sensors.SensorSuite's arrays.

IMU -> sensor_msgs/Imu, force-torque -> geometry_msgs/WrenchStamped, contact ->
std_msgs/Bool, each on ``topic`` (default ``~/<type>/<name>``), stamped with the simulated time
of its sample; encoders replace the positions and velocities on joint_states.
"""
from __future__ import annotations

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import Imu
from std_msgs.msg import Bool

from ..config import read_config
from ..sensors import SensorSuite
from ..recording.messages import imu_covariances
from ..recording.topics import topic_segment
from ..schema.sensors import EncodersSpec
from ..sensors.config import parse_encoders
from .messages import WrenchWriter, set_stamp

# name, default, description of the ``encoders.<name>`` parameters (ints or floats), from the
# encoders' schema; no seed is -1 (ROS parameters have no null)
ENCODER_PARAMETERS = [(name, -1 if info.default is None else info.default,
                       " ".join(info.description.split()))
                      for name, info in EncodersSpec.model_fields.items()]


def declare_encoder_parameters(node) -> dict:
    """Declare ``encoders.<key>`` on the node; the encoders mapping. Raises rclpy's
    ParameterException for a value of the wrong type."""
    encoders = {}
    for name, default, description in ENCODER_PARAMETERS:
        descriptor = ParameterDescriptor(description=f"joint encoders: {description}",
                                         read_only=True, dynamic_typing=True)
        encoders[name] = node.declare_parameter(f"encoders.{name}", default, descriptor).value
    return encoders


def sensor_suite(sim, sensors_file: str, encoders: dict, frames) -> SensorSuite | None:
    """The suite from the sensors file and the encoders parameters (None when both are empty
    or off); ConfigError names a bad entry."""
    entries = read_config(sensors_file).model_dump(exclude_unset=True).get("sensors", []) \
        if sensors_file else []
    parsed = parse_encoders(encoders)
    if not entries and not parsed.active:
        return None
    return SensorSuite(sim, entries, parsed, frames)


class ImuWriter:
    """sensor_msgs/Imu from an IMU row (mbsim_ros.sensors.kernels): orientation world <-
    sensor, angular velocity and specific force in the sensor frame; covariances diagonal,
    the white-noise variance per sample (all zeros: no noise). Without ``orientation`` the
    orientation is zero and its covariance[0] is -1 (the message's "no estimate")."""

    def __init__(self, imu, dt: float) -> None:
        self.msg = Imu()
        self.msg.header.frame_id = imu.frame_id
        (self.msg.orientation_covariance, self.msg.angular_velocity_covariance,
         self.msg.linear_acceleration_covariance) = imu_covariances(imu, dt)
        self.with_orientation = imu.orientation
        if not imu.orientation:
            self.msg.orientation.w = 0.0

    def fill(self, t_ns: int, row: np.ndarray) -> Imu:
        msg = self.msg
        set_stamp(msg.header.stamp, t_ns)
        x = row.tolist()
        if self.with_orientation:
            o = msg.orientation
            o.x, o.y, o.z, o.w = x[3], x[4], x[5], x[6]
        w, a = msg.angular_velocity, msg.linear_acceleration
        w.x, w.y, w.z = x[7], x[8], x[9]
        a.x, a.y, a.z = x[10], x[11], x[12]
        return msg


class SwitchWriter:
    """std_msgs/Bool: the contact switch's state (no header: the /clock of the step)."""

    def __init__(self) -> None:
        self.msg = Bool()

    def fill(self, t_ns: int, flag: np.ndarray) -> Bool:
        self.msg.data = bool(flag[0])
        return self.msg


class SensorPublishers:
    """One publisher and message writer per sensor of the suite; ``publish(t_ns)`` sends the
    ones sampled at this step."""

    def __init__(self, node, suite: SensorSuite, qos) -> None:
        self.suite = suite
        self.outputs = []
        for k, device in enumerate(suite.devices):
            if device.kind == "imu":
                kind, writer = Imu, ImuWriter(device, suite.sim.dt)
            elif device.kind == "force_torque":
                kind, writer = WrenchStamped, WrenchWriter(device.joint_name,
                                                           frame_id=device.frame_id)
            else:
                kind, writer = Bool, SwitchWriter()
            topic = device.topic or f"~/{device.kind}/{topic_segment(device.name)}"
            self.outputs.append((k, node.create_publisher(kind, topic, qos), writer,
                                 suite.reading(k)))

    def follow(self, suite: SensorSuite) -> None:
        """Publish another suite's readings from now on (the same devices: the next run of a
        campaign on the same publishers)."""
        self.suite = suite
        self.outputs = [(k, publisher, writer, suite.reading(k))
                        for k, publisher, writer, _ in self.outputs]

    def publish(self, t_ns: int) -> None:
        due = self.suite.due
        for k, publisher, writer, reading in self.outputs:
            if due[k]:
                publisher.publish(writer.fill(t_ns, reading))
