"""Per-call cost of our rnea / crba / aba against pinocchio's, measured in this process, and the
cold start of a new process. Run: `make bench` or `.venv/bin/python bench/dynamics.py [--quick]`.

Targets: ours / pinocchio <= 3 on the 7-DOF arm and <= 2 at 100 links and above,
called from Python (argument checks and call overhead included on both sides); cold start
(import, load the default arm, one aba, numba cache warm) <= 1.5 s.
"""
from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import timeit

import numpy as np
import pinocchio as pin

from mbsim_ros.dynamics import aba, crba, rnea
from mbsim_ros.model import chain_urdf, example_robot_urdf, load_urdf, shipped_urdf

# pinocchio 4.1's Data grows roughly cubically with the depth of a chain (0.5 GB at 200 links,
# 4 GB at 400): deeper chains are measured for us only.
PINOCCHIO_MAX_DEPTH = 300

COLD_START = """
import numpy as np
import mbsim_ros
from mbsim_ros.model import load_urdf, shipped_urdf
from mbsim_ros.dynamics import aba
m = load_urdf(shipped_urdf("arm7"))
aba(m, m.neutral(), np.zeros(m.nv), np.zeros(m.nv))
"""


def per_call_us(fn, budget_s: float) -> float:
    """Median over 7 repeats of the mean per-call time, the count sized to the budget."""
    fn()
    number = max(1, int(budget_s / 7 / max(timeit.timeit(fn, number=3) / 3, 1e-9)))
    return statistics.median(timeit.repeat(fn, number=number, repeat=7)) / number * 1e6


def workloads(quick: bool):
    yield "arm7 (7 DOF)", str(shipped_urdf("arm7")), False, 0
    yield "talos (free-flyer, 38 DOF)", str(example_robot_urdf("talos")), True, 0
    for n in ((10, 100) if quick else (10, 100, 300, 1000)):
        yield f"chain {n}", chain_urdf(n), False, n


def pinocchio_model(source: str, floating: bool):
    text = source if source.lstrip().startswith("<") else open(source).read()
    return pin.buildModelFromXML(text, pin.JointModelFreeFlyer()) if floating else \
        pin.buildModelFromXML(text)


def bench_model(label, source, floating, depth, budget_s):
    model = load_urdf(source, floating_base=floating)
    rng = np.random.default_rng(0)
    q = model.neutral()
    first = 7 if floating else 0  # past the free-flyer: revolute joints only in these models
    q[first:] += rng.uniform(-1.0, 1.0, model.nq - first)
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    rows = []
    pm = data = None
    if depth <= PINOCCHIO_MAX_DEPTH:
        pm = pinocchio_model(source, floating)
        data = pm.createData()
    ours = {"rnea": lambda: rnea(model, q, v, a), "crba": lambda: crba(model, q),
            "aba": lambda: aba(model, q, v, a)}
    theirs = {"rnea": lambda: pin.rnea(pm, data, q, v, a), "crba": lambda: pin.crba(pm, data, q),
              "aba": lambda: pin.aba(pm, data, q, v, a)}
    for name in ("rnea", "crba", "aba"):
        t_ours = per_call_us(ours[name], budget_s)
        t_pin = per_call_us(theirs[name], budget_s) if pm is not None else float("nan")
        rows.append((label, name, t_ours, t_pin, t_ours / t_pin))
    return rows


def cold_start_s(runs: int = 5) -> float:
    """Median wall time of a fresh interpreter doing COLD_START (after one warm-up run that
    fills the numba cache)."""
    import time

    subprocess.run([sys.executable, "-c", COLD_START], check=True)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", COLD_START], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer models, shorter timing")
    args = parser.parse_args(argv)
    budget = 0.3 if args.quick else 1.5
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"numpy {np.__version__}, pinocchio {pin.__version__}")
    print(f"{'model':28s} {'algo':5s} {'ours [us]':>11s} {'pinocchio [us]':>15s} "
          f"{'ours/pin':>9s}")
    for label, source, floating, depth in workloads(args.quick):
        for row in bench_model(label, source, floating, depth, budget):
            ratio = "n/a" if np.isnan(row[4]) else f"{row[4]:.2f}"
            t_pin = "n/a" if np.isnan(row[3]) else f"{row[3]:.2f}"
            print(f"{row[0]:28s} {row[1]:5s} {row[2]:11.2f} {t_pin:>15s} {ratio:>9s}",
                  flush=True)
    if any(depth > PINOCCHIO_MAX_DEPTH for *_, depth in workloads(args.quick)):
        print(f"(pinocchio n/a: its Data for a chain deeper than {PINOCCHIO_MAX_DEPTH} links "
              f"does not fit in memory here)")
    print(f"cold start (import, load arm7, one aba; numba cache warm): "
          f"{cold_start_s(3 if args.quick else 5):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
