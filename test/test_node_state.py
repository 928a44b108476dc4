"""The robot's description and state over real DDS: robot_description (transient
local, for a subscriber that comes late), ~/set_state and ~/set_base_state while paused
(checked whole, clamped into the limits, time goes on, the state published at once, the next
step equal to an offline Simulator started there), ~/odom of a floating base (twist in the
base frame), and a scene's robot_description naming the joints joint_states names."""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from ros_harness import arrays, ros_session, start_node, state_time_ns, warm_kernels

from mbsim_ros import Simulator, load_urdf
from mbsim_ros.model import shipped_urdf
from mbsim_ros.model.urdf import read_urdf

DT_NS = 1_000_000
ARM = ["joint1", "joint2", "joint3", "joint4", "joint5", "joint6", "joint7"]


class StateSession:
    """A lockstep node and a client that also hears robot_description, ~/odom and /rosout,
    and publishes on ~/set_state and ~/set_base_state."""

    def __init__(self, tmp_path, *args: str) -> None:
        from nav_msgs.msg import Odometry
        from rcl_interfaces.msg import Log
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String

        warm_kernels()
        self.domain, self.context = ros_session(f"{__name__}{tmp_path.name}")
        self.node, self.client = start_node(self.domain, self.context, tmp_path, "--ros-args",
                                            "-p", "pacing:=lockstep", *args)
        node = self.client.node
        reliable = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.descriptions, self.odoms, self.logs = [], [], []
        node.create_subscription(String, "/robot_description", self.descriptions.append,
                                 latched)
        node.create_subscription(Odometry, "/mbsim/odom", self.odoms.append, reliable)
        node.create_subscription(Log, "/rosout", self.logs.append,
                                 QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE,
                                            durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.set_state_pub = node.create_publisher(JointState, "/mbsim/set_state", reliable)
        self.set_base_pub = node.create_publisher(Odometry, "/mbsim/set_base_state", reliable)
        self._JointState, self._Odometry = JointState, Odometry

    def set_state(self, names, position=(), velocity=()) -> None:
        self.set_state_pub.publish(self._JointState(
            name=list(names), position=[float(x) for x in position],
            velocity=[float(x) for x in velocity]))

    def set_base(self, position, orientation, linear, angular, frame_id="world",
                 child_frame_id="") -> None:
        msg = self._Odometry(child_frame_id=child_frame_id)
        msg.header.frame_id = frame_id
        p, o = msg.pose.pose.position, msg.pose.pose.orientation
        p.x, p.y, p.z = map(float, position)
        o.x, o.y, o.z, o.w = map(float, orientation)
        t = msg.twist.twist
        t.linear.x, t.linear.y, t.linear.z = map(float, linear)
        t.angular.x, t.angular.y, t.angular.z = map(float, angular)
        self.set_base_pub.publish(msg)

    def wait_for_warning(self, words: str) -> str:
        """The node's first warning on /rosout that contains words."""
        def found():
            return next((m.msg for m in self.logs if words in m.msg), None)

        self.client.spin_until(lambda: found() is not None, 10.0, f"a warning with '{words}'")
        return found()

    def next_state(self):
        """Wait for the next joint_states message (after a publication, before spinning)."""
        self.client.states.clear()
        self.client.wait_for_states(1)
        return self.client.states[-1]

    def close(self) -> int:
        import rclpy

        self.client.destroy()
        code = self.node.stop()
        rclpy.shutdown(context=self.context)
        return code


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    session = StateSession(tmp_path_factory.mktemp("arm"), "-p", "urdf_path:=arm7",
                           "-p", "initial_positions.joint2:=0.6")
    yield session
    assert session.close() == 0, session.node.log()


@pytest.fixture(scope="module")
def model():
    return load_urdf(shipped_urdf("arm7"))


def test_robot_description_reaches_a_late_subscriber(arm):
    arm.client.spin_until(lambda: arm.descriptions, 10.0, "robot_description")
    assert arm.descriptions[0].data == read_urdf(shipped_urdf("arm7"))[0]
    assert arm.client.node.count_publishers("/robot_description") == 1


def test_set_state_is_refused_while_running(arm):
    arm.set_state(["joint1"], position=[0.3])
    assert "pause it first" in arm.wait_for_warning("~/set_state rejected")


def test_set_state_sets_a_subset_and_the_next_step_follows_from_it(arm, model):
    client = arm.client
    assert client.call("pause", True).success
    client.spin_for(0.3)  # the states published before the pause, still in flight
    before = arm.next_state() if not client.states else client.states[-1]
    t_ns = state_time_ns(before)
    position, velocity, _ = arrays(before)
    clocks = len(client.clocks)
    arm.set_state(["joint3", "joint1"], position=[0.25, -0.5], velocity=[0.1, 0.2])
    state = arm.next_state()
    assert state_time_ns(state) == t_ns, "time does not jump"
    q, v = position.copy(), velocity.copy()
    q[[2, 0]], v[[2, 0]] = [0.25, -0.5], [0.1, 0.2]
    assert np.array_equal(arrays(state)[0], q) and np.array_equal(arrays(state)[1], v)
    client.spin_for(0.2)
    assert len(client.clocks) == clocks, "/clock is not repeated: time did not move"
    client.states.clear()
    assert client.call("step").success
    client.wait_for_states(1)
    stepped = client.states[-1]
    assert state_time_ns(stepped) == t_ns + DT_NS
    sim = Simulator(model, dt=1e-3)
    sim.reset(q, v)
    sim.step()
    assert np.array_equal(arrays(stepped)[0], sim.q) and np.array_equal(arrays(stepped)[1], sim.v)


def test_set_state_clamps_positions_into_the_limits(arm, model):
    assert arm.client.call("pause", True).success
    upper = model.upper_position_limit[1]
    arm.set_state(["joint2"], position=[upper + 1.0])
    state = arm.next_state()
    assert arrays(state)[0][1] == upper
    assert "joint2" in arm.wait_for_warning("outside the joint limits")


@pytest.mark.parametrize("send, words", [
    (lambda a: a.set_state(["joint1", "elbow"], position=[0.1, 0.2]), "unknown joint(s) 'elbow'"),
    (lambda a: a.set_state(["joint1"], position=[math.nan]), "position of 'joint1' is NaN"),
    (lambda a: a.set_state(["joint1", "joint2"], velocity=[0.1]),
     "velocity has 1 entries for 2 names"),
    (lambda a: a.set_state(["joint1"]), "carries no position or velocity"),
], ids=["unknown", "nan", "length", "empty"])
def test_bad_set_state_is_rejected_with_its_reason(arm, send, words):
    client = arm.client
    assert client.call("pause", True).success
    client.states.clear()
    send(arm)
    assert words in arm.wait_for_warning(words)
    client.spin_for(0.2)
    assert client.states == [], "a rejected set_state publishes no state"


@pytest.fixture(scope="module")
def floating(tmp_path_factory):
    session = StateSession(tmp_path_factory.mktemp("floating"), "-p", "urdf_path:=arm7",
                           "-p", "floating_base:=true", "-p", "frame_prefix:=left/")
    yield session
    assert session.close() == 0, session.node.log()


def test_odom_and_set_base_state_use_the_base_frame_for_the_twist(floating):
    """The base turned 90 degrees about z with a body-frame velocity along x: odom reads it
    back as set, and one step (free fall: no internal motion) moves the base along world y
    by v dt."""
    client = floating.client
    assert client.call("pause", True).success
    half = math.sqrt(0.5)
    floating.odoms.clear()
    floating.set_base([1.0, 2.0, 3.0], [0.0, 0.0, half, half], [0.5, 0.0, 0.0], [0.0, 0.0, 0.0])
    client.spin_until(lambda: floating.odoms, 10.0, "~/odom after ~/set_base_state")
    odom = floating.odoms[-1]
    assert odom.header.frame_id == "world" and odom.child_frame_id == "left/base_link"
    p, o = odom.pose.pose.position, odom.pose.pose.orientation
    assert (p.x, p.y, p.z) == (1.0, 2.0, 3.0)
    assert (o.x, o.y, o.z, o.w) == pytest.approx((0.0, 0.0, half, half), abs=1e-15)
    assert odom.twist.twist.linear.x == 0.5
    t0 = state_time_ns(odom)
    assert client.call("step").success
    client.spin_until(lambda: state_time_ns(floating.odoms[-1]) == t0 + DT_NS, 10.0,
                      "the odom of the step")
    moved = floating.odoms[-1].pose.pose.position
    assert moved.x == pytest.approx(1.0, abs=1e-12)
    assert moved.y == pytest.approx(2.0 + 0.5e-3, abs=1e-12), "body x is world y"


def test_tf_carries_the_base_transform(floating):
    """Where tf2_msgs imports (a ROS installation): world -> the base frame, as ~/odom."""
    pytest.importorskip("tf2_msgs", reason="tf2_msgs is not installable from PyPI")
    from rclpy.qos import QoSProfile
    from tf2_msgs.msg import TFMessage

    client = floating.client
    transforms = []
    client.node.create_subscription(TFMessage, "/tf", transforms.append, QoSProfile(depth=100))
    assert client.call("pause", True).success
    floating.set_base([0.5, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0], [0.0] * 3, [0.0] * 3)
    client.spin_until(lambda: transforms, 10.0, "/tf")
    transform = transforms[-1].transforms[0]
    assert transform.header.frame_id == "world"
    assert transform.child_frame_id == "left/base_link"
    assert transform.transform.translation.x == 0.5 and transform.transform.rotation.w == 1.0


@pytest.mark.parametrize("kwargs, words", [
    ({"frame_id": "map"}, "header.frame_id 'map'"),
    ({"child_frame_id": "base_link"}, "is not the base frame 'left/base_link'"),
    ({"orientation": [0.0, 0.0, 0.0, 2.0]}, "not a unit quaternion"),
    ({"linear": [math.inf, 0.0, 0.0]}, "linear velocity is NaN or infinite"),
], ids=["frame", "child", "quaternion", "inf"])
def test_bad_set_base_state_is_rejected_with_its_reason(floating, kwargs, words):
    assert floating.client.call("pause", True).success
    base = dict(position=[0.0, 0.0, 1.0], orientation=[0.0, 0.0, 0.0, 1.0],
                linear=[0.0] * 3, angular=[0.0] * 3)
    floating.set_base(**{**base, **kwargs})
    assert words in floating.wait_for_warning(words)


def test_a_scene_publishes_its_models_as_one_urdf(tmp_path):
    """ball_drop: the arm fixed to the world, the ball and the brick on floating joints;
    every joint that joint_states names is a joint of the URDF."""
    from pathlib import Path

    scene = Path(__file__).resolve().parents[1] / "config" / "scenes" / "ball_drop.yaml"
    session = StateSession(tmp_path, "-p", f"scene:={scene}", "-p", "integrator:=compliant")
    try:
        session.client.spin_until(lambda: session.descriptions, 10.0, "robot_description")
        urdf = ET.fromstring(session.descriptions[0].data)
        joints = {j.get("name"): j.get("type") for j in urdf.findall("joint")}
        assert set(session.client.states[-1].name) <= set(joints)
        assert joints["ball/root_joint"] == joints["brick/root_joint"] == "floating"
        assert joints["arm/world_joint"] == "fixed"
    finally:
        code = session.close()
    assert code == 0, session.node.log()
