"""The node's plain-Python parts, without ROS: command validation and hand-over, pacing."""
from __future__ import annotations

import time

import numpy as np
import pytest

from mbsim_ros import load_urdf
from mbsim_ros.model import shipped_urdf
from mbsim_ros.ros.commands import ActuatedJoints, CommandError, CommandSlot, take_command
from mbsim_ros.ros.pacing import Pacer, TickLog, timing_summary


@pytest.fixture
def arm():
    model = load_urdf(shipped_urdf("arm7"))
    return model, CommandSlot(model, ActuatedJoints(model))


def test_a_free_flyer_takes_no_command():
    model = load_urdf(shipped_urdf("arm7"), floating_base=True)
    joints = ActuatedJoints(model)
    assert len(joints) == 7 and list(joints.idx_v) == list(range(6, 13))


def test_commands_are_clamped_to_the_urdf_effort_limits(arm):
    model, slot = arm
    slot.put_array(np.full(7, 1e6), stamp_ns=5)
    tau = np.zeros(8)
    assert not take_command(slot, tau, now_ns=5, timeout_ns=0)
    assert np.array_equal(tau[:7], model.effort_limit) and tau[7] == 5


@pytest.mark.parametrize("send, words", [
    (lambda s: s.put_array([1.0] * 6, 0), ["expected 7 efforts"]),
    (lambda s: s.put_array([np.nan] * 7, 0), ["NaN"]),
    (lambda s: s.put_named(["joint1", "elbow"], [1.0, 2.0], 0), ["elbow"]),
    (lambda s: s.put_named(["joint1"], [1.0, 2.0], 0), ["1 names but 2 efforts"]),
    (lambda s: s.put_named(["joint1", "joint1"], [1.0, 2.0], 0), ["twice"]),
    (lambda s: s.put_named(["joint1"], [np.inf], 0), ["NaN or infinity"]),
])
def test_a_rejected_command_leaves_the_last_good_one(arm, send, words):
    _, slot = arm
    slot.put_array(np.arange(7.0), stamp_ns=3)
    before = slot.latest.copy()
    with pytest.raises(CommandError) as error:
        send(slot)
    for word in words:
        assert word in str(error.value)
    assert np.array_equal(slot.latest, before)


def test_named_commands_keep_the_joints_they_do_not_name(arm):
    _, slot = arm
    slot.put_array(np.arange(7.0), stamp_ns=0)
    slot.put_named(["joint7", "joint2"], [-1.0, -2.0], stamp_ns=9)
    assert np.array_equal(slot.latest, [0, -2, 2, 3, 4, 5, -1, 9])


def test_a_command_goes_stale_after_the_timeout(arm):
    _, slot = arm
    tau = np.zeros(8)
    assert not take_command(slot, tau, now_ns=10**9, timeout_ns=1), "no command: never stale"
    slot.put_array(np.ones(7), stamp_ns=100)
    assert not take_command(slot, tau, now_ns=150, timeout_ns=50)
    assert np.all(tau[:7] == 1.0)
    assert take_command(slot, tau, now_ns=151, timeout_ns=50)
    assert np.all(tau[:7] == 0.0)
    assert not take_command(slot, tau, now_ns=10**12, timeout_ns=0), "timeout 0: never"


def test_the_pacer_catches_up_and_gives_up_beyond_max_catchup():
    period = 1_000_000
    pacer = Pacer(period, max_catchup=10)
    pacer.start()
    pacer.next_ns -= 5 * period  # five ticks late: run them at once, nothing missed
    start = time.monotonic_ns()
    for _ in range(5):
        pacer.wait()
    assert pacer.missed == 0 and time.monotonic_ns() - start < 50 * period  # no sleeping
    pacer.next_ns = time.monotonic_ns() - 500 * period  # a long stall: skip, count as missed
    pacer.wait()
    assert 490 <= pacer.missed <= 500
    assert pacer.next_ns > time.monotonic_ns() - period


def test_tick_log_ring_and_summary():
    log = TickLog(capacity=4, keep=3)
    for k in range(6):
        log.record(k * 1000 + (50 if k == 3 else 0), iterations=k)
    times, iterations = log.since(0)
    assert list(times) == [2000, 3050, 4000, 5000] and list(iterations) == [2, 3, 4, 5]
    assert list(log.recorded()) == [0, 1000, 2000]
    summary = timing_summary(times, 1000)
    assert summary["max_s"] == pytest.approx(50e-9) and summary["ticks"] == 4


def test_every_node_parameter_is_documented():
    from pathlib import Path

    from mbsim_ros.ros.node import PARAMETERS

    text = (Path(__file__).resolve().parents[1] / "docs" / "NODE.md").read_text()
    for name, *_ in PARAMETERS:
        assert f"| `{name}` |" in text, name
