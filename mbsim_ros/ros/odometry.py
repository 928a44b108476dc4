"""The floating base for navigation stacks and RViz: nav_msgs/Odometry (``~/odom``) and, where
tf2_msgs imports (a ROS installation; it is not on PyPI), the ``world -> base`` transform on
``/tf``. Both share the pose, twist and header objects of the node's BaseStateWriter (rclpy
message fields hold references), so a tick sets only the transform's translation.

Conventions (REP 105, nav_msgs/Odometry): the pose is the base frame's in ``world`` (header
frame), the twist is in the child frame (the base): the linear velocity of the base frame's
origin and the angular velocity, both in base axes, which is pinocchio's free-flyer v.
Ground truth: the covariances are zero.
"""
from __future__ import annotations

from nav_msgs.msg import Odometry

from .messages import BaseStateWriter

try:  # a ROS installation; not on PyPI
    from geometry_msgs.msg import TransformStamped
    from tf2_msgs.msg import TFMessage
except ImportError:
    TFMessage = None


class OdometryWriter:
    """``odom`` (nav_msgs/Odometry) and ``tf`` (tf2_msgs/TFMessage, or None without tf2_msgs)
    of a BaseStateWriter's base; ``fill`` after the base writer's."""

    def __init__(self, base: BaseStateWriter) -> None:
        self.odom = Odometry()
        self.odom.header = base.pose.header  # frame world, the stamp of the tick
        self.odom.child_frame_id = base.twist.header.frame_id
        self.odom.pose.pose = base.pose.pose
        self.odom.twist.twist = base.twist.twist
        self.tf = None
        if TFMessage is not None:
            transform = TransformStamped()
            transform.header = base.pose.header
            transform.child_frame_id = base.twist.header.frame_id
            transform.transform.rotation = base.pose.pose.orientation
            self._translation = transform.transform.translation
            self._position = base.pose.pose.position
            self.tf = TFMessage(transforms=[transform])

    def fill(self) -> None:
        """Copy the translation into the transform (the rest is shared)."""
        if self.tf is not None:
            t, p = self._translation, self._position
            t.x, t.y, t.z = p.x, p.y, p.z
