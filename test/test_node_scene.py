"""The node with a contact scene, over real DDS: a ball resting on the ground publishes its
weight on ~/contact_wrenches/<link>, and the contact markers arrive for RViz."""
from __future__ import annotations

import yaml
from ros_harness import ros_session, start_node, warm_kernels

MASS, G = 2.0, 9.81


def test_resting_ball_publishes_its_weight_and_markers(tmp_path):
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from visualization_msgs.msg import MarkerArray

    warm_kernels()
    scene = tmp_path / "scene.yaml"
    scene.write_text(yaml.safe_dump({"ground": {"friction": 0.5}, "models": [
        {"sphere": {"radius": 0.05, "mass": MASS}, "position": [0.0, 0.0, 0.05],
         "name": "ball"}]}))
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
        assert abs(last.wrench.force.z - MASS * G) < 1e-6
        assert abs(last.wrench.force.x) < 1e-9 and abs(last.wrench.torque.x) < 1e-9
        points = [m for m in markers[-1].markers if m.ns == "contact_points"][0]
        assert len(points.points) == 1 and abs(points.points[0].z) < 1e-4
        assert list(client.states[-1].name) == [], "a free ball has no actuated joint"
    finally:
        client.destroy()
        code = node.stop()
        rclpy.shutdown(context=context)
    assert code == 0, node.log()
