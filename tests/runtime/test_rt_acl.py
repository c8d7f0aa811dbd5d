"""The AscendCL-like Python API: calls queue device work behind each other, records match truth."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from msprof_py.errors import WorkloadError
from msprof_py.raw import stars_soc, task_track
from msprof_py.runtime import acl

GRAPH = Path(__file__).resolve().parents[2] / "fixtures" / "graphs" / "mlp_train.json"


@pytest.fixture(autouse=True)
def _fresh_process():
    acl.uninstall_hooks()
    yield
    acl.uninstall_hooks()


def _script() -> acl.SimResult:
    acl.init()
    acl.rt.set_device(0)
    stream = acl.rt.create_stream()
    model = acl.mdl.load_from_file(GRAPH)
    for _ in range(3):
        acl.mdl.execute(model, stream)
        acl.rt.synchronize_stream(stream)
    for _ in range(2):
        acl.nn.matmul((64, 1024), (1024, 1024), stream=stream)
        acl.nn.relu((64, 1024), stream=stream)
    acl.rt.memcpy(4 << 20, "d2h")
    return acl.finalize()


def test_script_records_match_truth(hooks, fixed_clock) -> None:
    acl.install_hooks(hooks, clock=fixed_clock, seed=2)
    res = _script()
    assert acl.finalize() is res and acl.result() is res  # idempotent
    t = res.truth
    assert res.device_ids == [0] and res.pid == 10002
    assert list(res.truth_steps.index_id) == [1, 2, 3]
    # the model's tasks replay with the same ids; aclnn calls and copies get fresh ones after them
    model = t[(t.model_id == 1) & (t.task_type != "MEMCPY_ASYNC") & (t.op_name != "metrics/NonZero")]
    ids = [tuple(g.task_id) for _, g in model.groupby("index_id")]
    assert ids[0] == ids[1] == ids[2]
    user = t[t.stream_id == 2].sort_values("start_sim_ns")
    assert list(user.task_id) == list(range(len(user)))
    single = t[t.model_id == 4294967295]
    assert set(single.op_name.astype(str)) >= {"aclnnMatmul_MatMulV2AiCore_MatMulV2", "MEMCPY_ASYNC"}
    # per-stream FIFO: a stream's tasks never overlap
    for _, g in t.groupby("stream_id"):
        g = g.sort_values("start_sim_ns")
        assert (g.start_sim_ns.to_numpy()[1:] >= (g.start_sim_ns + g.dur_ns).to_numpy()[:-1]).all()
    starts = hooks.device(0, stars_soc.FILE_TAG)
    assert len(starts) == 2 * len(t)
    tt = hooks.host(task_track.FILE_TAG)
    assert len(tt) == len(t) - 2 * len(model) // 3  # static tasks are tracked once, at load
    assert res.end_sim_ns > int((t.start_sim_ns + t.dur_ns).max())


def test_synchronize_blocks_until_the_device_is_done(hooks, fixed_clock) -> None:
    acl.install_hooks(hooks, clock=fixed_clock)
    acl.rt.set_device(0)
    s = acl.rt.create_stream()
    acl.nn.matmul((4096, 4096), (4096, 4096), stream=s)  # long on the device, short on the host
    acl.rt.synchronize_stream(s)
    res = acl.finalize()
    task_end = int((res.truth.start_sim_ns + res.truth.dur_ns).iloc[0])
    assert res.truth.dur_ns.iloc[0] > 100_000
    assert acl._state.t >= task_end  # the host thread waited for it


def test_profiling_off_without_hooks() -> None:
    res = _script()
    assert len(res.truth) > 0


def test_misuse_is_a_workload_error(tmp_path) -> None:
    with pytest.raises(WorkloadError, match="no device set"):
        acl.nn.relu((4, 4))
    acl.rt.set_device(0)
    with pytest.raises(WorkloadError, match="not loaded"):
        acl.mdl.execute(object())
    with pytest.raises(WorkloadError, match="unknown stream"):
        acl.rt.synchronize_stream(acl.Stream(0, 77))
    with pytest.raises(WorkloadError, match="no such graph file"):
        acl.mdl.load_from_file(tmp_path / "none.json")
    with pytest.raises(WorkloadError, match="shapes do not match"):
        acl.nn.matmul((4, 5), (6, 7))
    with pytest.raises(WorkloadError, match="bad memcpy"):
        acl.rt.memcpy(10, "sideways")
    acl.finalize()
    with pytest.raises(WorkloadError, match="finalized"):
        acl.nn.relu((4, 4))


def test_same_seed_same_records(fixed_clock) -> None:
    from tests.runtime.conftest import RecordingHooks

    def once() -> bytes:
        h = RecordingHooks()
        acl.install_hooks(h, clock=fixed_clock, seed=5)
        _script()
        return b"".join(a.tobytes() for k in sorted(h._host) for a in h._host[k]) + \
            b"".join(a.tobytes() for k in sorted(h._dev) for a in h._dev[k])
    assert once() == once()
    assert np.frombuffer(once(), np.uint8).size > 0
