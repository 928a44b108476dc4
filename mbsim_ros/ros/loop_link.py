"""The simulation's side of a user's ROS 2 controller in the loop, in lockstep: the caller
steps its own Simulator, and at every control tick the link publishes the state on the node's
topics (state_outputs.py: ``/clock``, ``joint_states``, the base, the wrenches; the sensors)
and waits for exactly one command on ``~/effort_commands`` (std_msgs/Float64MultiArray, model
joint order) or ``~/joint_commands`` (sensor_msgs/JointState by name: positions and velocities
go to the joint servos), checked whole as the node checks it (commands.py). The table a
campaign writes does not depend on load: the simulation waits for the controller, and the
controller sees the state of every tick.

The link is an rclpy node of its own context on one DDS domain (domains.py), named like the
node (``mbsim``) so that the controller's topics are the ones it uses against ``mbsim_node``;
given the robot's description, it publishes ``robot_description`` as the node does.
It never runs an executor over its command subscription: commands are taken from a wait set,
one per tick, in the caller's thread.
"""
from __future__ import annotations

import time

import numpy as np
import rclpy
from rclpy.context import Context
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from .commands import ActuatedJoints, CommandError, CommandSlot
from .messages import stamp_ns
from .node import PolledGroup
from .sensors import SensorPublishers
from .state_interfaces import DESCRIPTION_QOS
from .state_outputs import StateOutputs

COMMAND_TOPICS = {"effort": "~/effort_commands", "joint_commands": "~/joint_commands"}
POLL_S = 0.05  # how often a wait looks at the controller process while nothing arrives
SETTLE_S = 0.2  # after both sides are matched, before the first state (DDS's own matching)


class ControllerTimeout(RuntimeError):
    """No command within the tick timeout (or the controller never matched)."""


class ControllerRejected(RuntimeError):
    """The controller sent a command the node would reject (the reason)."""


class LoopLink:
    """``sim``'s state out, one command in, on domain ``domain_id``. ``interface``: "effort" or
    "joint_commands". ``bind(sim, suite)`` before each run (a new Simulator of the same model);
    ``wait_ready``, then ``exchange`` at every control tick."""

    def __init__(self, sim, domain_id: int, interface: str = "effort", *,
                 node_name: str = "mbsim", namespace: str = "", suite=None,
                 description: str | None = None) -> None:
        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain_id,
                   signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node(node_name, namespace=namespace, context=self.context,
                                      start_parameter_services=False, enable_rosout=False)
        self.joints = ActuatedJoints(sim.model)
        if description is not None:  # as the node: latched, for controllers that read it
            self.node.create_publisher(String, "robot_description", DESCRIPTION_QOS).publish(
                String(data=description))
        self.outputs = StateOutputs(self.node, sim, self.joints)
        reliable = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
        self.sensor_pubs = None if suite is None else SensorPublishers(self.node, suite, reliable)
        kind = Float64MultiArray if interface == "effort" else JointState
        self.interface = interface
        self.subscription = self.node.create_subscription(
            kind, COMMAND_TOPICS[interface], lambda _: None, reliable,
            callback_group=PolledGroup())
        self._wait_set = _rclpy.WaitSet(1, 0, 0, 0, 0, 0, self.context.handle)
        self.sim = sim
        self.suite = suite
        self.slot = CommandSlot(sim.model, self.joints, sim.servos.gains)
        self.command = np.zeros(self.slot.latest.size)
        self.t_ns = 0
        self.ticks = 0

    @property
    def command_topic(self) -> str:
        return self.subscription.topic_name

    def bind(self, sim, suite=None) -> None:
        """Publish ``sim`` (and ``suite``) from now on; the previous run's commands are
        dropped. The servo gains that targets need are read again from ``sim``."""
        self.sim, self.suite = sim, suite
        if self.sensor_pubs is not None and suite is not None:
            self.sensor_pubs.follow(suite)
        self.slot = CommandSlot(sim.model, self.joints, sim.servos.gains)
        self.drain()
        self.ticks = 0

    def matched(self) -> tuple[int, int]:
        """(subscribers matched to joint_states, publishers matched to the command topic)."""
        return (self.outputs.joint_state_pub.get_subscription_count(),
                self.subscription.get_publisher_count())

    def wait_unmatched(self, timeout: float) -> bool:
        """Wait until no controller is matched (a stopped one's endpoints are gone); False if
        some still are after ``timeout`` s (a killed process's, until its lease ends)."""
        end = time.monotonic() + timeout
        while any(self.matched()):
            if time.monotonic() > end:
                return False
            time.sleep(POLL_S)
        return True

    def wait_ready(self, timeout: float, alive=lambda: None) -> None:
        """Until a controller subscribes to joint_states and publishes commands (matched by
        DDS), then a short settle; ``alive()`` raises when the controller is gone.
        ControllerTimeout after ``timeout`` s."""
        end = time.monotonic() + timeout
        while True:
            alive()
            subscribers, publishers = self.matched()
            if subscribers and publishers:
                break
            if time.monotonic() > end:
                raise ControllerTimeout(
                    f"the controller was not ready within {timeout:g} s: "
                    f"{'no' if not subscribers else 'a'} subscriber on "
                    f"{self.outputs.joint_state_pub.topic_name}, "
                    f"{'no' if not publishers else 'a'} publisher on {self.command_topic}")
            time.sleep(POLL_S)
        time.sleep(SETTLE_S)
        alive()

    def publish(self, t_ns: int) -> None:
        """The state of ``sim`` at simulated time ``t_ns``: /clock first (a controller on sim
        time reads it with the state), joint_states (the encoders' readings when the suite has
        them), the base, the wrenches, the sensors due."""
        sim, suite = self.sim, self.suite
        self.outputs.publish_clock(t_ns)
        q, v = (suite.encoder_q, suite.encoder_v) \
            if suite is not None and suite.encoders is not None else (sim.q, sim.v)
        self.outputs.publish_state(t_ns, sim, q, v)
        if self.sensor_pubs is not None and self.ticks > 0:
            self.sensor_pubs.publish(t_ns)

    def exchange(self, t_ns: int, timeout: float, alive=lambda: None) -> np.ndarray:
        """Publish the state at ``t_ns`` and return the one command that answers it (the
        CommandSlot's layout: efforts, position and velocity targets, interfaces, stamp).
        ControllerRejected for a command the node would reject, ControllerTimeout when none
        comes within ``timeout`` s; ``alive()`` raises when the controller is gone."""
        self.t_ns = t_ns
        self.publish(t_ns)
        self._accept(self._take(timeout, alive), t_ns)
        np.copyto(self.command, self.slot.latest)
        self.ticks += 1
        return self.command

    def take_waiting(self, t_ns: int) -> bool:
        """Realtime pacing (the state published by the caller): every command that arrived,
        without waiting, checked in order into the slot, the latest then in ``command``;
        whether any arrived (none: ``command`` holds the last). ControllerRejected as in
        ``exchange``."""
        self.t_ns, arrived = t_ns, False
        while (message := self._poll()) is not None:
            self._accept(message, t_ns)
            arrived = True
        if arrived:
            np.copyto(self.command, self.slot.latest)
        self.ticks += 1
        return arrived

    def _accept(self, message, t_ns: int) -> None:
        """A command message into the slot, checked as the node checks it."""
        try:
            if self.interface == "effort":
                self.slot.put_array(message.data, t_ns)
            else:
                stamp = stamp_ns(message.header.stamp)
                self.slot.put_joint_state(message.name, message.position, message.velocity,
                                          message.effort, stamp if stamp > 0 else t_ns)
        except CommandError as exc:
            raise ControllerRejected(f"{self.command_topic}: {exc}") from None

    def _poll(self):
        """The next command message waiting (None: none)."""
        handle = self.subscription.handle
        with handle:
            taken = handle.take_message(self.subscription.msg_type, self.subscription.raw)
        return None if taken is None else taken[0]

    def _take(self, timeout: float, alive):
        """The next command message, waiting up to ``timeout`` s."""
        end = time.monotonic() + timeout
        handle, wait_set = self.subscription.handle, self._wait_set
        while True:
            message = self._poll()
            if message is not None:
                return message
            alive()
            left = end - time.monotonic()
            if left <= 0.0:
                raise ControllerTimeout(
                    f"no command on {self.command_topic} within {timeout:g} s of the state at "
                    f"t = {self.t_ns * 1e-9:.6f} s (tick {self.ticks})")
            wait_set.clear_entities()
            wait_set.add_subscription(handle)
            wait_set.wait(int(min(left, POLL_S) * 1e9))

    def drain(self) -> int:
        """Drop every command waiting (a previous run's); how many."""
        dropped = 0
        while self._poll() is not None:
            dropped += 1
        return dropped

    def close(self) -> None:
        """End the node and its context (idempotent)."""
        if self.context.ok():
            self.node.destroy_node()
            rclpy.shutdown(context=self.context)
