"""The node on a robot people own (issue 14): example-robot-data's xArm7 (joint damping
10 N m s/rad on links of ~0.005 kg m^2) by urdf_path, the default integrator, realtime pacing at
1 kHz, over real DDS. It must keep stepping: joint_states keep arriving with simulated time
advancing at about one second per wall second, no ERROR in /diagnostics, finite positions.

The bounds are liveness bounds, not speed targets (speed: bench/node.py): over a window of
WINDOW_S wall seconds, at least a quarter of the 1 kHz ticks arrive and simulated time advances
by at least a quarter and at most 1.5 times the wall time (realtime pacing does not run fast)."""
from __future__ import annotations

import time

import numpy as np
from ros_harness import arrays, ros_session, start_node, state_time_ns, warm_kernels

from mbsim_ros.model import example_robot_urdf

XARM7 = "xarm_description/urdf/xarm7.urdf"
RATE_HZ = 1000.0
WINDOW_S = 3.0
LEVEL_ERROR = 2


def first_error(client) -> str:
    """The first ERROR message in /diagnostics so far ("" when none)."""
    return next((s.message for d in client.diagnostics for s in d.status
                 if (s.level[0] if isinstance(s.level, bytes) else s.level) >= LEVEL_ERROR), "")


def test_xarm7_keeps_stepping_at_1khz_realtime(tmp_path):
    import rclpy

    warm_kernels()
    domain, context = ros_session(__name__)
    node, client = start_node(domain, context, tmp_path, "--ros-args",
                              "-p", f"urdf_path:={example_robot_urdf(XARM7)}",
                              "-p", "pacing:=realtime", "-p", f"rate_hz:={RATE_HZ}",
                              "-p", "diagnostics_period:=0.5")
    try:
        client.spin_for(1.0)  # past t = 0, where it stopped (issue 14)
        assert not first_error(client), first_error(client)
        client.states.clear()
        start = time.monotonic()
        client.spin_for(WINDOW_S)
        wall = time.monotonic() - start
        assert not first_error(client), first_error(client)
        assert node.alive(), node.log()
        states = list(client.states)
        assert len(states) >= 0.25 * RATE_HZ * wall, \
            f"{len(states)} joint_states in {wall:.1f} s at {RATE_HZ:g} Hz"
        stamps = np.array([state_time_ns(s) for s in states]) * 1e-9
        assert np.all(np.diff(stamps) > 0), "simulated time advances with every state"
        advanced = stamps[-1] - stamps[0]
        assert 0.25 * wall <= advanced <= 1.5 * wall + 0.1, \
            f"{advanced:.2f} s simulated in {wall:.2f} s of wall time"
        for state in states:
            position, velocity, _ = arrays(state)
            assert position.size == 7 and np.all(np.isfinite(position)) and \
                np.all(np.isfinite(velocity))
    finally:
        client.destroy()
        code = node.stop()
        rclpy.shutdown(context=context)
    assert code == 0, node.log()
