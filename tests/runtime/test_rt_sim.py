"""Simulator records against its own truth (issue 2 acceptance 3, runtime side)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from msprof_py.raw import api_event, node_basic_info, stars_soc, task_track, ts_track
from msprof_py.raw.common import EVENT_FLAG, LEVEL_ACL, LEVEL_HCCL, LEVEL_MODEL, LEVEL_NODE, LEVEL_RUNTIME
from msprof_py.runtime.clock import SimClock
from msprof_py.runtime.sim import run
from tests.runtime.conftest import RecordingHooks

def _hooks() -> RecordingHooks:
    return RecordingHooks()


@pytest.fixture(scope="module")
def resnet2():
    h = _hooks()
    res = run("resnet50", devices=2, iterations=3, seed=7, hooks=h, clock=SimClock.create(100.0, 50.0, True))
    return h, res


def _acsq(h, d: int) -> pd.DataFrame:
    r = h.device(d, stars_soc.FILE_TAG)
    return pd.DataFrame({"func": stars_soc.func_type(r["word0"]), "sqe": stars_soc.sqe_type(r["word0"]),
                         "stream_id": r["stream_id"], "task_id": r["task_id"], "ts": r["timestamp"]})


def test_every_device_task_has_its_acsq_pair(resnet2) -> None:
    h, res = resnet2
    for d in res.device_ids:
        truth = res.truth[res.truth.device_id == d]
        logs = _acsq(h, d)
        assert len(logs) == 2 * len(truth)
        assert (np.diff(logs.ts.to_numpy().astype(np.int64)) >= 0).all()  # the device writes in time order
        for func, col in ((stars_soc.FUNC_ACSQ_START, "start_syscnt"), (stars_soc.FUNC_ACSQ_END, "end_syscnt")):
            got = logs[logs.func == func].sort_values(["stream_id", "task_id", "ts"]).reset_index(drop=True)
            want = truth.sort_values(["stream_id", "task_id", col]).reset_index(drop=True)
            assert (got.stream_id.to_numpy() == want.stream_id.to_numpy()).all()
            assert (got.task_id.to_numpy() == want.task_id.to_numpy()).all()
            assert (got.ts.to_numpy() == want[col].to_numpy()).all()
        sqe_names = logs.sqe.map(stars_soc.SQE_TYPES)
        assert set(sqe_names) == set(truth.sqe_type.astype(str))


def test_every_launched_task_has_a_task_track(resnet2) -> None:
    h, res = resnet2
    tt = h.host(task_track.FILE_TAG)
    names = {t: n for (lv, t), n in h.types.items() if lv == LEVEL_RUNTIME}
    tracks = pd.DataFrame({"device_id": tt["device_id"], "stream_id": tt["stream_id"], "task_id": tt["task_id"],
                           "batch_id": tt["batch_id"], "type": [names[int(x)] for x in tt["task_type"]]})
    assert not (tracks.type == "FLIP_TASK").any()  # no wrap in 3 iterations
    keys = ["device_id", "stream_id", "task_id", "batch_id"]
    assert not tracks.duplicated(keys).any()
    executed = res.truth[keys + ["host_task_type"]].drop_duplicates(keys)
    m = executed.merge(tracks, on=keys, how="outer", indicator=True)
    assert (m._merge == "both").all(), m[m._merge != "both"].head()
    assert (m.host_task_type.astype(str) == m.type).all()


def test_static_replays_keep_task_ids(resnet2) -> None:
    _, res = resnet2
    t = res.truth
    model = t[(t.device_id == 0) & (t.stream_id != 2)]  # stream 2: the user stream (fresh launches)
    per_iter = [g[["stream_id", "task_id", "op_name"]].reset_index(drop=True) for _, g in model.groupby("index_id")]
    assert len(per_iter) == 3
    for other in per_iter[1:]:
        pd.testing.assert_frame_equal(per_iter[0], other)
    fresh = t[(t.device_id == 0) & (t.stream_id == 2)]
    assert fresh.task_id.is_unique  # copies and the dynamic-shape op: fresh ids every execution
    assert {"MEMCPY_ASYNC", "metrics/accuracy/NonZero"} == set(fresh.op_name.astype(str))


def test_step_tags_bracket_every_iteration(resnet2) -> None:
    h, res = resnet2
    for d in res.device_ids:
        raw = h.device(d, ts_track.FILE_TAG)
        steps = np.frombuffer(raw[raw["func_type"] == ts_track.FUNC_STEP_TRACE].tobytes(), ts_track.STEP_TRACE_DTYPE)
        truth = res.truth[(res.truth.device_id == d) & (res.truth.task_type != "MEMCPY_ASYNC")]
        for idx, g in truth.groupby("index_id"):
            tags = steps[steps["index_id"] == idx]
            by = {int(t): int(ts) for t, ts in zip(tags["tag_id"], tags["timestamp"])}
            reduce_tags = sorted(t for t in by if t >= 10000)
            assert set(by) - set(reduce_tags) == {0, 1, 2, 3, 4}
            assert reduce_tags == list(range(10000, 10000 + len(reduce_tags))) and len(reduce_tags) % 2 == 0
            assert by[0] <= g.start_syscnt.min() and g.end_syscnt.max() <= by[4] <= by[1]
            assert by[0] <= by[2] <= by[3] <= by[reduce_tags[-1]] <= by[4]
            for start_tag in reduce_tags[::2]:  # every segment: start tag, then its end tag
                assert by[2] <= by[start_tag] <= by[start_tag + 1]
            assert (tags["model_id"] == res.truth_steps.model_id[res.truth_steps.device_id == d].iloc[0]).all()
        st = res.truth_steps[res.truth_steps.device_id == d]
        assert list(st.index_id) == [1, 2, 3]
        assert (st.start_sim_ns.to_numpy()[1:] > st.end_sim_ns.to_numpy()[:-1]).all()


def test_host_call_tree_nests_by_time(resnet2) -> None:
    """Every task_track lies inside a Runtime API, every node_basic_info inside a Node@launch."""
    h, _ = resnet2
    api = h.host(api_event.FILE_TAG)
    apis_ = api[api["end"] != EVENT_FLAG]
    assert (apis_["end"] > apis_["timestamp"]).all()

    def inside(points: np.ndarray, level: int) -> np.ndarray:
        iv = apis_[apis_["level"] == level]
        ok = np.zeros(len(points), bool)
        for th in np.unique(points["thread_id"]):
            p = points["timestamp"][points["thread_id"] == th]
            sel = iv[iv["thread_id"] == th]
            order = np.argsort(sel["timestamp"])
            b, e = sel["timestamp"][order], sel["end"][order]
            i = np.searchsorted(b, p, side="right") - 1
            ok[points["thread_id"] == th] = (i >= 0) & (e[np.maximum(i, 0)] >= p)
        return ok

    assert inside(h.host(task_track.FILE_TAG), LEVEL_RUNTIME).all()
    assert inside(h.host(node_basic_info.FILE_TAG), LEVEL_NODE).all()
    # Model-level ModelExecute events pair up with requestId = index_id
    ev = api[(api["end"] == EVENT_FLAG) & (api["level"] == LEVEL_MODEL)]
    counts = pd.Series(list(zip(ev["thread_id"], ev["data_len"]))).value_counts()
    assert (counts == 2).all() and sorted({int(x) for x in ev["data_len"]}) == [1, 2, 3]
    assert {LEVEL_ACL, LEVEL_MODEL, LEVEL_NODE, LEVEL_RUNTIME, LEVEL_HCCL} <= set(api["level"].tolist())


def test_multi_device_all_reduce(resnet2) -> None:
    h, res = resnet2
    t = res.truth
    hc = t[t.task_type == "HCCL"]
    assert set(hc.device_id) == {0, 1}
    assert set(hc.sqe_type.astype(str)) == {"NOTIFY_RECORD_SQE", "NOTIFY_WAIT_SQE", "SDMA_SQE"}
    waits = hc[hc.host_task_type == "NOTIFY_WAIT"].sort_values(["index_id", "start_sim_ns"])
    ends = waits.assign(end=waits.start_sim_ns + waits.dur_ns)
    # a notify wait ends only when both ranks arrived: the ends agree up to the jitter of its own duration
    e0 = ends[ends.device_id == 0].end.to_numpy()
    e1 = ends[ends.device_id == 1].end.to_numpy()
    assert np.abs(e0 - e1).max() < 200
    info = h.host("additional.hccl_info")
    assert len(info) == len(hc) // 3  # one per sub-task, reported once at load (3 iterations replay them)
    assert set(info["rank_size"].tolist()) == {2}
    # the update ops start after the all-reduce ends
    for (d, k), g in t.groupby(["device_id", "index_id"]):
        ar_end = (g[g.task_type == "HCCL"].start_sim_ns + g[g.task_type == "HCCL"].dur_ns).max()
        upd = g[g.op_type == "ApplyMomentum"]
        assert upd.start_sim_ns.min() >= ar_end


def test_single_op_flips_exactly_at_wraps(hooks, fixed_clock) -> None:
    res = run("single_op", iterations=15_000, seed=1, hooks=hooks, clock=fixed_clock)
    t = res.truth
    n = len(t)
    assert n > 2 * 65536
    tt = hooks.host(task_track.FILE_TAG)
    flip_type = hooks.type_id(LEVEL_RUNTIME, "FLIP_TASK")
    flips = tt[tt["task_type"] == flip_type]
    assert flips["batch_id"].tolist() == [1, 2] and (flips["task_id"] == 0).all()
    # batch/task ids continue the counter with the flip occupying id 0
    assert t.task_id.iloc[65535] == 65535 and t.batch_id.iloc[65535] == 0
    assert t.task_id.iloc[65536] == 1 and t.batch_id.iloc[65536] == 1
    assert t.batch_id.is_monotonic_increasing
    # host flip sits between the last old-batch task_track and the first new one
    real = tt[tt["task_type"] != flip_type]
    for f in flips:
        before = real[(real["batch_id"] == f["batch_id"] - 1)]["timestamp"].max()
        after = real[(real["batch_id"] == f["batch_id"])]["timestamp"].min()
        assert before < f["timestamp"] <= after
    dev = hooks.device(0, ts_track.FILE_TAG)
    dflips = np.frombuffer(dev[dev["func_type"] == ts_track.FUNC_TASK_FLIP].tobytes(), ts_track.TASK_FLIP_DTYPE)
    assert dflips["flip_num"].tolist() == [1, 2]
    for f in dflips:
        first_new = t[t.batch_id == f["flip_num"]].start_syscnt.min()
        last_old = t[t.batch_id == f["flip_num"] - 1].start_syscnt.max()
        assert last_old < f["timestamp"] <= first_new
    assert len(dev) == 2  # single-op mode writes no step trace


def test_determinism(fixed_clock) -> None:
    def once(seed):
        h = _hooks()
        r = run("bert", devices=2, iterations=2, seed=seed, hooks=h, clock=fixed_clock)
        blobs = {k: b"".join(a.tobytes() for a in v) for k, v in list(h._host.items()) + list(h._dev.items())}
        return blobs, r
    a, ra = once(3)
    b, rb = once(3)
    c, _ = once(4)
    assert a == b
    pd.testing.assert_frame_equal(ra.truth, rb.truth)
    assert a != c


def test_profiling_off_still_gives_truth() -> None:
    res = run("llm_decoder", iterations=2)
    assert len(res.truth) > 0 and len(res.truth_steps) == 2
    assert (res.truth_steps.fp_sim_ns == -1).all()  # inference: no FP/BP


def test_reserved_bytes_are_zero(resnet2) -> None:
    """Gap bytes of padded layouts stay zero after tiling and sorting (same seed -> same bytes)."""
    h, _ = resnet2
    tt = h.host(task_track.FILE_TAG)
    raw = np.frombuffer(tt.tobytes(), np.uint8).reshape(-1, 64)
    assert not raw[:, 52:].any()
    nb = h.host(node_basic_info.FILE_TAG)
    assert not np.frombuffer(nb.tobytes(), np.uint8).reshape(-1, 64)[:, 53:].any()


def test_cross_stream_dependencies_use_event_tasks(resnet2) -> None:
    """GE's EVENT_RECORD after the producer and EVENT_WAIT before the consumer on the other stream."""
    _, res = resnet2
    t = res.truth
    for (d, k), g in t.groupby(["device_id", "index_id"]):
        g = g.assign(end=g.start_sim_ns + g.dur_ns)
        rec = g[g.host_task_type == "EVENT_RECORD"].sort_values("start_sim_ns")
        wait = g[g.host_task_type == "EVENT_WAIT"].sort_values("start_sim_ns")
        # main -> comm before each all-reduce segment, comm -> main before the update ops
        assert len(rec) == len(wait) >= 2
        assert (wait.end.to_numpy() >= rec.end.to_numpy()).all()
        assert set(rec.sqe_type.astype(str)) == {"EVENT_RECORD_SQE"}
        hccl_start = g[g.task_type == "HCCL"].start_sim_ns.min()
        assert wait.end.iloc[0] <= hccl_start and rec.stream_id.iloc[0] != wait.stream_id.iloc[0]


def test_device_starts_after_the_host_submits(resnet2) -> None:
    """A fresh task (memcpy) starts on the device only after its task_track was reported."""
    h, res = resnet2
    clock = res.clock
    tt = h.host(task_track.FILE_TAG)
    host_ns = (tt["timestamp"].astype(np.int64) - clock.host_cntvct_start) * 1000 // int(clock.host_freq_mhz)
    tracks = pd.DataFrame({"device_id": tt["device_id"].astype(int), "stream_id": tt["stream_id"].astype(int),
                           "task_id": tt["task_id"].astype(int), "batch_id": tt["batch_id"].astype(int),
                           "host_ns": host_ns})
    mem = res.truth[res.truth.task_type == "MEMCPY_ASYNC"]
    m = mem.merge(tracks, on=["device_id", "stream_id", "task_id", "batch_id"])
    assert len(m) == len(mem) > 0
    assert (m.start_sim_ns >= m.host_ns).all()
    # host iterations are not carbon copies: the per-iteration host speed varies
    gaps = m.groupby(["device_id", "index_id"]).host_ns.min().groupby("device_id").diff().dropna()
    assert gaps.nunique() == len(gaps)


def test_ge_splits_a_model_stream_before_its_task_ids_wrap(monkeypatch) -> None:
    """A static model never wraps a stream (replays must keep their ids): GE moves on to a new stream."""
    from msprof_py.runtime.ge import static
    from msprof_py.runtime.workloads import get_workload

    monkeypatch.setattr(static, "MAX_MODEL_STREAM_TASKS", 50)
    res = run(get_workload("bert", batch=2, seq_len=32, layers=2), iterations=2, seed=0)
    t = res.truth
    model = t[t.stream_id != 2]
    per_stream = model[model.index_id == 1].groupby("stream_id").size()
    assert len(per_stream) >= 2 and per_stream.max() <= 50
    assert (model.batch_id == 0).all()
    # the split streams run one after another: each starts after the previous one ends
    it = model[model.index_id == 1]
    spans = it.groupby("stream_id").agg(s=("start_sim_ns", "min"), e=("start_sim_ns", "max")).sort_values("s")
    assert (spans.s.to_numpy()[1:] > spans.e.to_numpy()[:-1]).all()


def test_gradient_all_reduce_overlaps_the_backward_pass(resnet2) -> None:
    """Segmented all-reduce: the first segment runs while backward ops are still running."""
    _, res = resnet2
    t = res.truth[(res.truth.device_id == 0) & (res.truth.index_id == 1)]
    bp = t[t.op_name.astype(str).str.startswith("gradients/")]
    hc = t[t.task_type == "HCCL"]
    assert hc.start_sim_ns.min() < (bp.start_sim_ns + bp.dur_ns).max()
    steps = res.truth_steps
    assert (steps.bp_sim_ns < steps.end_sim_ns).all()


def test_gradient_segments() -> None:
    from msprof_py.runtime.hccl import gradient_segments
    assert gradient_segments([0, 0], 100) == [(1, 100)]
    assert gradient_segments([60, 10, 30], 1000) == [(0, 600), (2, 400)]
    segs = gradient_segments([5] * 10, 999, max_segments=3)
    assert sum(b for _, b in segs) == 999 and [i for i, _ in segs] == [3, 7, 9]


def test_fp_and_bp_points_move_the_tags() -> None:
    fp_op, bp_op = "resnet50/layer1/0/conv1/Conv2D", "gradients/resnet50/layer2/0/conv1/Conv2D_grad/Conv2DBackpropFilter"
    plain = run("resnet50", iterations=2, seed=3)
    pointed = run("resnet50", iterations=2, seed=3, fp_point=fp_op, bp_point=bp_op)
    t = pointed.truth
    fp_task, bp_task = t[t.op_name == fp_op], t[t.op_name == bp_op]
    assert (pointed.truth_steps.fp_sim_ns.to_numpy() == fp_task.start_sim_ns.to_numpy()).all()
    assert (pointed.truth_steps.bp_sim_ns.to_numpy() == (bp_task.start_sim_ns + bp_task.dur_ns).to_numpy()).all()
    assert (pointed.truth_steps.fp_sim_ns > plain.truth_steps.fp_sim_ns).all()
    assert (pointed.truth_steps.bp_sim_ns < plain.truth_steps.bp_sim_ns).all()
    unknown = run("resnet50", iterations=2, seed=3, fp_point="no/such/op")
    pd.testing.assert_frame_equal(unknown.truth_steps, plain.truth_steps)
