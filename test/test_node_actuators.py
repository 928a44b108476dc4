"""Position commands and the command delay over real DDS, in lockstep: what the node computes
is bit for bit what an offline Simulator computes with the same servos and the same delayed
targets (the node is a separate process)."""
from __future__ import annotations

import numpy as np
import pytest
from ros_harness import arrays, node_session

from mbsim_ros import Simulator, load_urdf
from mbsim_ros.config import initial_configuration, read_config
from mbsim_ros.model import shipped_urdf

DELAY = 2
GAINS = {"p": 500.0, "d": 20.0}


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    yield from node_session(__name__, tmp_path_factory.mktemp("actuators"),
                            "--config", "config/arm7.yaml", "--ros-args",
                            "-p", "pacing:=lockstep", "-p", f"actuators.delay_ticks:={DELAY}",
                            "-p", f"gains.joint1.p:={GAINS['p']}",
                            "-p", f"gains.joint1.d:={GAINS['d']}")


def test_delayed_position_commands_match_the_offline_servo(session):
    """Five commands 'joint1 to 0.3 rad': with a delay of 2 ticks the first two steps still
    hold the start (joint1 has a position gain, so it starts as a servo on its start), the
    last three servo to 0.3; the other joints get zero effort throughout. Positions and
    efforts equal the offline run's bit for bit."""
    _, client = session
    t0 = client.reset_lockstep()
    states = []
    for k in range(5):
        client.send_named(["joint1"], [], position=[0.3])
        states.append(arrays(client.wait_for_state_at(t0 + (k + 1) * 1_000_000)))
    model = load_urdf(shipped_urdf("arm7"))
    q0 = initial_configuration(model, read_config("config/arm7.yaml").initial_positions)
    sim = Simulator(model, 1e-3, "variational")
    sim.reset(q0)
    sim.servos.set_gains(p={"joint1": GAINS["p"]}, d={"joint1": GAINS["d"]})
    for k, (position, _, effort) in enumerate(states):
        sim.servos.command(position={"joint1": q0[0] if k < DELAY else 0.3})
        sim.step()
        assert np.array_equal(position, sim.q) and np.array_equal(effort, sim.effort), k
    assert abs(states[0][2][0]) < 1.0 < states[-1][2][0]  # holding, then driving to 0.3
