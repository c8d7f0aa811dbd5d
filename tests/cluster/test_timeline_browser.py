"""Acceptance 3: the merged timeline of 16 ranks on 2 hosts, one host's clock 5 ms off, opens in
the Perfetto UI (headless Chromium) without import errors, and every all-reduce ends on all its
ranks within 1 us."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from msprof_py.cluster.analyze import analyze_cluster

from export.perfetto_ui import load_and_query, missing  # tests/ is on sys.path (rootdir-relative packages)

pytestmark = pytest.mark.browser

SQL = {
    "slices": "select count(*) as n from slice",
    "errors": "select name, idx, severity, value from stats where value > 0 and severity in ('error', 'data_loss')",
    # per communication op execution: the spread of its ends over the ranks (ns)
    "spread": ("select s.name as op, t.name as grp, count(*) as ranks, max(s.ts + s.dur) - min(s.ts + s.dur) as spread "
               "from slice s join thread_track tt on s.track_id = tt.id join thread t using(utid) "
               "where t.name like 'Group % Communication' group by s.name, t.name"),
}


@pytest.fixture(scope="module", autouse=True)
def _need_browser() -> None:
    why = missing()
    if why:
        pytest.skip(why)


def test_merged_timeline_opens_and_collectives_end_together(faulty_cluster: Path, tmp_path: Path) -> None:
    rep = analyze_cluster(faulty_cluster, tmp_path, workers=2, steps=(2, 2), timeline=True)
    trace = next(p for p in rep.written if p.name.startswith("cluster_timeline"))
    events = json.loads(trace.read_bytes())["traceEvents"]
    n_x = sum(e["ph"] == "X" for e in events)
    res = load_and_query(trace, SQL)
    assert res["state"] == "ready", res["state"]
    q = res["queries"]
    assert q["errors"] == [], q["errors"]
    assert q["slices"][0]["n"] == n_x
    spreads = q["spread"]
    # 2 layers x 2 TP all-reduces in each of the 2 TP groups, the DP all-reduce in the 8 DP groups
    assert len(spreads) == 4 * 2 + 8
    assert sum(r["ranks"] for r in spreads) == 4 * 16 + 16
    assert max(r["spread"] for r in spreads) <= 1000, spreads
    fit = (tmp_path / "cluster_analysis_output" / "cluster_clock_alignment.csv").read_text().splitlines()
    offset_us = float(fit[2].split(",")[3])
    assert offset_us == pytest.approx(5000, abs=5)


def test_pipeline_timeline_opens(pp_cluster: Path, tmp_path: Path) -> None:
    """A two-stage pipeline's merged timeline (hosts aligned on its send / receive pairs) loads too."""
    rep = analyze_cluster(pp_cluster, tmp_path, workers=1, timeline=True)
    trace = next(p for p in rep.written if p.name.startswith("cluster_timeline"))
    n_x = sum(e["ph"] == "X" for e in json.loads(trace.read_bytes())["traceEvents"])
    sql = {"slices": SQL["slices"], "errors": SQL["errors"],
           "p2p": "select count(*) as n from slice where name like 'hcom_send%' or name like 'hcom_receive%'"}
    res = load_and_query(trace, sql)
    assert res["state"] == "ready", res["state"]
    q = res["queries"]
    assert q["errors"] == [] and q["slices"][0]["n"] == n_x
    assert q["p2p"][0]["n"] == 16 * 2 * 2  # every rank sends once and receives once per iteration
