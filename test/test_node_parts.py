"""The node's plain-Python parts, without ROS: command validation and hand-over, pacing."""
from __future__ import annotations

import time

import numpy as np
import pytest

from mbsim_ros import load_urdf
from mbsim_ros.model import shipped_urdf
from mbsim_ros.integrators.servo import EFFORT, POSITION, VELOCITY
from mbsim_ros.ros.commands import ActuatedJoints, CommandError, CommandSlot, take_command
from mbsim_ros.ros.pacing import Pacer, TickLog, timing_summary


def gains(model, p=0.0, d=0.0, i=0.0):
    table = np.zeros((3, model.nv))
    table[:] = np.array([p, d, i])[:, None]
    return table


@pytest.fixture
def arm():
    model = load_urdf(shipped_urdf("arm7"))
    return model, CommandSlot(model, ActuatedJoints(model), gains(model, p=100.0, d=10.0))


def named(slot, names, effort=(), position=(), velocity=(), stamp_ns=0):
    slot.put_joint_state(names, position, velocity, effort, stamp_ns)


def test_a_free_flyer_takes_no_command():
    model = load_urdf(shipped_urdf("arm7"), floating_base=True)
    joints = ActuatedJoints(model)
    assert len(joints) == 7 and list(joints.idx_v) == list(range(6, 13))


def test_commands_are_clamped_to_the_urdf_effort_limits(arm):
    model, slot = arm
    slot.put_array(np.full(7, 1e6), stamp_ns=5)
    command = np.zeros(29)
    assert not take_command(slot, command, now_ns=5, timeout_ns=0)
    assert np.array_equal(command[:7], model.effort_limit) and command[-1] == 5


@pytest.mark.parametrize("send, words", [
    (lambda s: s.put_array([1.0] * 6, 0), ["expected 7 efforts"]),
    (lambda s: s.put_array([np.nan] * 7, 0), ["NaN"]),
    (lambda s: named(s, ["joint1", "elbow"], [1.0, 2.0]), ["elbow"]),
    (lambda s: named(s, ["joint1"], [1.0, 2.0]), ["effort has 2 entries for 1 names"]),
    (lambda s: named(s, ["joint1", "joint1"], [1.0, 2.0]), ["twice"]),
    (lambda s: named(s, ["joint1"], [np.inf]), ["effort of 'joint1' is NaN or infinite"]),
    (lambda s: named(s, ["joint1", "joint2"], position=[0.1, np.nan]),
     ["position of 'joint2' is NaN"]),
    (lambda s: named(s, ["joint1"]), ["carries no position, velocity or effort"]),
    (lambda s: named(s, ["joint1", "joint2"], position=[0.1, 0.2], velocity=[0.0]),
     ["velocity has 1 entries for 2 names"]),
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
    named(slot, ["joint7", "joint2"], [-1.0, -2.0], stamp_ns=9)
    assert np.array_equal(slot.latest[:7], [0, -2, 2, 3, 4, 5, -1])
    assert np.all(slot.latest[7:28] == 0.0) and slot.latest[-1] == 9


def test_joint_states_choose_each_joints_interface(arm):
    """position (+ velocity + effort: the impedance form) -> position servo; velocity alone
    -> velocity servo; effort alone -> effort. Messages name subsets, so the interfaces mix
    per joint."""
    _, slot = arm
    named(slot, ["joint1", "joint2"], position=[0.1, 0.2], velocity=[0.3, 0.4],
          effort=[1.0, 2.0])
    named(slot, ["joint3"], velocity=[0.5])
    named(slot, ["joint4"], effort=[-3.0])
    latest = slot.latest
    efforts, positions, velocities, modes = latest[:7], latest[7:14], latest[14:21], \
        latest[21:28]
    assert list(modes) == [POSITION, POSITION, VELOCITY, EFFORT, EFFORT, EFFORT, EFFORT]
    assert list(positions[:2]) == [0.1, 0.2] and list(velocities[:3]) == [0.3, 0.4, 0.5]
    assert list(efforts[:4]) == [1.0, 2.0, 0.0, -3.0]


def test_a_target_without_its_gains_is_refused():
    model = load_urdf(shipped_urdf("arm7"))
    slot = CommandSlot(model, ActuatedJoints(model), gains(model))
    with pytest.raises(CommandError, match="joint 'joint2': a position target needs "
                                           "gains.joint2.p > 0"):
        named(slot, ["joint2"], position=[0.1])
    with pytest.raises(CommandError, match="joint 'joint2': a velocity target needs "
                                           "gains.joint2.d or .i > 0"):
        named(slot, ["joint2"], velocity=[0.1])


def test_a_command_goes_stale_after_the_timeout(arm):
    """Stale: efforts and velocity targets drop to zero, position targets hold."""
    _, slot = arm
    command = np.zeros(29)
    assert not take_command(slot, command, now_ns=10**9, timeout_ns=1), \
        "no command: never stale"
    named(slot, ["joint1", "joint2"], position=[0.5, 0.6], velocity=[1.0, 1.0],
          effort=[1.0, 1.0], stamp_ns=100)
    assert not take_command(slot, command, now_ns=150, timeout_ns=50)
    assert np.all(command[[0, 1, 14, 15]] == 1.0)
    assert take_command(slot, command, now_ns=151, timeout_ns=50)
    assert np.all(command[[0, 1, 14, 15]] == 0.0) and list(command[7:9]) == [0.5, 0.6]
    assert not take_command(slot, command, now_ns=10**12, timeout_ns=0), "timeout 0: never"


def test_the_pacer_catches_up_and_gives_up_beyond_max_catchup(monkeypatch):
    """Late ticks run at once (counted: no call to sleep), a stall beyond max_catchup is
    skipped and counted as missed; no wall-clock bound is asserted."""
    slept = []
    real_sleep = time.sleep
    monkeypatch.setattr(time, "sleep", lambda seconds: (slept.append(seconds),
                                                        real_sleep(seconds)))
    period = 1_000_000
    pacer = Pacer(period, max_catchup=10)
    pacer.start()
    pacer.next_ns = time.monotonic_ns() - 5 * period  # five ticks late, within max_catchup
    for _ in range(5):
        pacer.wait()
    assert pacer.missed == 0 and slept == []  # caught up without sleeping
    pacer.next_ns = time.monotonic_ns() - 500 * period  # a long stall: skip, count as missed
    pacer.wait()
    assert 490 <= pacer.missed <= 500
    assert pacer.next_ns > time.monotonic_ns() - period


def test_tick_log_ring_and_summary():
    log = TickLog(capacity=4, keep=3)
    for k in range(6):
        log.record(k * 1000 + (50 if k == 3 else 0), iterations=k)
    times, iterations = log.since(0)  # the last 3: the slot a writer would fill next is out
    assert list(times) == [3050, 4000, 5000] and list(iterations) == [3, 4, 5]
    assert list(log.recorded()) == [0, 1000, 2000]
    summary = timing_summary(times, 1000)
    assert summary["max_s"] == pytest.approx(50e-9) and summary["ticks"] == 3


def test_tick_log_reads_whole_ticks_while_the_loop_writes():
    """The diagnostics read the ring on the executor thread while the loop thread writes it: a
    read must hold only whole ticks, in order (a newest time copied into the oldest slot read
    as a period error of the whole window). Ticks k at k periods with k iterations, written
    as fast as a thread can, read 1000 times under a switch interval of 1 us: every read is a
    run of consecutive ticks."""
    import sys
    import threading

    period = 1_000_000
    log, stop = TickLog(capacity=4096), threading.Event()

    def write():
        k = 0
        while not stop.is_set():
            log.record(k * period, k)
            k += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    writer = threading.Thread(target=write)
    writer.start()
    try:
        torn = []
        for _ in range(1000):
            times, iterations = log.since(0)
            if times.shape[0] and not (np.array_equal(times, iterations * period)
                                       and np.all(np.diff(iterations) == 1)):
                torn.append(iterations)
    finally:
        stop.set()
        writer.join()
        sys.setswitchinterval(interval)
    assert log.count > 4096, "the writer wrapped the ring"
    assert not torn, f"{len(torn)} of 1000 reads mixed ticks, e.g. {torn[0][:4]}..."


def test_every_node_parameter_is_documented():
    from pathlib import Path

    from mbsim_ros.ros.parameters import PARAMETERS

    text = (Path(__file__).resolve().parents[1] / "docs" / "NODE.md").read_text()
    for name, *_ in PARAMETERS:
        assert f"| `{name}` |" in text, name


def test_joints_with_position_gains_start_holding_their_start():
    """Until a controller commands them, joints with a position gain hold the start (the
    initial command, and the one ~/reset restores); the others start at zero effort."""
    model = load_urdf(shipped_urdf("arm7"))
    table = gains(model)
    table[0, [1, 3]] = 100.0
    slot = CommandSlot(model, ActuatedJoints(model), table)
    q = np.linspace(0.1, 0.7, 7)
    assert slot.hold_start(q) == ["joint2", "joint4"]
    modes = slot.latest[21:28]
    assert list(modes) == [EFFORT, POSITION, EFFORT, POSITION, EFFORT, EFFORT, EFFORT]
    assert list(slot.latest[[8, 10]]) == [q[1], q[3]] and np.isnan(slot.latest[-1])
    slot.put_array(np.ones(7), stamp_ns=1)
    slot.clear()
    assert np.array_equal(slot.latest[:28], slot.initial[:28])


def test_set_state_writes_named_joints_and_refuses_whole():
    from mbsim_ros.ros.set_state import set_base, set_joints

    model = load_urdf(shipped_urdf("arm7"), floating_base=True)
    joints = ActuatedJoints(model)
    q, v = model.neutral(), np.zeros(model.nv)
    set_joints(joints, q, v, ["joint2", "joint7"], [0.5, -0.25], [])
    assert q[7 + 1] == 0.5 and q[7 + 6] == -0.25 and not v.any()
    before = q.copy(), v.copy()
    with pytest.raises(CommandError, match="velocity of 'joint1' is NaN"):
        set_joints(joints, q, v, ["joint1"], [0.1], [np.nan])
    assert np.array_equal(q, before[0]) and np.array_equal(v, before[1])
    base = dict(frame_id="", child_frame_id="base_link", position=[1, 2, 3],
                orientation=[0.0, 0.0, 0.0, 1.0005], linear=[1, 0, 0], angular=[0, 0, 2])
    set_base(0, 0, "base_link", q, v, **base)
    assert list(q[:7]) == [1, 2, 3, 0, 0, 0, 1.0], "normalised within the tolerance"
    assert list(v[:6]) == [1, 0, 0, 0, 0, 2]
    with pytest.raises(CommandError, match="not a unit quaternion"):
        set_base(0, 0, "base_link", q, v, **{**base, "orientation": [0, 0, 0, 1.01]})


def test_simulation_services_reference_only_what_simulation_interfaces_defines():
    """simulation_interfaces is not on PyPI, so its services cannot run here: every constant
    and field simulation_services.py reads from its types must be one that the package
    (1.1 to 2.1, msg/Result.msg, msg/SimulationState.msg, srv/*.srv) defines."""
    import ast
    from pathlib import Path

    from mbsim_ros.ros import simulation_services

    defined = {
        "Result": {"RESULT_FEATURE_UNSUPPORTED", "RESULT_OK", "RESULT_NOT_FOUND",
                   "RESULT_INCORRECT_STATE", "RESULT_OPERATION_FAILED"},
        "SimulationState": {"STATE_STOPPED", "STATE_PLAYING", "STATE_PAUSED",
                            "STATE_QUITTING", "STATE_NO_WORLD", "STATE_LOADING_WORLD"},
        "ResetSimulation.Request": {"SCOPE_DEFAULT", "SCOPE_TIME", "SCOPE_STATE",
                                    "SCOPE_SPAWNED", "SCOPE_ALL"},
        "SetSimulationState.Response": {"ALREADY_IN_TARGET_STATE", "STATE_TRANSITION_ERROR",
                                        "INCORRECT_TRANSITION"},
        # fields: request.scope / .steps / .state.state, response.result.result /
        # .error_message, GetSimulationState's response.state.state
        "request": {"scope", "steps", "state"}, "response": {"result", "state"},
        "request.state": {"state"}, "response.state": {"state"},
        "response.result": {"result", "error_message"},
    }
    tree = ast.parse(Path(simulation_services.__file__).read_text())
    used = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            owner = ast.unparse(node.value)
            if owner in defined:
                assert node.attr in defined[owner], f"{owner}.{node.attr}"
                used += 1
    assert used >= 20
