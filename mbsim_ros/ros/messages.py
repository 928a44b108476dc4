"""Preallocated ROS messages that the simulation loop fills in place.

Each writer owns one message whose array fields are ``array.array('d')`` buffers with numpy views
on them: a tick writes the state into the views (``np.take(..., out=view)``) and sets the stamp,
so publishing allocates nothing in Python (rclpy serializes from the buffers in C).
"""
from __future__ import annotations

import array

import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped, TwistStamped
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState

NS_PER_S = 1_000_000_000


def set_stamp(stamp: Time, t_ns: int) -> None:
    stamp.sec, stamp.nanosec = divmod(t_ns, NS_PER_S)


def stamp_ns(stamp: Time) -> int:
    return stamp.sec * NS_PER_S + stamp.nanosec


def _array_field(msg, field: str, n: int) -> np.ndarray:
    """Give msg.<field> (float64[]) n zeros and return a numpy view on the message's own buffer
    (the setter may copy, so the view is taken from what the message holds)."""
    setattr(msg, field, array.array("d", bytes(8 * n)))
    return np.frombuffer(getattr(msg, field), dtype=np.float64)


class JointStateWriter:
    """sensor_msgs/JointState of the one-DOF joints: position, velocity, applied effort."""

    def __init__(self, names: list[str], idx_q: np.ndarray, idx_v: np.ndarray) -> None:
        self.msg = JointState()
        self.msg.name = list(names)
        n = len(names)
        self._position = _array_field(self.msg, "position", n)
        self._velocity = _array_field(self.msg, "velocity", n)
        self._effort = _array_field(self.msg, "effort", n)
        self.idx_q, self.idx_v = idx_q, idx_v

    def fill(self, t_ns: int, q: np.ndarray, v: np.ndarray, tau: np.ndarray) -> JointState:
        set_stamp(self.msg.header.stamp, t_ns)
        np.take(q, self.idx_q, out=self._position)
        np.take(v, self.idx_v, out=self._velocity)
        np.take(tau, self.idx_v, out=self._effort)
        return self.msg


class ClockWriter:
    def __init__(self) -> None:
        self.msg = Clock()

    def fill(self, t_ns: int) -> Clock:
        set_stamp(self.msg.clock, t_ns)
        return self.msg


class BaseStateWriter:
    """The free-flyer's pose (geometry_msgs/PoseStamped in ``world``) and twist
    (TwistStamped: linear and angular velocity of the base frame's origin, in the base frame,
    pinocchio's convention for a free-flyer v)."""

    def __init__(self, idx_q: int, idx_v: int, base_frame: str) -> None:
        self.pose = PoseStamped()
        self.pose.header.frame_id = "world"
        self.twist = TwistStamped()
        self.twist.header.frame_id = base_frame
        self.idx_q, self.idx_v = idx_q, idx_v

    def fill(self, t_ns: int, q: np.ndarray, v: np.ndarray) -> None:
        set_stamp(self.pose.header.stamp, t_ns)
        set_stamp(self.twist.header.stamp, t_ns)
        i, j = self.idx_q, self.idx_v
        p, o = self.pose.pose.position, self.pose.pose.orientation
        p.x, p.y, p.z = float(q[i]), float(q[i + 1]), float(q[i + 2])
        o.x, o.y, o.z, o.w = float(q[i + 3]), float(q[i + 4]), float(q[i + 5]), float(q[i + 6])
        lin, ang = self.twist.twist.linear, self.twist.twist.angular
        lin.x, lin.y, lin.z = float(v[j]), float(v[j + 1]), float(v[j + 2])
        ang.x, ang.y, ang.z = float(v[j + 3]), float(v[j + 4]), float(v[j + 5])


def diagnostic_array(t_ns: int, name: str, hardware_id: str, level: int, message: str,
                     values: dict) -> DiagnosticArray:
    """One DiagnosticStatus in a DiagnosticArray (built at about 1 Hz, off the hot path)."""
    status = DiagnosticStatus(level=bytes([level]), name=name, hardware_id=hardware_id,
                              message=message,
                              values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])
    out = DiagnosticArray(status=[status])
    set_stamp(out.header.stamp, t_ns)
    return out


LEVEL_OK = int.from_bytes(DiagnosticStatus.OK, "little")
LEVEL_WARN = int.from_bytes(DiagnosticStatus.WARN, "little")
LEVEL_ERROR = int.from_bytes(DiagnosticStatus.ERROR, "little")
