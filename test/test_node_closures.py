"""The node with loop closures, over real DDS: the four-bar example's URDF and its closures file,
the closure held on the published joint states, and ~/joint_wrenches/<joint> published."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from ros_harness import arrays, ros_session, start_node, warm_kernels

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "four_bar"


def test_four_bar_node_holds_its_closure_and_publishes_joint_wrenches(tmp_path):
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from mbsim_ros.dynamics.closures import ConstraintKinematics
    from mbsim_ros.model import load_urdf
    from mbsim_ros.model.closures import load_closures, urdf_frames
    from mbsim_ros.config import read_config

    warm_kernels()
    urdf, config = EXAMPLE / "four_bar.urdf", EXAMPLE / "four_bar.yaml"
    domain, context = ros_session(__name__)
    node, client = start_node(
        domain, context, tmp_path, "--ros-args", "-p", f"urdf_path:={urdf}",
        "-p", f"closures_file:={config}", "-p", "integrator:=compliant", "-p", "pacing:=fast",
        "-p", "publish_joint_wrenches:=true", "-p", "initial_positions.crank_joint:=1.0",
        "-p", "initial_positions.coupler_joint:=-0.5",
        "-p", "initial_positions.rocker_joint:=1.5")
    wrenches = []
    qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
    client.node.create_subscription(WrenchStamped, "/mbsim/joint_wrenches/crank_joint",
                                    wrenches.append, qos)
    try:
        client.spin_until(lambda: len(wrenches) > 100 and len(client.states) > 100, 60.0,
                          "joint wrenches")
        model = load_urdf(urdf)
        closures = load_closures(read_config(config).model_dump()["closures"], urdf_frames(urdf))
        kinematics = ConstraintKinematics(model)
        q = arrays(client.states[-1])[0]
        assert np.abs(kinematics.rows(closures, q)[1]).max() < 1e-8
        assert wrenches[-1].header.frame_id == "crank"
    finally:
        client.destroy()
        code = node.stop()
        rclpy.shutdown(context=context)
    assert code == 0, node.log()
