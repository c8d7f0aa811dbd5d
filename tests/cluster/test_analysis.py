"""``msprof-py cluster``: findings on injected faults (and none without), msprof-analyze's files."""
from __future__ import annotations

import csv
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

import msprof_py
from msprof_py.cli import cli
from msprof_py.cluster.analyze import analyze_cluster
from msprof_py.cluster.outputs import DB_TABLES, STEP_HEADERS
from msprof_py.errors import DataError, InvalidPathError

from .conftest import make_cluster


def test_injected_slow_rank_and_link_are_the_findings(faulty_cluster: Path, tmp_path: Path) -> None:
    rep = analyze_cluster(faulty_cluster, tmp_path, workers=1)
    got = {(f.kind, f.subject): f.figure for f in rep.findings}
    assert set(got) == {("slow_rank", "rank 5"), ("slow_link", "link 3-11")}
    assert got[("slow_rank", "rank 5")] == pytest.approx(1.3, rel=0.10)
    assert got[("slow_link", "link 3-11")] == pytest.approx(0.5, rel=0.10)
    assert "1. " in rep.text and "rank 5" in rep.text and "link 3-11" in rep.text


def test_clean_cluster_has_no_findings(clean_cluster: Path, tmp_path: Path) -> None:
    rep = analyze_cluster(clean_cluster, tmp_path, workers=2)
    assert rep.findings == []
    assert "findings: none" in rep.text


def test_straggler_host_is_named(tmp_path: Path) -> None:
    root = make_cluster(tmp_path / "job", straggler_hosts={1: 40.0})
    rep = analyze_cluster(root, tmp_path / "out", workers=1)
    assert [(f.kind, f.subject) for f in rep.findings] == [("straggler_host", "host node001")]


def test_outputs_have_msprof_analyze_names_and_columns(faulty_cluster: Path, tmp_path: Path) -> None:
    analyze_cluster(faulty_cluster, tmp_path, workers=1)
    d = tmp_path / "cluster_analysis_output"
    groups = json.loads((d / "communication_group.json").read_text())
    assert groups["p2p"] == [] and [3, 11] in groups["collective"] and list(range(8)) in groups["collective"]
    with open(d / "cluster_step_trace_time.csv", newline="") as fp:
        rows = list(csv.reader(fp))
    assert rows[0] == STEP_HEADERS
    ranks = [r for r in rows[1:] if r[1] == "rank"]
    assert len(ranks) == 16 * 3 and {r[2] for r in ranks} == {str(i) for i in range(16)}
    stage = [r for r in rows[1:] if r[1] == "stage"]
    assert len(stage) == 3 and stage[0][2] == "(" + ", ".join(map(str, range(16))) + ")"
    matrix = json.loads((d / "cluster_communication_matrix.json").read_text())
    link = next(v for op, links in matrix["(3, 11)"]["step1"].items() if not op.startswith("Total")
                for k, v in links.items() if k == "3-11")
    assert set(link) == {"Transport Type", "Transit Size(MB)", "Transit Time(ms)", "Bandwidth(GB/s)", "Op Name"}
    assert link["Transport Type"] == "RDMA"
    comm = json.loads((d / "cluster_communication.json").read_text())
    op = next(k for k in comm["(0, 1, 2, 3, 4, 5, 6, 7)"]["step2"] if k != "Total Op Info")
    info = comm["(0, 1, 2, 3, 4, 5, 6, 7)"]["step2"][op]["5"]
    assert set(info) == {"Communication Time Info", "Communication Bandwidth Info"}
    assert "HCCS" in info["Communication Bandwidth Info"]
    con = sqlite3.connect(d / "cluster_analysis.db")
    try:
        for table, cols in DB_TABLES.items():
            assert [r[1] for r in con.execute(f"PRAGMA table_info({table})")] == cols
        assert con.execute("select count(*) from ClusterStepTraceTime where type='rank'").fetchone()[0] == 48
    finally:
        con.close()


def test_cli_and_steps_window(faulty_cluster: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["cluster", "-i", str(faulty_cluster), "-o", str(tmp_path), "-j", "1",
                                   "--steps", "2-3"])
    assert res.exit_code == 0, res.output
    assert "2 iterations analysed" in res.output
    rows = (tmp_path / "cluster_analysis_output" / "cluster_step_trace_time.csv").read_text().splitlines()
    assert {r.split(",")[0] for r in rows[1:]} == {"2", "3"}
    for bad, msg in ((["--steps", "3-1"], "need 1 <= A <= B"), (["--scheduler", "nonsense"], "tcp://HOST:PORT")):
        res = CliRunner().invoke(cli, ["cluster", "-i", str(faulty_cluster), "-o", str(tmp_path), *bad])
        assert res.exit_code != 0 and msg in res.output and "Traceback" not in res.output


def test_bad_input(tmp_path: Path, clean_cluster: Path) -> None:
    with pytest.raises(InvalidPathError, match="holds no PROF dir"):
        analyze_cluster(tmp_path, tmp_path / "o")
    # one broken rank among good ones: a warning naming it, the rest analysed
    job = tmp_path / "job"
    shutil.copytree(clean_cluster, job, ignore=shutil.ignore_patterns("cluster_analysis_output", "msprof_py_cache"))
    broken = sorted(job.glob("PROF_*"))[0]
    for f in broken.glob("device_*/data/*"):
        f.write_bytes(b"\x00" * 7)
    for f in broken.glob("host/data/*"):
        f.write_bytes(b"\x01" * 13)
    rep = analyze_cluster(job, tmp_path / "o2", workers=1)
    assert any(broken.name in w for w in rep.warnings)
    # every rank broken: one clear error
    only = tmp_path / "only"
    only.mkdir()
    shutil.copytree(broken, only / broken.name)
    (only / broken.name / "host" / "info.json").write_text("{not json")
    for p in (only / broken.name).glob("device_*/info.json.*"):
        p.write_text("{")
    with pytest.raises((DataError, InvalidPathError)):
        analyze_cluster(only, tmp_path / "o3", workers=1)


def test_load_keeps_rank_host_prof_and_load_cluster(clean_cluster: Path) -> None:
    s = msprof_py.load(clean_cluster)
    assert sorted(s.tasks["rank_id"].unique()) == list(range(16))
    assert set(s.tasks["host"].astype(str)) == {"node000", "node001"}
    assert s.tasks["prof"].nunique() == 16
    assert {"rank_id", "host", "prof"} <= set(s.comm_tasks.columns)
    c = msprof_py.load_cluster(clean_cluster, workers=1)
    assert c.groups["dp_group_3"] == (3, 11) and len(c.ranks) == 16
