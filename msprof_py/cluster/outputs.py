"""msprof-analyze's cluster outputs, with its file names, keys and columns.

Written into ``OUTPUT/cluster_analysis_output/`` (msprof-analyze's folder name):

- ``communication_group.json``: ``{"collective": [[ranks]...], "p2p": [[ranks]...]}``.
- ``cluster_step_trace_time.csv``: ``Step,Type,Index,Computing,Communication(Not Overlapped),
  Overlapped,Communication,Free,Stage,Bubble,Communication(Not Overlapped and Exclude Receive),
  Preparing`` in us; ``rank`` rows (Index = rank id) then ``stage`` rows (Index = the stage's
  ranks, each value the maximum over them).  msprof-analyze fills Step only for PyTorch input and
  leaves it empty for msprof's; we write the iteration id (one row per iteration and rank).
- ``cluster_communication_matrix.json``: ``{"(ranks)": {"step<N>": {"<op>@<group>": {"src-dst":
  {"Transport Type", "Transit Size(MB)", "Transit Time(ms)", "Bandwidth(GB/s)", "Op Name"}},
  "Total Op Info@<group>": {...}}}}`` with global ranks.
- ``cluster_communication.json``: ``{"(ranks)": {"step<N>": {"<op>@<group>": {"<rank>":
  {"Communication Time Info": {...}, "Communication Bandwidth Info": {"<RDMA|HCCS|...>": {...}}}},
  "Total Op Info": {...}}}}``.
- ``cluster_analysis.db``: ``CommunicationGroup``, ``ClusterStepTraceTime``, ``HostInfo``,
  ``RankDeviceMap``, ``ClusterCommunicationTime``, ``ClusterCommunicationBandwidth``,
  ``ClusterCommunicationMatrix`` with msprof-analyze's columns (its ``--export_type db`` tables).

Every file goes through a temporary name (:mod:`msprof_py.atomic`); the same input gives the same bytes.
"""
from __future__ import annotations

import csv
import io
import sqlite3
from pathlib import Path

import numpy as np
import orjson
import pandas as pd

from msprof_py.atomic import temp_path, write_bytes, write_text
from msprof_py.cluster.combine import ClusterData

OUTPUT_DIR = "cluster_analysis_output"
STEP_HEADERS = ["Step", "Type", "Index", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication",
                "Free", "Stage", "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing"]
US = 1000.0
MS = 1_000_000.0
MB = 1024.0 * 1024.0
LARGE_PACKET_MB = {"RDMA": 1.0, "HCCS": 1.0, "PCIE": 1.0, "SDMA": 1.0, "SIO": 1.0}  # msprof-analyze: >= 1 MB


def _r(x: float) -> float:
    return round(float(x), 4)


def _dump(obj: object) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)


def rank_tuple(members: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(m) for m in members) + ")"


def write_all(data: ClusterData, out: Path) -> list[Path]:
    """Write every output file into ``out/cluster_analysis_output``; returns the paths."""
    d = out / OUTPUT_DIR
    d.mkdir(parents=True, exist_ok=True)
    matrix, comm = comm_matrix(data), comm_json(data)
    written = [write_bytes(d / "communication_group.json", _dump(communication_groups(data))),
               write_text(d / "cluster_step_trace_time.csv", step_trace_csv(data)),
               write_bytes(d / "cluster_communication_matrix.json", _dump(matrix)),
               write_bytes(d / "cluster_communication.json", _dump(comm))]
    written.append(write_db(data, d / "cluster_analysis.db", matrix, comm))
    return written


def communication_groups(data: ClusterData) -> dict[str, list[list[int]]]:
    collective = sorted({m for g, m in data.groups.items() if not _is_p2p(data, g)})
    p2p = sorted({m for g, m in data.groups.items() if _is_p2p(data, g)})
    return {"collective": [list(m) for m in collective], "p2p": [list(m) for m in p2p]}


def _is_p2p(data: ClusterData, group: str) -> bool:
    ops = data.ops
    names = ops.loc[ops["group_name"] == group, "op_name"].astype(str)
    return bool(len(names)) and bool(names.str.startswith(("hcom_send", "hcom_receive")).all())


def stage_groups(data: ClusterData) -> list[tuple[int, ...]]:
    """Pipeline stages: ranks joined by collectives (p2p links cut stages); all ranks when no p2p."""
    parent = {int(r): int(r) for r in data.ranks["rank_id"]}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for g, members in data.groups.items():
        if _is_p2p(data, g):
            continue
        for m in members[1:]:
            if m in parent and members[0] in parent:
                parent[find(m)] = find(members[0])
    stages: dict[int, list[int]] = {}
    for r in parent:
        stages.setdefault(find(r), []).append(r)
    return sorted(tuple(sorted(v)) for v in stages.values())


def step_rows(data: ClusterData) -> pd.DataFrame:
    """The step-trace rows (values in us) before formatting: rank rows, then stage rows."""
    s = data.steps
    if s.empty:
        return pd.DataFrame(columns=STEP_HEADERS)
    e2e = s["free_ns"] + s["computing_ns"] + s["comm_not_overlapped_ns"]
    rank_rows = pd.DataFrame({
        "Step": s["step"].to_numpy(), "Type": "rank", "Index": s["rank_id"].astype(str).to_numpy(),
        "Computing": s["computing_ns"] / US, "Communication(Not Overlapped)": s["comm_not_overlapped_ns"] / US,
        "Overlapped": s["overlapped_ns"] / US, "Communication": s["communication_ns"] / US,
        "Free": s["free_ns"] / US, "Stage": (e2e - s["bubble_ns"]) / US, "Bubble": s["bubble_ns"] / US,
        "Communication(Not Overlapped and Exclude Receive)": (s["comm_not_overlapped_ns"] - s["bubble_ns"]) / US,
        "Preparing": 0.0, "_rank": s["rank_id"].to_numpy(),
    }).sort_values(["Step", "_rank"], kind="stable")
    parts = [rank_rows]
    for stage in stage_groups(data):
        sub = rank_rows[rank_rows["_rank"].isin(stage)]
        if sub.empty:
            continue
        mx = sub.groupby("Step", sort=True)[STEP_HEADERS[3:]].max().reset_index()
        mx.insert(1, "Type", "stage")
        mx.insert(2, "Index", rank_tuple(stage))
        parts.append(mx)
    return pd.concat(parts, ignore_index=True)[STEP_HEADERS]


def step_trace_csv(data: ClusterData) -> str:
    rows = step_rows(data)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(STEP_HEADERS)
    for rec in rows.itertuples(index=False):  # one row per rank and iteration: small
        w.writerow([rec[0], rec[1], rec[2], *(f"{v:.3f}" for v in rec[3:])])
    return buf.getvalue()


def _group_key(data: ClusterData, group: str) -> str:
    return rank_tuple(data.groups.get(group, ()))


def comm_matrix(data: ClusterData) -> dict:
    links = data.links
    out: dict = {}
    if links.empty:
        return out
    agg = (links.groupby(["group_name", "step", "op_name", "src_rank", "dst_rank", "transport"], sort=True)
           .agg(size=("size_bytes", "sum"), time=("time_ns", "sum")).reset_index())
    for rec in agg.itertuples(index=False):
        g, step, op, src, dst, tr, size, t = rec
        op_key = f"{op}@{g}"
        entry = {"Transport Type": tr, "Transit Size(MB)": _r(size / MB), "Transit Time(ms)": _r(t / MS),
                 "Bandwidth(GB/s)": _r((size / MB / 1024) / (t / 1e9)) if t else 0, "Op Name": op}
        step_d = out.setdefault(_group_key(data, g), {}).setdefault(f"step{step}", {})
        step_d.setdefault(op_key, {})[f"{src}-{dst}"] = entry
        total = step_d.setdefault(f"Total Op Info@{g}", {}).setdefault(
            f"{src}-{dst}", {"Transport Type": tr, "Transit Size(MB)": 0.0, "Transit Time(ms)": 0.0,
                             "Bandwidth(GB/s)": 0.0, "Op Name": ""})
        total["Transit Size(MB)"] = _r(total["Transit Size(MB)"] + size / MB)
        total["Transit Time(ms)"] = _r(total["Transit Time(ms)"] + t / MS)
        tt = total["Transit Time(ms)"]
        total["Bandwidth(GB/s)"] = _r(total["Transit Size(MB)"] / 1024 / (tt / 1000)) if tt else 0
    return out


def _time_info(rec) -> dict:
    elapse, transit, wait, sync = rec.elapse_ns / MS, rec.transit_ns / MS, rec.wait_ns / MS, rec.sync_ns / MS
    return {"Start Timestamp(us)": _r(rec.start_ns / US), "Elapse Time(ms)": _r(elapse),
            "Transit Time(ms)": _r(transit), "Wait Time(ms)": _r(wait), "Synchronization Time(ms)": _r(sync),
            "Idle Time(ms)": _r(elapse - transit - wait),
            "Wait Time Ratio": _r(wait / (wait + transit)) if wait + transit else 0,
            "Synchronization Time Ratio": _r(sync / (sync + transit)) if sync + transit else 0}


def _bandwidth_infos(sizes: pd.DataFrame) -> dict[tuple, dict]:
    """``(rank, step, op)`` -> its "Communication Bandwidth Info": per bucket (RDMA, HCCS, ...) the
    transit size / time / bandwidth, the large-packet ratio and the size distribution
    ``{size MB: [count, time ms]}``.  One pass over the (small) sizes table."""
    if sizes.empty:
        return {}
    sz = sizes.sort_values(["rank_id", "step", "op_name", "key", "size_bytes"], kind="stable")
    acc: dict[tuple, dict] = {}
    cols = [sz[c].tolist() for c in ("rank_id", "step", "op_name", "key", "size_bytes", "count", "time_ns")]
    for rank, step, op, key, size, count, t in zip(*cols):
        b = acc.setdefault((rank, step, op), {}).setdefault(key, [0.0, 0, 0, 0, {}])
        b[0] += size * count
        b[1] += t
        b[2] += count if size >= LARGE_PACKET_MB.get(key, 1.0) * MB else 0
        b[3] += count
        b[4][str(_r(size / MB))] = [int(count), _r(t / MS)]
    out: dict[tuple, dict] = {}
    for k, per_key in acc.items():
        out[k] = {key: {"Transit Time(ms)": _r(t / MS), "Transit Size(MB)": _r(size / MB),
                        "Bandwidth(GB/s)": _r(size / MB / 1024 / (t / 1e9)) if t else 0,
                        "Large Packet Ratio": _r(large / n) if n else 0, "Size Distribution": dist}
                  for key, (size, t, large, n, dist) in per_key.items()}
    return out


_TIME_KEYS = ("Start Timestamp(us)", "Elapse Time(ms)", "Transit Time(ms)", "Wait Time(ms)",
              "Synchronization Time(ms)", "Idle Time(ms)", "Wait Time Ratio", "Synchronization Time Ratio")


def comm_json(data: ClusterData) -> dict:
    ops = data.ops
    out: dict = {}
    if ops.empty:
        return out
    bw = _bandwidth_infos(data.sizes)
    ordered = ops.sort_values(["group_name", "step", "start_ns", "rank_id"], kind="stable")
    for rec in ordered.itertuples(index=False):  # one row per op execution and rank: small
        step_d = out.setdefault(_group_key(data, rec.group_name), {}).setdefault(f"step{rec.step}", {})
        info = {"Communication Time Info": _time_info(rec),
                "Communication Bandwidth Info": bw.get((rec.rank_id, rec.step, rec.op_name), {})}
        step_d.setdefault(f"{rec.op_name}@{rec.group_name}", {})[str(rec.rank_id)] = info
        tot = step_d.setdefault("Total Op Info", {}).setdefault(
            str(rec.rank_id), {"Communication Time Info": {k: 0.0 for k in _TIME_KEYS}})
        ti = tot["Communication Time Info"]
        for k in ("Elapse Time(ms)", "Transit Time(ms)", "Wait Time(ms)", "Synchronization Time(ms)", "Idle Time(ms)"):
            ti[k] = _r(ti[k] + info["Communication Time Info"][k])
        w, tr, sy = ti["Wait Time(ms)"], ti["Transit Time(ms)"], ti["Synchronization Time(ms)"]
        ti["Wait Time Ratio"] = _r(w / (w + tr)) if w + tr else 0
        ti["Synchronization Time Ratio"] = _r(sy / (sy + tr)) if sy + tr else 0
    return out


DB_TABLES = {
    "CommunicationGroup": ["type", "rank_set", "group_name", "group_id", "pg_name"],
    "ClusterStepTraceTime": ["step", "type", "index", "computing", "communication_not_overlapped", "overlapped",
                             "communication", "free", "stage", "bubble",
                             "communication_not_overlapped_and_exclude_receive", "preparing", "dp_index", "pp_index",
                             "tp_index"],
    "HostInfo": ["hostUid", "hostName"],
    "RankDeviceMap": ["rankId", "deviceId", "hostUid", "profilePath"],
    "ClusterCommunicationTime": ["step", "rank_id", "hccl_op_name", "group_name", "start_timestamp", "elapsed_time",
                                 "transit_time", "wait_time", "synchronization_time", "idle_time",
                                 "synchronization_time_ratio", "wait_time_ratio"],
    "ClusterCommunicationBandwidth": ["step", "rank_id", "hccl_op_name", "group_name", "band_type", "transit_size",
                                      "transit_time", "bandwidth", "large_packet_ratio", "package_size", "count",
                                      "total_duration"],
    "ClusterCommunicationMatrix": ["step", "hccl_op_name", "group_name", "src_rank", "dst_rank", "transit_size",
                                   "transit_time", "bandwidth", "transport_type", "op_name"],
}


def write_db(data: ClusterData, path: Path, matrix: dict | None = None, comm: dict | None = None) -> Path:
    """``cluster_analysis.db`` (``matrix`` / ``comm``: the JSON outputs' content, built if not given)."""
    matrix = comm_matrix(data) if matrix is None else matrix
    comm = comm_json(data) if comm is None else comm
    rows: dict[str, list[tuple]] = {name: [] for name in DB_TABLES}
    for g, members in sorted(data.groups.items()):
        rows["CommunicationGroup"].append(("p2p" if _is_p2p(data, g) else "collective", rank_tuple(members), g, g, g))
    for rec in step_rows(data).itertuples(index=False):
        rows["ClusterStepTraceTime"].append((str(rec[0]), rec[1], rec[2], *(float(v) for v in rec[3:]), None, None,
                                             None))
    for host in sorted(set(data.ranks["host"])):
        rows["HostInfo"].append((host, host))
    for rec in data.ranks.itertuples(index=False):
        rows["RankDeviceMap"].append((int(rec.rank_id), int(rec.device_id), rec.host, rec.prof))
    for g, steps in comm.items():
        for step, ops in steps.items():
            for op, per_rank in ops.items():
                if op == "Total Op Info":
                    continue
                group = op.split("@")[-1]
                for rank, info in per_rank.items():
                    t = info["Communication Time Info"]
                    rows["ClusterCommunicationTime"].append((step, int(rank), op, group, *t.values()))
                    for band, b in info["Communication Bandwidth Info"].items():
                        for pkg, (count, dur) in b["Size Distribution"].items():
                            rows["ClusterCommunicationBandwidth"].append((
                                step, int(rank), op, group, band, b["Transit Size(MB)"], b["Transit Time(ms)"],
                                b["Bandwidth(GB/s)"], b["Large Packet Ratio"], float(pkg), count, dur))
    for g, steps in matrix.items():
        for step, ops in steps.items():
            for op, links in ops.items():
                group = op.split("@")[-1]
                for key, v in links.items():
                    src, dst = key.split("-")
                    rows["ClusterCommunicationMatrix"].append((step, op, group, src, dst, v["Transit Size(MB)"],
                                                               v["Transit Time(ms)"], v["Bandwidth(GB/s)"],
                                                               v["Transport Type"], v["Op Name"]))
    with temp_path(path) as tmp:
        con = sqlite3.connect(tmp)
        try:
            for name, cols in DB_TABLES.items():
                decl = ", ".join(f'"{c}" {_sql_type(c)}' for c in cols)
                con.execute(f"CREATE TABLE {name} ({decl})")
                if rows[name]:
                    con.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' * len(cols))})", rows[name])
            con.commit()
        finally:
            con.close()
    return path


_TEXT_COLS = {"type", "rank_set", "group_name", "group_id", "pg_name", "step", "index", "hostUid", "hostName",
              "profilePath", "hccl_op_name", "band_type", "src_rank", "dst_rank", "transport_type", "op_name"}


def _sql_type(col: str) -> str:
    if col in _TEXT_COLS:
        return "TEXT"
    if col in ("rank_id", "rankId", "deviceId", "dp_index", "pp_index", "tp_index"):
        return "INTEGER"
    return "NUMERIC"


__all__ = ["write_all", "OUTPUT_DIR", "STEP_HEADERS"]
