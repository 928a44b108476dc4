"""The node in fast pacing (as fast as it can, /clock tells the time), over real DDS: free motion
equal to the offline Simulator, pause / step / resume, /clock, and a command going stale."""
from __future__ import annotations

import numpy as np
import pytest
from ros_harness import arrays, node_session, state_time_ns

from mbsim_ros import Simulator, load_urdf
from mbsim_ros.config import initial_configuration, read_config
from mbsim_ros.model import shipped_urdf

DT_NS = 1_000_000
TIMEOUT_S = 0.05


@pytest.fixture(scope="module")
def model():
    return load_urdf(shipped_urdf("arm7"))


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    yield from node_session(__name__, tmp_path_factory.mktemp("fast"),
                            "--config", "config/arm7.yaml", "--ros-args",
                            "-p", "pacing:=fast", "-p", f"command_timeout:={TIMEOUT_S}",
                            "-p", "diagnostics_period:=0.2")


def pause(client) -> None:
    assert client.call("pause", True).success
    client.drain()  # the messages already in flight (the client reads slower than fast pacing)


def test_free_motion_equals_the_offline_simulator(session, model):
    _, client = session
    client.spin_until(lambda: len(client.states) > 50, 60.0, "50 joint states")
    states = list(client.states)
    steps = [state_time_ns(s) // DT_NS for s in states]
    assert steps == sorted(set(steps)), "states arrive once each, in order"
    q0 = initial_configuration(model, read_config("config/arm7.yaml").initial_positions)
    sim = Simulator(model, dt=1e-3)
    sim.reset(q0)
    wanted = dict.fromkeys(steps)
    while sim.steps < max(steps):
        sim.step()
        if sim.steps in wanted:
            wanted[sim.steps] = (sim.q.copy(), sim.v.copy())
    for state, k in zip(states, steps):
        if k == 0:
            continue
        position, velocity, _ = arrays(state)
        assert np.array_equal(position, wanted[k][0]) and np.array_equal(velocity, wanted[k][1])


def test_clock_is_strictly_increasing_in_steps_of_dt(session):
    _, client = session
    client.clocks.clear()
    client.spin_until(lambda: len(client.clocks) > 50, 60.0, "50 clock messages")
    clocks = np.array(client.clocks)
    assert np.all(np.diff(clocks) > 0) and np.all(clocks % DT_NS == 0)


def test_pause_stops_time_and_step_advances_exactly_one_dt(session):
    _, client = session
    pause(client)
    client.spin_for(0.3)
    assert client.clocks == [] and client.states == [], "paused: nothing is published"
    last = client.call("step")
    assert last.success
    client.spin_until(lambda: client.clocks, 5.0, "the clock of the step")
    client.wait_for_states(1)
    client.spin_for(0.1)
    assert len(client.clocks) == 1 and len(client.states) == 1
    assert state_time_ns(client.states[0]) == client.clocks[0]
    assert client.call("step").success
    client.spin_until(lambda: len(client.clocks) == 2, 5.0, "the second step")
    assert client.clocks[1] - client.clocks[0] == DT_NS
    assert client.call("pause", False).success
    client.spin_for(0.2)
    assert len(client.clocks) > 10, "resumed"
    running_step = client.call("step")
    assert not running_step.success and "pause" in running_step.message


def test_a_stale_command_drops_to_zero_effort(session, model):
    _, client = session
    pause(client)
    efforts = np.linspace(1.0, 7.0, model.nv)
    client.send_efforts(efforts)
    client.spin_for(0.3)  # the command arrives while paused; its stamp is the current time
    assert client.call("pause", False).success
    client.spin_until(lambda: client.states and state_time_ns(client.states[-1])
                      > state_time_ns(client.states[0]) + 4 * TIMEOUT_S * 1e9, 10.0,
                      "joint_states past the command timeout")
    t_first = state_time_ns(client.states[0])
    applied = [(state_time_ns(s) - t_first, arrays(s)[2]) for s in client.states]
    timeout_ns = TIMEOUT_S * 1e9
    for age_ns, effort in applied:
        if age_ns < timeout_ns - DT_NS:
            assert np.array_equal(effort, efforts), "a fresh command is applied"
        elif age_ns > timeout_ns + DT_NS:
            assert np.array_equal(effort, np.zeros(model.nv)), "a stale command is dropped"
    client.spin_until(lambda: client.diagnostics and
                      client.latest_diagnostic()["command_stale"] == "True", 5.0,
                      "diagnostics reporting the stale command")
    diag = client.latest_diagnostic()
    assert diag["level"] == 1 and "timed out" in diag["message"]
