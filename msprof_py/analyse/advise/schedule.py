"""Scheduling rules: host-bound launch, synchronisation on the hot path, free time (bubbles)
per iteration, unbalanced iterations.

Device idle gaps are found inside the iteration windows (step start .. step end; the whole task
span for runs without step trace) between the merged intervals of every task on every stream,
and each gap gets one cause: ``launch`` (a launch call of the device began inside the gap: the
device waited for the host), ``sync`` (the same, and the device's host thread was blocked in
aclrtSynchronizeStream/Device when the device ran dry, so the launch came only after it
returned), ``dynamic`` (the same, and the task that ended the gap is a dynamic-shape op of a
model: GE relaunches it from the host every execution, :func:`ops.dynamic_ops`), else ``other``
(waits on events / other devices)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.analyse.advise.base import (SCHEDULE, Finding, Plot, by_device, device_task_of, device_tasks, gaps,
                                           in_windows, is_busy, memo, merge_intervals, rule, text_in, top, us,
                                           windows)

SYNC_APIS = frozenset({"aclrtSynchronizeStream", "aclrtSynchronizeDevice", "aclrtSynchronizeStreamWithTimeout",
                       "aclrtSynchronizeEvent"})
MIN_SHARE = 0.05  # a cause must cost >= 5% of the iteration time to be reported
INVALID_MODEL = 4294967295  # model_id of tasks launched outside a model (single ops)
UNBALANCED_X = 1.10  # an iteration 10% above the median is unbalanced


CAUSES = ("other", "launch", "sync", "dynamic")  # idle-gap causes by code (:class:`Gaps`)


@dataclass(frozen=True)
class Gaps:
    """Idle gaps of one device inside its iteration windows, as arrays (one entry per gap):
    ``iter_id``, ``start_ns`` / ``end_ns`` (int64 ns), ``cause`` (code into :data:`CAUSES`) and
    ``next_row``, the position in the device's executed tasks (:func:`device_task_of`) of the
    task that ended the gap."""

    iter_id: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray
    cause: np.ndarray
    next_row: np.ndarray

    def frame(self, cause: str, session: Any = None, device_id: int = 0, next_op: bool = False) -> pd.DataFrame:
        """The gaps of one cause: ``iter_id, start_ns, end_ns, dur_ns`` (+ ``next_op``, the op
        name of the task that ended each gap, read from ``session``'s tasks)."""
        pick = self.cause == CAUSES.index(cause)
        g0, g1 = self.start_ns[pick], self.end_ns[pick]
        out = pd.DataFrame({"iter_id": self.iter_id[pick], "start_ns": g0, "end_ns": g1, "dur_ns": g1 - g0})
        if next_op:
            names = device_task_of(session, device_id)["op_name"]
            out["next_op"] = names.iloc[self.next_row[pick]].astype(str).to_numpy()
        return out


def gap_parts(session: Any, device_id: int) -> Gaps:
    """The idle gaps of one device (see the module doc for the causes); shared by the rules
    inside :func:`shared_views`."""
    return memo(session, ("gaps", device_id), lambda: _gap_parts(session, device_id))


def _gap_parts(session: Any, device_id: int) -> Gaps:
    t = device_task_of(session, device_id)
    start, end = t["start_ns"].to_numpy(), t["end_ns"].to_numpy()
    order = np.argsort(start, kind="stable")  # the tasks by start (positions, not a sorted copy of the frame)
    g0, g1 = gaps(start[order], end[order])
    it = in_windows(g0, g1, windows(session, device_id))
    keep = it >= 0
    g0, g1, it = g0[keep], g1[keep], it[keep]
    sync_rows = sync_calls(session, device_id)
    api = session.api
    cause = np.zeros(len(g0), np.int8)  # other
    l_start = launch_starts(api, device_id)
    launched = np.searchsorted(l_start, g1, side="right") > np.searchsorted(l_start, g0, side="right")
    cause[launched] = CAUSES.index("launch")  # the work after the gap was launched only during the gap
    if len(sync_rows):  # ... and the host was blocked in a sync when the device ran dry
        a0 = api["start_ns"].to_numpy(np.int64)[sync_rows]
        s0, s1 = a0, a0 + api["dur_ns"].to_numpy(np.int64)[sync_rows]
        o = np.argsort(s0)
        s0, s1 = s0[o], s1[o]
        k = np.searchsorted(s0, g0, side="right") - 1
        cause[launched & (k >= 0) & (s1[np.clip(k, 0, None)] >= g0)] = CAUSES.index("sync")
    nxt = np.clip(np.searchsorted(start[order], g1, side="left"), 0, max(len(t) - 1, 0))
    rows = order[nxt] if len(t) else np.zeros(0, np.int64)
    if len(t):
        dynamic = text_in(t["op_state"], ["dynamic"])[rows] & (t["model_id"].to_numpy()[rows] != INVALID_MODEL)
        cause[launched & dynamic] = CAUSES.index("dynamic")
    return Gaps(it, g0, g1, cause, rows)


def launch_starts(api: pd.DataFrame, device_id: int) -> np.ndarray:
    """The sorted starts (int64 ns) of the device's API calls: the API table's own column when
    the device owns every row and the calls come in start order (a single-op run's millions of
    calls: no copy, no sort)."""
    start = api["start_ns"].to_numpy(np.int64)
    mine = (api["device_id"] == device_id).to_numpy()
    start = start if mine.all() else start[mine]
    return start if len(start) < 2 or bool((start[1:] >= start[:-1]).all()) else np.sort(start)


def sync_calls(session: Any, device_id: int) -> np.ndarray:
    """Rows of the API table (positions) of the aclrtSynchronize* calls made on the host threads
    that launch work on the device; shared inside :func:`shared_views`."""
    def make() -> np.ndarray:
        api = session.api
        threads = api.loc[api["device_id"] == device_id, "thread_id"].unique()
        cand = np.flatnonzero(text_in(api["name"], SYNC_APIS))  # by category first: few rows
        return cand[api["thread_id"].iloc[cand].isin(threads).to_numpy(bool)]
    return memo(session, ("sync_calls", device_id), make)


def idle_gaps(session: Any, device_id: int) -> pd.DataFrame:
    """Idle gaps of one device inside its iteration windows: ``iter_id, start_ns, end_ns, dur_ns,
    cause, next_op`` (cause: sync / launch / dynamic / other, see the module doc; next_op: the op
    name of the task that ended the gap).  The rules read :func:`gap_parts` (arrays, no string
    per gap)."""
    g = gap_parts(session, device_id)
    names = device_task_of(session, device_id)["op_name"]
    return pd.DataFrame({"iter_id": g.iter_id, "start_ns": g.start_ns, "end_ns": g.end_ns,
                         "dur_ns": g.end_ns - g.start_ns, "cause": np.array(CAUSES, dtype=object)[g.cause],
                         "next_op": names.iloc[g.next_row].astype(str).to_numpy() if len(names)
                         else np.array([], object)})


def span_ns(session: Any, dev: int) -> int:
    w = windows(session, dev)
    return int((w["end_ns"] - w["start_ns"]).sum())


def _gap_finding(session: Any, cause: str) -> list[Finding]:
    out = []
    for dev in sorted(int(d) for d in device_tasks(session)["device_id"].unique()):
        gp = gap_parts(session, dev)
        pick = gp.cause == CAUSES.index(cause)
        g0, dur = gp.start_ns[pick], gp.end_ns[pick] - gp.start_ns[pick]  # the gaps of this cause
        span = span_ns(session, dev)
        lost = int(dur.sum())
        if not span or lost < MIN_SHARE * span:
            continue
        per_iter = pd.Series(dur).groupby(gp.iter_id[pick]).sum()
        labels, vals = (list(map(str, per_iter.index)), [us(v) for v in per_iter]) if len(per_iter) > 1 else \
            top(pd.Series(dur, index=g0), 20)  # (labels: str of the 20 starts, not of every gap's)
        ev = {"gaps": len(dur), "idle_us": us(lost), "span_us": us(span), "share": round(lost / span, 4),
              "largest_gaps_us": [us(v) for v in pd.Series(dur).nlargest(5)],
              "per_iteration_us": {int(k): us(v) for k, v in per_iter.items()}}
        if cause == "launch":
            out.append(Finding(
                "host_bound", SCHEDULE, dev,
                f"Host-bound launch: the device sat idle waiting for the host to launch work {len(dur)} times "
                f"({100 * lost / span:.1f}% of the iteration time)",
                "Launch faster than the device runs: move host work (data preparation, Python) off the launch "
                "thread, use a static graph / graph mode, fuse small ops, or launch ahead.",
                lost, [], [int(i) for i in per_iter.index], [], {**ev, "estimate": "sum of idle gaps in which a "
                                                                    "launch began"},
                Plot("device idle waiting for launches" + (" per iteration" if len(per_iter) > 1 else ""),
                     labels, vals)))
        else:
            calls = _syncs_in_windows(session, dev)
            out.append(Finding(
                "sync_hot_path", SCHEDULE, dev,
                f"Synchronisation on the hot path: {len(calls)} aclrtSynchronize* call(s) inside iterations "
                f"left the device idle {len(dur)} times ({100 * lost / span:.1f}% of the iteration time)",
                "Remove the synchronisations the host does not need at once (between launches, a per-step "
                "result read): order streams with events (aclrtRecordEvent / aclrtStreamWaitEvent), fetch "
                "results with async copies and read them a step later, so the host launches ahead.",
                lost, sorted(set(calls)), [int(i) for i in per_iter.index], [],
                {**ev, "sync_calls": len(calls), "estimate": "sum of idle gaps that began while the host was "
                                                             "blocked in a sync"},
                Plot("device idle after synchronisations" + (" per iteration" if len(per_iter) > 1 else ""),
                     labels, vals)))
    return out


def _syncs_in_windows(session: Any, dev: int) -> list[str]:
    rows = sync_calls(session, dev)
    s = session.api.iloc[rows][["start_ns", "name"]]
    it = in_windows(s["start_ns"].to_numpy(np.int64), s["start_ns"].to_numpy(np.int64), windows(session, dev))
    return list(s.loc[it >= 0, "name"].astype(str))


@rule("host_bound")
def host_bound(session: Any) -> list[Finding]:
    return _gap_finding(session, "launch")


@rule("sync_hot_path")
def sync_hot_path(session: Any) -> list[Finding]:
    return _gap_finding(session, "sync")


def free_time(session: Any, device_id: int) -> pd.DataFrame:
    """Per iteration of one device: ``iter_id, span_ns, busy_ns, free_ns`` (free = no working
    task on any stream; event/notify waits count as free)."""
    t = device_task_of(session, device_id)
    working = is_busy(t)
    win = windows(session, device_id)
    s0, s1 = merge_intervals(t["start_ns"].to_numpy()[working], t["end_ns"].to_numpy()[working])
    w0, w1 = win["start_ns"].to_numpy(np.int64), win["end_ns"].to_numpy(np.int64)
    busy = np.maximum(busy_until(s0, s1, w1) - busy_until(s0, s1, w0), 0)  # 0 for an empty window
    span = w1 - w0
    return pd.DataFrame({"iter_id": win["iter_id"].to_numpy(np.int64), "span_ns": span, "busy_ns": busy,
                         "free_ns": span - busy}, columns=["iter_id", "span_ns", "busy_ns", "free_ns"])


def busy_until(s0: np.ndarray, s1: np.ndarray, x: np.ndarray) -> np.ndarray:
    """For each time ``x``: the busy time before it, of the sorted disjoint intervals
    ``[s0, s1)`` (int64 ns; a window's busy time is the difference at its ends: one
    searchsorted for all windows instead of a pass over every interval per window)."""
    cum = np.concatenate([[0], np.cumsum(s1 - s0)]).astype(np.int64)
    j = np.searchsorted(s0, x, side="right")  # intervals starting at or before x
    last = np.clip(j - 1, 0, None)
    cut = np.maximum(s1[last] - x, 0) if len(s0) else np.zeros(len(x), np.int64)  # the part after x
    return np.where(j > 0, cum[j] - cut, 0)


@rule("bubbles")
def bubbles(session: Any) -> list[Finding]:
    """Free time per iteration (device doing nothing) above 10% of the iteration."""
    out = []
    for dev in sorted(int(d) for d in device_tasks(session)["device_id"].unique()):
        ft = free_time(session, dev)
        # Python ints: a corrupt time makes spans near 2**63, where numpy's 100 * sum overflows
        free, span = int(ft["free_ns"].sum()), int(ft["span_ns"].sum())
        if not len(ft) or span <= 0 or free < 0.10 * span:
            continue
        g = gap_parts(session, dev)
        dur = g.end_ns - g.start_ns
        causes = pd.Series({c: int(dur[g.cause == k].sum()) for k, c in sorted(enumerate(CAUSES), key=lambda kc: kc[1])
                            if (g.cause == k).any()}, dtype=np.int64)  # = a groupby("cause") sum
        out.append(Finding(
            "bubbles", SCHEDULE, dev,
            f"The device is free {100 * free / span:.1f}% of the iteration time "
            f"(mean {us(ft['free_ns'].mean()):.1f} us per iteration)",
            "See the causes: host launch and synchronisation gaps (advice above), waits on events / other "
            "devices (communication, cross-stream dependencies).",
            free, [], [int(i) for i in ft["iter_id"]], [],
            {"per_iteration": {int(r.iter_id): {"span_us": us(r.span_ns), "free_us": us(r.free_ns)}
                               for r in ft.itertuples()},
             "idle_by_cause_us": {str(k): us(v) for k, v in causes.items()},
             "estimate": "iteration span - union of working tasks"},
            Plot("free time per iteration", [str(i) for i in ft["iter_id"]], [us(v) for v in ft["free_ns"]])))
    return out


@rule("unbalanced_iterations")
def unbalanced(session: Any) -> list[Finding]:
    """Iterations more than 10% longer than the device's median iteration; the ops that took
    longer than their own median explain the excess."""
    out = []
    st, t = session.steps, device_tasks(session)
    for dev, sd in by_device(st):
        if len(sd) < 3:
            continue
        dur = (sd["step_end_ns"] - sd["step_start_ns"]).to_numpy(np.int64)
        med = float(np.median(dur))
        slow = sd[dur > UNBALANCED_X * med]
        if not len(slow):
            continue
        excess = pd.Series(dur - med, index=sd["iter_id"].to_numpy())[dur > UNBALANCED_X * med]
        td = t[(t["device_id"] == dev) & (t["op_type"].astype(str) != "N/A")]
        op_med = td.groupby("op_name", observed=True)["dur_ns"].transform("median")
        extra = (td["dur_ns"] - op_med)[td["iter_id"].isin(excess.index)]
        by_op = extra.groupby(td.loc[extra.index, "op_name"].astype(str)).sum()
        by_op = by_op[by_op > 0.05 * excess.sum()].sort_values(ascending=False)
        out.append(Finding(
            "unbalanced_iterations", SCHEDULE, int(dev),
            f"{len(excess)} iteration(s) take more than {int(100 * (UNBALANCED_X - 1))}% longer than the median "
            f"({us(med):.1f} us)",
            "Find what differs in those iterations (the ops listed, data-dependent shapes, host work, "
            "checkpointing, another process on the device) and make the work per iteration even.",
            int(excess.sum()), list(by_op.index), [int(i) for i in excess.index], [],
            {"median_iteration_us": us(med), "iterations_us": {int(i): us(v) for i, v in zip(sd["iter_id"], dur)},
             "excess_by_op_us": {k: us(v) for k, v in by_op.items()},
             "estimate": "sum over slow iterations of (iteration time - median)"},
            Plot("iteration time", [str(i) for i in sd["iter_id"]], [us(v) for v in dur])))
    return out
