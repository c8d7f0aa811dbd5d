"""One merged timeline of every rank on one clock (``msprof-py cluster --timeline``).

**Clock alignment.**  Every host has its own wall clock (an offset of milliseconds and a drift of
a few ppm are normal).  A collective ends at the same instant on every member (the last notify
wait returns when the peers' records arrive), and so do a send and its receive, so the ends of
the collectives (and pipeline send / receive pairs) that span hosts are the anchors: for a host ``h`` against an already aligned host ``g`` sharing collectives, the
differences ``end_h - end_g`` over all shared executions are fitted with ``a + b * end_g`` (least
squares: offset ``a``, drift ``b``); hosts are aligned outward from the host of the lowest rank
(breadth first over the hosts that share communicators).  A host sharing no collective with the
others cannot be aligned; it keeps its own clock and the timeline says so.  The fit per host
(offset, drift, anchors, largest residual) is written to ``cluster_clock_alignment.csv``.

**Size.**  A thousand ranks of a whole run do not fit in a viewer (the Perfetto UI loads about a
million slices comfortably), so the timeline covers an iteration window (``--steps``); when the
window holds more than :data:`MAX_EVENTS` device tasks it is cut to the first iterations that
fit, with a warning naming the cut.

**Layout.**  Chrome trace JSON (``cluster_timeline_steps_A-B.json``): one process per rank
(``rank R  HOST  device D``, sorted by rank), one thread per device stream (``Stream N``) with
the device tasks, one per communicator (``Group NAME Communication``) with the HCCL ops.  ``ts``
is in us from the window's start on the aligned clock (small numbers keep ns precision in a
double); the origin is in the trace's ``otherData``.
"""
from __future__ import annotations

import csv
import io
from collections import deque
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd

from msprof_py.atomic import write_bytes, write_text
from msprof_py.cluster.combine import ClusterData
from msprof_py.cluster.outputs import OUTPUT_DIR, _is_p2p

MAX_EVENTS = 1_000_000


MIN_DRIFT_SPAN_NS = 50_000_000  # fit a drift only over anchors spread across 50 ms or more


def fit_clocks(data: ClusterData) -> pd.DataFrame:
    """Per host: local = ref + ``offset_ns`` + ``drift_ppm``/1e6 * (ref - ``center_ns``), the anchors
    used and the largest residual; ``aligned`` is False for a host sharing no collective with the
    reference's component (it keeps its own clock)."""
    ops = data.ops
    hosts = sorted(set(data.ranks["host"]))
    ref = str(data.ranks.sort_values("rank_id")["host"].iloc[0])
    fits: dict[str, tuple[float, float, float, int, float]] = {ref: (0.0, 0.0, 0.0, 0, 0.0)}
    if not ops.empty and len(hosts) > 1:
        ends = _pair_p2p(data, ops.assign(end=ops["start_ns"] + ops["elapse_ns"]))
        # one end per (execution, host): the collective ends together on every member
        per = ends.groupby(["group_name", "op_name", "step", "host"], sort=True)["end"].median().unstack("host")
        queue = deque([ref])
        while queue:
            g = queue.popleft()
            if g not in per.columns:
                continue
            for h in hosts:
                if h in fits or h not in per.columns:
                    continue
                both = per[[g, h]].dropna()
                if both.empty:
                    continue
                x = to_reference(both[g].to_numpy(np.float64), *fits[g][:3])
                y = both[h].to_numpy(np.float64) - x
                xc = float(np.median(x))
                if len(x) >= 3 and np.ptp(x) >= MIN_DRIFT_SPAN_NS:
                    b, a = np.polyfit(x - xc, y, 1)
                else:
                    b, a = 0.0, float(np.median(y))
                resid = float(np.max(np.abs(y - (a + b * (x - xc)))))
                fits[h] = (float(a), float(b) * 1e6, xc, int(len(x)), resid)
                queue.append(h)
    rows = [{"host": h, "offset_ns": fits.get(h, (0.0,))[0], "drift_ppm": fits[h][1] if h in fits else 0.0,
             "center_ns": fits[h][2] if h in fits else 0.0, "anchors": fits[h][3] if h in fits else 0,
             "max_residual_ns": fits[h][4] if h in fits else float("nan"), "aligned": h in fits,
             "reference": h == ref} for h in hosts]
    return pd.DataFrame(rows)


def _pair_p2p(data: ClusterData, ends: pd.DataFrame) -> pd.DataFrame:
    """A send ends with its receive (both wait for the copy), but the two have different names: in a
    point-to-point group of two ranks (a pipeline of two stages) the k-th op to end in a step on one
    rank is the partner of the k-th on the other, so both get the name ``p2p#k``.  Bigger p2p
    groups (each rank talks to two neighbours) give no anchors."""
    pairs = [g for g, m in data.groups.items() if len(m) == 2 and _is_p2p(data, g)]
    sel = ends["group_name"].isin(pairs).to_numpy()
    if not sel.any():
        return ends
    sub = ends[sel]
    k = sub.groupby(["group_name", "step", "rank_id"])["end"].rank(method="first").astype(np.int64)
    out = ends.copy()
    out.loc[sel, "op_name"] = "p2p#" + k.astype(str)
    return out


def to_reference(local_ns: np.ndarray, offset_ns: float, drift_ppm: float, center_ns: float = 0.0) -> np.ndarray:
    """A host's local times -> the reference host's clock (float ns): inverts local = ref + offset +
    drift * (ref - center)."""
    b = drift_ppm * 1e-6
    return (np.asarray(local_ns, np.float64) - offset_ns + b * center_ns) / (1.0 + b)


def _window(data: ClusterData, fits: pd.DataFrame, warnings: list[str]) -> tuple[int, int, int]:
    """(first step, last step, origin ns on the reference clock), cut to fit MAX_EVENTS; every rank
    shows its own iterations first..last."""
    s = data.steps
    per_step = s.groupby("step")["tasks"].sum().sort_index()
    total = 0
    last = int(per_step.index[0])
    for step, n in per_step.items():
        if total + int(n) > MAX_EVENTS and total > 0:
            break
        total += int(n)
        last = int(step)
    first = int(per_step.index[0])
    if last < int(per_step.index[-1]):
        warnings.append(f"timeline: steps {first}-{int(per_step.index[-1])} hold {int(per_step.sum())} device tasks, "
                        f"more than a viewer loads ({MAX_EVENTS}); written for steps {first}-{last} only "
                        f"(choose others with --steps)")
    fit = fits.set_index("host")
    sel = s[(s["step"] >= first) & (s["step"] <= last)]
    args = [sel["host"].map(fit[c]).to_numpy(np.float64) for c in ("offset_ns", "drift_ppm", "center_ns")]
    t0 = to_reference(sel["start_ns"].to_numpy(), *args)
    return first, last, int(np.floor(t0.min()))


def rank_events(prof: str, params: dict[str, Any]) -> list[dict]:
    """One rank's trace events in the window (runs in a worker; reads the rank's parse cache)."""
    from msprof_py.parse.session import load_prof

    p = params[prof]
    s = load_prof(Path(prof))
    rank, origin, lo, hi = p["rank"], p["origin"], p["local_start"], p["local_end"]
    clock = (p["offset_ns"], p["drift_ppm"], p["center_ns"])
    dr = p["drift_ppm"]
    t = s.tasks[(s.tasks["device_id"] == p["device_id"]) & (s.tasks["start_ns"] >= lo) & (s.tasks["start_ns"] < hi)]
    st = to_reference(t["start_ns"].to_numpy(), *clock)
    pid = rank
    events: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
         "args": {"name": f"rank {rank}  {p['host']}  device {p['device_id']}"}},
        {"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": rank}},
    ]
    streams = sorted(set(int(x) for x in t["stream_id"]))
    for sid in streams:
        events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": sid, "args": {"name": f"Stream {sid}"}})
    ts = np.round((st - origin) / 1000.0, 3)
    dur = np.round(t["dur_ns"].to_numpy(np.float64) / (1000.0 * (1 + dr * 1e-6)), 3)
    names = t["op_name"].astype(str).to_numpy()
    ttype = t["task_type"].astype(str).to_numpy()
    sids = t["stream_id"].to_numpy()
    tids = t["task_id"].to_numpy()
    for i in range(len(t)):  # building the JSON objects is the output itself: one dict per slice
        events.append({"name": names[i], "ph": "X", "pid": pid, "tid": int(sids[i]), "ts": float(ts[i]),
                       "dur": float(dur[i]), "args": {"Task Type": ttype[i], "Task Id": int(tids[i])}})
    c = s.communication
    c = c[(c["device_id"] == p["device_id"]) & (c["start_ns"] >= lo) & (c["start_ns"] < hi)]
    cst = to_reference(c["start_ns"].to_numpy(), *clock)
    groups = sorted(set(c["group_name"].astype(str)))
    base_tid = 1_000_000
    for j, g in enumerate(groups):
        events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": base_tid + j,
                       "args": {"name": f"Group {g} Communication"}})
    gid = {g: base_tid + j for j, g in enumerate(groups)}
    cts = np.round((cst - origin) / 1000.0, 3)
    cdur = np.round(c["dur_ns"].to_numpy(np.float64) / (1000.0 * (1 + dr * 1e-6)), 3)
    for name, g, a, d in zip(c["op_name"].astype(str), c["group_name"].astype(str), cts, cdur):
        events.append({"name": name, "ph": "X", "pid": pid, "tid": gid[g], "ts": float(a), "dur": float(d),
                       "args": {"group": g}})
    return events


def write_timeline(data: ClusterData, out: Path, full: ClusterData | None = None, workers: int | None = None,
                   scheduler: str | None = None) -> Path:
    """Write the merged timeline of ``data``'s iterations and the clock fit (over every iteration of
    ``full``, default ``data``: more anchors, a longer span for the drift); returns the timeline's path."""
    from msprof_py.cluster.parallel import map_ranks

    d = out / OUTPUT_DIR
    d.mkdir(parents=True, exist_ok=True)
    fits = fit_clocks(full if full is not None else data)
    write_text(d / "cluster_clock_alignment.csv", _fits_csv(fits))
    for h in fits.loc[~fits["aligned"], "host"]:
        data.warnings.append(f"timeline: host {h} shares no collective with the other hosts; its clock is not "
                             "aligned (shown on its own clock)")
    first, last, origin = _window(data, fits, data.warnings)
    fit = fits.set_index("host")
    sel = data.steps[(data.steps["step"] >= first) & (data.steps["step"] <= last)]
    win = sel.groupby("rank_id").agg(lo=("start_ns", "min"), hi=("end_ns", "max"))
    params = {r.prof: {"rank": int(r.rank_id), "host": r.host, "device_id": int(r.device_id),
                       "local_start": int(win.loc[r.rank_id, "lo"]) if r.rank_id in win.index else 0,
                       "local_end": int(win.loc[r.rank_id, "hi"]) if r.rank_id in win.index else 0,
                       "offset_ns": float(fit.loc[r.host, "offset_ns"]), "drift_ppm": float(fit.loc[r.host, "drift_ppm"]),
                       "center_ns": float(fit.loc[r.host, "center_ns"]),
                       "origin": origin} for r in data.ranks.itertuples(index=False)}
    parts = map_ranks(list(params), workers, scheduler, work=partial(rank_events, params=params))
    path = d / f"cluster_timeline_steps_{first}-{last}.json"
    body = b",\n".join(orjson.dumps(e) for part in parts for e in part)
    meta = orjson.dumps({"clock": "reference host " + str(fits.loc[fits["reference"], "host"].iloc[0]),
                         "origin_local_ns": origin, "steps": f"{first}-{last}"})
    write_bytes(path, b'{"otherData":' + meta + b',"traceEvents":[\n' + body + b"\n]}\n")
    return path


def _fits_csv(fits: pd.DataFrame) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["Host", "Reference", "Aligned", "Offset(us)", "Drift(ppm)", "At(local ns of the reference)", "Anchors",
                "Max Residual(us)"])
    for r in fits.itertuples(index=False):
        w.writerow([r.host, r.reference, r.aligned, f"{r.offset_ns / 1000:.3f}", f"{r.drift_ppm:.4f}",
                    f"{r.center_ns:.0f}", r.anchors, f"{r.max_residual_ns / 1000:.3f}"])
    return buf.getvalue()
