"""The pytest plugin (mbsim_ros.testing), exercised as a downstream package uses it: pytest's
own ``pytester`` writes test files that ask for the ``mbsim`` fixture (which pytest finds
through the installed ``pytest11`` entry point, not through this suite) and runs them in a
pytest process of their own. docs/TESTING.md's package passes as written (the example Solo12
controller standing for 0.5 s in lockstep, and after a push), the trace's commands are the
controller's law of the trace's states; a controller that crashes and one that hangs fail
their tests with the reason and their output in the report; no controller process outlives
its test. The waits are liveness bounds."""
from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

import numpy as np
from test_campaign_ros import gone

from mbsim_ros._jit import cache_root

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
SCENE = ROOT / "config" / "scenes" / "solo12_standing.yaml"
EXAMPLE = ROOT / "examples" / "controllers" / "solo12_pd.py"
FAULTY = ROOT / "test" / "controllers" / "faulty_pd.py"
SESSION_S = 600  # a whole inner session, compiling the compliant kernels on a cold cache
# pytester gives the inner session a HOME of its own: it is to find the compiled kernels here
CACHE_DIR = str(cache_root())


def pids(folder: Path) -> list[int]:
    return [int(p.read_text()) for p in sorted(folder.glob("*.pid"))]


DOWNSTREAM = f'''
from pathlib import Path

import numpy as np

SCENE = {str(SCENE)!r}
CONTROLLER = ["python3", {str(EXAMPLE)!r}, "--ros-args", "-p", "kp:=10.0", "-p", "kd:=0.3"]


def test_solo12_stands(mbsim):
    run = mbsim(scene=SCENE, controller=CONTROLLER)
    Path("good.pid").write_text(str(run.process.pid))
    trace = run.advance(0.5)
    np.save("trace.npy", np.column_stack([trace.t, trace.base_pose, trace.position,
                                          trace.velocity, trace.command]))
    Path("joints.txt").write_text(" ".join(trace.joint_names))
    assert len(trace) == 500 and trace.t[0] == 0.0
    assert trace.base_height.min() > 0.2
    assert abs(trace.position["FL_KFE"][-1] + 1.6) < 0.05
    feet = ["FL_LOWER_LEG", "FR_LOWER_LEG", "HL_LOWER_LEG", "HR_LOWER_LEG"]
    assert all(trace.in_contact(foot)[-100:].all() for foot in feet)
    run.close()  # a second simulation in the same test: lockstep repeats it bit for bit
    again = mbsim(scene=SCENE, controller=CONTROLLER)
    Path("again.pid").write_text(str(again.process.pid))
    repeated = again.advance(0.5)
    for name in ("t", "position", "velocity", "command", "base_pose", "base_twist"):
        assert np.array_equal(getattr(repeated, name), getattr(trace, name)), name
'''

FAULTY_TESTS = f'''
from pathlib import Path

SCENE = {str(SCENE)!r}


def faulty(fault):
    return ["python3", {str(FAULTY)!r}, "--ros-args", "-p", f"fault:={{fault}}",
            "-p", "after:=20", "-p", f"pid_file:={{Path.cwd() / fault}}.pid"]


def test_crashing_controller(mbsim):
    run = mbsim(scene=SCENE, controller=faulty("crash"))
    run.advance(0.1)


def test_hanging_controller(mbsim):
    run = mbsim(scene=SCENE, controller=faulty("hang"), tick_timeout=2.0)
    run.advance(0.1)
'''


def docs_package(folder: Path) -> None:
    """docs/TESTING.md's downstream package in ``folder``, as written there: its scene and its
    test file (the doc's yaml and python blocks), the example controller as its controller."""
    blocks = re.findall(r"```(\w*)\n(.*?)```", (ROOT / "docs" / "TESTING.md").read_text(), re.S)
    (folder / "my_robot_control").mkdir()
    shutil.copy(EXAMPLE, folder / "my_robot_control" / "solo12_pd.py")
    (folder / "test").mkdir()
    (folder / "test" / "solo12_standing.yaml").write_text(
        next(text for kind, text in blocks if kind == "yaml"))
    (folder / "test" / "test_standing.py").write_text(
        next(text for kind, text in blocks if kind == "python"))


def test_the_downstream_package_of_the_docs_passes(pytester, monkeypatch):
    """TESTING.md's tests (standing, a push) and one that keeps its trace for the checks
    below, all through the installed plugin."""
    monkeypatch.setenv("MBSIM_ROS_CACHE_DIR", CACHE_DIR)
    docs_package(pytester.path)
    (pytester.path / "test" / "test_trace.py").write_text(DOWNSTREAM)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test",
                                           timeout=SESSION_S)
    result.assert_outcomes(passed=3)
    # what the test saw: the base stayed up on the posture the controller holds, and the
    # controller's efforts are its law, kp (q* - q) - kd v + tau_ff, at every tick
    rows = np.load(pytester.path / "trace.npy")
    t, base, q, v, tau = (rows[:, 0], rows[:, 1:8], rows[:, 8:20], rows[:, 20:32],
                          rows[:, 32:44])
    assert np.allclose(np.diff(t), 0.001)
    assert np.all(np.abs(base[:, :2]) < 0.05)  # it settles on its feet: no walk-off
    law = example_law((pytester.path / "joints.txt").read_text().split())
    assert np.allclose(tau, law(q, v), rtol=0.0, atol=1e-12)  # each row's command answers it
    assert all(gone(pid) for pid in pids(pytester.path))


def example_law(joints: list[str], kp: float = 10.0, kd: float = 0.3):
    """The example controller's efforts at (q, v) by rows, joints in ``joints`` order (its
    own functions: tau = kp (q* - q) - kd v + tau_ff)."""
    spec = importlib.util.spec_from_file_location("solo12_pd", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    posture = module.standing_posture(0.8, -1.6)
    feedforward = module.gravity_feedforward(posture)
    target = np.array([posture[name] for name in joints])
    tau_ff = np.array([feedforward[name] for name in joints])
    return lambda q, v: kp * (target - q) - kd * v + tau_ff


def test_a_failing_controller_fails_its_test_with_its_output_and_leaves_no_process(pytester,
                                                                                    monkeypatch):
    monkeypatch.setenv("MBSIM_ROS_CACHE_DIR", CACHE_DIR)
    pytester.makepyfile(test_faulty=FAULTY_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=SESSION_S)
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    crash = out[out.index("test_crashing_controller"):]
    assert re.search(r"ControllerFailed: the controller \(.*faulty_pd\.py.*\) exited with code 3",
                     crash)
    assert "faulty_pd: crashing after 20 answers" in crash
    assert "controller output" in crash  # the report's section with the whole log
    hang = out[out.index("_ test_hanging_controller _"):]
    assert "no command on /mbsim/effort_commands within 2 s of the state at t = 0.020000 s" \
        in hang
    assert "is running" in hang  # it was alive when the test failed: the teardown stopped it
    found = pids(pytester.path)
    assert len(found) == 2 and all(gone(pid) for pid in found)


def test_realtime_pacing_holds_the_latest_command():
    """Realtime: each tick takes what arrived and holds the latest; before the first answer the
    joints get zero effort. Every command in the trace is then the controller's answer to the
    state of that tick or an earlier one (which one depends on timing: a fast answer arrives
    while the tick still publishes the base's topics; so only that is asserted, and that it
    kept answering: liveness, not speed)."""
    from mbsim_ros.testing import ControllerSimulation

    # damping only on top of the feed-forward: stable with an answer many ticks late (a loaded
    # machine delays it by tens of ms; the lockstep gains kp 10, kd 0.3 diverge then)
    command = ["python3", str(EXAMPLE), "--ros-args", "-p", "kp:=0.0", "-p", "kd:=0.01"]
    with ControllerSimulation(scene=SCENE, controller=command, pacing="realtime") as run:
        trace = run.advance(0.3)
    sent = np.asarray(trace.command)
    law = example_law(list(trace.joint_names), kp=0.0, kd=0.01)(
        np.asarray(trace.position), np.asarray(trace.velocity))
    answered = np.flatnonzero(np.any(sent != 0.0, axis=1))
    assert answered.size > 0 and not sent[:answered[0]].any()  # zero until the first answer
    sources = []
    for k in answered:
        earlier = [j for j in range(k + 1)
                   if np.allclose(sent[k], law[j], rtol=0.0, atol=1e-12)]
        assert earlier, f"tick {k}: not an answer to a state published so far"
        sources.append(earlier[-1])
    assert len(set(sources)) > 10  # it answered again and again


def test_joint_commands_drive_the_config_s_servos():
    """The joint_commands interface: the example trajectory controller sends position and
    velocity targets by name, the arm's servos (its config's gains) take the joints there; the
    controller commands no effort, the joints get the servos'."""
    from mbsim_ros.testing import ControllerSimulation

    waypoint = [0.3, 0.5, -0.2, -1.0, 0.1, 0.8, 0.0]
    command = ["python3", str(ROOT / "examples" / "position_trajectory.py"), "--ros-args",
               "-p", f"waypoints:={waypoint}", "-p", "segment_time:=0.2"]
    with ControllerSimulation(ROOT / "config" / "arm7_ros2_control.yaml", controller=command,
                              interface="joint_commands") as run:
        trace = run.advance(0.5)
    assert np.abs(trace.position[-1] - np.array(waypoint)).max() < 1e-2
    assert not np.asarray(trace.command).any()
    assert np.abs(np.asarray(trace.effort)[-1]).max() > 1.0  # the servos hold the arm up
