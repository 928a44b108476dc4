"""Campaigns that drive a user's ROS 2 controller process (``controller: {type: ros}``) in
lockstep over real DDS: the example Solo12 controller equals its own law run in process, bit
for bit; controllers that crash, hang, send NaN or too few efforts fail their own row (with the
reason and their output) and the campaign goes on; per_worker equals per_run; resume and
replay; no controller process outlives its run, its worker (killed) or its driver
(interrupted). Runs are 0.2 s of Solo12 (200 ticks); the waits are liveness bounds, not
speed targets."""
import copy
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from mbsim_ros.campaign.replay import replay
from mbsim_ros.campaign.runner import PACKAGE_ROOT, run_campaign, serial, start_ray
from mbsim_ros.campaign.run import LOG_KEY
from mbsim_ros.campaign.spec import load_spec
from mbsim_ros.ros.controller_process import ControllerProcess
from mbsim_ros.schema import SchemaError

ROOT = Path(__file__).resolve().parents[1]
HELPERS = str(ROOT / "test" / "campaign_helpers")
FAULTY = str(ROOT / "test" / "controllers" / "faulty_pd.py")
EXAMPLE = str(ROOT / "examples" / "controllers" / "solo12_pd.py")
SCENE = str(ROOT / "config" / "scenes" / "solo12_standing.yaml")
SPEC = {
    "scene": SCENE,
    "integrator": "compliant",
    "dt": 0.001,
    "duration": 0.2,
    "controller": {"type": "ros", "command": ["python3", EXAMPLE, "--ros-args", "-p",
                                              "kp:=10.0", "-p", "kd:=0.3"],
                   "tick_timeout": 20.0},
    "randomize": {
        "joint_positions": {"dist": "normal", "mean": 0.0, "std": 0.02},
        "friction": {"dist": "uniform", "low": 0.4, "high": 1.0},
        "pushes": [{"link": "base_link", "start": 0.05, "duration": 0.05,
                    "force": [0.0, {"dist": "uniform", "low": -30.0, "high": 30.0}, 0.0]}]},
    "checks": {"base_height": {"above": 0.2}},
    "metrics": ["base_height_min", "effort_rms"],
    "runs_per_task": 1,
}


def faulty(fault: str, after: int = 20, **controller) -> dict:
    spec = copy.deepcopy(SPEC)
    spec["controller"] = {"type": "ros", "tick_timeout": 3.0, **controller,
                          "command": ["python3", FAULTY, "--ros-args", "-p", f"fault:={fault}",
                                      "-p", f"after:={after}",
                                      *controller.get("command", [])]}
    return spec


def untimed(rows):
    return [{k: v for k, v in row.items() if k not in ("wall_time", LOG_KEY)} for row in rows]


def differing(a: list[dict], b: list[dict]) -> list[tuple]:
    """(seed, column, a's value, b's value) of every difference (NaN equal to NaN)."""
    return [(x["seed"], k, x[k], y.get(k)) for x, y in zip(untimed(a), untimed(b)) for k in x
            if repr(x[k]) != repr(y.get(k))] + ([] if len(a) == len(b) else [("rows", len(a),
                                                                              len(b))])


def gone(pid: int, within: float = 30.0) -> bool:
    """Whether process ``pid`` is gone (or a zombie) within ``within`` s."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        time.sleep(0.1)
    return False


def in_process_rows(runs: int) -> list[dict]:
    """SPEC's runs with the example's law as an in-process ``python`` controller."""
    sys.path.insert(0, HELPERS)
    try:
        in_process = copy.deepcopy(SPEC)
        in_process["controller"] = {"type": "python", "function": "solo12_pd_in_process:make",
                                    "factory": True, "options": {"kp": 10.0, "kd": 0.3}}
        return serial(in_process, runs)
    finally:
        sys.path.remove(HELPERS)


def test_the_ros_controller_equals_its_law_in_process():
    """The same PD + feed-forward law as a ROS node over DDS and as a Python function: the
    lockstep link adds nothing (every state out, every command in, float64 all the way)."""
    ros_rows = serial(SPEC, 2)
    assert differing(ros_rows, in_process_rows(2)) == []
    assert all(r["steps"] == 200 and r["failed_check"] in ("", "base_height") for r in ros_rows)
    assert all(r["effort_rms"] > 0.1 for r in ros_rows)  # the feed-forward alone is 0.43 N m


def test_a_kept_controller_ends_when_another_spec_runs(tmp_path):
    """A per_worker controller left running would answer the next spec's states too (one
    domain per process): it is stopped when another spec's runs begin."""
    pid_file = tmp_path / "pid"
    kept = faulty("none", restart="per_worker", command=["-p", f"pid_file:={pid_file}"])
    assert serial(kept, 1)[0]["steps"] == 200
    assert not gone(int(pid_file.read_text()), within=0.5)
    assert differing(serial(SPEC, 1), in_process_rows(1)) == []
    assert gone(int(pid_file.read_text()))


@pytest.mark.parametrize("fault, reason", [
    ("crash", r"exited with code 3.*crashing after 20 answers"),
    ("hang", r"no command on /mbsim/effort_commands within 3 s .* \(tick 20\)"),
    ("nonfinite", r"effort_commands: command contains NaN or infinity"),
    ("short", r"effort_commands: expected 12 efforts"),
])
def test_a_misbehaving_controller_fails_its_row(fault, reason, tmp_path):
    pid_file = tmp_path / "pid"
    spec = faulty(fault, command=["-p", f"pid_file:={pid_file}"])
    row = serial(spec, 1)[0]
    assert (row["passed"], row["failed_check"], row["steps"]) == (False, "controller", 20)
    assert row["failed_at"] == pytest.approx(0.020)
    import re

    assert re.search(reason, row["message"], re.S), row["message"]
    if fault == "crash":
        assert "crashing after 20 answers" in row[LOG_KEY]
    assert gone(int(pid_file.read_text()))


def test_a_controller_that_reads_robot_description_first_runs():
    row = serial(faulty("none", command=["-p", "wait_description:=true"]), 1)[0]
    assert (row["failed_check"], row["steps"]) in (("", 200), ("base_height", 200)), row


def test_a_controller_that_never_subscribes_fails_at_ready(tmp_path):
    spec = copy.deepcopy(SPEC)
    spec["controller"] = {"type": "ros", "ready_timeout": 2.0,
                          "command": [sys.executable, "-c", "import time; time.sleep(60)"]}
    row = serial(spec, 1)[0]
    assert (row["failed_check"], row["steps"]) == ("controller", 0)
    assert "not ready within 2 s: no subscriber on /joint_states" in row["message"]


def test_a_missing_executable_fails_its_row():
    spec = copy.deepcopy(SPEC)
    spec["controller"] = {"type": "ros", "command": ["/nonexistent/controller_node"]}
    row = serial(spec, 1)[0]
    assert row["failed_check"] == "controller"
    assert "cannot start /nonexistent/controller_node" in row["message"]


@pytest.mark.parametrize("controller, message", [
    ({"type": "ros"}, "a 'ros' controller needs 'command'"),
    ({"type": "ros", "command": []}, "argv list, not empty"),
    ({"type": "ros", "command": ["x"], "reset_service": "/r"}, "goes with restart: per_worker"),
    ({"type": "ros", "command": ["x"], "mode": "effort"}, "mode is not its key"),
    ({"type": "hold", "kp": 1.0, "command": ["x"]}, "command is not a key of a 'hold'"),
    ({"type": "ros", "command": ["x"], "interface": "torque"}, "interface"),
])
def test_bad_ros_controller_keys_are_refused(controller, message):
    with pytest.raises(SchemaError, match=message):
        load_spec({**SPEC, "controller": controller})


def test_a_command_file_beside_the_spec_is_made_absolute(tmp_path):
    (tmp_path / "ctrl.py").write_text("")
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(
        {**SPEC, "controller": {"type": "ros", "command": ["python3", "ctrl.py", "--ros-args",
                                                           "-p", "kp:=1.0"]}}))
    _, data = load_spec(tmp_path / "spec.yaml")
    assert data["controller"]["command"] == ["python3", str(tmp_path / "ctrl.py"),
                                             "--ros-args", "-p", "kp:=1.0"]


def test_a_controller_dies_with_the_process_that_started_it(tmp_path):
    """What leaves no controller behind a worker killed with SIGKILL (PR_SET_PDEATHSIG)."""
    parent = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\n"
         "from mbsim_ros.ros.controller_process import ControllerProcess\n"
         f"p = ControllerProcess([sys.executable, '-c', 'import time; time.sleep(120)'], "
         f"{str(tmp_path / 'log')!r})\n"
         "print(p.pid, flush=True)\n"
         "time.sleep(120)\n"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": PACKAGE_ROOT})
    child = int(parent.stdout.readline())
    assert not gone(child, within=0.5)
    parent.kill()
    parent.wait()
    assert gone(child)


@pytest.mark.parametrize("parent_does", [
    "signal.signal(signal.SIGINT, signal.SIG_IGN)",
    "signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])",  # what a Ray worker does
])
def test_a_parent_that_ignores_sigint_still_stops_its_controller_cleanly(parent_does, tmp_path):
    """A Ray worker blocks SIGINT; its controller must not inherit that (nor an ignored
    SIGINT), or stop() ends it by SIGKILL after the grace period, and its DDS endpoints linger
    until their lease ends."""
    child = ("import time\ntry:\n    print('up', flush=True); time.sleep(60)\n"
             "except KeyboardInterrupt:\n    print('stopped by SIGINT', flush=True)\n")
    parent = subprocess.run(
        [sys.executable, "-c",
         "import signal, sys, time\n"
         f"{parent_does}\n"
         "from mbsim_ros.ros.controller_process import ControllerProcess\n"
         f"p = ControllerProcess([sys.executable, '-c', {child!r}], {str(tmp_path / 'log')!r})\n"
         "while 'up' not in p.log_text(): time.sleep(0.05)\n"
         "print(p.stop(grace=20.0))\n"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": PACKAGE_ROOT})
    assert parent.stdout.split() == ["0"], parent.stderr
    assert "stopped by SIGINT" in (tmp_path / "log").read_text()


def test_stop_ends_the_controllers_process_group(tmp_path):
    process = ControllerProcess(
        [sys.executable, "-c", "import subprocess, sys, time; "
         "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
         "print(c.pid, flush=True); time.sleep(120)"], tmp_path / "log")
    deadline = time.monotonic() + 30
    while not process.log_text().strip() and time.monotonic() < deadline:
        time.sleep(0.05)
    grandchild = int(process.log_text())
    process.stop(grace=1.0)
    assert gone(process.pid) and gone(grandchild)


@pytest.fixture(scope="module")
def ray_local():
    import ray

    os.environ["PYTHONPATH"] = PACKAGE_ROOT
    start_ray(None, 2)
    yield
    ray.shutdown()


def test_on_ray_logs_resume_replay_and_per_worker(ray_local, tmp_path):
    spec = faulty("none")
    spec["controller"]["tick_timeout"] = 20.0
    spec["checks"] = {"base_height": {"above": 0.15}}
    out = tmp_path / "campaign"
    first = run_campaign(spec, 3, out, progress=False).to_pylist()
    assert sorted((out / "logs").glob("*.log")) == [out / "logs" / f"seed-{s}.log"
                                                    for s in range(3)]
    table = run_campaign(spec, 5, out, progress=False).to_pylist()  # resumes: 2 more
    assert differing(table[:3], first) == []
    assert all(r["failed_check"] != "controller" and r["steps"] == 200 for r in table)
    row, differences = replay(out, 4)
    assert differences == []
    worker = copy.deepcopy(spec)
    worker["controller"].update(restart="per_worker", reset_service="/faulty_pd/reset")
    kept = run_campaign(worker, 5, tmp_path / "per_worker", progress=False).to_pylist()
    assert differing(kept, table) == []


def test_an_interrupted_driver_leaves_no_controller(tmp_path):
    pid_file = tmp_path / "pid"
    spec = faulty("hang", after=10, command=["-p", f"pid_file:={pid_file}"])
    spec["controller"]["tick_timeout"] = 600.0
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    driver = subprocess.Popen(
        [sys.executable, "-m", "mbsim_ros.cli", "campaign", str(path), "--runs", "1", "--out",
         str(tmp_path / "out"), "--workers", "1", "--no-progress"],
        env={**os.environ, "PYTHONPATH": PACKAGE_ROOT}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while not pid_file.exists():
            assert driver.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        time.sleep(1.0)  # it is now hanging on its tenth answer
        driver.send_signal(signal.SIGINT)
        driver.wait(120)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    assert gone(int(pid_file.read_text()), within=60)
