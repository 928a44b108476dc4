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
from geometry_msgs.msg import Point, PoseStamped, TwistStamped, WrenchStamped
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from visualization_msgs.msg import Marker, MarkerArray

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


class WrenchWriter:
    """geometry_msgs/WrenchStamped of a wrench in a link's frame (``frame_id``: force and
    torque in its axes, the torque about its origin: ROS's convention): a link's contact wrench
    (zero while it touches nothing) or a joint's wrench (frame_id the child link)."""

    def __init__(self, link: str, frame_id: str) -> None:
        self.msg = WrenchStamped()
        self.msg.header.frame_id = frame_id
        self.link = link

    def fill(self, t_ns: int, wrench) -> WrenchStamped:
        set_stamp(self.msg.header.stamp, t_ns)
        f, tau = self.msg.wrench.force, self.msg.wrench.torque
        if wrench is None:
            f.x = f.y = f.z = tau.x = tau.y = tau.z = 0.0
        else:
            f.x, f.y, f.z = float(wrench[0]), float(wrench[1]), float(wrench[2])
            tau.x, tau.y, tau.z = float(wrench[3]), float(wrench[4]), float(wrench[5])
        return self.msg


FORCE_SCALE_M_PER_N = 0.01


def contact_markers(t_ns: int, contacts) -> MarkerArray:
    """RViz markers in ``world``: the contact points (one sphere list, red) and one arrow per
    contact force (green, 1 cm per N). Built at about 30 Hz, off the loop."""
    points = Marker(ns="contact_points", id=0, type=Marker.SPHERE_LIST, action=Marker.ADD)
    points.scale.x = points.scale.y = points.scale.z = 0.01
    points.color.r, points.color.a = 1.0, 1.0
    delete = Marker(ns="contact_forces", action=Marker.DELETEALL)
    markers = [delete, points]
    for k, contact in enumerate(contacts):
        p = contact.point
        points.points.append(Point(x=float(p[0]), y=float(p[1]), z=float(p[2])))
        tip = p + FORCE_SCALE_M_PER_N * contact.force
        arrow = Marker(ns="contact_forces", id=k, type=Marker.ARROW, action=Marker.ADD)
        arrow.points = [Point(x=float(p[0]), y=float(p[1]), z=float(p[2])),
                        Point(x=float(tip[0]), y=float(tip[1]), z=float(tip[2]))]
        arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.005, 0.01, 0.01
        arrow.color.g, arrow.color.a = 1.0, 1.0
        markers.append(arrow)
    for marker in markers:
        marker.header.frame_id = "world"
        set_stamp(marker.header.stamp, t_ns)
    return MarkerArray(markers=markers)


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
