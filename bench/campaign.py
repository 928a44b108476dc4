"""Campaign throughput and cluster equality (docs/CAMPAIGNS.md#figures):

1. runs per second of the Solo12 push example (1.5 s simulated per run) in a plain serial
   loop against a campaign on a local Ray instance of 1 and of 2 workers: Ray's overhead;
2. a two-node Ray cluster on this machine started as CAMPAIGNS.md says (token
   authentication, ``ray start --head --block`` and ``ray start --address --block``, one CPU
   each: LocalCluster, stopped by the process ids it started), the campaign submitted to it by
   address: its wall time end to end and its rate once the workers are up, the table equal to
   the local run's bit for bit.

3. with --compiled: runs per second of the same runs in the serial loop, each run's steps in
   one compiled loop (campaign/ticks.py) against the Python loop over sim.step
   (run(compiled=False)), side by side in this process, alternating, best of --repeats; the
   rows equal bit for bit, and the load average.

    python bench/campaign.py [--runs 24] [--skip-cluster] [--compiled [--repeats 3]]
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mbsim_ros.campaign.cluster import start_ray  # noqa: E402
from mbsim_ros.campaign.local_cluster import LocalCluster  # noqa: E402
from mbsim_ros.campaign.run import prepared, run  # noqa: E402
from mbsim_ros.campaign.runner import run_campaign, serial  # noqa: E402
from mbsim_ros.campaign.spec import load_spec  # noqa: E402

SPEC_NAME = "examples/campaigns/solo12_push.yaml"
SPEC = str(ROOT / SPEC_NAME)


def untimed(table) -> str:
    return untimed_rows(table.to_pylist())


def untimed_rows(rows: list[dict]) -> str:
    return repr([{k: v for k, v in r.items() if k != "wall_time"} for r in rows])


def timed(runs: int, workers: int | None, out: Path, address: str | None = None):
    """(runs per second, seconds, table, seconds from ray.init to the warm-up's end) of a
    campaign on a fresh local Ray instance of ``workers`` CPUs, or on the cluster at
    ``address``; Ray's start (or connection) and the workers' first imports are outside the
    timing (one warm-up campaign of a run per CPU first, by the same driver)."""
    import ray

    began = time.perf_counter()
    start_ray(address, workers)
    cpus = int(ray.cluster_resources()["CPU"])
    run_campaign(SPEC, cpus, out / "warm", workers=workers, runs_per_task=1, progress=False)
    warm = time.perf_counter() - began
    began = time.perf_counter()
    table = run_campaign(SPEC, runs, out / "campaign", workers=workers, runs_per_task=1,
                         progress=False)
    elapsed = time.perf_counter() - began
    ray.shutdown()
    return runs / elapsed, elapsed, table, warm


def busy(table) -> float:
    """The runs' own wall time, summed (each row's ``wall_time``: the run inside its worker)."""
    return float(sum(table.column("wall_time").to_pylist()))


def two_node(runs: int, out: Path, local) -> bool:
    """The campaign on a head and a second node started here as CAMPAIGNS.md says, by
    address, against ``local`` (the table of the local 2-worker campaign)."""
    with LocalCluster(nodes=2, cpus=1) as cluster:
        rate, elapsed, table, warm = timed(runs, None, out / "cluster", cluster.address)
    same = untimed(table) == untimed(local)
    print(f"two-node cluster (ray start --head / --address, 1 CPU each): {rate:.3f} runs/s, "
          f"{runs} runs in {elapsed:.2f} s once the workers are up ({warm:.2f} s before: "
          f"connecting and the warm-up runs); table equal to the local run bit for bit: {same}")
    return same


def compiled_against_python(runs: int, repeats: int) -> bool:
    """Runs per second of the serial loop's runs, compiled and in Python, side by side."""
    prep = prepared(load_spec(SPEC)[1])
    for compiled in (False, True):  # warm: the kernels loaded, the compiled loop's too
        run(prep, 0, 0, compiled=compiled)
    best, tables = {False: math.inf, True: math.inf}, {}
    for _ in range(repeats):
        for compiled in (False, True):
            began = time.perf_counter()
            tables[compiled] = [run(prep, 0, seed, compiled=compiled) for seed in range(runs)]
            best[compiled] = min(best[compiled], time.perf_counter() - began)
    same = untimed_rows(tables[True]) == untimed_rows(tables[False])
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{runs} runs of {SPEC_NAME}, best of {repeats}: Python loop over sim.step "
          f"{runs / best[False]:.2f} runs/s, compiled loop {runs / best[True]:.2f} runs/s: "
          f"{best[False] / best[True]:.2f}x; rows equal bit for bit: {same}; "
          f"load average {load}")
    return same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=24)
    parser.add_argument("--skip-cluster", action="store_true")
    parser.add_argument("--compiled", action="store_true",
                        help="only the compiled loop against the Python loop (3. above)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.compiled:
        return 0 if compiled_against_python(args.runs, args.repeats) else 1
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        serial(SPEC, 1)  # warm: the compiled kernels loaded
        began = time.perf_counter()
        rows = serial(SPEC, args.runs)
        serial_rate = args.runs / (time.perf_counter() - began)
        print(f"serial loop: {serial_rate:.3f} runs/s ({args.runs} runs of 1.5 s simulated)")
        for workers in (1, 2):
            rate, elapsed, table, _ = timed(args.runs, workers, out / f"w{workers}")
            same = untimed(table) == untimed_rows(rows)
            # Ray's own cost: the campaign's wall time beyond the runs' own, per worker (free
            # of the run-to-run speed noise that the ratio of two separate timings carries)
            own = busy(table) / workers
            print(f"Ray, {workers} worker(s): {rate:.3f} runs/s, {rate / serial_rate:.3f} x "
                  f"serial; the runs' own time {own:.2f} s per worker of {elapsed:.2f} s: "
                  f"Ray's overhead {100.0 * (elapsed / own - 1.0):+.1f} %; table equal to "
                  f"serial: {same}")
        if not args.skip_cluster:
            two_node(args.runs, out, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
