"""What every advice rule returns, and the interval arithmetic the rules share.

A rule is ``fn(session) -> list[Finding]`` registered with :func:`rule`.  Times are int64 ns
(the session's local wall clock); ``time_at_stake_ns`` is the time the run would save over the
whole profiled span if the finding were fixed (an estimate: how it is estimated is in
``evidence["estimate"]``).
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import pandas as pd

# msprof's prof_rule_{dev}.json rule types (analysis/common_func/common_prof_rule.py)
COMPUTATION = "Computation"
MEMORY = "Memory"
SCHEDULE = "Operator Schedule"
PROCESSING = "Operator Processing"
METRICS = "Operator Metrics"

# device tasks that wait rather than work: they do not make the device busy
WAIT_TYPES = frozenset({"EVENT_WAIT", "NOTIFY_WAIT", "EVENT_WAIT_SQE", "NOTIFY_WAIT_SQE"})


@dataclass
class Plot:
    """One bar chart per finding (rendered as inline SVG in the html report)."""

    title: str
    labels: list[str]
    values: list[float]  # in ``unit``
    unit: str = "us"


@dataclass
class Finding:
    rule: str  # rule id: "aicpu", "dynamic_shape", ...
    category: str  # msprof rule type the finding is filed under in prof_rule_{dev}.json
    device_id: int
    title: str  # one line: what is wrong
    suggestion: str  # one line: what to do
    time_at_stake_ns: int
    ops: list[str] = field(default_factory=list)  # op names (prof_rule's "Tuning Data")
    iterations: list[int] = field(default_factory=list)  # iter_id values
    streams: list[int] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)  # numbers behind the finding (JSON-able)
    plot: Plot | None = None


Rule = Callable[[Any], list[Finding]]
RULES: dict[str, Rule] = {}


def rule(name: str) -> Callable[[Rule], Rule]:
    def deco(fn: Rule) -> Rule:
        RULES[name] = fn
        return fn
    return deco


# ---------------------------------------------------------------------------- views shared by the rules
T = TypeVar("T")
_LOCAL = threading.local()  # each thread's scopes (a user may advise sessions on several threads)


def _scopes() -> list[tuple[Any, dict[Any, Any]]]:
    scopes: list[tuple[Any, dict[Any, Any]]] = _LOCAL.__dict__.setdefault("scopes", [])
    return scopes


@contextmanager
def shared_views(session: Any) -> Iterator[None]:
    """Inside, what :func:`memo` derives from ``session`` (the executed tasks, a device's
    iteration windows and idle gaps, ...) is derived once and shared by every rule: several
    rules read the same views (the idle gaps: host_bound, sync_hot_path, bubbles,
    dynamic_shape).  Dropped on leaving; outside a scope every call derives again."""
    scopes = _scopes()
    if any(s is session for s, _ in scopes):  # nested: the outer scope's views
        yield
        return
    scopes.append((session, {}))
    try:
        yield
    finally:
        scopes.pop()


def memo(session: Any, key: Any, make: Callable[[], T]) -> T:
    """``make()``, once per ``key`` inside :func:`shared_views` of ``session`` (the value is
    shared: callers must not change it)."""
    for s, views in reversed(_scopes()):
        if s is session:
            if key not in views:
                views[key] = make()
            return views[key]
    return make()


def forget(session: Any, key: Any) -> None:
    """Drop one shared view of ``session`` (its last reader is done: memory back before the
    next rules)."""
    for s, views in _scopes():
        if s is session:
            views.pop(key, None)


def text_in(col: pd.Series, values: Iterable[Any]) -> np.ndarray:
    """``col.astype(str).isin(values)`` as a bool array, for a categorical column computed per
    category (and once for a missing value), not per row."""
    values = list(values)
    if not isinstance(col.dtype, pd.CategoricalDtype):
        return col.astype(str).isin(values).to_numpy(bool)
    per_cat = pd.Series(col.cat.categories).astype(str).isin(values).to_numpy(bool)
    missing = bool(pd.Series([np.nan], dtype=col.dtype).astype(str).isin(values).iloc[0])
    return np.append(per_cat, missing)[col.cat.codes.to_numpy()]  # code -1 (missing) -> the last


def texts_of(col: pd.Series) -> set[Any]:
    """``set(col.astype(str))``, for a categorical column from the categories its rows use."""
    if not isinstance(col.dtype, pd.CategoricalDtype):
        return set(col.astype(str))
    codes = col.cat.codes.to_numpy()
    used = np.zeros(len(col.cat.categories) + 1, bool)
    used[codes] = True  # code -1 (missing) marks the last
    pick = pd.Series(col.cat.categories[used[:-1]], dtype=col.dtype)
    if used[-1]:
        pick = pd.concat([pick, pd.Series([np.nan], dtype=col.dtype)])
    return set(pick.astype(str))


def device_tasks(session: Any) -> pd.DataFrame:
    """Executed device tasks (host-only rows dropped) with an ``end_ns`` column (shared inside
    :func:`shared_views`)."""
    return memo(session, "device_tasks", lambda: _device_tasks(session))


def _device_tasks(session: Any) -> pd.DataFrame:
    t = session.tasks
    ran = (t["start_ns"] >= 0).to_numpy()
    t = t if ran.all() else t[ran]  # no copy of every column when nothing is dropped
    return t.assign(end_ns=t["start_ns"] + t["dur_ns"])


def device_task_of(session: Any, device_id: int) -> pd.DataFrame:
    """:func:`device_tasks` of one device (shared inside :func:`shared_views`)."""
    return memo(session, ("device_tasks", device_id), lambda: of_device(device_tasks(session), device_id))


def by_device(df: pd.DataFrame) -> Any:
    """``df.groupby("device_id")``, without copying a frame of one device (a device's session:
    advice one device at a time, :mod:`msprof_py.analyse.advise.parts`)."""
    ids = df["device_id"].to_numpy()
    if len(ids) and (ids == ids[0]).all():
        return [(ids[0], df)]
    return df.groupby("device_id")


def of_device(df: pd.DataFrame, device_id: int) -> pd.DataFrame:
    """The rows of ``df`` of one device (``df`` itself when it holds only that device's)."""
    mine = (df["device_id"] == device_id).to_numpy()
    return df if mine.all() else df[mine]


def busy_tasks(tasks: pd.DataFrame) -> pd.DataFrame:
    """Tasks that keep the device busy (wait tasks are not work)."""
    return tasks[is_busy(tasks)]


def is_busy(tasks: pd.DataFrame) -> np.ndarray:
    """Per task: whether it keeps the device busy (:func:`busy_tasks`)."""
    return ~text_in(tasks["host_task_type"], WAIT_TYPES) & ~text_in(tasks["device_task_type"], WAIT_TYPES)


def merge_intervals(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of ``[start, end)`` intervals: sorted, disjoint ``(starts, ends)``."""
    if len(start) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    s, e = np.asarray(start, np.int64), np.asarray(end, np.int64)
    if not (s[1:] >= s[:-1]).all():  # (callers often pass sorted starts: then no sort, no copy)
        o = np.argsort(s, kind="stable")
        s, e = s[o], e[o]
    run_end = np.maximum.accumulate(e)
    new = np.empty(len(s), bool)
    new[0] = True
    new[1:] = s[1:] > run_end[:-1]
    idx = np.flatnonzero(new)
    if (e >= s).all():  # a union's end is the running end at its last interval (no reduceat)
        return s[idx], run_end[np.append(idx[1:] - 1, len(s) - 1)]
    return s[idx], np.maximum.reduceat(e, idx)


def gaps(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Idle gaps between the merged busy intervals: ``(gap_start, gap_end)``."""
    s, e = merge_intervals(start, end)
    return e[:-1], s[1:]


def overlap_ns(a_start: np.ndarray, a_end: np.ndarray, b_start: np.ndarray, b_end: np.ndarray) -> int:
    """Total length of (union of a) ∩ (union of b)."""
    a0, a1 = merge_intervals(a_start, a_end)
    b0, b1 = merge_intervals(b_start, b_end)
    if not len(a0) or not len(b0):
        return 0
    # every a-interval against the b-intervals it can touch (both sorted and disjoint)
    lo = np.searchsorted(b1, a0, side="right")
    hi = np.searchsorted(b0, a1, side="left")
    i = np.flatnonzero(hi > lo)
    n = (hi - lo)[i]  # the b-intervals each a-interval can touch: few (both sets disjoint)
    pi = np.repeat(i, n)  # every (a, b) pair, as a pass over the pairs
    first = np.cumsum(n) - n  # each a-interval's first pair
    pj = np.repeat(lo[i], n) + np.arange(int(n.sum())) - np.repeat(first, n)
    pair = np.clip(np.minimum(b1[pj], a1[pi]) - np.maximum(b0[pj], a0[pi]), 0, None)
    return sum(np.add.reduceat(pair, first).tolist()) if len(pair) else 0  # per a-interval, then as ints


def windows(session: Any, device_id: int) -> pd.DataFrame:
    """Iteration windows of a device: ``iter_id, start_ns, end_ns``: from the first task of the
    iteration (its input copies and the dynamic-shape ops GE launches before the model's first
    task, which carries the step-start tag) or the step start if earlier, to the step end.  The
    host time between iterations (the previous step end .. the next execution's first task) is
    not inside (msprof's data-aug bound).

    Without step trace (single-op scripts) the whole span of the device's tasks is one window
    with iter_id 0.  Shared inside :func:`shared_views`."""
    return memo(session, ("windows", device_id), lambda: _windows(session, device_id))


def _windows(session: Any, device_id: int) -> pd.DataFrame:
    st = session.steps
    st = of_device(st, device_id)
    t = device_task_of(session, device_id)
    if len(st):
        it = st["iter_id"].to_numpy(np.int64)
        later = (t["iter_id"] > 0).to_numpy()  # two columns, not a copy of every task column
        first = t["start_ns"][later].groupby(t["iter_id"][later]).min().reindex(it).to_numpy(np.float64)
        start = st["step_start_ns"].to_numpy(np.int64)
        start = np.where(np.isnan(first), start, np.minimum(start, np.nan_to_num(first, nan=0).astype(np.int64)))
        return pd.DataFrame({"iter_id": it, "start_ns": start, "end_ns": st["step_end_ns"].to_numpy()})
    if not len(t):
        return pd.DataFrame({"iter_id": [], "start_ns": [], "end_ns": []}, dtype=np.int64)
    return pd.DataFrame({"iter_id": [0], "start_ns": [int(t["start_ns"].min())], "end_ns": [int(t["end_ns"].max())]})


def in_windows(t0: np.ndarray, t1: np.ndarray, win: pd.DataFrame) -> np.ndarray:
    """For each ``[t0, t1]`` the iter_id of the window containing it entirely, else -1."""
    ws, we, wi = (win["start_ns"].to_numpy(np.int64), win["end_ns"].to_numpy(np.int64),
                  win["iter_id"].to_numpy(np.int64))
    if not len(ws):
        return np.full(len(t0), -1, np.int64)
    o = np.argsort(ws)
    ws, we, wi = ws[o], we[o], wi[o]
    k = np.searchsorted(ws, t0, side="right") - 1
    ok = (k >= 0) & (t1 <= we[np.clip(k, 0, None)])
    return np.where(ok, wi[np.clip(k, 0, None)], -1)


def us(ns: float) -> float:
    return round(float(ns) / 1000.0, 3)


def device_ids(session: Any) -> list[int]:
    t = session.tasks
    return sorted(int(d) for d in t.loc[t["start_ns"] >= 0, "device_id"].unique())


def top(series: pd.Series, n: int = 10) -> tuple[list[str], list[float]]:
    """Largest ``n`` values of a ns-valued series as (labels, us values) for a plot (those of
    ``series.sort_values(ascending=False).head(n)``)."""
    v = series.to_numpy()
    if len(v) > 4 * n and v.dtype.kind in "iu":  # e.g. a million idle gaps: select, do not sort them all
        part = np.argpartition(v, len(v) - n - 1)[len(v) - n - 1:]  # the n + 1 largest
        part = part[np.argsort(v[part], kind="stable")[::-1]]
        if (v[part][:-1] > v[part][1:]).all():  # distinct, the n-th above the rest: the order of any sort
            return [str(i) for i in series.index[part[:n]]], [us(x) for x in v[part[:n]]]
    s = series.sort_values(ascending=False).head(n)
    return [str(i) for i in s.index], [us(v) for v in s.to_numpy()]
