"""The node under a controller that makes the simulation diverge (over real DDS, the node a
separate process): Solo12 standing on its steel floor in lockstep, a client answering each
joint_states with an explicit joint PD (kp 20, kd 0.5) on the state one step older. The
divergence guard (mbsim_ros/integrators/bounds.py) refuses the first step whose result leaves
the physical bounds: the node pauses, says in /diagnostics and its log which joint left its
bound, with what speed, at which step, and publishes no state of the diverged step; every
state it published is finite and within the bounds."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from ros_harness import arrays, node_session, state_time_ns

from mbsim_ros.integrators.bounds import SPEED_FACTOR

SCENE = Path(__file__).resolve().parents[1] / "config" / "scenes" / "solo12_standing.yaml"
KP, KD = 20.0, 0.5
SOLO12_BOUND = SPEED_FACTOR * 1000.0  # rad/s: its URDF's joint velocity limit, 10 x


def test_a_diverging_controller_pauses_the_node_naming_the_joint(tmp_path):
    session = node_session(__name__, tmp_path, "--ros-args", "-p", f"scene:={SCENE}",
                           "-p", "integrator:=compliant", "-p", "pacing:=lockstep",
                           "-p", "diagnostics_period:=0.2")
    node, client = next(session)
    try:
        posture = arrays(client.states[-1])[0]
        previous = current = client.states[-1]  # the state at t = 0

        def failed() -> bool:
            return bool(client.diagnostics) and client.latest_diagnostic()["level"] == 2

        for n in range(1, 200):  # the library's run leaves the bounds within 20-80 steps
            q, v, _ = arrays(previous)  # the command for step n from the state at n - 2
            client.send_efforts(KP * (posture - q) - KD * v)
            client.spin_until(lambda: failed() or any(state_time_ns(s) == n * 1_000_000
                                                      for s in client.states), 30.0,
                              f"the joint_states of step {n} or an error")
            if failed():
                break
            previous, current = current, next(s for s in client.states
                                              if state_time_ns(s) == n * 1_000_000)
        client.spin_until(lambda: client.diagnostics and
                          client.latest_diagnostic()["level"] == 2, 10.0,
                          "an ERROR in diagnostics")
        message = client.latest_diagnostic()["message"]
        assert "diverged: the new state left its physical bounds" in message, message
        found = re.search(r"the speed of joint '(\w+)' (\S+) rad/s is beyond its bound "
                          r"(\S+) rad/s at step (\d+) ", message)
        assert found, message
        joint, speed, bound, step = found.group(1), float(found.group(2)), \
            float(found.group(3)), int(found.group(4))
        assert joint in client.states[0].name and abs(speed) > bound == SOLO12_BOUND
        assert 10 < step < 150
        times = [state_time_ns(s) for s in client.states]
        assert max(times) == (step - 1) * 1_000_000, "no state of the refused step published"
        for state in client.states:
            position, velocity, effort = arrays(state)
            assert np.all(np.isfinite(position)) and np.all(np.isfinite(effort))
            assert np.all(np.abs(velocity) <= SOLO12_BOUND)
        assert not client.call("pause", False).success, "a diverged run resumes only by reset"
        assert node.alive()
    finally:
        next(session, None)  # the node stopped: SIGINT ends it with status 0
    assert f"joint '{joint}'" in node.log()
