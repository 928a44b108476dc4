"""Cold start (docs/SPEED.md): importing compiles nothing, a Simulator compiles only its own
integrator's kernels, and the first compilation into an empty cache says so, once. Each check
runs in a fresh process (what is compiled is per process); the timeouts are liveness bounds."""
import json
import os
import subprocess
import sys
from pathlib import Path

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


def run(code: str, cache: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    if cache is not None:
        env["MBSIM_ROS_CACHE_DIR"] = str(cache)
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
