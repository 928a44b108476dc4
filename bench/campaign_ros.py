"""A user's ROS 2 controller in the loop at campaign scale (docs/CAMPAIGNS.md, "Figures"):

1. the per-tick cost of lockstep over DDS (state out, one command back) next to the same law
   run in process, from serial runs in this process (the controller's start and the wait for
   DDS matching timed apart);
2. a campaign of the example ROS controller (examples/controllers/solo12_push.yaml) on a local
   Ray instance of 2 workers, ``restart: per_run`` and ``per_worker``: wall time, runs/s, and
   the two tables equal bit for bit (the controller is stateless);
3. the same campaign (per_worker) on a two-node Ray cluster on this machine (LocalCluster: the
   recipe of CAMPAIGNS.md), each node's workers on DDS domains of their own: the table equal
   to the local one bit for bit.

    python bench/campaign_ros.py [--runs 200] [--serial-runs 4] [--skip-cluster]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "test" / "campaign_helpers"))

from mbsim_ros.campaign.local_cluster import LocalCluster  # noqa: E402
from mbsim_ros.campaign.runner import run_campaign, serial  # noqa: E402
from mbsim_ros.campaign.spec import absolute, read_spec  # noqa: E402

SPEC = ROOT / "examples" / "controllers" / "solo12_push.yaml"


def spec(restart: str = "per_run") -> dict:
    data, base = read_spec(SPEC)
    data = absolute(data, base)
    data["controller"] = {**data["controller"], "restart": restart}
    return data


def in_process() -> dict:
    data = spec()
    data["controller"] = {"type": "python", "function": "solo12_pd_in_process:make",
                          "factory": True, "options": {"kp": 10.0, "kd": 0.3}}
    return data


def per_tick(runs: int) -> None:
    ticks = runs * round(spec()["duration"] / spec()["dt"])
    serial(in_process(), 1)  # compiled kernels and imports loaded
    began = time.perf_counter()
    serial(in_process(), runs)
    local = (time.perf_counter() - began) / ticks
    serial(spec("per_worker"), 1)  # the link and the controller started once
    began = time.perf_counter()
    rows = serial(spec("per_worker"), runs)
    ros = (time.perf_counter() - began) / ticks
    began = time.perf_counter()
    serial(spec("per_run"), runs)
    start = (time.perf_counter() - began - ros * ticks) / runs
    print(f"per tick, {runs} runs of {ticks // runs} ticks (Solo12, compliant, 1 ms):")
    print(f"  in-process law                {local * 1e6:8.0f} us")
    print(f"  ROS controller, lockstep DDS  {ros * 1e6:8.0f} us  (+{(ros - local) * 1e6:.0f} us"
          f" round trip)")
    print(f"  per_run start of a controller {start:8.2f} s per run")
    print(f"  rows passed: {sum(r['passed'] for r in rows)} of {runs}")


def campaign(runs: int, restart: str, out: Path, address: str | None = None):
    """The campaign's untimed rows; prints its wall time (Ray's start included) and rate."""
    began = time.perf_counter()
    table = run_campaign(spec(restart), runs, out / restart, workers=None if address else 2,
                         address=address, progress=False)
    elapsed = time.perf_counter() - began
    passed = sum(table.column("passed").to_pylist())
    print(f"  {restart:10s} {runs} runs in {elapsed:7.1f} s: {runs / elapsed:5.2f} runs/s, "
          f"{passed} passed")
    return [{k: v for k, v in r.items() if k != "wall_time"} for r in table.to_pylist()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--serial-runs", type=int, default=4)
    parser.add_argument("--skip-cluster", action="store_true")
    args = parser.parse_args()
    per_tick(args.serial_runs)
    print(f"campaign of {SPEC.relative_to(ROOT)} on local Ray, 2 workers:")
    with tempfile.TemporaryDirectory() as folder:
        run_rows = campaign(args.runs, "per_run", Path(folder))
        worker_rows = campaign(args.runs, "per_worker", Path(folder))
        same = repr(run_rows) == repr(worker_rows)
        print(f"  per_run and per_worker tables equal bit for bit: {same}")
        if not args.skip_cluster:
            print("the same on a two-node cluster here (ray start --head / --address, 1 CPU "
                  "each):")
            with LocalCluster(nodes=2, cpus=1) as cluster:
                cluster_rows = campaign(args.runs, "per_worker", Path(folder) / "cluster",
                                        cluster.address)
            clustered = repr(cluster_rows) == repr(worker_rows)
            print(f"  table equal to the local one bit for bit: {clustered}")
            same = same and clustered
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
