"""The template message of each recorded topic (templates.py): which fields change per sample,
in the order a sample's ``values`` holds them. The constant fields are the node's: frame ids,
joint names, zero covariances (ground truth), an IMU's noise covariances."""
from __future__ import annotations

import numpy as np

from ..sensors.config import Imu
from .templates import Markers, Template, encoder, header, quaternion, vector3


def clock() -> Template:
    """rosgraph_msgs/Clock: no values, the stamp."""
    return Template("rosgraph_msgs/Clock", {"clock": Markers.stamp()}, Markers())


def joint_state(names: list[str]) -> Template:
    """sensor_msgs/JointState of ``names``: values position, velocity, effort (n each)."""
    markers = Markers()
    n = len(names)
    message = {"header": header(""), "name": list(names), "position": markers.numbers(n),
               "velocity": markers.numbers(n), "effort": markers.numbers(n)}
    return Template("sensor_msgs/JointState", message, markers)


def transforms(parents: list[str], children: list[str]) -> Template:
    """tf2_msgs/TFMessage of one transform per (parent, child) frame pair: values 7 per
    transform, translation x y z and rotation x y z w."""
    markers = Markers()
    message = {"transforms": [
        {"header": header(parent), "child_frame_id": child,
         "transform": {"translation": vector3(markers), "rotation": quaternion(markers)}}
        for parent, child in zip(parents, children)]}
    return Template("tf2_msgs/TFMessage", message, markers)


def odometry(frame_id: str, child_frame_id: str) -> Template:
    """nav_msgs/Odometry: values the pose (position 3, orientation x y z w) and the twist
    (linear 3, angular 3, in the child frame); covariances zero."""
    markers = Markers()
    pose = {"position": vector3(markers), "orientation": quaternion(markers)}
    twist = {"linear": vector3(markers), "angular": vector3(markers)}
    message = {"header": header(frame_id), "child_frame_id": child_frame_id,
               "pose": {"pose": pose, "covariance": [0.0] * 36},
               "twist": {"twist": twist, "covariance": [0.0] * 36}}
    return Template("nav_msgs/Odometry", message, markers)


def wrench(frame_id: str) -> Template:
    """geometry_msgs/WrenchStamped in ``frame_id``: values force 3, torque 3."""
    markers = Markers()
    message = {"header": header(frame_id),
               "wrench": {"force": vector3(markers), "torque": vector3(markers)}}
    return Template("geometry_msgs/WrenchStamped", message, markers)


def imu_covariances(imu: Imu, dt: float) -> tuple[list[float], list[float], list[float]]:
    """sensor_msgs/Imu's covariances (row-major 3x3, diagonal): the white-noise variance per
    sample of the orientation, the angular velocity and the linear acceleration; without an
    orientation estimate the orientation's is all zero but its first entry, -1."""
    period = imu.decimation * dt

    def diagonal(variance: float) -> list[float]:
        return np.diag([variance] * 3).ravel().tolist()

    orientation = diagonal(imu.orientation_noise ** 2)
    if not imu.orientation:
        orientation[0] = -1.0
    return (orientation, diagonal(imu.gyroscope_noise_density ** 2 / period),
            diagonal(imu.accelerometer_noise_density ** 2 / period))


def imu(device: Imu, dt: float) -> Template:
    """sensor_msgs/Imu of an IMU: values the orientation x y z w (when it has one), the angular
    velocity 3 and the linear acceleration (specific force) 3."""
    markers = Markers()
    orientation_covariance, angular_covariance, linear_covariance = imu_covariances(device, dt)
    orientation = quaternion(markers) if device.orientation else \
        {"x": 0.0, "y": 0.0, "z": 0.0, "w": 0.0}
    message = {"header": header(device.frame_id), "orientation": orientation,
               "orientation_covariance": orientation_covariance,
               "angular_velocity": vector3(markers),
               "angular_velocity_covariance": angular_covariance,
               "linear_acceleration": vector3(markers),
               "linear_acceleration_covariance": linear_covariance}
    return Template("sensor_msgs/Imu", message, markers)


def effort_array(n: int) -> Template:
    """std_msgs/Float64MultiArray of n efforts (no layout dimensions: the forward_command_
    controller convention): values the n efforts."""
    markers = Markers()
    message = {"layout": {"dim": [], "data_offset": 0}, "data": markers.numbers(n)}
    return Template("std_msgs/Float64MultiArray", message, markers)


def joint_command(names: list[str], position: bool, velocity: bool) -> Template:
    """sensor_msgs/JointState command of ``names`` (the node's ``~/joint_commands``) with
    position and / or velocity: values the positions, then the velocities; no efforts."""
    markers = Markers()
    n = len(names)
    message = {"header": header(""), "name": list(names),
               "position": markers.numbers(n) if position else [],
               "velocity": markers.numbers(n) if velocity else [], "effort": []}
    return Template("sensor_msgs/JointState", message, markers)


def switch_messages() -> tuple[bytes, bytes]:
    """std_msgs/Bool's two messages: (false, true)."""
    encode = encoder("std_msgs/Bool")
    return encode({"data": False}), encode({"data": True})
