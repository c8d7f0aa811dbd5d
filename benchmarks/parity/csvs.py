"""The summary CSVs: op_summary (+ its PMU columns apart), op_statistic, api_statistic, task_time,
step_trace, and a header/row-count check for any other CSV msprof wrote.

Files are matched by kind, not name: msprof writes ``op_summary_{timestamp}.csv`` (one file, every
device), msprof_py one file per device; the rows of all files of a kind are compared together.
"""
from __future__ import annotations

import csv
import re
from pathlib import Path

from benchmarks.parity.allow import alias_header, comparators
from benchmarks.parity.cells import Check, compare_keyed

KIND_RE = re.compile(r"^(?P<kind>[A-Za-z_]+?)(?:_\d+)*(?:_slice_\d+)?\.(?P<ext>csv|json)$")

# kind -> (key columns, the ones msprof's header has are used; time column ordering repeated keys)
KEYS: dict[str, tuple[list[str], str | None]] = {
    "op_summary": (["Device_id", "Stream ID", "Task ID", "Context ID"], "Task Start Time(us)"),
    "op_statistic": (["Device_id", "OP Type", "Core Type"], None),
    "api_statistic": (["Level", "API Name"], None),
    "task_time": (["Device_id", "stream_id", "task_id"], "task_start(us)"),
    "step_trace": (["Device_id", "Model ID", "Iteration ID"], None),
}
PMU_AFTER = "Context ID"  # op_summary: msprof's counter columns follow this one


def files_by_kind(out_dir: Path, ext: str) -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    if not out_dir.is_dir():
        return found
    for p in sorted(out_dir.iterdir()):
        m = KIND_RE.match(p.name)
        if m and m["ext"] == ext:
            found.setdefault(m["kind"], []).append(p)
    return found


def read_csvs(paths: list[Path]) -> tuple[list[str], list[list[str]]]:
    header: list[str] = []
    rows: list[list[str]] = []
    for p in paths:
        with open(p, newline="", encoding="utf-8", errors="replace") as fp:
            r = csv.reader(fp)
            h = next(r, [])
            header = header or [c.strip() for c in h]
            rows += [row for row in r if row]
    return header, rows


def compare_csvs(exp_dir: Path, our_dir: Path) -> list[Check]:
    """One check per CSV kind msprof wrote (op_summary also gives ``op_summary.pmu``)."""
    exp, ours = files_by_kind(exp_dir, "csv"), files_by_kind(our_dir, "csv")
    checks: list[Check] = []
    for kind in sorted(exp):
        he, re_ = read_csvs(exp[kind])
        he, aliased = alias_header(he)
        if kind not in ours:
            c = Check(kind, rows_expected=len(re_), missing=len(re_))
            c.notes.append("no file")
            checks.append(c)
            if kind == "op_summary" and PMU_AFTER in he and he.index(PMU_AFTER) + 1 < len(he):
                p = Check("op_summary.pmu", rows_expected=len(re_))
                p.notes.append("no file")
                checks.append(p)
            continue
        ho, ro = read_csvs(ours[kind])
        if kind not in KEYS:
            c = Check(kind, rows_expected=len(re_), rows_ours=len(ro))
            if he != ho:
                c.notes.append("header differs")
            if len(re_) != len(ro):
                c.notes.append(f"{len(ro)} rows, msprof {len(re_)}")
            checks.append(c)
            continue
        key_all, order = KEYS[kind]
        key = [k for k in key_all if k in he]
        if kind == "op_summary" and PMU_AFTER in he:
            cut = he.index(PMU_AFTER) + 1
            base, pmu = he[:cut], he[cut:]
        else:
            base, pmu = he, []
        c = Check(kind, deliberate=set(aliased))
        compare_keyed(c, he, re_, ho, ro, key, order, base, comparators(kind))
        checks.append(c)
        if pmu:
            p = Check(f"{kind}.pmu")
            compare_keyed(p, he, re_, ho, ro, key, order, pmu)
            p.missing = p.extra = 0  # rows are judged by the base check
            checks.append(p)
    return checks
