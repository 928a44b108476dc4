"""A campaign on Ray: one task per batch of seeds (a few seconds of simulated time each), the
spec checked before Ray starts, the finished batches streamed to DIR/parts and merged into
DIR/results.parquet, a progress bar (runs, pass rate, ETA). No --address: a Ray instance of
the campaign's own on this machine's cores, stopped at the end; with one (or RAY_ADDRESS), the
cluster there (cluster.py). A run's row depends only on (spec, campaign seed, run seed), so a
retried task (a worker killed) writes the same rows and a resumed campaign runs only the seeds
that no finished batch holds."""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

from .cluster import PACKAGE_ROOT  # noqa: F401 - the tests and benches import it from here
from .cluster import importable, module_folders, start_ray, worker_env
from .run import prepared, run
from .spec import load_spec
from .table import CampaignDir

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


def run_campaign(spec, runs: int, out: str | Path, *, address: str | None = None,
                 workers: int | None = None, seed: int = 0, runs_per_task: int | None = None,
                 progress: bool = True, verbose: bool = False) -> "pyarrow.Table":  # noqa: F821
    """Run (or finish) a campaign of seeds 0..runs-1 into ``out``; the results table.
    SchemaError (a ValueError) for a bad spec, before any run or Ray start; RayUnavailable
    when the cluster asked for cannot be joined. Ray started here (not by the caller) is
    stopped at the end; ``verbose`` lets Ray's own messages through."""
    folders = module_folders(spec)
    importable(folders)  # a python controller's module beside the spec or in the working dir
    checked, data = load_spec(spec)
    prepared(data)  # the checks against the model, here, before anything starts
    directory = CampaignDir(out)
    directory.open(data, seed, folders)
    missing = sorted(set(range(runs)) - directory.done_seeds())
    if not missing:
        return directory.merge()
    import ray

    own = not ray.is_initialized()
    if own:
        where = start_ray(address, workers, verbose)
        if progress:
            print(where, file=sys.stderr)
    try:
        _drive(directory, data, seed, batches(missing, batch_size(checked, runs_per_task)),
               runs, workers, progress, worker_env(folders))
    finally:
        if own:
            ray.shutdown()
    return directory.merge()


def _drive(directory: CampaignDir, data: dict, seed: int, work: list[list[int]], runs: int,
           workers: int | None, progress: bool, runtime_env: dict | None = None) -> None:
    """Submit the batches (at most ``workers`` x 2 in flight) and write each as it finishes;
    ``runtime_env``: the tasks' (cluster.worker_env)."""
    import ray

    task = ray.remote(max_retries=5, retry_exceptions=False, num_cpus=1,
                      runtime_env=runtime_env)(run_batch)
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
