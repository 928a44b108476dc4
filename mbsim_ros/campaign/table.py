"""The results on disk: DIR/campaign.json (the spec mapping, the campaign seed, the number of
runs), DIR/parts/ (one Parquet file per finished batch of runs, each written whole by a rename,
so an interrupted campaign leaves only whole batches) and DIR/results.parquet (the parts merged,
one row per seed, sorted), DIR/logs/seed-S.log (what a ROS controller process printed during run
S). Resuming reads the seeds the parts hold."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .run import LOG_KEY, spec_digest

RESULTS = "results.parquet"


class CampaignDir:
    """A campaign's directory: ``open`` checks that it holds this campaign (or nothing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.parts = self.path / "parts"

    @property
    def results(self) -> Path:
        return self.path / RESULTS

    def open(self, data: dict, campaign_seed: int, module_folders: list[str] = ()) -> None:
        """Create the directory, or check that it is this spec's and seed's (ValueError).
        ``module_folders``: where its Python modules were found (kept for a replay)."""
        self.parts.mkdir(parents=True, exist_ok=True)
        meta = self.path / "campaign.json"
        mine = {"spec": data, "seed": int(campaign_seed), "digest": spec_digest(data),
                "module_folders": list(module_folders)}
        if meta.exists():
            theirs = json.loads(meta.read_text())
            if (theirs.get("digest"), theirs.get("seed")) != (mine["digest"], mine["seed"]):
                raise ValueError(f"{self.path} holds another campaign (spec or --seed differ); "
                                 f"give another --out")
            return
        _write_atomic(meta, json.dumps(mine, indent=1).encode())

    def meta(self) -> dict:
        """The campaign.json of an existing campaign (ValueError when there is none)."""
        meta = self.path / "campaign.json"
        if not meta.exists():
            raise ValueError(f"{self.path}: not a campaign directory (no campaign.json)")
        return json.loads(meta.read_text())

    def done_seeds(self) -> set[int]:
        """The seeds of every finished batch."""
        done: set[int] = set()
        for part in sorted(self.parts.glob("*.parquet")):
            done.update(pq.read_table(part, columns=["seed"]).column("seed").to_pylist())
        return done

    def write_part(self, rows: list[dict]) -> None:
        """One finished batch, whole or not at all (its controllers' output first, into
        DIR/logs: the rows carry it, not the table)."""
        self.write_logs(rows)
        table = pa.Table.from_pylist(rows)
        name = f"part-{rows[0]['seed']:09d}-{len(rows)}.parquet"
        tmp = self.parts / (name + ".tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, self.parts / name)

    def write_logs(self, rows: list[dict]) -> None:
        """Each row's controller output (taken out of the row) into DIR/logs/seed-S.log."""
        for row in rows:
            log = row.pop(LOG_KEY, None)
            if log is not None:
                folder = self.path / "logs"
                folder.mkdir(exist_ok=True)
                _write_atomic(folder / f"seed-{row['seed']}.log", log.encode())

    def merge(self) -> pa.Table:
        """results.parquet from the parts: one row per seed (a batch that a retried task wrote
        twice counts once), sorted by seed."""
        tables = [pq.read_table(part) for part in sorted(self.parts.glob("*.parquet"))]
        if not tables:
            return pa.table({})
        table = pa.concat_tables(tables, promote_options="default")
        seeds = table.column("seed").to_pylist()
        first = {}
        for index, seed in enumerate(seeds):
            first.setdefault(seed, index)
        keep = sorted(first.values(), key=lambda i: seeds[i])
        table = table.take(pa.array(keep, type=pa.int64()))
        tmp = self.results.with_suffix(".tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, self.results)
        return table


def _write_atomic(path: Path, payload: bytes) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(payload)
    os.replace(tmp, path)


def read_results(path: str | Path) -> pa.Table:
    """A campaign's results table."""
    return pq.read_table(Path(path) / RESULTS)
