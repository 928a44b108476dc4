"""The canonical controller-in-the-loop use: examples/pd_controller.py (its own process) holds
the arm at a target through the node's topics, in realtime pacing, over real DDS."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
from ros_harness import ROOT, arrays, ros_session, start_node, warm_kernels

TARGET = [0.3, 0.5, -0.2, -1.0, 0.1, 0.8, 0.0]
# The example's default gains (kp = 100 1/s^2, kd = 20 1/s, mass-matrix weighted, exact gravity
# compensation) make the error decay like (1 + 10 t) exp(-10 t) from the start at most ~1.2 rad
# away: < 1e-15 rad after 5 s, plus the (zero at rest) effect of one tick of delay. The bound
# leaves room for the Coriolis terms the controller ignores while moving.
TOLERANCE_RAD = 2e-3


def controller_log(controller) -> str:
    controller.send_signal(signal.SIGINT)
    return controller.communicate(timeout=20)[0]


def test_pd_example_holds_the_arm_at_the_target(tmp_path):
    import rclpy

    warm_kernels()
    domain, context = ros_session(__name__)
    node, client = start_node(domain, context, tmp_path, "--config", "config/arm7.yaml")
    controller = subprocess.Popen(
        [sys.executable, "examples/pd_controller.py", "--ros-args", "-p", "urdf_path:=arm7",
         "-p", f"target:={TARGET}"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, env=dict(os.environ, ROS_DOMAIN_ID=str(domain)))
    try:
        client.spin_until(lambda: client.diagnostics and
                          int(client.latest_diagnostic()["commands_accepted"]) > 0, 120.0,
                          "the controller's first command")
        client.spin_for(5.0)
        client.drain(quiet=0.05, timeout=0.2)
        client.wait_for_states(5)
        positions = np.array([arrays(s)[0] for s in client.states])
        efforts = np.array([arrays(s)[2] for s in client.states])
        assert np.max(np.abs(positions - TARGET)) < TOLERANCE_RAD, controller_log(controller)
        assert np.any(efforts != 0.0), "the controller's efforts are applied"
        assert controller.poll() is None and node.alive()
    finally:
        out = controller_log(controller) if controller.poll() is None else ""
        client.destroy()
        code = node.stop()
        rclpy.shutdown(context=context)
    assert controller.returncode == 0, out
    assert code == 0, node.log()
