"""Read AOE result files (``aoe_result_opat_*.json`` / ``aoe_result_sgat_*.json``) into tables.

:func:`read_results` takes files and directories and returns an :class:`AoeResults` with four
DataFrames (shapes below) plus the repairs and warnings met on the way.  Both documented layouts
are accepted (top-level list; ``report_{timestamp}_{tid}`` dict), and so is a bare
``{"basic": ..., "OPAT": ...}`` object.  ``repo_modified_operators`` may be a list (the change
kind comes from each entry's ``update_mode``) or a dict of ``add_repo_operators`` /
``update_repo_operators`` lists (the change kind comes from the key).  Every percentage is
recomputed with AOE's formula (``before / after - 1``) and compared with the reported one.

Tables (one row per ...):

- ``tasks``: tuning task (a list layout file is one task; a dict layout file has one per key).
  Columns :data:`TASK_COLUMNS`; times in ms / s as in the file.
- ``operators``: operator x tune dimension (Format / Schedule / Impl); times in us.
- ``subgraphs``: tuned subgraph; times in ms.
- ``failed``: operator named in ``tuning_failed_operators``.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from msprof_py.aoe import schema as S
from msprof_py.aoe.repair import Repair, load_json
from msprof_py.errors import DataError, InvalidPathError, WarningLog

TASK_COLUMNS = [
    "file", "layout", "report_key", "timestamp", "pid", "tid", "mode", "tuning_name", "tuning_time_s",
    "status", "tuning_result", "baseline_ms", "result_ms", "improvement_pct", "improvement_pct_recomputed",
    "pct_formula", "repo_add_num", "repo_hit_num", "repo_reserved_num", "repo_unsatisfied_num",
    "repo_update_num", "total_num", "n_entries", "n_failed", "repairs",
]
OPERATOR_COLUMNS = [
    "file", "report_key", "op_name", "op_type", "tune_dim", "before_us", "after_us", "improvement_pct",
    "improvement_pct_recomputed", "pct_formula", "update_mode", "repo_change",
]
SUBGRAPH_COLUMNS = [
    "file", "report_key", "repo_key", "repo_change", "before_ms", "after_ms", "improvement_pct",
    "improvement_pct_recomputed", "pct_formula",
]
FAILED_COLUMNS = ["file", "report_key", "op_name"]

RESULT_GLOBS = ("aoe_result_opat_*.json", "aoe_result_sgat_*.json")


@dataclass
class AoeResults:
    """What :func:`read_results` found: four tables, the repairs made, the warnings raised."""

    tasks: pd.DataFrame
    operators: pd.DataFrame
    subgraphs: pd.DataFrame
    failed: pd.DataFrame
    repairs: list[tuple[str, Repair]] = field(default_factory=list)  # (file, repair)
    warnings: WarningLog = field(default_factory=WarningLog)


def find_result_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Expand directories to their ``aoe_result_{opat,sgat}_*.json`` files (sorted); keep files as given.

    Raises:
        InvalidPathError: a path does not exist, or a directory holds no result file.
    """
    files: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            # the glob also matches msprof_py's side files (*.json.provenance.json): not result files
            found = sorted({f for g in RESULT_GLOBS for f in p.glob(g)
                            if f.is_file() and not f.name.endswith(".provenance.json")})
            if not found:
                raise InvalidPathError(f"{p}: no AOE result files (aoe_result_opat_*.json / aoe_result_sgat_*.json)")
            files += found
        elif p.is_file():
            files.append(p)
        else:
            raise InvalidPathError(f"{p}: no such file or directory")
    if not files:
        raise InvalidPathError("no AOE result files given")
    return files


def read_results(paths: Iterable[str | os.PathLike[str]], *, strict: bool = False) -> AoeResults:
    """Read every result file under ``paths`` (files or directories) into one :class:`AoeResults`.

    Raises:
        InvalidPathError: a path is missing, or a directory has no result files.
        DataError: a file is empty, not JSON (even after repair), not an AOE result, or
            (``strict``) needed a repair.
    """
    acc = _Acc()
    for f in find_result_files(paths):
        _read_one(f, acc, strict=strict)
    return AoeResults(
        tasks=_frame(acc.tasks, TASK_COLUMNS), operators=_frame(acc.operators, OPERATOR_COLUMNS),
        subgraphs=_frame(acc.subgraphs, SUBGRAPH_COLUMNS), failed=_frame(acc.failed, FAILED_COLUMNS),
        repairs=acc.repairs, warnings=acc.warnings)


def read_result_doc(doc: Any, name: str = "<doc>") -> AoeResults:
    """Tables for an already-parsed result document (the writer's round-trip check uses this)."""
    acc = _Acc()
    _tables_from_doc(doc, name, name, acc, repairs=[])
    return AoeResults(
        tasks=_frame(acc.tasks, TASK_COLUMNS), operators=_frame(acc.operators, OPERATOR_COLUMNS),
        subgraphs=_frame(acc.subgraphs, SUBGRAPH_COLUMNS), failed=_frame(acc.failed, FAILED_COLUMNS),
        warnings=acc.warnings)


@dataclass
class _Acc:
    tasks: list[dict[str, Any]] = field(default_factory=list)
    operators: list[dict[str, Any]] = field(default_factory=list)
    subgraphs: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    repairs: list[tuple[str, Repair]] = field(default_factory=list)
    warnings: WarningLog = field(default_factory=WarningLog)


def _frame(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns)


def _read_one(path: Path, acc: _Acc, *, strict: bool) -> None:
    name = str(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise InvalidPathError(f"{name}: cannot read ({err.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{name}: not a text file (byte {err.start} is not UTF-8)") from None
    doc, repairs = load_json(text, name, strict=strict)
    _tables_from_doc(doc, name, path.name, acc, repairs=repairs, strict=strict)


def _tables_from_doc(doc: Any, name: str, base: str, acc: _Acc, *, repairs: list[Repair],
                     strict: bool = False) -> None:
    m = S.RESULT_NAME_RE.match(base)
    file_ts, file_pid = (m.group("ts"), m.group("pid")) if m else ("", "")
    file_mode = m.group("mode").upper() if m else ""
    tasks = _split_tasks(doc, name)
    moved: list[Repair] = []
    truncated = any(r.kind == "truncated" for r in repairs)
    for i, (layout, key, items) in enumerate(tasks):
        sections = _merge_sections(items, name, key, acc.warnings)
        task = _task_row(sections, name, layout, key, file_ts, file_pid, file_mode, acc, moved)
        # a file cut short was being written when it stopped: its last task is the unfinished one
        if truncated and i == len(tasks) - 1:
            task["status"] = "incomplete"
        task["repairs"] = len(repairs) + len(moved) if i == 0 else 0
        acc.tasks.append(task)
    if strict and moved:
        raise DataError(f"{name}: strict mode refuses a file that needs repair: {moved[0]}")
    for r in repairs + moved:
        acc.repairs.append((name, r))
        acc.warnings.warn(f"{name}: repaired: {r}")


def _split_tasks(doc: Any, name: str) -> list[tuple[str, str, list[Any]]]:
    """(layout, report_key, [section dicts]) per tuning task."""
    if isinstance(doc, list):
        return [("list", "", doc)]
    if isinstance(doc, dict) and doc:
        if all(k.startswith("report_") for k in doc):
            out = []
            for k, v in doc.items():
                if not isinstance(v, list):
                    raise DataError(f"{name}: not an AOE result file: {k!r} holds a {type(v).__name__}, "
                                    "expected a list [basic, OPAT|SGAT]")
                out.append(("report_dict", k, v))
            return out
        if set(doc) & {S.BASIC, S.OPAT, S.SGAT}:
            return [("object", "", [doc])]
    shape = type(doc).__name__ if not isinstance(doc, dict) else f"object with keys {sorted(doc)[:4]}"
    raise DataError(f"{name}: not an AOE result file: top level is {shape}; expected a list "
                    "[{\"basic\": ...}, {\"OPAT\"|\"SGAT\": ...}] or {\"report_<timestamp>_<tid>\": [...]}")


def _merge_sections(items: list[Any], name: str, key: str, warnings: WarningLog) -> dict[str, Any]:
    where = f"{name}{' ' + key if key else ''}"
    sections: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict):
            raise DataError(f"{where}: not an AOE result file: task item is a {type(item).__name__}, "
                            "expected {\"basic\": ...} or {\"OPAT\"|\"SGAT\": ...}")
        for k, v in item.items():
            if k in (S.BASIC, S.OPAT, S.SGAT) and not isinstance(v, dict):
                raise DataError(f"{where}: not an AOE result file: {k!r} is a {type(v).__name__}, expected an object")
            if k not in (S.BASIC, S.OPAT, S.SGAT):
                warnings.warn(f"{where}: unknown section {k!r} ignored")
                continue
            sections[k] = v
    if items and not sections:
        raise DataError(f"{where}: not an AOE result file: no 'basic', 'OPAT' or 'SGAT' section")
    return sections


def _num(v: Any) -> float:
    if isinstance(v, bool) or v is None:
        return math.nan
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(str(v).strip())
    except ValueError:
        return math.nan


def _pct_cols(reported: Any, before: float, after: float) -> dict[str, Any]:
    pct = S.parse_pct(reported)
    return {"improvement_pct": pct, "improvement_pct_recomputed": round(S.improvement(before, after), 6),
            "pct_formula": S.pct_formula(pct, before, after)}


def _check_pct(row: dict[str, Any], what: str, warnings: WarningLog) -> None:
    rep, rec = row["improvement_pct"], row["improvement_pct_recomputed"]
    if math.isfinite(rep) and math.isfinite(rec) and row["pct_formula"] != "before/after-1":
        warnings.warn(f"{what}: reported improvement {rep:.2f}% but before/after-1 gives {rec:.2f}% "
                      f"(formula: {row['pct_formula']})")


def _task_row(sections: dict[str, Any], name: str, layout: str, key: str, file_ts: str, file_pid: str,
              file_mode: str, acc: _Acc, moved: list[Repair]) -> dict[str, Any]:
    w = acc.warnings
    where = f"{name}{' ' + key if key else ''}"
    km = S.REPORT_KEY_RE.match(key.split("#")[0]) if key else None
    basic = sections.get(S.BASIC, {})
    mode = S.OPAT if S.OPAT in sections else S.SGAT if S.SGAT in sections else file_mode
    body = sections.get(mode, {}) if mode else {}
    baseline = _num(body.get("model_baseline_performance(ms)"))
    result = _num(body.get("model_result_performance(ms)"))
    row: dict[str, Any] = {
        "file": name, "layout": layout, "report_key": key,
        "timestamp": km.group("ts") if km else file_ts, "pid": file_pid, "tid": km.group("tid") if km else "",
        "mode": mode, "tuning_name": basic.get("tuning_name", ""), "tuning_time_s": _num(basic.get("tuning_time(s)")),
        "tuning_result": body.get("opat_tuning_result", ""), "baseline_ms": baseline, "result_ms": result,
        **_pct_cols(body.get("model_performance_improvement"), baseline, result),
    }
    _check_pct(row, f"{where}: model", w)
    summary = body.get("repo_summary")
    n_entries = 0
    if mode == S.OPAT:
        n_entries = _operators(body, name, key, acc, moved)
        summary = body.get("repo_summary", summary)
    elif mode == S.SGAT:
        n_entries = _subgraphs(body, name, key, acc)
    summary = summary if isinstance(summary, dict) else {}
    for k in S.SUMMARY_KEYS:
        row[k] = _num(summary.get(k)) if summary else math.nan
    failed = body.get("tuning_failed_operators", [])
    if not isinstance(failed, list):
        failed = [failed]
    for entry in failed:
        op = entry if isinstance(entry, str) else (entry.get("op_name", "") if isinstance(entry, dict) else str(entry))
        acc.failed.append({"file": name, "report_key": key, "op_name": op})
    row["n_entries"], row["n_failed"] = n_entries, len(failed)
    row["status"] = _status(sections, mode, body, basic)
    if summary:
        _check_summary(row, where, w)
    elif body:
        w.warn(f"{where}: no repo_summary")
    if not sections:
        w.warn(f"{where}: empty tuning task (the file was cut short before it was written)")
    return row


def _status(sections: dict[str, Any], mode: str, body: dict[str, Any], basic: dict[str, Any]) -> str:
    if not sections:
        return "incomplete"
    if mode == S.SGAT and S.SGAT not in sections:
        return "failed"  # documented: the SGAT section is absent when subgraph tuning fails
    if mode == S.OPAT and S.OPAT not in sections:
        return "no_ops"  # documented: the OPAT section is absent when no operator can be tuned
    result = body.get("opat_tuning_result", "")
    if result == "tuning failed":
        return "failed"
    if result == "tune tuning incomplete" or "tuning_time(s)" not in basic:
        return "incomplete"
    return "complete"


def _check_summary(row: dict[str, Any], where: str, w: WarningLog) -> None:
    add, hit, res, uns, upd, tot = (row[k] for k in S.SUMMARY_KEYS)
    if any(math.isnan(v) for v in (add, hit, res, uns, upd, tot)):
        w.warn(f"{where}: repo_summary lacks some counters")
        return
    if tot != hit + add + uns:
        w.warn(f"{where}: repo_summary total_num={tot:g} but repo_hit_num + repo_add_num + repo_unsatisfied_num "
               f"= {hit + add + uns:g}")
    if res != hit - upd:
        w.warn(f"{where}: repo_summary repo_reserved_num={res:g} but repo_hit_num - repo_update_num = {hit - upd:g}")


_CHANGE_KEYS = {"add_repo_operators": "add", "update_repo_operators": "update",
                "add_repo_subgraphs": "add", "update_repo_subgraphs": "update"}


def _change_groups(mods: Any, key: str, where: str, acc: _Acc) -> list[tuple[str, Any]]:
    """``repo_modified_*`` as ``(change kind, items)`` groups: a plain list is one group with no
    kind; a dict of ``add_repo_*`` / ``update_repo_*`` lists gives one group per key."""
    if not isinstance(mods, dict):
        return [("", mods)]
    groups = []
    for k, v in mods.items():
        if k not in _CHANGE_KEYS:
            acc.warnings.warn(f"{where}: unknown key {k!r} in {key} (kept as its change kind)")
        groups.append((_CHANGE_KEYS.get(k, k), v))
    return groups


def _operators(body: dict[str, Any], name: str, key: str, acc: _Acc, moved: list[Repair]) -> int:
    where = f"{name}{' ' + key if key else ''}"
    groups = _change_groups(body.get("repo_modified_operators", []), "repo_modified_operators", where, acc)
    n = 0
    for change, items in groups:
        if not isinstance(items, list):
            raise DataError(f"{where}: not an AOE result file: repo_modified_operators holds a "
                            f"{type(items).__name__}, expected a list of operators")
        for item in items:
            if not isinstance(item, dict):
                raise DataError(f"{where}: not an AOE result file: an operator entry is a {type(item).__name__}")
            for section_key in ("repo_summary", "tuning_failed_operators", "opat_tuning_result"):
                # scraped copies of the docs lose brackets so a section lands inside an operator
                if section_key in item and section_key not in body:
                    body[section_key] = item.pop(section_key)
                    moved.append(Repair("moved_key", 0, f"moved {section_key!r} out of operator "
                                                        f"{item.get('op_name', '?')!r} back to the OPAT section"))
            n += 1
            op_type = item.get("op_type", "")
            if isinstance(op_type, list):
                op_type = ";".join(map(str, op_type))
            perf = item.get("tune_performance")
            base = {"file": name, "report_key": key, "op_name": str(item.get("op_name", "")), "op_type": str(op_type)}
            if not isinstance(perf, dict) or not perf:
                acc.warnings.warn(f"{where}: operator {base['op_name']!r} has no tune_performance")
                acc.operators.append({**base, "tune_dim": "", "before_us": math.nan, "after_us": math.nan,
                                      "improvement_pct": math.nan, "improvement_pct_recomputed": math.nan,
                                      "pct_formula": "unknown", "update_mode": "", "repo_change": change})
                continue
            for dim, leaf in perf.items():
                if dim not in S.TUNE_DIMS:
                    acc.warnings.warn(f"{where}: operator {base['op_name']!r}: unknown tune dimension {dim!r}")
                leaf = leaf if isinstance(leaf, dict) else {}
                before, after = _num(leaf.get("performance_before_tune(us)")), _num(leaf.get("performance_after_tune(us)"))
                mode = str(leaf.get("update_mode", ""))
                row = {**base, "tune_dim": dim, "before_us": before, "after_us": after,
                       **_pct_cols(leaf.get("performance_improvement"), before, after),
                       "update_mode": mode, "repo_change": change or mode}
                _check_pct(row, f"{where}: operator {base['op_name']!r} {dim}", acc.warnings)
                acc.operators.append(row)
    return n


def _subgraphs(body: dict[str, Any], name: str, key: str, acc: _Acc) -> int:
    where = f"{name}{' ' + key if key else ''}"
    mods = body.get("repo_modified_subgraphs", {})
    if not isinstance(mods, (list, dict)):
        raise DataError(f"{where}: not an AOE result file: repo_modified_subgraphs is a {type(mods).__name__}")
    groups = _change_groups(mods, "repo_modified_subgraphs", where, acc)
    n = 0
    for change, items in groups:
        if not isinstance(items, list):
            raise DataError(f"{where}: not an AOE result file: {change or 'repo_modified_subgraphs'} is not a list")
        for item in items:
            if not isinstance(item, dict):
                raise DataError(f"{where}: not an AOE result file: a subgraph entry is a {type(item).__name__}")
            n += 1
            before, after = _num(item.get("performance_before_tune(ms)")), _num(item.get("performance_after_tune(ms)"))
            row = {"file": name, "report_key": key, "repo_key": str(item.get("repo_key", "")), "repo_change": change,
                   "before_ms": before, "after_ms": after,
                   **_pct_cols(item.get("performance_improvement"), before, after)}
            _check_pct(row, f"{where}: subgraph {row['repo_key']}", acc.warnings)
            acc.subgraphs.append(row)
    return n
