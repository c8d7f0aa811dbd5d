"""Issue 15, acceptance 3 (properties): ``--slice-size`` splits msprof_*.json into self-contained
files under the limit, every event once, flows never cut -- also for single-op runs (no model)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from msprof_py.cli import cli
from msprof_py.collect import collect
from msprof_py.export import ExportOptions, export
from msprof_py.export.timeline_slices import choose_cuts

OUT = "mindstudio_profiler_output"


def check_slices(out: Path, device: int, limit: int, full: list[dict]) -> list[Path]:
    files = sorted(out.glob(f"msprof_{device}_slice_*.json"), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
    assert len(files) > 1
    assert not (out / f"msprof_{device}.json").exists()
    meta = sorted(json.dumps(e, sort_keys=True) for e in full if e["ph"] == "M")
    seen: list[str] = []
    for f in files:
        assert f.stat().st_size <= limit, f
        events = json.loads(f.read_bytes())
        # self-contained: all the process / thread names, and both ends of each of its flows
        assert sorted(json.dumps(e, sort_keys=True) for e in events if e["ph"] == "M") == meta
        assert {e["id"] for e in events if e["ph"] == "s"} == {e["id"] for e in events if e["ph"] == "f"}
        seen += [json.dumps(e, sort_keys=True) for e in events if e["ph"] != "M"]
    assert sorted(seen) == sorted(json.dumps(e, sort_keys=True) for e in full if e["ph"] != "M")  # each once
    return files


@pytest.mark.parametrize("workload,iterations,mb", [("single_op", 12, 0.06), ("resnet50", 12, 1.0)])
def test_sliced_export_properties(tmp_path: Path, workload: str, iterations: int, mb: float) -> None:
    res = collect(workload, output=tmp_path, devices=1, iterations=iterations, seed=4, fixed_clock=True)
    out = res.prof_dir / OUT
    export(res.prof_dir, ExportOptions())
    full = json.loads((out / "msprof_0.json").read_bytes())
    assert (out / "msprof_0.json").stat().st_size > 2 * mb * 1e6
    result = export(res.prof_dir, ExportOptions(slice_size_mb=mb))
    assert not [m for m in result.warnings if "slice" in m], result.warnings.messages
    check_slices(out, 0, int(mb * 1e6), full)


def test_small_timeline_is_not_sliced(small_prof: Path) -> None:
    r = CliRunner().invoke(cli, ["export", "--output", str(small_prof), "--slice-size", "50"])
    assert r.exit_code == 0, r.output
    assert (small_prof / OUT / "msprof_0.json").exists()
    assert not list((small_prof / OUT).glob("*_slice_*"))


def test_slice_size_must_be_positive(small_prof: Path) -> None:
    r = CliRunner().invoke(cli, ["export", "--output", str(small_prof), "--slice-size", "0"])
    assert r.exit_code == 2 and "--slice-size" in r.output


def test_uncuttable_stretch_warns(tmp_path: Path) -> None:
    res = collect("resnet50", output=tmp_path, devices=1, iterations=3, seed=4, fixed_clock=True)
    result = export(res.prof_dir, ExportOptions(slice_size_mb=0.05))
    assert any("over 0.05 MB" in m for m in result.warnings), result.warnings.messages
    files = list((res.prof_dir / OUT).glob("msprof_0_slice_*.json"))
    assert all(json.loads(f.read_bytes()) for f in files)  # still complete JSON


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(1, 50)), min_size=1, max_size=80),
       st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 60)), max_size=10),
       st.integers(20, 400))
def test_choose_cuts_properties(events, flows, budget) -> None:
    t = np.array([e[0] for e in events], np.int64)
    z = np.array([e[1] for e in events], np.int64)
    lo = np.array([f[0] for f in flows], np.int64)
    hi = lo + np.array([f[1] for f in flows], np.int64)
    cuts, over = choose_cuts(t, z, budget, (lo, hi), np.array([100, 500], np.int64))
    assert (np.diff(cuts) > 0).all()
    for c in cuts:  # never inside a flow: both ends on one side
        assert not ((lo < c) & (c <= hi)).any()
    file_of = np.searchsorted(cuts, t, side="right")
    sizes = np.bincount(file_of, weights=z, minlength=len(cuts) + 1)
    assert (sizes > 0).all()  # no empty file
    assert int((sizes > budget).sum()) <= over
