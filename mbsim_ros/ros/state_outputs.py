"""What a simulation publishes after a step, on any rclpy node: the node's state topics
(docs/NODE.md), shared by ``mbsim_node`` and the controller-in-the-loop link (loop_link.py) so
that a controller hears the same topics, types and conventions from both.

- ``joint_states`` (sensor_msgs/JointState): the one-DOF joints' position, velocity (the
  encoders' readings when configured) and applied effort;
- ``/clock`` (rosgraph_msgs/Clock), for controllers with ``use_sim_time``;
- a floating base: ``~/base_pose``, ``~/base_twist``, ``~/odom`` (and ``/tf`` where tf2_msgs
  imports), ground truth;
- a scene: each link that can touch, its contact wrench on ``~/contact_wrenches/<link>``;
  optionally each joint's wrench on ``~/joint_wrenches/<joint>``. These two are filled only for
  topics DDS has matched a subscriber to.

Messages are preallocated (messages.py): a publication allocates nothing in Python.
"""
from __future__ import annotations

import numpy as np
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState

from ..recording.topics import topic_segment
from .commands import ActuatedJoints
from .messages import BaseStateWriter, ClockWriter, JointStateWriter, WrenchWriter
from .odometry import OdometryWriter

RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


class StateOutputs:
    """The state publishers of one simulation on ``node``. ``publish_state(t_ns, sim, q, v)``
    after a step (q, v: what joint_states shows, the true state or the encoders' readings);
    ``publish_clock(t_ns)``. ``events``: the joint_states publisher's event callbacks."""

    def __init__(self, node, sim, joints: ActuatedJoints, *, frame_prefix: str = "",
                 joint_wrenches: bool = False, events=None) -> None:
        model = sim.model
        self.joint_state_pub = node.create_publisher(JointState, "joint_states", RELIABLE,
                                                     event_callbacks=events)
        self.clock_pub = node.create_publisher(Clock, "/clock", RELIABLE)
        self.joint_state = JointStateWriter(joints.names, joints.idx_q, joints.idx_v)
        self.clock = ClockWriter()
        self.base = self.odometry = self.tf_pub = None
        free = [i for i, kind in enumerate(model.joint_kinds) if kind == "free_flyer"]
        if len(free) == 1:
            i = free[0]
            self.base = BaseStateWriter(int(model.idx_q[i]), int(model.idx_v[i]),
                                        frame_prefix + model.body_names[i])
            self.base_pose_pub = node.create_publisher(PoseStamped, "~/base_pose", RELIABLE)
            self.base_twist_pub = node.create_publisher(TwistStamped, "~/base_twist", RELIABLE)
            self.odometry = OdometryWriter(self.base)
            self.odom_pub = node.create_publisher(Odometry, "~/odom", RELIABLE)
            if self.odometry.tf is not None:
                self.tf_pub = node.create_publisher(type(self.odometry.tf), "/tf", TF_QOS)
            self._base_outputs = [(self.base_pose_pub, self.base.pose),
                                  (self.base_twist_pub, self.base.twist),
                                  (self.odom_pub, self.odometry.odom)]
            if self.tf_pub is not None:
                self._base_outputs.append((self.tf_pub, self.odometry.tf))
        self.contact_pubs = {}
        if sim.scene is not None:
            for body in sorted({int(b) for b in sim.scene.shapes.body if b >= 0}):
                link = model.body_names[body]
                self.contact_pubs[body] = (
                    node.create_publisher(WrenchStamped,
                                          f"~/contact_wrenches/{topic_segment(link)}",
                                          RELIABLE),
                    WrenchWriter(link, frame_id=frame_prefix + link))
        self.joint_wrench_pubs = {}
        if joint_wrenches:
            for joint, body in zip(model.joint_names, model.body_names):
                self.joint_wrench_pubs[joint] = (
                    node.create_publisher(WrenchStamped,
                                          f"~/joint_wrenches/{topic_segment(joint)}", RELIABLE),
                    WrenchWriter(joint, frame_id=frame_prefix + body))

    def publish_clock(self, t_ns: int) -> None:
        if self.clock_pub.get_subscription_count():
            self.clock_pub.publish(self.clock.fill(t_ns))

    def publish_state(self, t_ns: int, sim, q: np.ndarray, v: np.ndarray) -> None:
        """joint_states (q, v as given; the applied effort), the base (sim's true state) and
        the wrenches, each on a topic that has a subscriber (a message no one is matched to
        reaches no one; each costs 20-40 us to fill and publish, asking costs 0.8 us)."""
        if self.joint_state_pub.get_subscription_count():
            self.joint_state_pub.publish(self.joint_state.fill(t_ns, q, v, sim.effort))
        if self.base is not None:
            filled = False
            for publisher, message in self._base_outputs:
                if not publisher.get_subscription_count():
                    continue
                if not filled:  # the base's messages share their pose and twist
                    self.base.fill(t_ns, sim.q, sim.v)
                    self.odometry.fill()
                    filled = True
                publisher.publish(message)
        if self.contact_pubs:
            _publish_wrenches(t_ns, self.contact_pubs, lambda: sim.body_wrenches(axes="body"))
        if self.joint_wrench_pubs:
            _publish_wrenches(t_ns, self.joint_wrench_pubs, sim.joint_wrenches)


def _publish_wrenches(t_ns: int, publishers: dict, wrenches) -> None:
    """Each link's (joint's) wrench on its topic, every publication: a link that can touch gets
    zero when it does not, so a subscriber sees the contact end. Only the topics DDS has
    matched a subscriber to: a message no one is matched to reaches no one, and filling and
    publishing one costs about 11 us (Talos has 33 links that can touch: 0.7 ms per tick);
    asking for the count costs 0.8 us."""
    values = None
    for key, (publisher, writer) in publishers.items():
        if not publisher.get_subscription_count():
            continue
        if values is None:
            values = wrenches()  # (links or joints, 6)
        publisher.publish(writer.fill(t_ns, values[key]))
