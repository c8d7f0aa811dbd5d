"""Issue 15, acceptance 1 (content): msprof.pftrace holds the events of msprof_*.json.

The trace is decoded with the ``perfetto`` package's protos (tests/export/pftrace_read.py) and
compared event by event with the JSON of every device: slice starts, names, categories, args,
flows, threads, processes; durations equal the JSON's except where the JSON shortened a
child by < 1 µs for viewers that read ts as doubles (the native trace keeps integer ns).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from msprof_py.cli import cli
from msprof_py.collect import collect
from msprof_py.export import ExportOptions, export
from msprof_py.export.base import ExportContext
from msprof_py.export.perfetto_trace import write_trace
from msprof_py.export.protowire import Messages, varint_len
from msprof_py.export.timeline_model import Timeline
from msprof_py.export.trace_events import Arg, Counters, Flows, Slices

from .pftrace_read import read_json, read_pftrace

OUT = "mindstudio_profiler_output"


def _same_args(a: dict, b: dict) -> bool:
    b = {k: v for k, v in b.items() if v is not None}  # JSON null (no number): left out of the trace
    if a.keys() != b.keys():
        return False
    return all(math.isclose(x, float(y), abs_tol=5e-4) if isinstance(x, float) else x == y
               for x, y in ((a[k], b[k]) for k in a))


def compare(prof: Path, devices: list[int]) -> None:
    out = prof / OUT
    tr = read_pftrace(out / "msprof.pftrace")
    js = read_json([out / f"msprof_{d}.json" for d in devices])
    assert tr.problems == []
    assert len(tr.slices) == len(js.slices) > 0
    assert tr.keys() == js.keys()  # (pid, tid, name, start ns): every slice once, exact timestamps
    a = sorted(tr.slices, key=lambda s: s[:4] + (-s[4],))
    b = sorted(js.slices, key=lambda s: s[:4] + (-s[4],))
    for x, y in zip(a, b):
        assert x[:4] == y[:4]
        assert 0 <= x[4] - y[4] < 1000, (x, y)  # JSON may shorten a nested child by < 1 µs
        assert x[5] == y[5]
        assert _same_args(x[6], y[6]), (x, y)
    assert tr.flows == js.flows
    assert tr.threads == {k: v for k, v in js.threads.items()}
    assert {p: (v[0], v[1], v[2]) for p, v in tr.processes.items() if v[0]} == js.processes
    assert dict(tr.counters) == dict(js.counters)


def test_fixture_trace_equals_json(small_prof: Path) -> None:
    result = export(small_prof, ExportOptions(perfetto=True))
    assert not [m for m in result.warnings if "native trace" in m or "pftrace" in m]
    names = {p.name for p, _ in result.files}
    assert "msprof.pftrace" in names and "msprof_0.json" in names
    assert "msprof.pftrace" in (small_prof / OUT / "README.txt").read_text()
    compare(small_prof, [0])


@pytest.mark.parametrize("workload,devices", [("resnet50", 2), ("single_op", 1)])
def test_collected_trace_equals_json(tmp_path: Path, workload: str, devices: int) -> None:
    res = collect(workload, output=tmp_path, devices=devices, iterations=2, seed=7, fixed_clock=True)
    export(res.prof_dir, ExportOptions(perfetto=True))
    compare(res.prof_dir, list(res.sim.device_ids))


def test_same_seed_same_bytes(small_prof: Path, tmp_path: Path) -> None:
    export(small_prof, ExportOptions(type="perfetto"))
    first = (small_prof / OUT / "msprof.pftrace").read_bytes()
    export(small_prof, ExportOptions(type="perfetto"))
    assert (small_prof / OUT / "msprof.pftrace").read_bytes() == first


def _tl() -> Timeline:
    """Nesting edge cases on one thread: a parent and child with the same start, a child ending
    at its parent's end, a zero-length slice at a sibling boundary; a flow; a counter."""
    tl = Timeline()
    tl.meta.process(5, "P", "NPU 0", 14)
    tl.meta.thread(5, 1, "Stream 1", 1)
    start = np.array([100, 100, 150, 200, 200, 200, 300], np.int64)
    dur = np.array([100, 50, 50, 0, 100, 30, 0], np.int64)
    tl.slices.append(Slices(name=pd_cat(["a", "b", "c", "z", "d", "e", "f"]), pid=np.full(7, 5), tid=np.full(7, 1),
                            start_ns=start, dur_ns=dur, cat="k",
                            args=[Arg("i", "int", np.arange(7) - 3), Arg("t", "us", dur), Arg("s", "str", "x"),
                                  Arg("ts", "tsstr", start),
                                  Arg("r", "raw", pd_cat(["null", "1.5", "2.0", "null", "7", "0.0", "3.25"]))]))
    tl.slices.append(Slices(name="host", pid=np.array([9]), tid=np.array([4]), start_ns=np.array([90]),
                            dur_ns=np.array([5])))
    tl.flows.append(Flows("HostToDevice", "HostToDevice", np.array([1 << 32]), np.array([9]), np.array([4]),
                          np.array([90]), np.array([5]), np.array([1]), np.array([150])))
    tl.counters.append(Counters("AI Core Freq", 5, np.array([100, 250], np.int64),
                                {"MHz": np.array([1800.0, 1650.5])}))
    return tl


def pd_cat(values: list[str]):
    import pandas as pd

    return pd.Categorical(values)


def test_nesting_flows_counters_roundtrip(tmp_path: Path) -> None:
    tl = _tl()
    path = write_trace(tl, tmp_path / "t.pftrace", ExportContext())
    tr = read_pftrace(path)
    assert tr.problems == []
    got = sorted((s[2], s[3], s[4]) for s in tr.slices)
    want = sorted(zip(["a", "b", "c", "z", "d", "e", "f", "host"], [100, 100, 150, 200, 200, 200, 300, 90],
                      [100, 50, 50, 0, 100, 30, 0, 5]))
    assert got == want
    a = {s[2]: s[6] for s in tr.slices}
    assert a["a"] == {"i": -3, "t": 0.1, "s": "x", "ts": "0.100"}  # raw "null" left out
    assert a["b"]["r"] == 1.5 and a["d"]["r"] == 7.0
    assert tr.flows == {((9, 4, 90), (5, 1, 150))}
    assert tr.counters[(5, "AI Core Freq MHz")] == [(100, 1800.0), (250, 1650.5)]
    assert tr.threads == {(5, 1): "Stream 1", (9, 4): ""}
    # the same timeline as JSON reads back the same (the C events included)
    js_path = tmp_path / "t.json"
    from msprof_py.export.timeline_write import json_array

    js_path.write_bytes(b"".join(json_array(_tl().chunks())))
    js = read_json([js_path])
    assert js.keys() == tr.keys() and js.flows == tr.flows and dict(js.counters) == dict(tr.counters)


def test_varints_match_protobuf() -> None:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    vals = np.array([0, 1, 127, 128, 300, 2**21 - 1, 2**35, 2**63 - 1, -1, -(2**40)], np.int64)
    assert list(varint_len(vals.view(np.uint64))) == [1, 1, 1, 2, 2, 3, 6, 9, 10, 10]
    body = Messages(len(vals)).varint(4, vals).render()
    expect = b"".join(pb.DebugAnnotation(int_value=int(v)).SerializeToString() for v in vals)
    assert body == expect


def test_cli_type_perfetto_writes_only_the_trace(small_prof: Path) -> None:
    r = CliRunner().invoke(cli, ["export", "--output", str(small_prof), "--type", "perfetto"])
    assert r.exit_code == 0, r.output
    files = sorted(p.name for p in (small_prof / OUT).iterdir())
    assert files == ["README.txt", "msprof.pftrace"]
    assert read_pftrace(small_prof / OUT / "msprof.pftrace").slices


def test_cli_selected_iteration_names_the_trace(small_prof: Path) -> None:
    from msprof_py.parse.session import load

    st = load(small_prof).steps
    m, i = int(st["model_id"].iloc[0]), int(st["index_id"].iloc[0])
    r = CliRunner().invoke(cli, ["export", "--output", str(small_prof), "--type", "perfetto",
                                  "--model-id", str(m), "--iteration-id", str(i)])
    assert r.exit_code == 0, r.output
    assert (small_prof / OUT / f"msprof_{m}_{i}.pftrace").exists()


def test_negative_times_are_left_out_with_a_warning(tmp_path: Path) -> None:
    tl = _tl()
    tl.slices[0].start_ns = tl.slices[0].start_ns.copy()
    tl.slices[0].start_ns[0] = -5
    ctx = ExportContext()
    tr = read_pftrace(write_trace(tl, tmp_path / "t.pftrace", ctx))
    assert tr.problems == [] and len(tr.slices) == 7
    assert any("1 events with a negative timestamp" in m for m in ctx.warnings)


def test_subprocess_text_export_with_trace_and_slices(small_prof: Path) -> None:
    """The installed command, options together: JSON (unsliced: it is small), trace, summaries."""
    import os
    import subprocess
    import sys

    script = Path(sys.executable).parent / "msprof-py"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "msprof_py"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    p = subprocess.run([*cmd, "export", "--output", str(small_prof), "--perfetto", "--slice-size", "50"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "msprof.pftrace" in p.stdout and "Traceback" not in p.stderr
    compare(small_prof, [0])


@pytest.mark.parametrize("name", ["310b_fastgelu", "910b_ascendc_add_b1", "910b_torch_mul_b1"])
def test_real_prof_trace_equals_json(tmp_path: Path, name: str) -> None:
    """Real PROF dirs (fixtures/real, trimmed msprof collections): the same equality."""
    import shutil

    from msprof_py.export.session_access import device_ids
    from msprof_py.parse.session import load

    src = Path(__file__).resolve().parents[2] / "fixtures" / "real" / name
    shutil.copytree(src, tmp_path / name)
    prof = next((tmp_path / name).glob("PROF_*"))
    export(prof, ExportOptions(perfetto=True))
    devices = [d for d in device_ids(load(prof)) if (prof / OUT / f"msprof_{d}.json").exists()]
    assert devices
    compare(prof, devices)
