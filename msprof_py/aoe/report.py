"""``msprof-py aoe-report``: terminal summary and CSV/JSON tables for AOE result files.

:func:`aoe_report` reads the files (:mod:`msprof_py.aoe.reader`), optionally joins the tuned
operators with a profile's device tasks, writes ``aoe_tasks``, ``aoe_operators``,
``aoe_subgraphs``, ``aoe_failed`` (and ``aoe_profile_join``) tables into the output directory
(temporary name, then rename) and returns the summary text with the warnings to print.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd

from msprof_py import atomic
from msprof_py.aoe.reader import AoeResults, read_results
from msprof_py.errors import InvalidParamError, InvalidPathError, MsprofError, WarningLog

JOIN_COLUMNS = [
    "op_name", "op_type", "tune_dims", "aoe_before_us", "aoe_after_us", "profile_op_type", "task_count",
    "profile_total_us", "profile_avg_us", "profile_share_pct",
]


@dataclass
class ReportOutcome:
    """The summary to print, the files written and the warnings collected."""

    results: AoeResults
    summary: str
    written: list[Path] = field(default_factory=list)
    joined: pd.DataFrame | None = None
    warnings: WarningLog = field(default_factory=WarningLog)


def join_profile(operators: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """Tuned operators joined by ``op_name`` with a profile's device tasks.

    Args:
        operators: ``AoeResults.operators`` (one row per op x tune dimension).
        tasks: a parsed session's ``tasks`` table (needs ``op_name``, ``op_type``, ``dur_ns``).

    Returns:
        One row per tuned op name (:data:`JOIN_COLUMNS`): the AOE before/after (us, summed over its
        tune dimensions' best result: the minimum ``after``, the maximum ``before``), the profile's
        task count, total and mean duration (us) and its share (%) of all device task time.
        Ops absent from the profile have ``task_count`` 0.
    """
    missing = {"op_name", "op_type", "dur_ns"} - set(tasks.columns)
    if missing:
        raise InvalidParamError(f"profile tasks table lacks column(s) {sorted(missing)}")
    t = tasks.loc[tasks["dur_ns"] > 0, ["op_name", "op_type", "dur_ns"]]
    total_ns = float(t["dur_ns"].sum())
    prof = (t.assign(op_name=t["op_name"].astype(str), op_type=t["op_type"].astype(str))
            .groupby("op_name", sort=False, observed=True)
            .agg(profile_op_type=("op_type", "first"), task_count=("dur_ns", "size"), total_ns=("dur_ns", "sum")))
    ops = operators.loc[operators["op_name"] != ""]
    tuned = (ops.groupby("op_name", sort=False)
             .agg(op_type=("op_type", "first"), tune_dims=("tune_dim", lambda s: ",".join(x for x in s if x)),
                  aoe_before_us=("before_us", "max"), aoe_after_us=("after_us", "min")))
    j = tuned.join(prof, how="left")
    j["task_count"] = j["task_count"].fillna(0).astype("int64")
    j["profile_total_us"] = j["total_ns"].fillna(0.0) / 1e3
    j["profile_avg_us"] = (j["profile_total_us"] / j["task_count"].where(j["task_count"] > 0)).round(3)
    j["profile_share_pct"] = (100.0 * j["profile_total_us"] * 1e3 / total_ns).round(3) if total_ns > 0 else 0.0
    j["profile_op_type"] = j["profile_op_type"].fillna("")
    j["profile_total_us"] = j["profile_total_us"].round(3)
    return j.reset_index()[JOIN_COLUMNS].sort_values("profile_total_us", ascending=False, kind="stable",
                                                     ignore_index=True)


def _load_profile_tasks(prof_dir: str | os.PathLike[str]) -> pd.DataFrame:
    try:
        import msprof_py
        loader: Callable[[Any], Any] = getattr(msprof_py, "load")
    except AttributeError:
        raise InvalidParamError("--profile needs msprof_py.load (the profile parser), which this build lacks") from None
    if not Path(prof_dir).exists():
        raise InvalidPathError(f"{prof_dir}: no such profile directory")
    return loader(prof_dir).tasks


def aoe_report(paths: Iterable[str | os.PathLike[str]], *, fmt: str = "csv", output: str | os.PathLike[str] | None = None,
               strict: bool = False, profile: str | os.PathLike[str] | None = None,
               load_tasks: Callable[[Any], pd.DataFrame] = _load_profile_tasks) -> ReportOutcome:
    """Read AOE result files, write their tables into ``output`` (default: the working directory).

    Raises:
        MsprofError subclasses for unreadable input, a bad format, or an unwritable output.
    """
    if fmt not in ("csv", "json"):
        raise InvalidParamError(f"--format must be csv or json, not {fmt!r}")
    results = read_results(paths, strict=strict)
    warnings = WarningLog()
    warnings.extend(results.warnings)
    joined = None
    if profile is not None:
        joined = join_profile(results.operators, load_tasks(profile))
        n_missing = int((joined["task_count"] == 0).sum())
        if n_missing:
            warnings.warn(f"{n_missing} of {len(joined)} tuned operator(s) do not appear in the profile {profile}")
    out_dir = Path(output) if output is not None else Path.cwd()
    tables = {"aoe_tasks": results.tasks, "aoe_operators": results.operators, "aoe_subgraphs": results.subgraphs,
              "aoe_failed": results.failed}
    if joined is not None:
        tables["aoe_profile_join"] = joined
    written = write_tables(tables, out_dir, fmt)
    return ReportOutcome(results=results, summary=summary_text(results, joined, written), written=written,
                         joined=joined, warnings=warnings)


def write_tables(tables: dict[str, pd.DataFrame], out_dir: Path, fmt: str) -> list[Path]:
    """Write each table as ``<name>.csv`` or ``<name>.json`` (records) via a temporary name + rename."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InvalidPathError(f"{out_dir}: cannot create output directory ({err.strerror})") from None
    written = []
    for name, df in tables.items():
        final = out_dir / f"{name}.{fmt}"
        with atomic.temp_path(final, error="cannot write") as tmp:
            if fmt == "csv":
                df.to_csv(tmp, index=False, lineterminator="\n")
            else:
                tmp.write_text(df.to_json(orient="records", indent=1, force_ascii=False) + "\n", encoding="utf-8")
        written.append(final)
    return written


def _f(v: Any, spec: str = ".3f") -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def summary_text(results: AoeResults, joined: pd.DataFrame | None = None, written: list[Path] | None = None) -> str:
    """A few readable lines per tuning task, the top operators/subgraphs, and the files written."""
    t = results.tasks
    files = t["file"].nunique() if len(t) else 0
    lines = [f"AOE results: {files} file(s), {len(t)} tuning task(s), {len(results.operators)} operator result(s), "
             f"{len(results.subgraphs)} subgraph result(s), {len(results.failed)} failed operator(s), "
             f"{len(results.repairs)} repair(s)"]
    for r in t.itertuples(index=False):
        name = Path(r.file).name + (f" [{r.report_key}]" if r.report_key else "")
        lines.append(f"- {name}: {r.mode or '?'} '{r.tuning_name}' {r.status}"
                     + (f", {r.tuning_result}" if r.tuning_result else "")
                     + (f", {_f(r.tuning_time_s, '.0f')} s" if not math.isnan(r.tuning_time_s) else ""))
        if not math.isnan(r.baseline_ms):
            lines.append(f"    model {_f(r.baseline_ms, '.6f')} ms -> {_f(r.result_ms, '.6f')} ms: "
                         f"improved {_f(r.improvement_pct, '.2f')}% (recomputed {_f(r.improvement_pct_recomputed, '.2f')}%)")
        if not math.isnan(r.total_num):
            lines.append(f"    repo: add {r.repo_add_num:.0f}, hit {r.repo_hit_num:.0f}, reserved {r.repo_reserved_num:.0f}, "
                         f"unsatisfied {r.repo_unsatisfied_num:.0f}, update {r.repo_update_num:.0f}, total {r.total_num:.0f}")
    ops = results.operators.dropna(subset=["improvement_pct_recomputed"])
    if len(ops):
        lines.append("Top operators by recomputed improvement (before/after-1):")
        for r in ops.nlargest(10, "improvement_pct_recomputed").itertuples(index=False):
            lines.append(f"    {r.op_name} ({r.op_type}) {r.tune_dim}: {_f(r.before_us)} us -> {_f(r.after_us)} us, "
                         f"{_f(r.improvement_pct_recomputed, '.2f')}% [{r.repo_change or r.update_mode}]")
    if len(results.subgraphs):
        lines.append("Subgraphs:")
        for r in results.subgraphs.itertuples(index=False):
            lines.append(f"    {r.repo_key} [{r.repo_change}]: {_f(r.before_ms, '.6f')} ms -> {_f(r.after_ms, '.6f')} ms, "
                         f"{_f(r.improvement_pct_recomputed, '.2f')}%")
    if len(results.failed):
        lines.append("Failed operators: " + ", ".join(results.failed["op_name"].astype(str)))
    if joined is not None:
        found = joined[joined["task_count"] > 0]
        lines.append(f"Profile: {len(found)} of {len(joined)} tuned operator(s) found; they take "
                     f"{found['profile_share_pct'].sum():.2f}% of device task time")
        for r in found.head(10).itertuples(index=False):
            lines.append(f"    {r.op_name}: {r.task_count} task(s), {r.profile_total_us:.3f} us total "
                         f"({r.profile_share_pct:.2f}%), avg {r.profile_avg_us:.3f} us")
    if written:
        lines.append("Tables: " + ", ".join(str(p) for p in written))
    return "\n".join(lines)


__all__ = ["aoe_report", "join_profile", "summary_text", "write_tables", "ReportOutcome", "MsprofError"]
