"""The Communication layer's threads and tids, computed from factorized group names, equal the
per-row formulation (every row's ``str`` group name, a dict lookup per row) that it replaced, on
random HCCL ops and sub-tasks: texts that print alike (7 and "7") are one group, ties in time keep
the table order."""
from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest

from msprof_py.export import timeline_layers
from msprof_py.export.timeline_model import Timeline
from msprof_py.export.trace_events import LayerSorts


def _reference(ops: pd.DataFrame, sub: pd.DataFrame, cpid: int) -> tuple[list[tuple], np.ndarray, np.ndarray]:
    groups = sorted(set(ops["group_name"].astype(str)) | set(sub["group_name"].astype(str)))
    planes = {g: sorted(set(sub.loc[sub["group_name"].astype(str) == g, "plane_id"].astype(np.int64).tolist()))
              for g in groups}
    threads, group_tid, plane_tid, nxt = [], {}, {}, 0
    for g in groups:
        group_tid[g] = nxt
        threads.append((cpid, nxt, f"Group {g} Communication"))
        for p in planes[g]:
            plane_tid[(g, p)] = nxt + p + 1
            threads.append((cpid, nxt + p + 1, f"Plane {p}"))
        nxt += (max(planes[g]) + 2 if planes[g] else 1)
    o = ops.sort_values("start_ns", kind="stable")
    s = sub.sort_values("start_ns", kind="stable")
    return (threads, o["group_name"].astype(str).map(group_tid).to_numpy(np.int64),
            np.array([plane_tid[k] for k in zip(s["group_name"].astype(str), s["plane_id"].tolist())], np.int64))


@pytest.mark.parametrize("seed", range(30))
def test_threads_and_tids_equal_the_per_row_formulation(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(seed)
    no, ns = (int(x) for x in rng.integers(1, 12, 2))
    names = np.array(["g1", "g2", "N/A", 7, "7"], dtype=object)
    ops = pd.DataFrame({"op_name": [f"op{i}" for i in range(no)], "group_name": rng.choice(names, no),
                        "rank_size": 2, "start_ns": rng.integers(0, 5, no) * 10, "dur_ns": 5,
                        "connection_id": rng.integers(0, 9, no), "model_id": 1, "data_type": "f", "alg_type": "a",
                        "count": 1})
    groups = pd.Categorical(rng.choice(["g1", "g3"], ns)) if seed % 2 else rng.choice(names, ns)
    sub = pd.DataFrame({"group_name": groups, "plane_id": rng.integers(0, 4, ns), "task_type": "Memcpy",
                        "stream_id": 1, "task_id": np.arange(ns), "context_id": 0,
                        "start_ns": rng.integers(0, 5, ns) * 10, "dur_ns": 3, "src_rank": 0, "dst_rank": 1,
                        "transport_type": "SDMA", "size_bytes": 8, "data_type": "f", "link_type": "HCCS",
                        "bandwidth_gbps": 1.5, "notify_id": 0, "duration_estimated_us": 0.5})
    monkeypatch.setattr(timeline_layers, "of_device", lambda t, d: t)
    monkeypatch.setattr(timeline_layers, "layer_sorts", lambda s: LayerSorts())
    monkeypatch.setattr(timeline_layers, "device_pid", lambda s, d: 5)
    monkeypatch.setattr(timeline_layers, "npu_label", lambda s, d: "NPU 0")
    tl = Timeline()
    got = timeline_layers.communication_layer(types.SimpleNamespace(communication=ops, comm_tasks=sub), 0, tl)
    cpid = timeline_layers.format_pid(5, LayerSorts().comm, 0)
    threads, op_tid, sub_tid = _reference(ops, sub, cpid)
    assert [(e["pid"], e["tid"], e["args"]["name"]) for e in tl.meta.events if e["name"] == "thread_name"] == threads
    assert got.index.tolist() == ops.sort_values("start_ns", kind="stable").index.tolist()
    assert np.array_equal(tl.slices[0].tid, op_tid) and np.array_equal(tl.slices[1].tid, sub_tid)
