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
from ..sensors.config import ENCODER_KEYS, parse_encoders
from ..recording.messages import imu_covariances
from ..recording.topics import topic_segment
from .messages import WrenchWriter, set_stamp

# name, default, description; ``encoders.<name>`` parameters take ints or floats
ENCODER_PARAMETERS = [
    ("noise", 0.0, "position noise std before quantisation (rad or m)"),
    ("velocity_noise", 0.0, "velocity noise std (rad/s or m/s)"),
    ("counts_per_revolution", 0, "revolute joints: counts per revolution (0: no quantisation)"),
    ("counts_per_metre", 0, "prismatic joints: counts per metre (0: no quantisation)"),
    ("delay_ticks", 0, "steps between a state and its encoder reading on joint_states"),
    ("seed", -1, "noise seed (-1: unseeded)"),
]
assert tuple(name for name, *_ in ENCODER_PARAMETERS) == ENCODER_KEYS


def declare_sensor_parameters(node) -> tuple[str, dict]:
    """Declare ``sensors_file`` and ``encoders.<key>`` on the node; (the file, the encoders
    mapping). Raises rclpy's ParameterException for a value of the wrong type."""
    sensors_file = node.declare_parameter(
        "sensors_file", "", ParameterDescriptor(
            description="YAML whose 'sensors:' list configures IMUs, force-torque sensors and "
                        "contact switches (docs/SENSORS.md)", read_only=True)).value
    encoders = {}
    for name, default, description in ENCODER_PARAMETERS:
        descriptor = ParameterDescriptor(description=f"joint encoders: {description}",
                                         read_only=True, dynamic_typing=True)
        encoders[name] = node.declare_parameter(f"encoders.{name}", default, descriptor).value
    return sensors_file, encoders


def sensor_suite(sim, sensors_file: str, encoders: dict, frames) -> SensorSuite | None:
    """The suite from the sensors file and the encoders parameters (None when both are empty
    or off); ConfigError names a bad entry."""
    entries = (read_config(sensors_file).get("sensors") or []) if sensors_file else []
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

    def publish(self, t_ns: int) -> None:
        due = self.suite.due
        for k, publisher, writer, reading in self.outputs:
            if due[k]:
                publisher.publish(writer.fill(t_ns, reading))
