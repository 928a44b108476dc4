"""Test campaigns on a local Ray instance (2 CPUs, started once for the module): a 20-run
campaign equal to the plain serial loop, replay equal to the table bit for bit, resume after
the driver is killed, a worker killed mid-campaign, and every kind of bad spec refused before
any run. Runs are 0.3 s of the arm, so the module takes seconds, not minutes."""
import copy
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from mbsim_ros.campaign.replay import record_failures, replay
from mbsim_ros.campaign.run import prepared
from mbsim_ros.campaign.runner import PACKAGE_ROOT, run_campaign, serial, start_ray
from mbsim_ros.cli import main
from mbsim_ros.schema import SchemaError

HELPERS = str(Path(__file__).resolve().parent / "campaign_helpers")
SPEC = {
    "urdf": "arm7",
    "initial_positions": {"joint2": 0.6, "joint4": -1.2, "joint6": 0.8},
    "integrator": "variational",
    "dt": 0.002,
    "duration": 0.3,
    "controller": {"type": "hold", "kp": 3000.0, "kd": 150.0, "rate": 250.0},
    "randomize": {
        "link_mass": {"dist": "uniform", "low": 1.0, "high": 3.0, "links": ["link7"]},
        "joint_positions": {"dist": "normal", "mean": 0.0, "std": 0.002},
        "delay": {"dist": "choice", "values": [0.0, 0.004]},
        "pushes": [{"link": "link7", "start": {"dist": "uniform", "low": 0.05, "high": 0.15},
                    "duration": 0.05, "force": [{"dist": "uniform", "low": -400, "high": 400},
                                                0.0, 0.0]}]},
    "checks": {"tracking_max": {"below": 0.02, "after": 0.04},
               "joint_limit_margin": {"above": 0.05}},
    "metrics": ["tracking_rms", "effort_rms", "energy_gain_max"],
    "runs_per_task": 2,
}


@pytest.fixture(scope="module")
def ray_local():
    import ray

    sys.path.insert(0, HELPERS)
    os.environ["PYTHONPATH"] = os.pathsep.join([HELPERS, PACKAGE_ROOT])
    start_ray(None, 2)
    yield
    ray.shutdown()
    sys.path.remove(HELPERS)


def untimed(rows):
    return [{k: v for k, v in row.items() if k != "wall_time"} for row in rows]


def same(a, b):
    """Rows equal bit for bit (NaN equal to NaN)."""
    return repr(untimed(a)) == repr(untimed(b))


def test_twenty_runs_on_ray_equal_the_serial_loop(ray_local, tmp_path):
    table = run_campaign(SPEC, 20, tmp_path, progress=False)
    assert table.column("seed").to_pylist() == list(range(20))
    rows = table.to_pylist()
    assert same(rows, serial(SPEC, 20))
    assert 0 < sum(r["passed"] for r in rows) < 20  # the pushes fail some, not all
    assert {"link_mass.link7", "delay", "push[0].fx", "tracking_rms", "tracking_max",
            "failed_check", "failed_at", "wall_time"} <= set(rows[0])
    failed = next(r for r in rows if not r["passed"])
    row, differences = replay(tmp_path, failed["seed"], tmp_path / "replay.mcap")
    assert differences == [] and row["failed_check"] == failed["failed_check"]
    assert (tmp_path / "replay.mcap").stat().st_size > 0  # read back: test_recording's
    recorded = record_failures(tmp_path)
    assert sorted(p.name for p in recorded) == sorted(f"seed-{r['seed']}.mcap" for r in rows
                                                      if not r["passed"])


def test_a_killed_driver_resumes_without_duplicates(ray_local, tmp_path):
    out = tmp_path / "campaign"
    spec = tmp_path / "spec.yaml"
    import yaml

    spec.write_text(yaml.safe_dump({**SPEC, "runs_per_task": 1}))
    env = {**os.environ, "PYTHONPATH": PACKAGE_ROOT}
    runs = 48  # (a run takes about 20 ms: enough that the driver is killed before the end)
    driver = subprocess.Popen(
        [sys.executable, "-m", "mbsim_ros.cli", "campaign", str(spec), "--runs", str(runs),
         "--out", str(out), "--workers", "1", "--no-progress"],
        env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while len(list((out / "parts").glob("*.parquet"))) < 3:
            assert driver.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
    done = len(list((out / "parts").glob("*.parquet")))
    assert done < runs
    table = run_campaign(str(spec), runs, out, progress=False)
    assert table.column("seed").to_pylist() == list(range(runs))
    assert same(table.to_pylist(), serial(str(spec), runs))


def test_a_worker_killed_mid_campaign_is_retried(ray_local, tmp_path):
    marker = tmp_path / "killed"
    spec = copy.deepcopy(SPEC)
    spec["controller"] = {"type": "python", "function": "campaign_controllers:killer",
                          "factory": True, "options": {"marker": str(marker)},
                          "kp": 3000.0, "kd": 150.0}
    table = run_campaign(spec, 8, tmp_path / "out", progress=False)
    assert marker.exists()  # a worker did die
    assert table.column("seed").to_pylist() == list(range(8))
    parts = [pq.read_table(p) for p in sorted((tmp_path / "out" / "parts").glob("*.parquet"))]
    assert sorted(s for t in parts for s in t.column("seed").to_pylist()) == list(range(8))


def changed(spec: dict, **changes) -> dict:
    """A copy of spec with values set by path (``randomize__link_mass``: spec["randomize"][
    "link_mass"])."""
    spec = copy.deepcopy(spec)
    for path, value in changes.items():
        *parents, key = path.split("__")
        node = spec
        for part in parents:
            node = node[part]
        node[key] = value
    return spec


def bad(**changes):
    return changed(SPEC, **changes)


BAD_SPECS = [
    (bad(durration=1.0), r"durration: unknown key.*did you mean duration"),
    (bad(randomize__link_mass={"dist": "unifrom", "low": 1, "high": 2}),
     r"randomize.link_mass.dist: 'unifrom'.*did you mean uniform"),
    (bad(randomize__link_mass={"dist": "normal", "low": 1, "high": 2}),
     r"randomize.link_mass: dist normal takes mean, std"),
    (bad(randomize__joint_damping={"dist": "uniform", "low": 0, "high": 1,
                                   "joints": ["joint9"]}),
     r"randomize.joint_damping.joints: no joint named 'joint9'.*did you mean joint"),
    (bad(randomize__link_mass={"dist": "uniform", "low": 1, "high": 2, "links": ["lnk7"]}),
     r"randomize.link_mass.links: no link named 'lnk7'.*did you mean link7"),
    (bad(checks__trackng_max={"below": 1.0}), r"checks.trackng_max: unknown key.*"
                                                 r"did you mean tracking_max"),
    (bad(metrics=["tracking_rsm"]), r"metrics\[0\]: 'tracking_rsm'.*did you mean tracking_rms"),
    (bad(controller={"type": "python", "function": "no_such_module:control"}),
     r"controller.function: cannot import module 'no_such_module'"),
    (bad(controller={"type": "python", "function": "campaign_controllers:nothing"}),
     r"controller.function: module 'campaign_controllers' has no callable 'nothing'"),
    (bad(controller={"type": "hold", "kp": {"joint22": 1.0}}),
     r"controller.kp: no joint named 'joint22'"),
    (bad(controller={"type": "hodl", "kp": 1.0}), r"controller.type: 'hodl'.*did you mean hold"),
    (bad(checks__base_height={"above": 0.1}), r"base_\* needs a floating base"),
]


@pytest.mark.parametrize("spec, message", BAD_SPECS, ids=[m[:30] for _, m in BAD_SPECS])
def test_a_bad_spec_fails_at_once_naming_the_key(spec, message, tmp_path):
    sys.path.insert(0, HELPERS)
    try:
        with pytest.raises(SchemaError, match=message):
            run_campaign(spec, 4, tmp_path, progress=False)
    finally:
        sys.path.remove(HELPERS)
    assert not (tmp_path / "parts").exists()  # nothing started


def test_the_cli_exits_2_on_a_bad_spec(tmp_path, capsys):
    spec = tmp_path / "bad.yaml"
    spec.write_text("urdf: arm7\nduration: 1.0\ncontroller: {type: hold, kp: 1.0}\n"
                    "randomize: {frction: {dist: uniform, low: 0.4, high: 1.0}}\n")
    assert main(["campaign", str(spec), "--runs", "3", "--out", str(tmp_path / "o")]) == 2
    assert "randomize.frction: unknown key" in capsys.readouterr().err


def test_prepared_is_made_once_per_process():
    assert prepared(SPEC) is prepared(copy.deepcopy(SPEC))


def test_encoder_noise_is_drawn_per_run_and_repeats():
    """randomize.sensor_noise seeds the encoders per run as it seeds the devices: the same
    seed twice gives the same row (replay's promise), another seed another noise. Unseeded
    encoders made every run of such a spec differ from itself."""
    spec = copy.deepcopy(SPEC)
    spec["controller"]["mode"] = "effort"  # the PD reads the noisy encoders
    spec["sensors"] = {"encoders": {"noise": 1e-3, "velocity_noise": 0.05}}
    first, again = serial(spec, 2), serial(spec, 2)
    assert same(first, again)
    assert first[0]["tracking_rms"] != first[1]["tracking_rms"]
    assert first[0]["sensor_seed"] != first[1]["sensor_seed"]
