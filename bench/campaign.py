"""Campaign throughput and cluster equality (docs/CAMPAIGNS.md#figures):

1. runs per second of the Solo12 push example (1.5 s simulated per run) in a plain serial
   loop against a campaign on a local Ray instance of 1 and of 2 workers: Ray's overhead;
2. a two-node Ray cluster on this machine started as CAMPAIGNS.md says (token
   authentication, ``ray start --head --block`` and ``ray start --address --block``, one CPU
   each: LocalCluster, stopped by the process ids it started), the campaign submitted to it by
   address: its wall time end to end and its rate once the workers are up, the table equal to
   the local run's bit for bit.

    python bench/campaign.py [--runs 24] [--skip-cluster]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mbsim_ros.campaign.cluster import start_ray  # noqa: E402
from mbsim_ros.campaign.local_cluster import LocalCluster  # noqa: E402
from mbsim_ros.campaign.runner import run_campaign, serial  # noqa: E402

SPEC = str(ROOT / "examples" / "campaigns" / "solo12_push.yaml")


def untimed(table) -> str:
    return repr([{k: v for k, v in r.items() if k != "wall_time"} for r in table.to_pylist()])


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=24)
    parser.add_argument("--skip-cluster", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        serial(SPEC, 1)  # warm: the compiled kernels loaded
        began = time.perf_counter()
        rows = serial(SPEC, args.runs)
        serial_rate = args.runs / (time.perf_counter() - began)
        print(f"serial loop: {serial_rate:.3f} runs/s ({args.runs} runs of 1.5 s simulated)")
        for workers in (1, 2):
            rate, elapsed, table, _ = timed(args.runs, workers, out / f"w{workers}")
            same = untimed(table) == repr([{k: v for k, v in r.items() if k != "wall_time"}
                                           for r in rows])
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
