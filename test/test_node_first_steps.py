"""The node loads nothing after it is built (docs/SPEED.md, "Nothing loaded after
construction"), over real DDS: Solo12 dropped 2 cm onto the floor, held by the node's servos;
its diagnostics count what numba loaded or compiled in the node's process since the node was
built (kernels_loaded, kernels_compiled: numba's events), through the touchdown and a
subscriber arriving for the contact wrenches mid-run."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml
from ros_harness import ros_session, start_node

ROOT = Path(__file__).resolve().parents[1]
DROP = 0.02  # m above the standing pose: the feet touch down after ~60 steps


def run_node(tmp_path: Path, scene: Path, domain, context) -> tuple[dict, float]:
    """The node on the scene in fast pacing until 0.4 s of simulated time: its last
    diagnostics and the largest contact force on the front left lower leg (its foot) that
    arrived (N)."""
    from geometry_msgs.msg import WrenchStamped
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    node, client = start_node(domain, context, tmp_path, "--ros-args", "-p", f"scene:={scene}",
                              "-p", "integrator:=compliant", "-p", "pacing:=fast",
                              "-p", "diagnostics_period:=0.2")
    wrenches = []
    client.node.create_subscription(WrenchStamped, "/mbsim/contact_wrenches/FL_LOWER_LEG",
                                    wrenches.append,
                                    QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
    try:
        client.spin_until(lambda: client.diagnostics and wrenches and float(
            client.latest_diagnostic()["sim_time_s"]) > 0.4, 120.0, "0.4 s simulated")
        forces = [np.linalg.norm([w.wrench.force.x, w.wrench.force.y, w.wrench.force.z])
                  for w in wrenches]
        return client.latest_diagnostic(), max(forces)
    finally:
        client.destroy()
        assert node.stop() == 0, node.log()


def test_a_touchdown_in_the_node_loads_nothing(tmp_path):
    import rclpy

    spec = yaml.safe_load((ROOT / "config/scenes/solo12_standing.yaml").read_text())
    spec["models"][0]["position"][2] += DROP
    scene = tmp_path / "solo12_drop.yaml"
    scene.write_text(yaml.safe_dump(spec))
    domain, context = ros_session(__name__)
    try:
        run_node(tmp_path, scene, domain, context)  # fills the cache (a cold one compiles)
        values, force = run_node(tmp_path, scene, domain, context)
    finally:
        rclpy.shutdown(context=context)
    assert values["level"] == 0, values["message"]
    # the foot carries its share of the robot's 2.5 kg (about 6 N): it touched down
    assert force > 2.0
    assert values["kernels_compiled"] == "0" and values["kernels_loaded"] == "0", values
