"""A campaign's results as JUnit XML, the report format CI systems display (Jenkins, GitLab,
GitHub's test reporters): one testsuite, one testcase per run (named by its seed, timed by its
wall time); a failed run's ``failure`` carries its check, the simulated time and value of the
failure, the run's message and the command that replays it."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from .report import replay_command


def failure_text(row: dict, directory: str | Path) -> tuple[str, str]:
    """(the one-line summary, the full text) of a failed run."""
    at, value = f"{row['failed_at']:.3f} s", f"{row['failed_value']:.6g}"
    summary = f"{row['failed_check']} failed at t = {at} (value {value})"
    lines = [f"check: {row['failed_check']}", f"time: {at}", f"value: {value}"]
    if row["message"]:
        lines.append(f"message: {row['message']}")
    lines.append(f"replay: {replay_command(directory, row['seed'])}")
    return summary, "\n".join(lines)


def write_junit(table, path: str | Path, name: str, directory: str | Path) -> Path:
    """Write ``path``: the results ``table`` of the campaign in ``directory`` as the JUnit
    testsuite ``name``; its path."""
    rows = table.to_pylist()
    failed = sum(not r["passed"] for r in rows)
    total_time = f"{sum(r['wall_time'] for r in rows):.3f}"
    counts = {"tests": str(len(rows)), "failures": str(failed), "errors": "0",
              "time": total_time}
    suites = ET.Element("testsuites", name="mbsim-ros campaign", **counts)
    suite = ET.SubElement(suites, "testsuite", name=name, skipped="0", **counts)
    for row in rows:
        case = ET.SubElement(suite, "testcase", classname=name, name=f"seed {row['seed']}",
                             time=f"{row['wall_time']:.3f}")
        if not row["passed"]:
            summary, text = failure_text(row, directory)
            ET.SubElement(case, "failure", message=summary, type=row["failed_check"]).text = text
    ET.indent(suites)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suites).write(out, encoding="utf-8", xml_declaration=True)
    return out
