"""The node on a robot people own: example-robot-data's xArm7 (joint damping
10 N m s/rad on links of ~0.005 kg m^2) by urdf_path, the default integrator, realtime pacing at
1 kHz, over real DDS. It must keep stepping: STATES joint_states arrive, whole steps apart, with
finite positions and no ERROR in /diagnostics. Nothing here measures speed (bench/node.py
does): the wait for them is a liveness bound, and the one wall-clock check is that realtime
pacing never runs *ahead* of the wall clock, which load cannot cause."""
from __future__ import annotations

import time

import numpy as np
from ros_harness import arrays, ros_session, start_node, state_time_ns, warm_kernels

from mbsim_ros.model import example_robot_urdf

XARM7 = "xarm_description/urdf/xarm7.urdf"
RATE_HZ = 1000.0
STATES = 2000
LEVEL_ERROR = 2


def first_error(client) -> str:
    """The first ERROR message in /diagnostics so far ("" when none)."""
    return next((s.message for d in client.diagnostics for s in d.status
                 if (s.level[0] if isinstance(s.level, bytes) else s.level) >= LEVEL_ERROR), "")


def test_xarm7_keeps_stepping_at_1khz_realtime(tmp_path):
    import rclpy

    warm_kernels()
    domain, context = ros_session(__name__)
    spawned = time.monotonic()  # the node's simulated time starts at 0 after this
    node, client = start_node(domain, context, tmp_path, "--ros-args",
                              "-p", f"urdf_path:={example_robot_urdf(XARM7)}",
                              "-p", "pacing:=realtime", "-p", f"rate_hz:={RATE_HZ}",
                              "-p", "diagnostics_period:=0.5")
    try:
        client.spin_for(1.0)  # past t = 0, where the xArm7's stiff URDF damping used to stop it
        assert not first_error(client), first_error(client)
        client.states.clear()
        client.wait_for_states(STATES, timeout=120.0)
        wall = time.monotonic() - spawned
        assert not first_error(client), first_error(client)
        assert node.alive(), node.log()
        states = list(client.states)
        stamps = np.array([state_time_ns(s) for s in states])
        steps = np.diff(stamps)
        assert np.all(steps > 0) and np.all(steps % 1_000_000 == 0), \
            "simulated time advances by whole 1 ms steps with every state"
        # since the node's t = 0, against the wall clock since before it was spawned: states
        # queued in DDS arrive late, so only a node ahead of the clock can fail this (over a
        # window of received states, a backlog looked like running ahead: 2.00 s in 1.39 s)
        advanced = stamps[-1] * 1e-9
        assert advanced <= wall + 0.1, f"realtime ran ahead: {advanced:.2f} s in {wall:.2f} s"
        for state in states:
            position, velocity, _ = arrays(state)
            assert position.size == 7 and np.all(np.isfinite(position)) and \
                np.all(np.isfinite(velocity))
    finally:
        client.destroy()
        code = node.stop()
        rclpy.shutdown(context=context)
    assert code == 0, node.log()
