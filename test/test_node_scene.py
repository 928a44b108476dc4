"""The node with a contact scene, over real DDS: a ball resting on the ground publishes its
weight on ~/contact_wrenches/<link> in the ball's own frame (frame_id the link, ROS's
WrenchStamped convention), and the contact markers arrive for RViz."""
from __future__ import annotations

import numpy as np
import yaml
from ros_harness import ros_session, start_node, warm_kernels

from mbsim_ros.contact.scene import quaternion_to_matrix

MASS, G = 2.0, 9.81
# the ball's orientation: 1 rad about (1, 2, 3)/|.| (x, y, z, w), so that R^T (0, 0, m g) has
# three non-zero components and a world-frame message could not pass for a local one
AXIS = np.array([1.0, 2.0, 3.0]) / np.sqrt(14.0)
QUAT = np.r_[np.sin(0.5) * AXIS, np.cos(0.5)]


def test_resting_ball_publishes_its_weight_and_markers(tmp_path):
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from visualization_msgs.msg import MarkerArray

    warm_kernels()
    scene = tmp_path / "scene.yaml"
    scene.write_text(yaml.safe_dump({"ground": {"friction": 0.5}, "models": [
        {"sphere": {"radius": 0.05, "mass": MASS}, "position": [0.0, 0.0, 0.05],
         "orientation": QUAT.tolist(), "name": "ball"}]}))
    domain, context = ros_session(__name__)
    node, client = start_node(domain, context, tmp_path, "--ros-args", "-p", f"scene:={scene}",
                              "-p", "integrator:=compliant", "-p", "pacing:=fast")
    wrenches, markers = [], []
    qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
    client.node.create_subscription(WrenchStamped, "/mbsim/contact_wrenches/ball",
                                    wrenches.append, qos)
    client.node.create_subscription(MarkerArray, "/mbsim/contact_markers", markers.append, qos)
    try:
        client.spin_until(lambda: len(wrenches) > 200 and markers, 60.0,
                          "contact wrenches and markers")
        last = wrenches[-1]
        assert last.header.frame_id == "ball"  # the link frame (ROS convention)
        # R^T (0, 0, m g): the weight in the ball's axes, about (-6.89, 8.28, 16.40) N. A ball
        # at rest is pushed through its centre, so it neither turns (R stays QUAT's to 1e-16
        # in-process) nor feels a torque about its centre. R is orthogonal, so the local force
        # is off by as much as the world force, which is m g within 2e-11 N from the 50th step
        # on (in-process, this scene): 1e-6 N, the bound of the world-axes check this
        # replaces, is far above that and far below the components' size
        force = last.wrench.force
        expected = quaternion_to_matrix(QUAT).T @ np.array([0.0, 0.0, MASS * G])
        np.testing.assert_allclose([force.x, force.y, force.z], expected, rtol=0.0, atol=1e-6)
        torque = last.wrench.torque
        assert max(abs(torque.x), abs(torque.y), abs(torque.z)) < 1e-9
        points = [m for m in markers[-1].markers if m.ns == "contact_points"][0]
        assert len(points.points) == 1 and abs(points.points[0].z) < 1e-4
        assert list(client.states[-1].name) == [], "a free ball has no actuated joint"
    finally:
        client.destroy()
        code = node.stop()
        rclpy.shutdown(context=context)
    assert code == 0, node.log()


def test_a_box_resting_on_a_heightfield_ramp_publishes_its_weight(tmp_path):
    """The node with terrain: a 1 kg box flush on a 15 degree heightfield ramp (friction 0.8 >
    tan 15 deg: it sticks) is held by the ramp's contacts, whose resultant is its weight: in
    the box's axes R^T (0, 0, m g), and no torque about its centre (static balance of a body
    whose contact forces alone hold it)."""
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    warm_kernels()
    slope, half, mass = np.radians(15.0), 0.05, 1.0
    turn = np.array([0.0, -np.sin(slope / 2), 0.0, np.cos(slope / 2)])  # about y by -15 deg
    ramp = [float(x * np.tan(slope)) for x in np.linspace(-1.0, 1.0, 11)]
    scene = tmp_path / "ramp.yaml"
    scene.write_text(yaml.safe_dump({
        "ground": {"friction": 0.8},
        "heightfield": {"size": [2.0, 2.0], "heights": [ramp, ramp, ramp]},
        "models": [{"box": {"size": [2 * half] * 3, "mass": mass}, "name": "box",
                    "orientation": turn.tolist(),
                    "position": [float(-half * np.sin(slope)), 0.0,
                                 float(half * np.cos(slope))]}]}))
    domain, context = ros_session(__name__)
    node, client = start_node(domain, context, tmp_path, "--ros-args", "-p", f"scene:={scene}",
                              "-p", "integrator:=compliant", "-p", "pacing:=fast")
    wrenches = []
    qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
    client.node.create_subscription(WrenchStamped, "/mbsim/contact_wrenches/box",
                                    wrenches.append, qos)
    try:
        client.spin_until(lambda: len(wrenches) > 500, 60.0, "the box's contact wrenches")
        force, torque = wrenches[-1].wrench.force, wrenches[-1].wrench.torque
        expected = quaternion_to_matrix(turn).T @ np.array([0.0, 0.0, mass * G])
        np.testing.assert_allclose([force.x, force.y, force.z], expected, atol=1e-3 * G)
        assert np.allclose([torque.x, torque.y, torque.z], 0.0, atol=1e-3 * G * half)
    finally:
        client.destroy()
        code = node.stop()
        rclpy.shutdown(context=context)
    assert code == 0, node.log()
