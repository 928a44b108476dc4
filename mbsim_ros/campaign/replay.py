"""One seed of a finished campaign again: its row recomputed from the directory's spec and
seed, compared with the table's bit for bit (every column but the wall time), optionally
recorded (mbsim_ros.recording)."""
from __future__ import annotations

import math
from pathlib import Path

from .cluster import importable
from .run import prepared, run
from .table import CampaignDir, read_results

UNTIMED = ("wall_time",)


def table_row(out: str | Path, seed: int) -> dict:
    """The row of ``seed`` in a campaign's results (ValueError when it has none)."""
    table = read_results(out)
    rows = table.filter(table.column("seed").to_numpy() == seed).to_pylist()
    if not rows:
        raise ValueError(f"{out}: no run with seed {seed} in the results")
    return rows[0]


def differences(row: dict, stored: dict) -> list[str]:
    """The columns whose values differ (NaN equals NaN; floats compared exactly)."""
    found = []
    for key, value in stored.items():
        if key in UNTIMED:
            continue
        mine = row.get(key)
        same = mine == value or (isinstance(value, float) and isinstance(mine, float)
                                 and math.isnan(value) and math.isnan(mine))
        if not same:
            found.append(f"{key}: table {value!r}, replay {mine!r}")
    return found


def replay(out: str | Path, seed: int, record: str | Path | None = None) -> tuple[dict, list[str]]:
    """(the recomputed row, its differences from the table's); ``record``: an MCAP file."""
    meta = CampaignDir(out).meta()
    # the folders its python controller's module was found in (campaigns written before they
    # were recorded: none beyond the path)
    importable(meta.get("module_folders", []))
    row = run(prepared(meta["spec"]), meta["seed"], seed, record)
    return row, differences(row, table_row(out, seed))


def record_failures(out: str | Path) -> list[Path]:
    """Every failed run of a campaign recorded again, DIR/failures/seed-S.mcap (on this
    machine, one after the other); the files."""
    table = read_results(out)
    folder = Path(out) / "failures"
    folder.mkdir(exist_ok=True)
    written = []
    for row in table.filter(table.column("passed").to_numpy(zero_copy_only=False) == 0).to_pylist():
        path = folder / f"seed-{row['seed']}.mcap"
        replay(out, row["seed"], path)
        written.append(path)
    return written
