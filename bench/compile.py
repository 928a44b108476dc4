"""Cold start (docs/SPEED.md, "Cold start"): what a first run costs with an empty compiled-code
cache, and the same with the cache warm. Each figure is one fresh subprocess, its cache an empty
directory (MBSIM_ROS_CACHE_DIR; the warm figure runs again on what the cold run left there):

- import: ``import mbsim_ros`` and ``from mbsim_ros import Simulator``;
- euler, variational: import, ``Simulator(arm7, 1e-3, integrator)`` and its first ``step()``;
- compliant: the same with ``Simulator.from_scene(config/scenes/ball_drop.yaml)``;
- node: ``mbsim-ros run --config config/arm7.yaml --ros-args -p print_status:=true`` until its
  first status line.

With ``--wheel dist/mbsim_ros-*.whl`` (``make wheel``) the same runs use the package installed
from that wheel in a fresh venv (its dependencies this interpreter's), its cache empty too: the
first run of a user who installed the wheel, which starts from the compiled code the wheel
carries. Without it, the sources of this checkout and no shipped code (what a first run from
source, or on a machine the wheel was not built for, costs).

Each figure is given as wall-clock seconds and as the child's CPU seconds (user + system): the
machine is shared, and on a loaded one the wall clock measures the neighbours too.

The per-kernel table: numba fires a ``numba:compile`` event around each compilation, and only
when the function was not found in the cache; the child processes time those events in CPU
seconds of the process (self: less the functions compiled inside them, as a kernel's callees
are compiled while it is typed), summed over each function's signatures. Only the in-process
scenarios give it (not the node).

With ``--passes`` the in-process scenarios' cold runs also time numba's compile passes and
LLVM's finalisation of each code library (compiler_profile): where a compile's time goes by
stage, and how often the same callees are optimised and emitted again, once in every caller's
library.

    python bench/compile.py [--only euler,node] [--top 25] [--cache-variable NUMBA_CACHE_DIR]
                            [--wheel dist/mbsim_ros-0.1.0-cp311-cp311-linux_x86_64.whl]
                            [--passes] [--json results.json] [--peer ../main] [--rounds 2]

With ``--peer DIR`` each scenario also runs from the sources of another checkout (another
branch, the main tree), the two taking turns scenario by scenario, ``--rounds`` times: figures
to compare on a shared machine, with the load average printed beside each.

With ``--json`` the results (the cold runs' compiles with their argument types among them) are
also written to a file: how many specializations each function got, and for which types.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENE = ROOT / "config" / "scenes" / "ball_drop.yaml"
NODE = ["-m", "mbsim_ros.cli", "run", "--config", str(ROOT / "config" / "arm7.yaml"),
        "--ros-args", "-p", "print_status:=true"]
SCENARIOS = ("import", "euler", "variational", "compliant", "node")
NODE_TIMEOUT = 900.0  # s: a liveness bound, far above any cold start measured


def compiler_profile() -> tuple[dict, list]:
    """Time numba's compile passes and LLVM's finalisation of each code library, in CPU s of
    this process (``--passes``): (pass name -> its own time, less the compiles nested in it)
    and per library [name, finalisation, of it optimisation and emission, instructions in the
    final module, which holds the callees linked in]. It wraps numba's internals (0.68)."""
    from numba.core import codegen, compiler_machinery

    passes, libraries, nested, parts = {}, [], [], {}
    run_pass = compiler_machinery.PassManager._runPass

    def timed_pass(self, index, pss, state):
        nested.append(0.0)
        began = time.process_time()
        try:
            return run_pass(self, index, pss, state)
        finally:
            took = time.process_time() - began
            inner = nested.pop()
            passes[pss.name()] = passes.get(pss.name(), 0.0) + took - inner
            if nested:
                nested[-1] += took

    library = codegen.CPUCodeLibrary
    finalize = library.finalize

    def part(method, key):
        def timed(self):
            began = time.process_time()
            method(self)
            parts[key] = time.process_time() - began
        return timed

    def timed_finalize(self):
        began = time.process_time()
        finalize(self)
        took = time.process_time() - began
        size = sum(1 for f in self._final_module.functions if not f.is_declaration
                   for b in f.blocks for _ in b.instructions)
        libraries.append([self.name, took, parts.pop("optimise", 0.0), parts.pop("emit", 0.0),
                          size])

    compiler_machinery.PassManager._runPass = timed_pass
    library._optimize_final_module = part(library._optimize_final_module, "optimise")
    library._finalize_final_module = part(library._finalize_final_module, "emit")
    library.finalize = timed_finalize
    return passes, libraries


def child(name: str) -> None:
    """Run one scenario in this (fresh) process; print its phases and compiles as JSON (and,
    with MBSIM_BENCH_PASSES set, compiler_profile's tables)."""
    start = time.perf_counter()
    from numba.core import event

    profile = compiler_profile() if os.environ.get("MBSIM_BENCH_PASSES") else ({}, [])

    compiled, open_ = [], []

    class Timer(event.Listener):
        def on_start(self, ev) -> None:
            open_.append([time.process_time(), 0.0])

        def on_end(self, ev) -> None:
            began, inner = open_.pop()
            took = time.process_time() - began
            if open_:
                open_[-1][1] += took
            function = ev.data["dispatcher"].py_func
            compiled.append((f"{function.__module__}.{function.__qualname__}", took,
                             took - inner, str(tuple(ev.data["args"]))))

    event.register("numba:compile", Timer())
    from mbsim_ros import Simulator
    phases = {"import": time.perf_counter() - start}
    if name != "import":
        from mbsim_ros.model import load_urdf, shipped_urdf

        mark = time.perf_counter()
        if name == "compliant":
            sim = Simulator.from_scene(SCENE)
        else:
            sim = Simulator(load_urdf(shipped_urdf("arm7")), 1e-3, name)
        phases["construct"] = time.perf_counter() - mark
        mark = time.perf_counter()
        sim.step()
        phases["first step"] = time.perf_counter() - mark
    print(json.dumps({"phases": phases, "compiled": compiled, "passes": profile[0],
                      "libraries": profile[1]}))


@dataclass
class Install:
    """Where the children run mbsim_ros from: ``python`` started in ``cwd``, with ``path``
    first on PYTHONPATH (the checkout) or nothing (the package installed in python's venv)."""
    python: str
    cwd: Path
    path: Path | None


def environment(cache: str, variable: str, install: Install) -> dict:
    """The children's: their cache ``cache``; from the checkout, no shipped code (`make wheel`
    leaves some in it)."""
    env = dict(os.environ)
    if install.path is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(install.path), *filter(None, [os.environ.get("PYTHONPATH")])])
        env["MBSIM_ROS_SHIPPED_DIR"] = os.devnull
    env[variable] = cache
    return env


def install_wheel(wheel: str, venv: Path) -> Install:
    """A fresh venv in ``venv`` with ``wheel`` installed, its dependencies this interpreter's
    (a .pth file adds its site folder after the venv's own: the venv's mbsim_ros is found
    first)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    ours = next(p for p in sys.path if p.endswith("site-packages"))
    Path(site, "dependencies.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--ignore-installed",  # else pip uninstalls this interpreter's mbsim_ros
                    "--prefix", str(venv), wheel], check=True)
    return Install(str(python), venv, None)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_child(name: str, env: dict, install: Install) -> tuple[tuple[float, float], dict]:
    """((wall s, CPU s) of the child process, its report)."""
    start, cpu = time.perf_counter(), children_cpu()
    out = subprocess.run([install.python, __file__, "--child", name], env=env, check=True,
                         capture_output=True, text=True, cwd=install.cwd).stdout
    return (time.perf_counter() - start, children_cpu() - cpu), json.loads(out.splitlines()[-1])


def run_node(env: dict, install: Install) -> tuple[tuple[float, float], list[str]]:
    """(wall s from spawn to the node's first status line, the node's CPU s until it exits),
    and the lines it printed before that status line."""
    start, cpu = time.perf_counter(), children_cpu()
    process = subprocess.Popen([install.python, *NODE], env=env, text=True, cwd=install.cwd,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    before = []
    try:
        for line in process.stdout:
            if "| rate " in line:
                wall = time.perf_counter() - start
                process.terminate()
                process.wait(timeout=30)
                return (wall, children_cpu() - cpu), before
            before.append(line.rstrip())
            if time.perf_counter() - start > NODE_TIMEOUT:
                break
        raise RuntimeError("the node printed no status line:\n" + "\n".join(before))
    finally:
        process.terminate()
        process.wait(timeout=30)


def measure(name: str, cache: str, variable: str, install: Install) -> dict:
    """The cold and then the warm run of one scenario in the cache directory ``cache``."""
    env = environment(cache, variable, install)
    if name == "node":
        cold, told = run_node(env, install)
        warm, _ = run_node(env, install)
        return {"cold": cold, "warm": warm, "told": told}
    cold, report = run_child(name, env, install)
    warm, warm_report = run_child(name, env, install)
    return {"cold": cold, "warm": warm, "phases": report["phases"],
            "warm phases": warm_report["phases"], "compiled": report["compiled"],
            "passes": report["passes"], "libraries": report["libraries"]}


def kernel_table(results: dict, top: int) -> None:
    """Per function, from the first scenario that compiled it (the later ones that needed it
    too are listed): its signatures, self and inclusive CPU s summed over them."""
    rows: dict[str, list] = {}
    for name, result in results.items():
        for function, took, own, _ in result.get("compiled", []):
            row = rows.setdefault(function, [name, set(), 0, 0.0, 0.0])
            row[1].add(name)
            if name == row[0]:
                row[2] += 1
                row[3] += own
                row[4] += took
    print(f"\nper function, cold, CPU s (self: less its callees): top {top} of {len(rows)}")
    print(f"{'self s':>7} {'incl s':>7} {'sigs':>4}  function  [scenarios that compiled it]")
    for function, (_, names, signatures, own, took) in sorted(rows.items(),
                                                              key=lambda r: -r[1][3])[:top]:
        print(f"{own:7.2f} {took:7.2f} {signatures:4d}  {function}  [{', '.join(sorted(names))}]")


def compiler_tables(name: str, result: dict, top: int) -> None:
    """--passes: the cold run's passes and code libraries (compiler_profile)."""
    passes, libraries = result.get("passes"), result.get("libraries")
    if not passes:
        return
    print(f"\n{name}, cold: numba's passes, own CPU s (of {sum(passes.values()):.1f})")
    for pass_name, took in sorted(passes.items(), key=lambda kv: -kv[1])[:8]:
        print(f"{took:7.2f}  {pass_name}")
    finalised = sum(row[1] for row in libraries)
    print(f"{name}, cold: LLVM's finalisation of {len(libraries)} code libraries "
          f"{finalised:.1f} s (optimise {sum(r[2] for r in libraries):.1f}, emit "
          f"{sum(r[3] for r in libraries):.1f}; inside native_lowering); the largest:")
    for library, took, optimise, emit, size in sorted(libraries, key=lambda r: -r[1])[:top]:
        print(f"{took:7.2f} s (optimise {optimise:.2f}, emit {emit:.2f}) {size:7d} "
              f"instructions  {library}")


def compare(args) -> None:
    """--peer: each scenario cold and warm from this checkout and from the peer's, in turn."""
    trees = {"this": Install(sys.executable, ROOT, ROOT)}
    peer = Path(args.peer).resolve()
    trees[peer.name] = Install(sys.executable, peer, peer)
    for name in args.only.split(","):
        for _ in range(args.rounds):
            for label, install in trees.items():
                load = os.getloadavg()[0]
                with tempfile.TemporaryDirectory(prefix="mbsim-cold-") as cache:
                    result = measure(name, cache, args.cache_variable, install)
                (cold, cold_cpu), (hot, hot_cpu) = result["cold"], result["warm"]
                print(f"{name} [{label}]: cold {cold:.1f} s, CPU {cold_cpu:.1f} s; warm "
                      f"{hot:.1f} s, CPU {hot_cpu:.1f} s (load average {load:.1f})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--only", default=",".join(SCENARIOS))
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--cache-variable", default="MBSIM_ROS_CACHE_DIR",
                        help="the variable that points the cache at the empty directory "
                             "(NUMBA_CACHE_DIR for sources older than MBSIM_ROS_CACHE_DIR)")
    parser.add_argument("--wheel", help="run the package installed from this wheel "
                        "(make wheel), with the compiled code it carries")
    parser.add_argument("--passes", action="store_true",
                        help="also time numba's passes and LLVM's finalisation per code "
                             "library in the cold runs (compiler_profile)")
    parser.add_argument("--json", help="also write every scenario's results (the cold run's "
                        "compiles with their argument types) to this file")
    parser.add_argument("--peer", help="another checkout whose sources run each scenario in "
                        "turn with this one's (the per-function tables: this one's only)")
    parser.add_argument("--rounds", type=int, default=1, help="with --peer: turns per scenario")
    args = parser.parse_args()
    if args.child:
        return child(args.child)
    if args.peer:
        return compare(args)
    if args.passes:
        os.environ["MBSIM_BENCH_PASSES"] = "1"  # (the children inherit it)
    venv = Path(tempfile.mkdtemp(prefix="mbsim-wheel-")) if args.wheel else None
    install = install_wheel(args.wheel, venv) if venv else Install(sys.executable, ROOT, ROOT)
    print(f"mbsim_ros from {args.wheel or ROOT}, load average {os.getloadavg()[0]:.1f}",
          flush=True)
    results = {}
    for name in args.only.split(","):
        with tempfile.TemporaryDirectory(prefix="mbsim-cold-") as cache:
            result = results[name] = measure(name, cache, args.cache_variable, install)
        phases = " | ".join(f"{k} {v:.2f}" for k, v in result.get("phases", {}).items())
        warm = " | ".join(f"{k} {v:.2f}" for k, v in result.get("warm phases", {}).items())
        (cold, cold_cpu), (hot, hot_cpu) = result["cold"], result["warm"]
        print(f"{name}: cold {cold:.1f} s, CPU {cold_cpu:.1f} s "
              f"({phases or 'spawn to status line'}); warm {hot:.1f} s, CPU {hot_cpu:.1f} s "
              f"({warm or 'spawn to status line'})", flush=True)
        if name == "node":
            print("  printed before the first status line:\n    "
                  + "\n    ".join(result["told"] or ["(nothing)"]))
    if args.json:
        Path(args.json).write_text(json.dumps(results))
    kernel_table(results, args.top)
    for name, result in results.items():
        compiler_tables(name, result, min(args.top, 8))
    if venv is not None:
        shutil.rmtree(venv)


if __name__ == "__main__":
    main()
