"""A campaign on Ray: one task per batch of seeds (a few seconds of simulated time each), the
spec checked before Ray starts, the finished batches streamed to DIR/parts and merged into
DIR/results.parquet, a progress bar (runs, pass rate, ETA). No --address: a local Ray
instance on this machine's cores; with one, the cluster there. A run's row depends only on
(spec, campaign seed, run seed), so a retried task (a worker killed) writes the same rows and a
resumed campaign runs only the seeds that no finished batch holds."""
from __future__ import annotations

import math
import os
import time
from pathlib import Path

from .run import prepared, run
from .spec import load_spec
from .table import CampaignDir

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
MERGE_EVERY = 10.0  # s between merges of the parts into results.parquet
TASK_SECONDS = 2.0  # simulated seconds per task when the spec does not say


def run_batch(data: dict, campaign_seed: int, seeds: list[int]) -> list[dict]:
    """The rows of some seeds (what a Ray task does; also the serial loop's body)."""
    prep = prepared(data)
    return [run(prep, campaign_seed, seed) for seed in seeds]


def batches(seeds: list[int], size: int) -> list[list[int]]:
    return [seeds[k:k + size] for k in range(0, len(seeds), size)]


def batch_size(spec, runs_per_task: int | None) -> int:
    if runs_per_task:
        return runs_per_task
    if spec.runs_per_task:
        return spec.runs_per_task
    return max(1, math.ceil(TASK_SECONDS / spec.duration))


def start_ray(address: str | None, workers: int | None) -> None:
    """ray.init: join ``address``, or start a local instance of ``workers`` CPUs (default:
    the machine's). The workers import this package from where the driver does."""
    import ray

    if ray.is_initialized():
        return
    env = {"env_vars": {"PYTHONPATH": os.pathsep.join(
        p for p in (PACKAGE_ROOT, os.environ.get("PYTHONPATH", "")) if p)}}
    if address:
        ray.init(address=address, runtime_env=env, log_to_driver=False)
    else:
        ray.init(num_cpus=workers, include_dashboard=False, runtime_env=env,
                 log_to_driver=False)


def run_campaign(spec, runs: int, out: str | Path, *, address: str | None = None,
                 workers: int | None = None, seed: int = 0, runs_per_task: int | None = None,
                 progress: bool = True) -> "pyarrow.Table":  # noqa: F821
    """Run (or finish) a campaign of seeds 0..runs-1 into ``out``; the results table.
    SchemaError (a ValueError) for a bad spec, before any run or Ray start."""
    checked, data = load_spec(spec)
    prepared(data)  # the checks against the model, here, before anything starts
    directory = CampaignDir(out)
    directory.open(data, seed)
    missing = sorted(set(range(runs)) - directory.done_seeds())
    if missing:
        start_ray(address, workers)
        _drive(directory, data, seed, batches(missing, batch_size(checked, runs_per_task)),
               runs, workers, progress)
    return directory.merge()


def _drive(directory: CampaignDir, data: dict, seed: int, work: list[list[int]], runs: int,
           workers: int | None, progress: bool) -> None:
    """Submit the batches (at most ``workers`` x 2 in flight) and write each as it finishes."""
    import ray

    task = ray.remote(max_retries=5, retry_exceptions=False, num_cpus=1)(run_batch)
    limit = 2 * (workers or int(ray.cluster_resources().get("CPU", 1)))
    done_before = runs - sum(len(b) for b in work)
    bar = Progress(runs, done_before, progress)
    pending, queue, last_merge = {}, list(work), time.monotonic()
    data_ref = ray.put(data)
    try:
        while queue or pending:
            while queue and len(pending) < limit:
                seeds = queue.pop(0)
                pending[task.remote(data_ref, seed, seeds)] = seeds
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                pending.pop(ref)
                rows = ray.get(ref)
                directory.write_part(rows)
                bar.update(rows)
            if time.monotonic() - last_merge > MERGE_EVERY:
                directory.merge()
                last_merge = time.monotonic()
    finally:
        bar.close()


class Progress:
    """tqdm's bar: runs done of all, pass rate so far, ETA."""

    def __init__(self, total: int, done: int, enabled: bool) -> None:
        from tqdm import tqdm

        self.passed = self.seen = 0
        self.bar = tqdm(total=total, initial=done, unit="run", disable=not enabled,
                        dynamic_ncols=True)

    def update(self, rows: list[dict]) -> None:
        self.seen += len(rows)
        self.passed += sum(bool(r["passed"]) for r in rows)
        self.bar.set_postfix_str(f"pass {100.0 * self.passed / self.seen:.1f} %")
        self.bar.update(len(rows))

    def close(self) -> None:
        self.bar.close()


def serial(spec, runs: int, seed: int = 0) -> list[dict]:
    """The same runs in a plain loop in this process (bench/campaign.py's reference)."""
    _, data = load_spec(spec)
    return run_batch(data, seed, list(range(runs)))
