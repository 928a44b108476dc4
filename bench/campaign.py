"""Campaign throughput and cluster equality (docs/CAMPAIGNS.md#figures):

1. runs per second of the Solo12 push example (1.5 s simulated per run) in a plain serial
   loop against a campaign on a local Ray instance of 1 and of 2 workers: Ray's overhead;
2. a two-node Ray cluster on this machine (``ray start --head`` and a second ``ray start
   --address`` with its own ports), the campaign submitted to it by address: the same table
   as the local run, bit for bit.

    python bench/campaign.py [--runs 24] [--skip-cluster]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mbsim_ros.campaign.runner import run_campaign, serial, start_ray  # noqa: E402

SPEC = str(ROOT / "examples" / "campaigns" / "solo12_push.yaml")
HEAD_PORT = 6391


def untimed(table) -> str:
    return repr([{k: v for k, v in r.items() if k != "wall_time"} for r in table.to_pylist()])


def timed_local(runs: int, workers: int, out: Path):
    """(runs per second, seconds, table) of a campaign on a fresh local Ray instance; the
    instance's start and the workers' first imports are outside the timing (one warm-up
    campaign)."""
    import ray

    start_ray(None, workers)
    run_campaign(SPEC, workers, out / "warm", workers=workers, runs_per_task=1, progress=False)
    began = time.perf_counter()
    table = run_campaign(SPEC, runs, out / "campaign", workers=workers, runs_per_task=1,
                         progress=False)
    elapsed = time.perf_counter() - began
    ray.shutdown()
    return runs / elapsed, elapsed, table


def busy(table) -> float:
    """The runs' own wall time, summed (each row's ``wall_time``: the run inside its worker)."""
    return float(sum(table.column("wall_time").to_pylist()))


def two_node(runs: int, out: Path) -> bool:
    """The campaign on a head and a worker node started here by ``ray start``, by address."""
    import ray

    ray_cmd = str(Path(sys.executable).parent / "ray")
    env = {"PYTHONPATH": str(ROOT)}
    head = [ray_cmd, "start", "--head", f"--port={HEAD_PORT}", "--num-cpus=1",
            "--include-dashboard=false", "--node-manager-port=6392",
            "--object-manager-port=6393", "--min-worker-port=11000", "--max-worker-port=11499"]
    worker = [ray_cmd, "start", f"--address=127.0.0.1:{HEAD_PORT}", "--num-cpus=1",
              "--node-manager-port=6394", "--object-manager-port=6395",
              "--min-worker-port=11500", "--max-worker-port=11999"]
    full_env = {**os.environ, **env}
    try:
        subprocess.run(head, check=True, env=full_env, capture_output=True)
        subprocess.run(worker, check=True, env=full_env, capture_output=True)
        run_campaign(SPEC, runs, out / "cluster", address=f"127.0.0.1:{HEAD_PORT}",
                     runs_per_task=1, progress=False)
        nodes = len([n for n in ray.nodes() if n["Alive"]])
        ray.shutdown()
    finally:
        subprocess.run([ray_cmd, "stop", "--force"], env=full_env, capture_output=True)
    local = run_campaign(SPEC, runs, out / "cluster-local", workers=2, runs_per_task=1,
                         progress=False)
    import pyarrow.parquet as pq

    cluster = pq.read_table(out / "cluster" / "results.parquet")
    print(f"two-node cluster ({nodes} nodes alive): {runs} runs, table equal to the local "
          f"run bit for bit: {untimed(cluster) == untimed(local)}")
    return untimed(cluster) == untimed(local)


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
            rate, elapsed, table = timed_local(args.runs, workers, out / f"w{workers}")
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
            two_node(args.runs, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
