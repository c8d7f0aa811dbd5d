"""Work shared between the timeline files of one export: layers rendered once and copied
(``ExportContext.rendered``), the device's shown tasks computed once."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import msprof_py.export  # noqa: F401  (registers every exporter)
from msprof_py.export.base import REGISTRY, ExportContext, Naming

from .synth import make_session


def _ctx(tmp_path: Path) -> ExportContext:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return ExportContext(scratch=scratch)


def _stream_slices(path: Path) -> list[dict]:
    ev = json.loads(path.read_bytes())
    streams = {(e["pid"], e["tid"]) for e in ev if e["name"] == "thread_name" and e["args"]["name"].startswith("Stream ")}
    return [e for e in ev if e["ph"] == "X" and (e["pid"], e["tid"]) in streams]


def test_task_time_copies_the_layer_msprof_json_rendered(tmp_path: Path) -> None:
    """task_time_{dev}.json after msprof_{dev}.json (as the runner orders them) has the bytes it
    has when built on its own, and is not rebuilt: its layer is a replay of the rendered one."""
    from msprof_py.export.timeline_model import RenderedSlices

    s = make_session(ops=9, iterations=4, devices=2)
    shared, alone = tmp_path / "shared", tmp_path / "alone"
    shared.mkdir()
    alone.mkdir()
    ctx = _ctx(tmp_path)
    for key in ("timeline:msprof", "timeline:task_time"):
        for dev in (0, 1):
            REGISTRY[key].write(s, shared, Naming(dev), ctx)
    assert [p.name for p in sorted(shared.iterdir())] == ["msprof_0.json", "msprof_1.json",
                                                          "task_time_0.json", "task_time_1.json"]
    for dev in (0, 1):
        REGISTRY["timeline:task_time"].write(s, alone, Naming(dev), ExportContext())
        assert (shared / f"task_time_{dev}.json").read_bytes() == (alone / f"task_time_{dev}.json").read_bytes()
    tl = REGISTRY["timeline:task_time"].build(s, 1, ctx)
    assert tl.slices and all(isinstance(x, RenderedSlices) for x in tl.slices)
    assert sum(len(x) for x in tl.slices) == len(_stream_slices(alone / "task_time_1.json"))


def test_memcpy_tasks_without_memcpy_info_are_written_once_each(tmp_path: Path) -> None:
    """A capture msprof exports with its C++ analysis writes MEMCPY_ASYNC tasks as their own
    part; with no memcpy_info that part once shared the other tasks' cache key, and the file got
    the other tasks' bytes a second time instead of the copies."""
    s = make_session(ops=6, iterations=2)
    dv = s.devices.copy()
    dv["platform_version"], dv["drv_version"] = 5, 0x072211
    s.devices = dv
    tasks = s.tasks.copy()
    memcpy = np.zeros(len(tasks), bool)
    memcpy[::5] = True
    host = tasks["host_task_type"].astype(object).to_numpy().copy()
    host[memcpy] = "MEMCPY_ASYNC"
    tasks["host_task_type"] = pd.Categorical(host)
    s.tasks = tasks
    REGISTRY["timeline:msprof"].write(s, tmp_path, Naming(0), _ctx(tmp_path))
    x = _stream_slices(tmp_path / "msprof_0.json")
    shown = s.tasks[(s.tasks["device_id"] == 0) & (s.tasks["start_ns"] >= 0)]
    assert len(x) == len(shown)
    assert len({(e["ts"], e["tid"], e["args"]["Task Id"]) for e in x}) == len(x)  # no event twice
    want = sorted((f"{v // 1000}.{v % 1000:03d}", int(k)) for v, k in zip(shown["start_ns"], shown["task_id"]))
    assert sorted((e["ts"], e["args"]["Task Id"]) for e in x) == want  # the copies too


@pytest.mark.parametrize("kernel_copy", [True, False])
def test_a_layer_is_copied_from_the_file_that_wrote_it_even_as_its_last_event(tmp_path: Path, monkeypatch,
                                                                                kernel_copy: bool) -> None:
    """A rendered layer is registered as a byte range of the file that wrote it (no second copy
    on disk) and copied from there (by ``copy_file_range``, or read and written where there is
    none); when it was that file's last event, its separator became the closing bracket there,
    and the copy still has it."""
    import os

    if not kernel_copy and hasattr(os, "copy_file_range"):
        monkeypatch.delattr(os, "copy_file_range")
    from msprof_py.export.timeline_model import FileRange, RenderedSlices, Timeline
    from msprof_py.export.timeline_write import write_timeline
    from msprof_py.export.trace_events import Arg, Slices

    def layer(key: tuple | None) -> Slices:
        n = 5
        return Slices(name="op", pid=np.full(n, 7, np.int64), tid=np.arange(n, dtype=np.int64),
                      start_ns=np.arange(n, dtype=np.int64) * 1000 + 10**18, dur_ns=np.full(n, 500, np.int64),
                      args=[Arg("k", "int", np.arange(n))], cache_key=key)

    def other() -> Slices:
        return Slices(name="other", pid=np.full(2, 8, np.int64), tid=np.zeros(2, np.int64),
                      start_ns=np.array([10**18, 10**18 + 5000]), dur_ns=np.array([100, 100]))

    ctx = _ctx(tmp_path)
    first = Timeline(slices=[other(), layer(("lay", 0))])  # the cached layer ends the file
    write_timeline(first, tmp_path / "a.json", ctx, "test")
    assert isinstance(ctx.rendered[("lay", 0)], FileRange)
    assert list((tmp_path / "scratch").iterdir()) == []  # nothing written besides the file itself
    for slices in ([RenderedSlices(("lay", 0), 5)], [RenderedSlices(("lay", 0), 5), other()]):
        copied = write_timeline(Timeline(slices=slices), tmp_path / "b.json", ctx, "test")
        fresh = [layer(None) if isinstance(s, RenderedSlices) else s for s in slices]
        alone = write_timeline(Timeline(slices=fresh), tmp_path / "c.json", ExportContext(), "test")
        assert copied.read_bytes() == alone.read_bytes()
        json.loads(copied.read_bytes())


def test_thread_group_copies_the_cann_layer_msprof_json_rendered(tmp_path: Path) -> None:
    """thread_group_{dev}.json after msprof_{dev}.json describes the CANN layer without building
    it (a RenderedSlices) and has the bytes it has when built on its own; without dynamic-shape
    ops there is no file, as before."""
    from msprof_py.export.legacy_summaries import dynamic_launches, has_dynamic_launches
    from msprof_py.export.timeline_model import RenderedSlices

    for every in (3, 0):
        s = make_session(ops=9, iterations=3, devices=2, dynamic_every=every)
        shared, alone = tmp_path / f"shared{every}", tmp_path / f"alone{every}"
        shared.mkdir()
        alone.mkdir()
        (tmp_path / f"c{every}").mkdir()
        ctx = _ctx(tmp_path / f"c{every}")
        for dev in (0, 1):
            assert has_dynamic_launches(s, dev) == (len(dynamic_launches(s, dev)) > 0) == bool(every)
            for key in ("timeline:msprof", "timeline:thread_group"):
                REGISTRY[key].write(s, shared, Naming(dev), ctx)
            REGISTRY["timeline:thread_group"].write(s, alone, Naming(dev), ExportContext())
            if every:
                assert (shared / f"thread_group_{dev}.json").read_bytes() == \
                    (alone / f"thread_group_{dev}.json").read_bytes()
                tl = REGISTRY["timeline:thread_group"].build(s, dev, ctx)
                assert tl.slices and all(isinstance(x, RenderedSlices) for x in tl.slices)
        assert sorted(p.name for p in alone.iterdir()) == (["thread_group_0.json", "thread_group_1.json"]
                                                           if every else [])


def test_ge_op_execute_copies_ge_when_both_show_the_same_rows(tmp_path: Path) -> None:
    """Every GE call a dynamic-shape launch (no model-level rows: a single-op run): ge_op_execute
    shows ge's rows, keyed by content, so it copies ge's bytes and reports what ge's check found
    (an overlap warning, the note on fitted durations) under its own name; both files have the
    bytes they have alone.  With model-level rows the two differ and nothing is shared."""
    from msprof_py.export.timeline_model import FileRange

    for drop_model in (True, False):
        s = make_session(ops=7, iterations=3, dynamic_every=1)
        api = s.api.copy()
        if drop_model:
            api = api[api["level"].astype(str) != "model"].reset_index(drop=True)
        node = np.flatnonzero(api["level"].astype(str).to_numpy() == "node")
        start, end = api["start_ns"].to_numpy().copy(), api["end_ns"].to_numpy().copy()
        end[node[0]] = start[node[1]] + 700  # partly overlaps the next launch: a warning
        end[node[3]] = start[node[4]] - 100  # ends 0.1 us before the next one starts: fitted
        api["end_ns"], api["dur_ns"] = end, end - start
        s.api = api
        root = tmp_path / str(drop_model)
        shared, alone = root / "shared", root / "alone"
        shared.mkdir(parents=True)
        alone.mkdir()
        ctx = _ctx(root)
        for key in ("timeline:ge", "timeline:ge_op_execute"):
            REGISTRY[key].write(s, shared, Naming(0), ctx)
            one = ExportContext()
            REGISTRY[key].write(s, alone, Naming(0), one)
            name = key.split(":")[1] + "_0.json"
            assert (shared / name).read_bytes() == (alone / name).read_bytes()
            mine = sorted(m for m in ctx.warnings.messages + ctx.notes if m.startswith(name))
            assert mine == sorted(one.warnings.messages + one.notes) and len(mine) == 2
        copied = REGISTRY["timeline:ge_op_execute"].build(s, 0, ctx).slices[0].cache_key
        ge = REGISTRY["timeline:ge"].build(s, 0, ctx).slices[0].cache_key
        assert (copied == ge) == drop_model and isinstance(ctx.rendered[ge], FileRange)
        assert ctx.rendered[ge].path.name == "ge_0.json"
