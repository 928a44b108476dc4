"""What numba loads or compiles after a Simulator is built (docs/SPEED.md, "Nothing loaded after
construction"): every legged robot of example-robot-data, and the quadrupeds of pybullet_data
when pybullet is installed (`make bench`), standing (compliant and rigid, as
bench/standing.py) and landing from 2 cm (compliant, as bench/landing.py), each run in a
process of its own, so that nothing is loaded before it (a warm cache: one run of each kind
first, discarded, fills it).

Per robot and run: the construction (ms) and the functions it loaded from the cache; the
functions loaded and compiled at the first step and after it (the target: none after it); the
first step with contacts (ms: where a first touchdown loaded its kernels); the slowest step
after the first ten (ms; target 5). In brackets, the CPU time of this thread (on a shared
machine the wall clock also counts the neighbours' time slices). Counts from numba's events
(_jit.CompilerActivity).

    python bench/first_steps.py [--robots solo12 talos ...] [--seconds 0.5] [--without-preload]

``--without-preload``: the Simulator loads nothing at construction (the behaviour before it
did), for the figures before and after.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: see mbsim_ros/__init__.py

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mbsim_ros.scenarios import CANNOT_STAND, LEGGED  # noqa: E402

WARM_UP = 10  # steps left out of the slowest-step figure
RUNS = ("stand compliant", "stand rigid", "land")
# pybullet_data's quadrupeds, by the label the bench gives them
PYBULLET = {"pybullet:aliengo": "aliengo/aliengo.urdf", "pybullet:a1": "a1/a1.urdf",
            "pybullet:laikago": "laikago/laikago_toes_zup.urdf",
            "pybullet:mini_cheetah": "mini_cheetah/mini_cheetah.urdf",
            "pybullet:minitaur": "quadruped/minitaur.urdf"}


def pybullet_robots() -> list[str]:
    """The labels of PYBULLET when pybullet_data is installed, else none (said so)."""
    try:
        import pybullet_data  # noqa: F401
    except ImportError:
        print("pybullet_data is not installed (`make bench` installs pybullet): its quadrupeds "
              "are left out")
        return []
    return list(PYBULLET)


def scene_of(label: str):
    """A pybullet quadruped's standing scene (None: a robot of scenarios.LEGGED)."""
    if label not in PYBULLET:
        return None
    import pybullet_data

    from mbsim_ros.contact.standing import standing_scene

    return standing_scene(Path(pybullet_data.getDataPath()) / PYBULLET[label])


def run(label: str, kind: str, seconds: float, preload: bool) -> dict:
    """One run in this process, every Simulator step counted and timed."""
    from mbsim_ros import sim as sim_module
    from mbsim_ros._jit import CompilerActivity
    from mbsim_ros.scenarios import land, stand

    if not preload:
        sim_module.load_cached = lambda functions: 0
    Simulator = sim_module.Simulator
    built, steps = {}, []
    construct, advance = Simulator.__init__, Simulator.step

    def timed_construction(sim, *args, **kwargs):
        before = activity.loads, activity.compiles
        start, cpu = time.perf_counter(), time.thread_time()
        construct(sim, *args, **kwargs)
        built.update(seconds=time.perf_counter() - start, cpu=time.thread_time() - cpu,
                     loads=activity.loads - before[0], compiles=activity.compiles - before[1])

    def counted_step(sim, tau=None):
        before = activity.loads, activity.compiles
        start, cpu = time.perf_counter(), time.thread_time()
        info = advance(sim, tau)
        elapsed, cpu = time.perf_counter() - start, time.thread_time() - cpu
        steps.append((elapsed, cpu, activity.loads - before[0], activity.compiles - before[1],
                      bool(sim.contacts())))
        return info

    Simulator.__init__, Simulator.step = timed_construction, counted_step
    scene = scene_of(label)
    with CompilerActivity() as activity:
        if kind == "land":
            land(label, 0.0, 0.02, seconds, scene)
        else:
            stand(label, kind.split()[1], seconds, scene=scene)
    times, cpu, loads, compiles, touching = (np.array(column) for column in zip(*steps))
    first_contact = int(np.argmax(touching)) if touching.any() else -1
    return {"construction": built, "first": [int(loads[0]), int(compiles[0])],
            "after": [int(loads[1:].sum()), int(compiles[1:].sum())],
            "late": [int(k) for k in np.flatnonzero(loads[1:] + compiles[1:]) + 1][:5],
            "contact_step": first_contact,
            "contact_ms": 1e3 * float(times[first_contact]) if first_contact >= 0 else None,
            "slowest_ms": 1e3 * float(times[WARM_UP:].max()),
            "slowest_cpu_ms": 1e3 * float(cpu[WARM_UP:].max()), "steps": len(times)}


def in_process_of_its_own(label: str, kind: str, seconds: float, preload: bool) -> dict:
    command = [sys.executable, __file__, "--child", label, kind, "--seconds", str(seconds)]
    done = subprocess.run(command + ([] if preload else ["--without-preload"]),
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", nargs="*",
                        help="labels of scenarios.LEGGED and PYBULLET (default: all of them)")
    parser.add_argument("--runs", nargs="*", default=list(RUNS), choices=RUNS)
    parser.add_argument("--seconds", type=float, default=0.5)
    parser.add_argument("--without-preload", action="store_true")
    parser.add_argument("--child", nargs=2, metavar=("ROBOT", "RUN"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    preload = not args.without_preload
    if args.child:
        print(json.dumps(run(*args.child, args.seconds, preload)))
        return
    robots = args.robots or [*LEGGED, *pybullet_robots()]
    for kind in args.runs:  # the cache filled for every kind of run (discarded)
        in_process_of_its_own("solo12", kind, 0.1, preload)
    print(f"{args.seconds:g} s at 1 ms per run, each in a process of its own, "
          f"{'with' if preload else 'without'} the preload at construction")
    print("| robot | run | construction ms (CPU ms) | loaded at construction | first step: loads / "
          "compiles | after it: loads / compiles | first contact: step, ms | slowest step "
          "after 10, ms (CPU ms) |")
    print("|---|---|---|---|---|---|---|---|")
    for label in robots:
        if label in CANNOT_STAND:
            print(f"| {label} | | left out: {CANNOT_STAND[label]} | | | | | |")
            continue
        for kind in args.runs:
            r = in_process_of_its_own(label, kind, args.seconds, preload)
            if "error" in r:
                print(f"| {label} | {kind} | failed: {r['error']} | | | | | |", flush=True)
                continue
            built = r["construction"]
            late = f" (steps {', '.join(map(str, r['late']))})" if r["late"] else ""
            contact = f"{r['contact_step']}, {r['contact_ms']:.1f}" if r["contact_ms"] else "-"
            print(f"| {label} | {kind} | {1e3 * built['seconds']:.0f} "
                  f"({1e3 * built['cpu']:.0f}) | {built['loads']} | "
                  f"{r['first'][0]} / {r['first'][1]} | {r['after'][0]} / {r['after'][1]}{late} "
                  f"| {contact} | {r['slowest_ms']:.1f} ({r['slowest_cpu_ms']:.1f}) |",
                  flush=True)


if __name__ == "__main__":
    main()
