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

from typing import Any

import numpy as np
import pandas as pd

from msprof_py.analyse.advise.base import (SCHEDULE, Finding, Plot, busy_tasks, by_device, device_tasks, gaps,
                                           in_windows, merge_intervals, of_device, rule, top, us, windows)

SYNC_APIS = frozenset({"aclrtSynchronizeStream", "aclrtSynchronizeDevice", "aclrtSynchronizeStreamWithTimeout",
                       "aclrtSynchronizeEvent"})
MIN_SHARE = 0.05  # a cause must cost >= 5% of the iteration time to be reported
INVALID_MODEL = 4294967295  # model_id of tasks launched outside a model (single ops)
UNBALANCED_X = 1.10  # an iteration 10% above the median is unbalanced


def idle_gaps(session: Any, device_id: int) -> pd.DataFrame:
    """Idle gaps of one device inside its iteration windows: ``iter_id, start_ns, end_ns, dur_ns,
    cause, next_op`` (cause: sync / launch / dynamic / other, see the module doc; next_op: the op
    name of the task that ended the gap)."""
    t = of_device(device_tasks(session), device_id)
    t = t.sort_values("start_ns", kind="stable")
    g0, g1 = gaps(t["start_ns"].to_numpy(), t["end_ns"].to_numpy())
    win = windows(session, device_id)
    it = in_windows(g0, g1, win)
    keep = it >= 0
    g0, g1, it = g0[keep], g1[keep], it[keep]
    api = session.api
    threads = api.loc[api["device_id"] == device_id, "thread_id"].unique()
    on_thread = api[api["thread_id"].isin(threads)]
    sync = on_thread[on_thread["name"].astype(str).isin(SYNC_APIS)]
    launches = api[(api["device_id"] == device_id)]
    cause = np.full(len(g0), "other", dtype=object)
    l_start = np.sort(launches["start_ns"].to_numpy(np.int64))
    launched = np.searchsorted(l_start, g1, side="right") > np.searchsorted(l_start, g0, side="right")
    cause[launched] = "launch"  # the work after the gap was launched only during the gap
    if len(sync):  # ... and the host was blocked in a sync when the device ran dry
        s0, s1 = sync["start_ns"].to_numpy(np.int64), (sync["start_ns"] + sync["dur_ns"]).to_numpy(np.int64)
        o = np.argsort(s0)
        s0, s1 = s0[o], s1[o]
        k = np.searchsorted(s0, g0, side="right") - 1
        cause[launched & (k >= 0) & (s1[np.clip(k, 0, None)] >= g0)] = "sync"
    nxt = np.clip(np.searchsorted(t["start_ns"].to_numpy(np.int64), g1, side="left"), 0, max(len(t) - 1, 0))
    # only the columns read below: one row per gap can be as many rows as the tasks
    nt = t[["op_state", "model_id", "op_name"]].iloc[nxt] if len(t) else t
    dynamic = ((nt["op_state"].astype(str) == "dynamic") & (nt["model_id"] != INVALID_MODEL)).to_numpy(bool)
    cause[launched & dynamic] = "dynamic"
    return pd.DataFrame({"iter_id": it, "start_ns": g0, "end_ns": g1, "dur_ns": g1 - g0, "cause": cause,
                         "next_op": nt["op_name"].astype(str).to_numpy() if len(t) else np.array([], object)})


def span_ns(session: Any, dev: int) -> int:
    w = windows(session, dev)
    return int((w["end_ns"] - w["start_ns"]).sum())


def _gap_finding(session: Any, cause: str) -> list[Finding]:
    out = []
    for dev in sorted(int(d) for d in device_tasks(session)["device_id"].unique()):
        g = idle_gaps(session, dev)
        g = g[g["cause"] == cause]
        span = span_ns(session, dev)
        lost = int(g["dur_ns"].sum())
        if not span or lost < MIN_SHARE * span:
            continue
        per_iter = g.groupby("iter_id")["dur_ns"].sum()
        labels, vals = (list(map(str, per_iter.index)), [us(v) for v in per_iter]) if len(per_iter) > 1 else \
            top(g.set_index(g["start_ns"].astype(str))["dur_ns"], 20)
        ev = {"gaps": int(len(g)), "idle_us": us(lost), "span_us": us(span), "share": round(lost / span, 4),
              "largest_gaps_us": [us(v) for v in g["dur_ns"].nlargest(5)],
              "per_iteration_us": {int(k): us(v) for k, v in per_iter.items()}}
        if cause == "launch":
            out.append(Finding(
                "host_bound", SCHEDULE, dev,
                f"Host-bound launch: the device sat idle waiting for the host to launch work {len(g)} times "
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
                f"left the device idle {len(g)} times ({100 * lost / span:.1f}% of the iteration time)",
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
    api = session.api
    threads = api.loc[api["device_id"] == dev, "thread_id"].unique()
    s = api[api["thread_id"].isin(threads) & api["name"].astype(str).isin(SYNC_APIS)]
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
    t = of_device(busy_tasks(device_tasks(session)), device_id)
    win = windows(session, device_id)
    s0, s1 = merge_intervals(t["start_ns"].to_numpy(), t["end_ns"].to_numpy())
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
        if not len(ft) or ft["free_ns"].sum() < 0.10 * ft["span_ns"].sum():
            continue
        causes = idle_gaps(session, dev).groupby("cause")["dur_ns"].sum()
        out.append(Finding(
            "bubbles", SCHEDULE, dev,
            f"The device is free {100 * ft['free_ns'].sum() / ft['span_ns'].sum():.1f}% of the iteration time "
            f"(mean {us(ft['free_ns'].mean()):.1f} us per iteration)",
            "See the causes: host launch and synchronisation gaps (advice above), waits on events / other "
            "devices (communication, cross-stream dependencies).",
            int(ft["free_ns"].sum()), [], [int(i) for i in ft["iter_id"]], [],
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
