"""``diff(base, new) -> DiffResult``: where the time went between two runs of the same program.

Inputs are sessions, PROF dirs, or exported folders (``mindstudio_profiler_output`` with
``op_summary_{dev}.csv`` and ``step_trace_{dev}.csv``).  One device is compared (default: the
lowest device in both).  Tasks count when they start inside an iteration (step start .. step
end); without step trace the whole run is one iteration.

Tables (DataFrames, times in us):

- ``ops``: per op name: ``status`` (matched / renamed / added / removed; renamed = a removed and
  an added op of the same type and input shapes, paired in order), ``name``, ``op_type``,
  ``base_count``, ``new_count``, ``base_total_us``, ``new_total_us``, ``base_mean_us``,
  ``new_mean_us``, ``delta_total_us``, ``delta_per_iter_us`` (change of its time per iteration)
  and ``share`` (of the iteration-time change); the last row ``(idle, overlap, other)`` holds
  what the ops do not explain, so ``delta_per_iter_us`` sums exactly to the iteration change.
  Sorted by ``|delta_per_iter_us|``.
- ``op_types``: the same per op type.
- ``iterations``: per iteration index: ``base_us``, ``new_us``, ``delta_us``.
- ``phases``: mean per iteration of msprof's step-trace phases (Iteration Time, FP to BP Time,
  Iteration Refresh, Data Aug Bound): ``base_us``, ``new_us``, ``delta_us``.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.errors import DataError, InvalidParamError

OTHER = "(idle, overlap, other)"
NEEDED = ["Op Name", "OP Type", "Task Start Time(us)", "Task Duration(us)"]  # op_summary columns we read
PHASES = ["Iteration Time", "FP to BP Time", "Iteration Refresh", "Data Aug Bound"]


@dataclass
class RunTimes:
    """One side of a diff: op rows ``iter_id, op_name, op_type, input_shapes, dur_ns`` and
    iteration rows ``iter_id`` + :data:`PHASES` (ns; -1 = absent)."""

    ops: pd.DataFrame
    steps: pd.DataFrame
    label: str


@dataclass
class DiffResult:
    ops: pd.DataFrame
    op_types: pd.DataFrame
    iterations: pd.DataFrame
    phases: pd.DataFrame
    base_iteration_us: float  # mean iteration time
    new_iteration_us: float


# ------------------------------------------------------------------------------ inputs
def from_session(session: Any, device: int | None = None, label: str = "") -> RunTimes:
    t = session.tasks
    t = t[(t["start_ns"] >= 0) & (t["op_type"].astype(str) != "N/A")]
    devs = sorted(int(d) for d in t["device_id"].unique())
    dev = device if device is not None else (devs[0] if devs else 0)
    t = t[t["device_id"] == dev]
    st = session.steps[session.steps["device_id"] == dev]
    steps = pd.DataFrame({
        "iter_id": st["iter_id"].to_numpy(np.int64),
        "start_ns": st["step_start_ns"].to_numpy(np.int64), "end_ns": st["step_end_ns"].to_numpy(np.int64),
        "Iteration Time": (st["step_end_ns"] - st["step_start_ns"]).to_numpy(np.int64),
        "FP to BP Time": np.where((st["bp_end_ns"] >= 0) & (st["fp_start_ns"] >= 0),
                                  st["bp_end_ns"] - st["fp_start_ns"], -1),
        "Iteration Refresh": np.where(st["bp_end_ns"] >= 0, st["step_end_ns"] - st["bp_end_ns"], -1),
        "Data Aug Bound": st["data_aug_bound_ns"].to_numpy(np.int64)})
    ops = pd.DataFrame({"start_ns": t["start_ns"].to_numpy(np.int64), "op_name": t["op_name"].astype(str).to_numpy(),
                        "op_type": t["op_type"].astype(str).to_numpy(),
                        "input_shapes": t["input_shapes"].astype(str).to_numpy(),
                        "dur_ns": t["dur_ns"].to_numpy(np.int64)})
    return _assign_iterations(ops, steps, label or str(getattr(session, "path", "")))


def _assign_iterations(ops: pd.DataFrame, steps: pd.DataFrame, label: str) -> RunTimes:
    if not len(steps):  # the whole run is one iteration
        if len(ops):
            end = int((ops["start_ns"] + ops["dur_ns"]).max())
            start = int(ops["start_ns"].min())
        else:
            start = end = 0
        steps = pd.DataFrame({"iter_id": [1], "start_ns": [start], "end_ns": [end], "Iteration Time": [end - start],
                              "FP to BP Time": [-1], "Iteration Refresh": [-1], "Data Aug Bound": [-1]})
    s = steps.sort_values("start_ns")
    k = np.searchsorted(s["start_ns"].to_numpy(), ops["start_ns"].to_numpy(), side="right") - 1
    kk = np.clip(k, 0, None)
    inside = (k >= 0) & (ops["start_ns"].to_numpy() <= s["end_ns"].to_numpy()[kk]) if len(s) else np.zeros(len(ops), bool)
    ops = ops.assign(iter_id=np.where(inside, s["iter_id"].to_numpy()[kk], -1))
    return RunTimes(ops[ops["iter_id"] >= 0].reset_index(drop=True), steps.reset_index(drop=True), label)


def _ns(v: str) -> int | None:
    """A CSV microsecond value ("1795512592743365.520\t") as exact integer ns (floats lose
    the ns digits of epoch times); None for N/A / empty."""
    t = str(v).strip()
    whole, _, frac = t.partition(".")
    if not whole.lstrip("-").isdigit() or (frac and not frac.isdigit()):
        return None
    ns = abs(int(whole)) * 1000 + int((frac + "000")[:3])
    return -ns if whole.startswith("-") else ns


def from_export(folder: Path, device: int | None = None) -> RunTimes:
    """An exported ``mindstudio_profiler_output`` folder (msprof's or ours)."""
    sums = sorted(folder.glob("op_summary_*.csv"))
    if not sums:
        raise DataError(f"{folder}: no op_summary_*.csv (not an exported folder)")
    pick = [p for p in sums if device is not None and p.stem.split("_")[2:3] == [str(device)]] or sums[:1]
    ops_rows, step_rows = [], []
    with open(pick[0], newline="", encoding="utf-8") as fp:
        reader = csv.DictReader(fp)
        missing = [c for c in NEEDED if c not in (reader.fieldnames or [])]
        if missing:
            raise DataError(f"{pick[0]}: not an op_summary file (no column {', '.join(missing)})")
        for r in reader:
            if r.get("Task Type") == "COMMUNICATION":  # HCCL big ops: not device tasks in the session either
                continue
            start, dur = _ns(r.get("Task Start Time(us)", "")), _ns(r.get("Task Duration(us)", ""))
            if start is not None and dur is not None:
                ops_rows.append((start, r.get("Op Name", "N/A"), r.get("OP Type", "N/A"), r.get("Input Shapes", "N/A"),
                                 dur))
    tail = pick[0].name[len("op_summary"):]
    st_file = folder / f"step_trace{tail}"
    if st_file.exists():
        with open(st_file, newline="", encoding="utf-8") as fp:
            for r in csv.DictReader(fp):
                it, end = _ns(r.get("Iteration ID", "")), _ns(r.get("Iteration End(us)", ""))
                ph = [_ns(r.get(f"{p}(us)", "")) for p in PHASES]
                if it is None or end is None or ph[0] is None:
                    continue
                step_rows.append((it // 1000, end - ph[0], end, *[-1 if x is None else x for x in ph]))
    ops = pd.DataFrame(ops_rows, columns=["start_ns", "op_name", "op_type", "input_shapes", "dur_ns"])
    ops = ops[ops["op_type"] != "N/A"]
    steps = pd.DataFrame(step_rows, columns=["iter_id", "start_ns", "end_ns"] + PHASES)
    return _assign_iterations(ops, steps, str(folder))


def load_side(source: Any, device: int | None = None) -> RunTimes:
    """A session, a PROF dir (or a folder of PROF dirs), or an exported folder."""
    if isinstance(source, RunTimes):
        return source
    if hasattr(source, "tasks"):
        return from_session(source, device)
    p = Path(source)
    if not p.exists():
        raise InvalidParamError(f"{p}: no such file or directory")
    if list(p.glob("op_summary_*.csv")):
        return from_export(p, device)
    if (p / "mindstudio_profiler_output").is_dir() and not any(p.glob("device_*")) and not any(p.glob("host")):
        return from_export(p / "mindstudio_profiler_output", device)
    from msprof_py.parse.session import load

    return from_session(load(p), device, str(p))


# ------------------------------------------------------------------------------ tables
def _agg(ops: pd.DataFrame, key: str) -> pd.DataFrame:
    g = ops.groupby(key)
    return pd.DataFrame({"op_type": g["op_type"].first(), "input_shapes": g["input_shapes"].first(),
                         "count": g.size(), "total_ns": g["dur_ns"].sum()})


def _pair_renames(b: pd.DataFrame, n: pd.DataFrame) -> dict[str, str]:
    gone = b.index.difference(n.index)
    new = n.index.difference(b.index)
    pool: dict[tuple, list[str]] = {}
    for name in new:
        pool.setdefault((n.at[name, "op_type"], n.at[name, "input_shapes"]), []).append(name)
    out = {}
    for name in gone:
        cands = pool.get((b.at[name, "op_type"], b.at[name, "input_shapes"]))
        if cands:
            out[name] = cands.pop(0)
    return out


def _table(b: pd.DataFrame, n: pd.DataFrame, nb: int, nn: int, d_iter: float, renames: dict[str, str]) -> pd.DataFrame:
    rows = []
    back = {v: k for k, v in renames.items()}
    for name in list(b.index) + [x for x in n.index if x not in b.index and x not in back]:
        new_name = renames.get(name, name)
        inb, inn = name in b.index, new_name in n.index
        status = ("renamed" if name in renames else "matched") if inb and inn else ("removed" if inb else "added")
        rb = b.loc[name] if inb else None
        rn = n.loc[new_name] if inn else None
        bt = float(rb["total_ns"]) if inb else 0.0
        nt = float(rn["total_ns"]) if inn else 0.0
        bc = int(rb["count"]) if inb else 0
        nc = int(rn["count"]) if inn else 0
        per = nt / nn - bt / nb
        rows.append({"status": status, "name": name if status != "renamed" else f"{name} -> {new_name}",
                     "op_type": (rb if inb else rn)["op_type"], "base_count": bc, "new_count": nc,
                     "base_total_us": bt / 1e3, "new_total_us": nt / 1e3,
                     "base_mean_us": bt / bc / 1e3 if bc else np.nan, "new_mean_us": nt / nc / 1e3 if nc else np.nan,
                     "delta_total_us": (nt - bt) / 1e3, "delta_per_iter_us": per / 1e3})
    df = pd.DataFrame(rows)
    if not len(df):
        df = pd.DataFrame(columns=["status", "name", "op_type", "base_count", "new_count", "base_total_us",
                                   "new_total_us", "base_mean_us", "new_mean_us", "delta_total_us", "delta_per_iter_us"])
    df = df.reindex(df["delta_per_iter_us"].abs().sort_values(ascending=False, kind="stable").index)
    rest = d_iter / 1e3 - float(df["delta_per_iter_us"].sum())
    other = {"status": "other", "name": OTHER, "op_type": "", "base_count": 0, "new_count": 0, "base_total_us": np.nan,
             "new_total_us": np.nan, "base_mean_us": np.nan, "new_mean_us": np.nan, "delta_total_us": np.nan,
             "delta_per_iter_us": rest}
    df = pd.concat([df, pd.DataFrame([other])], ignore_index=True)
    df["share"] = df["delta_per_iter_us"] / (d_iter / 1e3) if d_iter else np.nan
    return df


def diff(base: Any, new: Any, device: int | None = None) -> DiffResult:
    """Compare ``base`` and ``new`` (see the module doc for the inputs and tables)."""
    a, b = load_side(base, device), load_side(new, device)
    for side in (a, b):
        if not len(side.ops):
            raise DataError(f"{side.label}: no operator tasks to compare")
    na, nb = max(1, len(a.steps)), max(1, len(b.steps))
    ia, ib = float(a.steps["Iteration Time"].mean()), float(b.steps["Iteration Time"].mean())
    d_iter = ib - ia
    oa, ob = _agg(a.ops, "op_name"), _agg(b.ops, "op_name")
    ops = _table(oa, ob, na, nb, d_iter, _pair_renames(oa, ob))
    ta, tb = _agg(a.ops, "op_type"), _agg(b.ops, "op_type")
    types = _table(ta, tb, na, nb, d_iter, {}).drop(columns=["op_type"])
    it = a.steps[["iter_id", "Iteration Time"]].merge(b.steps[["iter_id", "Iteration Time"]], on="iter_id",
                                                       how="outer", suffixes=("_b", "_n"))
    iterations = pd.DataFrame({"iter_id": it["iter_id"], "base_us": it["Iteration Time_b"] / 1e3,
                               "new_us": it["Iteration Time_n"] / 1e3})
    iterations["delta_us"] = iterations["new_us"] - iterations["base_us"]
    ph = []
    for p in PHASES:
        va, vb = a.steps[p], b.steps[p]
        va, vb = va[va >= 0], vb[vb >= 0]
        x = float(va.mean()) / 1e3 if len(va) else np.nan
        y = float(vb.mean()) / 1e3 if len(vb) else np.nan
        ph.append({"phase": p, "base_us": x, "new_us": y, "delta_us": y - x})
    return DiffResult(ops, types, iterations, pd.DataFrame(ph), ia / 1e3, ib / 1e3)
