"""Cold start (docs/SPEED.md): importing compiles nothing, a Simulator compiles only its own
integrator's kernels, and the first compilation into an empty cache says so, once. Each check
runs in a fresh process (what is compiled is per process); the timeouts are liveness bounds."""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIVENESS = 900  # s: an empty cache compiles an integrator in about a minute on a loaded machine

# Counts our functions that numba compiles (it fires numba:compile only on a cache miss).
COUNT = """
from numba.core import event
compiled = []
class Count(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__module__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Count())
"""


def run(code: str, cache: Path | None = None, shipped: Path | None = None,
        **variables: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]), **variables)
    if cache is not None:  # an empty cache, and no shipped code (`make wheel` leaves some in
        env["MBSIM_ROS_CACHE_DIR"] = str(cache)  # the checkout) unless the test gives it
        env["MBSIM_ROS_SHIPPED_DIR"] = str(shipped or os.devnull)
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, text=True,
                            capture_output=True, timeout=LIVENESS)
    assert result.returncode == 0, result.stderr
    return result


def test_importing_compiles_nothing(tmp_path):
    out = run(COUNT + """
import mbsim_ros, mbsim_ros.cli, mbsim_ros.integrators, mbsim_ros.sim, mbsim_ros.estimation
from mbsim_ros import Simulator
print([m for m in compiled if m.startswith("mbsim_ros")])
""", tmp_path)
    assert out.stdout.split("\n")[-2] == "[]"
    assert out.stderr == ""  # no compile notice either


def test_an_euler_simulator_loads_no_other_integrator_kernels():
    """From the user's cache (warm after `make`): the dispatchers of the variational and
    contact steps have no signature at all after an Euler Simulator's steps."""
    out = run("""
import json
from numba.core.registry import CPUDispatcher
from mbsim_ros import Simulator
from mbsim_ros.integrators import compliant_step, variational
from mbsim_ros.solvers import cone_qp, cone_solver, lcp
from mbsim_ros.model import load_urdf, shipped_urdf
sim = Simulator(load_urdf(shipped_urdf("arm7")), 1e-3, "euler")
sim.step()
sim.step()
loaded = {f"{m.__name__}.{name}": len(f.overloads)
          for m in (variational, compliant_step, cone_qp, cone_solver, lcp)
          for name, f in vars(m).items()
          if isinstance(f, CPUDispatcher) and f.__module__ == m.__name__}
print(json.dumps(loaded))
""")
    loaded = json.loads(out.stdout.split("\n")[-2])
    assert "mbsim_ros.integrators.variational.variational_advance" in loaded
    assert {name: n for name, n in loaded.items() if n} == {}


def test_the_compile_notice_comes_once_and_not_from_a_warm_cache(tmp_path):
    """Two functions compiled for one subject: one notice, naming it and the cache; the same
    calls again on the cache they filled: none. (Small functions: the notice is generic.)"""
    code = """
import numpy as np
from mbsim_ros._jit import compiling_for
from mbsim_ros.spatial import exp_so3, so3_coefficients
compiling_for("the test's")
so3_coefficients(0.1)
exp_so3(np.array([0.1, 0.2, 0.3]))
"""
    cold = run(code, tmp_path).stderr.splitlines()
    notices = [line for line in cold if "compiling" in line]
    assert len(notices) == 1, cold
    assert "compiling the test's kernels (once; cached in " in notices[0]
    assert str(tmp_path) in notices[0]
    assert run(code, tmp_path).stderr == ""


def test_the_compile_notice_can_be_silenced(tmp_path):
    out = run("""
import logging
logging.getLogger("mbsim_ros.compile").setLevel(logging.ERROR)
from mbsim_ros.spatial import so3_coefficients
so3_coefficients(0.1)
""", tmp_path)
    assert out.stderr == ""


def test_warm_steps_each_config_and_says_which():
    """`mbsim-ros warm` (what `make` runs): one line per config, its integrator named."""
    config = str(ROOT / "config" / "arm7.yaml")
    out = run(f"import sys; from mbsim_ros.cli import main; sys.exit(main(['warm', {config!r}]))")
    assert out.stdout.splitlines()[-1] == f"mbsim-ros warm: {config}, variational"


def test_warm_groups_configs_by_integrator():
    """Each integrator's configs go to one process (they share most kernels; two integrators
    share few): the shipped arm's two configs together, the scene apart; one group when the
    command line names the integrator."""
    from mbsim_ros.cli import warm_groups

    arm, sensors, scene = (str(ROOT / "config" / name) for name in
                           ("arm7.yaml", "sensors/arm7.yaml", "scenes/ball_drop.yaml"))
    assert warm_groups([arm, scene, sensors], None) == [[arm, sensors], [scene]]
    assert warm_groups([arm, scene, sensors], "compliant") == [[arm, scene, sensors]]


def test_warm_compiles_each_integrator_in_a_process_of_its_own():
    """--jobs 2 on the arm and a scene: two child processes, each saying what it warms (from
    the user's cache: nothing to compile); the exit code is theirs."""
    arm, scene = str(ROOT / "config" / "arm7.yaml"), str(ROOT / "config" / "scenes" /
                                                           "ball_drop.yaml")
    out = run("import sys; from mbsim_ros.cli import main; "
              f"sys.exit(main(['warm', '--jobs', '2', {arm!r}, {scene!r}]))")
    said = [line for line in out.stdout.splitlines() if line.strip()]  # two writers, one pipe
    assert sorted(said[-2:]) == sorted(
        [f"mbsim-ros warm: {arm}, variational", f"mbsim-ros warm: {scene}, compliant"])
    failed = subprocess.run([sys.executable, "-m", "mbsim_ros.cli", "warm", "--jobs", "2", arm,
                             str(ROOT / "config" / "missing.yaml")], cwd=ROOT, text=True,
                            capture_output=True, timeout=LIVENESS)
    assert failed.returncode != 0 and "missing.yaml" in failed.stderr


def test_kernels_compile_for_the_generic_cpu():
    """numba's codegen, once mbsim_ros is imported, targets LLVM's generic CPU with no extra
    features (what makes a cache portable); NUMBA_CPU_NAME set by the user wins."""
    code = """
import mbsim_ros.sim
from numba.core.registry import cpu_target
print(cpu_target.target_context.codegen().magic_tuple()[1:])
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CPU_")}
    out = subprocess.run([sys.executable, "-c", code], env=dict(env, PYTHONPATH=str(ROOT)),
                         cwd=ROOT, text=True, capture_output=True, timeout=LIVENESS)
    assert out.stdout.splitlines()[-1] == "('generic', '')", out.stderr
    assert run(code, NUMBA_CPU_NAME="x86-64").stdout.splitlines()[-1].startswith("('x86-64', ")


# An Euler Simulator's first steps, counting what numba's compiler does (mbsim_ros._jit's
# CompilerActivity: compiles are cache misses, loads are cache hits).
FIRST_STEPS = """
import json, os
from mbsim_ros import Simulator
from mbsim_ros._jit import CompilerActivity
from mbsim_ros.model import load_urdf, shipped_urdf
import numba
with CompilerActivity() as activity:
    sim = Simulator(load_urdf(shipped_urdf("arm7")), 1e-3, "euler")
    sim.step()
    sim.step()
seeded = os.path.isfile(os.path.join(numba.config.CACHE_DIR, "manifest.json"))
print(json.dumps([activity.compiles, activity.loads, seeded]))
"""


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> Path:
    """`mbsim-ros warm --ship` of the arm with the Euler integrator (the smallest compile):
    the folder a wheel would carry as mbsim_ros/_compiled."""
    into = tmp_path_factory.mktemp("compiled")
    config = str(ROOT / "config" / "arm7.yaml")
    out = run("import sys; from mbsim_ros.cli import main; "
              f"sys.exit(main(['warm', '--integrator', 'euler', '--ship', {str(into)!r}, "
              f"{config!r}]))")
    assert "mbsim-ros warm: shipped in " in out.stdout
    return into


def test_shipped_code_starts_an_empty_cache_and_nothing_compiles(shipped, tmp_path):
    """A process with an empty cache and the shipped code: its Simulator's first steps load
    every function and compile none; its cache now is a copy of the shipped one."""
    (digest,) = [path.name for path in shipped.iterdir()]
    manifest = json.loads((shipped / digest / "manifest.json").read_text())
    assert manifest["cpu"] == "generic"
    compiles, loads, seeded = json.loads(
        run(FIRST_STEPS, tmp_path, shipped).stdout.splitlines()[-1])
    assert (compiles, seeded) == (0, True)
    assert loads > 0  # the Euler step's kernels and the construction's checks, from the copy
    assert (tmp_path / digest / "manifest.json").is_file()


def test_shipped_code_for_another_numba_is_not_used(shipped, tmp_path):
    """The manifest names another numba version: the cache starts empty and the first steps
    compile (as without shipped code), saying so."""
    other = tmp_path / "other"
    shutil.copytree(shipped, other)
    (manifest,) = other.glob("*/manifest.json")
    manifest.write_text(json.dumps(dict(json.loads(manifest.read_text()), numba="0.0.0")))
    out = run(FIRST_STEPS, tmp_path / "cache", other)
    compiles, loads, seeded = json.loads(out.stdout.splitlines()[-1])
    assert compiles > 5 and not seeded
    assert "compiling the euler integrator's kernels" in out.stderr


def test_seeding_copies_once_and_never_over_a_cache(tmp_path):
    """seed_cache copies the shipped folder into an absent cache only: a second seed (another
    process, later) leaves the cache as it is, and no half copy is left beside it."""
    from mbsim_ros._jit import SHIPPED_MANIFEST, code_identity, seed_cache

    shipped, cache = tmp_path / "shipped", tmp_path / "cache" / "digest"
    (shipped / "package").mkdir(parents=True)
    (shipped / "package" / "f.nbi").write_text("index")
    (shipped / SHIPPED_MANIFEST).write_text(json.dumps(code_identity()))
    assert seed_cache(cache, shipped)
    assert (cache / "package" / "f.nbi").read_text() == "index"
    (cache / "package" / "f.nbi").write_text("compiled since")
    assert not seed_cache(cache, shipped)
    assert (cache / "package" / "f.nbi").read_text() == "compiled since"
    assert sorted(path.name for path in cache.parent.iterdir()) == ["digest"]


def test_the_node_from_shipped_code_compiles_nothing(shipped, tmp_path):
    """`mbsim-ros run` with an empty cache and the shipped code of the same config: its first
    status line comes with no compile notice before it (its warm-up, sensors and servo loads
    were all shipped)."""
    from ros_harness import NodeProcess, unique_domain_id

    env = dict(os.environ, MBSIM_ROS_CACHE_DIR=str(tmp_path / "cache"),
               MBSIM_ROS_SHIPPED_DIR=str(shipped), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    node = NodeProcess(unique_domain_id(), "--config", str(ROOT / "config" / "arm7.yaml"),
                       "--ros-args", "-p", "integrator:=euler", "-p", "print_status:=true",
                       log_dir=tmp_path, env=env)
    try:
        deadline = time.monotonic() + LIVENESS
        while "| rate " not in node.log() and node.alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        log = node.log()
    finally:
        node.stop()
    assert "| rate " in log, log
    assert "compiling" not in log, log
