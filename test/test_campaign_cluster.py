"""Campaigns and Ray clusters as a user meets them (docs/CAMPAIGNS.md, 'Past one machine'): a
head and a second node started by ``ray start`` as the page says (token authentication, each
on ports of its own, stopped by their process ids: never ``ray stop``, which ends every Ray
process of the machine); a campaign submitted to them by address, its tasks on both nodes,
equal bit for bit to a local campaign run beside the live cluster on an instance of its own;
a stale address file not joined; a refused or dead address said in one line. Every campaign is
``mbsim-ros campaign`` in a process of its own, quiet unless --verbose, gated by
--require-pass and reported by --junit; its controller imports a module beside the spec, which
imports one in the working directory (neither on PYTHONPATH)."""
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest
from browser import free_port

from mbsim_ros.campaign.cluster import PACKAGE_ROOT
from mbsim_ros.campaign.local_cluster import LocalCluster
from mbsim_ros.cli import main

BIN = Path(sys.executable).parent
RUNS = 6
SPEC = """\
urdf: arm7
initial_positions: {{joint2: 0.6, joint4: -1.2, joint6: 0.8}}
integrator: variational
dt: 0.002
duration: 0.3
controller: {{type: python, function: "beside:hold", factory: true,
             options: {{markers: "{markers}"}}, kp: 3000.0, kd: 150.0, rate: 250.0}}
randomize:
  delay: {{dist: choice, values: [0.0, 0.004]}}
  pushes: [{{link: link7, start: 0.1, duration: 0.05,
             force: [{{dist: uniform, low: -400, high: 400}}, 0.0, 0.0]}}]
checks: {{tracking_max: {{below: 0.02, after: 0.04}}}}
metrics: [tracking_rms]
runs_per_task: 1
"""
BESIDE = '''\
"""Beside the spec: holds the start; leaves a file named by the Ray node it runs on."""
from pathlib import Path

import ray
from here import posture


def hold(sim, options):
    start = posture(sim)
    if ray.is_initialized():
        (Path(options["markers"]) / ray.get_runtime_context().get_node_id()).touch()
    return lambda t, sim, readings: {"position": start}
'''
HERE = '''\
"""In the working directory."""


def posture(sim):
    return sim.q.copy()
'''
RAY_NOISE = ("INFO", "WARNING", "Token authentication", "Connecting to existing", "gcs_client",
             "Traceback")


def environment(**changes) -> dict:
    """This process's environment without any Ray address or authentication setting, the
    package importable, and ``changes`` (None: removed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_AUTH", "RAY_ADDRESS"))}
    env.update({"PYTHONPATH": PACKAGE_ROOT, **changes})
    return {k: v for k, v in env.items() if v is not None}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """The spec with its controller module beside it, a working directory with the module that
    one imports, a folder for the node markers."""
    root = tmp_path_factory.mktemp("cluster_campaign")
    spec_dir, work, markers = root / "spec", root / "work", root / "markers"
    for folder in (spec_dir, work, markers):
        folder.mkdir()
    (spec_dir / "campaign.yaml").write_text(SPEC.format(markers=markers))
    (spec_dir / "beside.py").write_text(BESIDE)
    (work / "here.py").write_text(HERE)
    return SimpleNamespace(spec=spec_dir / "campaign.yaml", work=work, markers=markers)


def campaign(folders, out: Path, *options: str, env: dict, timeout: float = 300):
    """``mbsim-ros campaign`` (the installed command: its folder, not the working directory,
    is first on its sys.path) run from the working directory."""
    return subprocess.run([str(BIN / "mbsim-ros"), "campaign", str(folders.spec), "--runs",
                           str(RUNS), "--out", str(out), *options], cwd=folders.work, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def cluster():
    """The recipe of CAMPAIGNS.md on this machine (LocalCluster): the token in
    ~/.ray/auth_token (made if missing), RAY_AUTH_MODE=token for both nodes, a head and a
    second node of one CPU each, a port and a temporary directory of their own (so the
    address file they write names them to this module only); stopped by their process ids."""
    with LocalCluster(nodes=2, cpus=1, env=environment()) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def campaigns(cluster, folders, tmp_path_factory):
    """The campaign by address on the two nodes, then the same campaign with no address
    beside the live cluster (its address file names the cluster; --workers 2, which a
    driver joining it would be refused), with --junit and --require-pass 1."""
    root = tmp_path_factory.mktemp("campaigns")
    by_address = campaign(folders, root / "cluster", "--address", cluster.address,
                          env=cluster.env)
    cluster_nodes = {p.name for p in folders.markers.iterdir()}
    local = campaign(folders, root / "local", "--workers", "2", "--junit",
                     str(root / "junit.xml"), "--require-pass", "1", env=cluster.env)
    return SimpleNamespace(root=root, by_address=by_address, local=local,
                           cluster_nodes=cluster_nodes,
                           all_nodes={p.name for p in folders.markers.iterdir()})


def untimed(directory: Path) -> str:
    rows = pq.read_table(directory / "results.parquet").to_pylist()
    return repr([{k: v for k, v in row.items() if k != "wall_time"} for row in rows])


def test_a_campaign_by_address_runs_on_both_nodes_equal_to_the_local_run(campaigns, cluster):
    by_address, local = campaigns.by_address, campaigns.local
    assert by_address.returncode == 0, by_address.stderr
    assert f"Ray: the cluster at {cluster.address} (--address), 2 nodes, 2 CPUs" \
        in by_address.stderr
    assert len(campaigns.cluster_nodes) == 2  # the tasks ran on both nodes
    assert "Ray: an instance of this campaign's own, 2 CPUs" in local.stderr, local.stderr
    assert len(campaigns.all_nodes) == 3  # the local campaign's node is neither of the cluster's
    assert untimed(campaigns.root / "cluster") == untimed(campaigns.root / "local")


def test_ray_says_nothing_unless_asked(campaigns):
    for result in (campaigns.by_address, campaigns.local):
        assert not [word for word in RAY_NOISE if word in result.stderr], result.stderr
        assert "runs," in result.stdout  # the summary


def test_junit_and_require_pass(campaigns, folders, monkeypatch):
    rows = pq.read_table(campaigns.root / "local" / "results.parquet").to_pylist()
    failed = [r for r in rows if not r["passed"]]
    assert 0 < len(failed) < RUNS  # the pushes fail some runs, not all
    assert campaigns.local.returncode == 1  # --require-pass 1
    assert f"{RUNS - len(failed)} of {RUNS} runs passed, below --require-pass 1" \
        in campaigns.local.stderr
    suite = ET.parse(campaigns.root / "junit.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == (str(RUNS), str(len(failed)))
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [f"seed {r['seed']}" for r in rows]
    for case, row in zip(cases, rows):
        failure = case.find("failure")
        assert (failure is None) == row["passed"]
        if failure is not None:
            assert failure.get("type") == row["failed_check"]
            assert f"time: {row['failed_at']:.3f} s" in failure.text
            assert f"value: {row['failed_value']:.6g}" in failure.text
            assert f"mbsim-ros campaign replay {campaigns.root / 'local'} --seed {row['seed']}" \
                in failure.text
    # the gate at the pass fraction itself, on the finished campaign (nothing runs again;
    # the spec's modules imported here, from the working directory as the command was run)
    monkeypatch.chdir(folders.work)
    monkeypatch.setattr(sys, "path", list(sys.path))
    for module in ("beside", "here"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    passed = (RUNS - len(failed)) / RUNS
    finished = ["campaign", str(folders.spec), "--runs", str(RUNS), "--out",
                str(campaigns.root / "local"), "--require-pass"]
    assert main(finished + [repr(passed)]) == 0
    assert main(finished + [repr(passed + 1e-9)]) == 1
    for module in ("beside", "here"):
        sys.modules.pop(module, None)


def test_a_replay_finds_the_modules_from_another_directory(campaigns, tmp_path):
    """campaign.json keeps the folders the modules were found in."""
    rows = pq.read_table(campaigns.root / "local" / "results.parquet").to_pylist()
    seed = next(r["seed"] for r in rows if not r["passed"])
    result = subprocess.run([str(BIN / "mbsim-ros"), "campaign", "replay",
                             str(campaigns.root / "local"), "--seed", str(seed)], cwd=tmp_path,
                            env=environment(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "identical to the table's row" in result.stdout


def test_a_stale_address_file_is_not_joined(folders, tmp_path):
    """``ray start`` ended without ``ray stop`` leaves its address in ray_current_cluster:
    ``ray.init()`` would try to join it (20 s of retries, or a hang); the campaign starts its
    own instance. --verbose lets Ray's start-up lines through."""
    root = Path(tempfile.mkdtemp(prefix="mbs", dir="/tmp"))
    try:
        (root / "ray").mkdir()
        (root / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{free_port()}")
        result = campaign(folders, tmp_path / "out", "--verbose", "--require-pass", "0",
                          env=environment(RAY_TMPDIR=str(root)))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert result.returncode == 0, result.stderr
    assert "Ray: an instance of this campaign's own" in result.stderr
    assert "Started a local Ray instance" in result.stderr  # Ray's own line, asked for
    assert "Connecting to existing" not in result.stderr
    assert pq.read_table(tmp_path / "out" / "results.parquet").num_rows == RUNS


def test_a_refused_or_dead_address_is_one_line(cluster, folders, tmp_path):
    """Exit code 2, one line naming the address, why and what to set; nothing run."""
    empty_home = tmp_path / "home"
    empty_home.mkdir()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    dead = f"127.0.0.1:{free_port()}"
    cases = {
        "wrong token": ([], environment(RAY_ADDRESS=cluster.address, RAY_AUTH_MODE="token",
                                        RAY_AUTH_TOKEN="not-the-cluster-token"),
                        f"the Ray cluster at {cluster.address} (RAY_ADDRESS) refuses this "
                        f"driver's authentication token: the one in RAY_AUTH_TOKEN is not the "
                        f"cluster's"),
        "no token": (["--address", cluster.address],
                     environment(HOME=str(empty_home), XDG_CACHE_HOME=cache),
                     f"the Ray cluster at {cluster.address} (--address) refuses this "
                     f"driver's authentication token: this driver has none"),
        "nothing there": (["--address", dead], environment(),
                          f"no Ray cluster answers at {dead} (--address): Connection refused"),
    }
    running = {name: subprocess.Popen(
        [str(BIN / "mbsim-ros"), "campaign", str(folders.spec), "--runs", "2", "--out",
         str(tmp_path / name.replace(" ", "_")), *options], cwd=folders.work, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, (options, env, _) in cases.items()}
    for name, process in running.items():
        out, err = process.communicate(timeout=120)
        lines = err.strip().splitlines()
        assert process.returncode == 2, (name, err)
        assert len(lines) == 1 and lines[0].startswith("mbsim-ros: "), (name, err)
        assert cases[name][2] in lines[0], (name, lines[0])
        assert "Traceback" not in out + err
        assert not list((tmp_path / name.replace(" ", "_") / "parts").glob("*.parquet"))
