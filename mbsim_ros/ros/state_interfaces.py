"""The node's interfaces for the robot's description and state, beside the simulation loop's
own (docs/NODE.md): ``robot_description`` (std_msgs/String, transient local, published once:
the robot_state_publisher convention, relative to the node's namespace as robot_state_publisher
publishes it), ``~/set_state`` (sensor_msgs/JointState) and ``~/set_base_state``
(nav_msgs/Odometry) while paused, and simulation_interfaces' services where that package
imports. Set-state messages are checked whole (set_state.py); a rejected one changes nothing
and is logged and reported in /diagnostics (``last_rejection``) with its reason.
"""
from __future__ import annotations

import warnings

from nav_msgs.msg import Odometry
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from ..model import LimitWarning
from . import simulation_services
from .commands import CommandError
from .set_state import set_base, set_joints

DESCRIPTION_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)


class StateInterfaces:
    """Creates the interfaces on ``node`` (a SimulationNode, after its own interfaces and
    state outputs, state_outputs.py, which publish the base's odometry)."""

    def __init__(self, node, description: str | None) -> None:
        self.node = node
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        if description is not None:
            node.create_publisher(String, "robot_description", DESCRIPTION_QOS).publish(
                String(data=description))
        if node.base is not None:
            node.create_subscription(Odometry, "~/set_base_state", self._on_set_base_state,
                                     reliable)
        node.create_subscription(JointState, "~/set_state", self._on_set_state, reliable)
        self.services = simulation_services.SimulationServices(node) \
            if simulation_services.available() else None

    def _on_set_state(self, msg: JointState) -> None:
        self._set("~/set_state", lambda q, v: set_joints(
            self.node.joints, q, v, msg.name, msg.position, msg.velocity))

    def _on_set_base_state(self, msg: Odometry) -> None:
        base = self.node.base
        p, o = msg.pose.pose.position, msg.pose.pose.orientation
        lin, ang = msg.twist.twist.linear, msg.twist.twist.angular
        self._set("~/set_base_state", lambda q, v: set_base(
            base.idx_q, base.idx_v, base.twist.header.frame_id, q, v,
            frame_id=msg.header.frame_id, child_frame_id=msg.child_frame_id,
            position=(p.x, p.y, p.z), orientation=(o.x, o.y, o.z, o.w),
            linear=(lin.x, lin.y, lin.z), angular=(ang.x, ang.y, ang.z)))

    def _set(self, topic: str, write) -> None:
        """write(q, v) into copies of the current state, then restart the node from them."""
        node = self.node
        logger = node.get_logger()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", LimitWarning)
            try:
                message = node.restart_from(write)
            except CommandError as exc:
                node.last_rejection = f"{topic}: {exc}"
                logger.warning(f"{topic} rejected: {exc}; the state is unchanged")
                return
        for warning in caught:
            logger.warning(f"{topic}: {warning.message}")
        logger.info(f"{topic}: {message}")
