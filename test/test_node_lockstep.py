"""The node in lockstep pacing, over real DDS (the node is a separate process): one step per
received command, bit for bit what an offline Simulator computes from the same commands."""
from __future__ import annotations

import numpy as np
import pytest
from ros_harness import arrays, node_session, state_time_ns

from mbsim_ros import Simulator, load_urdf
from mbsim_ros.config import initial_configuration, read_config
from mbsim_ros.model import shipped_urdf

DT_NS = 1_000_000
CONFIG = read_config("config/arm7.yaml")


@pytest.fixture(scope="module")
def model():
    return load_urdf(shipped_urdf("arm7"))


@pytest.fixture(scope="module")
def q0(model):
    return initial_configuration(model, CONFIG.initial_positions)


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    yield from node_session(__name__, tmp_path_factory.mktemp("lockstep"),
                            "--config", "config/arm7.yaml", "--ros-args",
                            "-p", "pacing:=lockstep")


def run_commands(client, commands, t_start_ns: int) -> list:
    """Send each command and wait for the state it produces; returns those states."""
    states = []
    for k, tau in enumerate(commands):
        client.send_efforts(tau)
        states.append(client.wait_for_state_at(t_start_ns + (k + 1) * DT_NS))
    return states


def offline(model, q0, commands) -> list[tuple[np.ndarray, np.ndarray]]:
    sim = Simulator(model, dt=1e-3, integrator="variational")
    sim.reset(q0)
    out = []
    for tau in commands:
        sim.step(tau)
        out.append((sim.q.copy(), sim.v.copy()))
    return out


def random_commands(model, n: int, seed: int) -> np.ndarray:
    """Efforts up to 1.5x the URDF limits, so that some are clamped."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.5, 1.5, (n, model.nv)) * model.effort_limit


def test_joint_states_name_the_model_joints_and_start_at_the_config(session, model, q0):
    _, client = session
    t0 = client.reset_lockstep()
    state = [s for s in client.states if state_time_ns(s) == t0][-1]
    assert list(state.name) == model.joint_names
    position, velocity, effort = arrays(state)
    assert np.array_equal(position, q0)
    assert np.array_equal(velocity, np.zeros(model.nv))
    assert np.array_equal(effort, np.zeros(model.nv))


def test_lockstep_states_equal_the_offline_simulator_bit_for_bit(session, model, q0):
    _, client = session
    t0 = client.reset_lockstep()
    client.clocks.clear()
    commands = random_commands(model, 40, seed=1)
    states = run_commands(client, commands, t0)
    applied = np.clip(commands, -model.effort_limit, model.effort_limit)
    for state, tau, (q, v) in zip(states, applied, offline(model, q0, applied)):
        position, velocity, effort = arrays(state)
        assert np.array_equal(position, q) and np.array_equal(velocity, v)
        assert np.array_equal(effort, tau), "joint_states carries the clamped, applied effort"
    client.spin_until(lambda: t0 + 40 * DT_NS in client.clocks, 5.0, "the last /clock")
    assert client.clocks == [t0 + k * DT_NS for k in range(1, 41)], \
        "/clock: exactly one message per step, dt apart"


def test_two_runs_with_the_same_commands_are_identical(session, model):
    _, client = session
    commands = random_commands(model, 25, seed=2)
    runs = []
    for _ in range(2):
        t0 = client.reset_lockstep()
        runs.append([(state_time_ns(s) - t0, *arrays(s))
                     for s in run_commands(client, commands, t0)])
    for a, b in zip(*runs):
        assert a[0] == b[0] and all(np.array_equal(x, y) for x, y in zip(a[1:], b[1:]))


def test_named_commands_set_a_subset_of_joints(session, model, q0):
    _, client = session
    t0 = client.reset_lockstep()
    client.send_named(["joint3", "joint1"], [5.0, -7.0])
    expected = np.zeros(model.nv)
    expected[[2, 0]] = [5.0, -7.0]
    position, _, effort = arrays(client.wait_for_state_at(t0 + DT_NS))
    assert np.array_equal(effort, expected)
    assert np.array_equal(position, offline(model, q0, [expected])[0][0])


def test_bad_commands_are_rejected_and_the_last_good_one_stays(session, model, q0):
    _, client = session
    t0 = client.reset_lockstep()
    good = np.linspace(-3.0, 3.0, model.nv)
    run_commands(client, [good], t0)
    bad = [lambda: client.send_efforts([np.nan] * model.nv),
           lambda: client.send_efforts([1.0] * (model.nv - 2)),
           lambda: client.send_named(["joint1", "no_such_joint"], [1.0, 2.0])]
    states = []
    for k, send in enumerate(bad):
        send()
        states.append(client.wait_for_state_at(t0 + (k + 2) * DT_NS))
    for state in states:
        assert np.array_equal(arrays(state)[2], good), "a rejected command changes nothing"
    expected = offline(model, q0, [good] * 4)
    assert np.array_equal(arrays(states[-1])[0], expected[-1][0])
    client.spin_until(lambda: client.diagnostics and
                      int(client.latest_diagnostic()["commands_rejected"]) >= 3, 5.0,
                      "diagnostics counting the rejected commands")
    diag = client.latest_diagnostic()
    assert "no_such_joint" in diag["last_rejection"]


def test_pause_holds_commands_and_step_advances_one_dt(session, model):
    _, client = session
    t0 = client.reset_lockstep()
    assert client.call("pause", True).success
    client.send_efforts(np.ones(model.nv))
    client.spin_for(0.3)
    assert all(state_time_ns(s) <= t0 for s in client.states), "paused: a command does not step"
    response = client.call("step")
    assert response.success
    assert np.array_equal(arrays(client.wait_for_state_at(t0 + DT_NS))[2], np.ones(model.nv))
    assert client.call("pause", False).success
    run_commands(client, [np.zeros(model.nv)], t0 + DT_NS)
