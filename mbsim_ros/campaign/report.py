"""DIR/report.html with its PNGs: the pass rate, each metric's distribution (passed and failed
runs apart), each metric against the drawn parameter it depends on most (the largest |rank
correlation| over the runs, with the parameter or its distance from its median), and the
failed seeds with their check and replay command."""
from __future__ import annotations

import html
import math
from pathlib import Path

import numpy as np

from .run import RESULT_COLUMNS
from .spec import METRICS
from .table import read_results

NOT_PARAMETERS = set(RESULT_COLUMNS) | set(METRICS) | {"seed", "wall_time", "sensor_seed"}
SHOWN_FAILURES = 200


def columns(table) -> tuple[list[str], list[str]]:
    """(metric columns, parameter columns that vary) of a results table."""
    names = table.column_names
    metrics = [m for m in METRICS if m in names]
    params = [p for p in names if p not in NOT_PARAMETERS
              and np.ptp(table.column(p).to_numpy(zero_copy_only=False).astype(float)) > 0]
    return metrics, params


def strongest(values: np.ndarray, table, params: list[str]) -> tuple[str | None, float, bool]:
    """The parameter ``values`` depend on most (finite runs): (its name, the rank correlation,
    whether it is with the parameter's distance from its median). The second form finds what a
    signed correlation misses: a metric that grows with a push's size in either direction."""
    best, best_r, best_size = None, 0.0, False
    finite = np.isfinite(values)
    for name in params:
        x = table.column(name).to_numpy(zero_copy_only=False).astype(float)
        ok = finite & np.isfinite(x)
        if ok.sum() < 3 or np.ptp(x[ok]) == 0 or np.ptp(values[ok]) == 0:
            continue
        for size, drawn in ((False, x[ok]), (True, np.abs(x[ok] - np.median(x[ok])))):
            r = _rank_correlation(drawn, values[ok])
            if abs(r) > abs(best_r):
                best, best_r, best_size = name, r, size
    return best, best_r, best_size


def _rank_correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's: Pearson's on the ranks (0 when either is constant)."""
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return 0.0
    return float(np.corrcoef(rx, ry)[0, 1])


def _figures(table, out: Path, metrics: list[str], params: list[str]) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    passed = np.array(table.column("passed").to_pylist(), dtype=bool)
    made = []
    for metric in metrics:
        values = table.column(metric).to_numpy(zero_copy_only=False).astype(float)
        name, r, size = strongest(values, table, params)
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
        finite = values[np.isfinite(values)]
        bins = np.histogram_bin_edges(finite, bins=30) if len(finite) else 10
        axes[0].hist([values[passed & np.isfinite(values)],
                      values[~passed & np.isfinite(values)]], bins=bins, stacked=True,
                     color=["tab:green", "tab:red"], label=["passed", "failed"])
        axes[0].set_xlabel(metric)
        axes[0].set_ylabel("runs")
        axes[0].legend()
        if name is not None:
            x = table.column(name).to_numpy(zero_copy_only=False).astype(float)
            axes[1].scatter(x[passed], values[passed], s=8, c="tab:green", label="passed")
            axes[1].scatter(x[~passed], values[~passed], s=8, c="tab:red", label="failed")
            axes[1].set_xlabel(f"{name} (rank correlation {r:+.2f}"
                               + (" with |x - median|)" if size else ")"))
            axes[1].set_ylabel(metric)
            axes[1].legend()
        else:
            axes[1].text(0.5, 0.5, "no varying parameter", ha="center", va="center")
        fig.suptitle(metric)
        fig.tight_layout()
        file = f"metric_{metric}.png"
        fig.savefig(out / file, dpi=90)
        plt.close(fig)
        made.append((metric, file))
    return made


def replay_command(directory: str | Path, seed: int) -> str:
    """The command that runs one seed of a campaign again."""
    return f"mbsim-ros campaign replay {directory} --seed {seed}"


def write_report(directory: str | Path) -> Path:
    """Write DIR/report.html (and its PNGs); its path."""
    out = Path(directory)
    table = read_results(out)
    metrics, params = columns(table)
    figures = _figures(table, out, metrics, params)
    rows = table.to_pylist()
    passed = sum(bool(r["passed"]) for r in rows)
    failed = [r for r in rows if not r["passed"]]
    checks: dict[str, int] = {}
    for r in failed:
        checks[r["failed_check"]] = checks.get(r["failed_check"], 0) + 1
    parts = [f"<html><head><meta charset='utf-8'><title>campaign {html.escape(out.name)}"
             f"</title></head><body><h1>Campaign {html.escape(str(out))}</h1>",
             f"<p><b>{len(rows)} runs, {passed} passed "
             f"({100.0 * passed / max(1, len(rows)):.1f} %)</b>; failures by check: "
             + (", ".join(f"{k}: {v}" for k, v in sorted(checks.items())) or "none") + "</p>"]
    for metric, file in figures:
        parts.append(f"<h2>{metric}</h2><img src='{file}'>")
    parts.append(f"<h2>Failed runs ({len(failed)}"
                 + (f", the first {SHOWN_FAILURES}" if len(failed) > SHOWN_FAILURES else "")
                 + ")</h2><table border=1 cellpadding=3><tr><th>seed</th><th>check</th>"
                 "<th>at (s)</th><th>value</th><th>message</th><th>replay</th></tr>")
    for r in failed[:SHOWN_FAILURES]:
        at = "" if math.isnan(r["failed_at"]) else f"{r['failed_at']:.3f}"
        parts.append(f"<tr><td>{r['seed']}</td><td>{html.escape(r['failed_check'])}</td>"
                     f"<td>{at}</td><td>{r['failed_value']:.4g}</td>"
                     f"<td>{html.escape(r['message'])}</td>"
                     f"<td><code>{html.escape(replay_command(out, r['seed']))}</code></td></tr>")
    parts.append("</table></body></html>")
    path = out / "report.html"
    path.write_text("\n".join(parts))
    return path
