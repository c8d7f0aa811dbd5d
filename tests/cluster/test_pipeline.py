"""Pipeline-parallel cluster jobs: stages cut by layers, send / receive between stages, the bubble in
msprof-analyze's step breakdown and the PP groups in communication_group.json."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from msprof_py.cluster.analyze import analyze_cluster
from msprof_py.collect.cluster import collect_cluster
from msprof_py.errors import WorkloadError
from msprof_py.runtime.clock import SimClock
from msprof_py.runtime.cluster import Faults, Topology, node_clocks, run_cluster
from msprof_py.runtime.cluster_pp import stage_graphs
from msprof_py.runtime.device import ATLAS_A2
from msprof_py.runtime.hooks import NullHooks
from msprof_py.runtime.workloads import get_workload

from .conftest import PARAMS


def _llm(layers: int = 4):
    return get_workload("llm_decoder", batch=1, seq_len=64, layers=layers, hidden=256, vocab=1000)


def _run(topo: Topology, faults: Faults | None = None, iterations: int = 2, layers: int = 4):
    faults = faults or Faults()
    base = SimClock.create(ATLAS_A2.host_cpu_frequency_mhz, ATLAS_A2.hwts_frequency_mhz, fixed=True)
    return run_cluster(_llm(layers), topo, iterations=iterations, seed=1, hooks=lambda r: NullHooks(),
                       clocks=node_clocks(base, topo, faults), faults=faults)


def test_topology_places_stages_outermost() -> None:
    t = Topology(16, 4, tp=2, pp=2)
    assert (t.dp, t.stage(7), t.stage(8)) == (4, 0, 1)
    assert t.tp_group(9) == (8, 9) and t.dp_group(9) == (9, 11, 13, 15) and t.pp_group(9) == (1, 9)
    assert t.groups()["pp"][0] == (0, 8) and len(t.groups()["pp"]) == 8
    with pytest.raises(WorkloadError, match="pipeline stages"):
        Topology(12, 4, tp=2, pp=4)


def test_stages_split_the_layers() -> None:
    g = _llm(layers=5).graph
    parts = stage_graphs(g, 2)
    names = [[op.name for op in p.ops] for p in parts]
    assert names[0][0] == "model/embed_tokens/Gather" and names[1][-1] == "sampler/TopKV2"
    assert {n.split("/")[2] for n in names[0] if "/layers/" in n} == {"0", "1", "2"}
    assert {n.split("/")[2] for n in names[1] if "/layers/" in n} == {"3", "4"}
    assert sum(map(len, names)) == len(g.ops)
    assert {w.name for p in parts for w in p.weights} == {w.name for w in g.weights}
    with pytest.raises(WorkloadError, match="too few"):
        stage_graphs(_llm(layers=2).graph, 3)
    with pytest.raises(WorkloadError, match="training graph"):
        topo = Topology(2, 2, tp=1, pp=2)
        base = SimClock.create(ATLAS_A2.host_cpu_frequency_mhz, ATLAS_A2.hwts_frequency_mhz, fixed=True)
        run_cluster(get_workload("resnet50", batch=2, image=32), topo, hooks=lambda r: NullHooks(),
                    clocks=node_clocks(base, topo, Faults()))


def test_receive_waits_for_the_previous_stage() -> None:
    ranks = _run(Topology(4, 2, tp=2, pp=2))
    t = {cr.rank: cr.result.truth for cr in ranks}
    for r in range(4):
        ops = set(t[r]["op_type"])
        assert {"HcomSend", "HcomReceive"} <= ops and "HcomAllReduce" in ops  # TP inside the stage
    # stage 1's first layer starts after stage 0 has sent (the receive ends with the copy)
    send = t[0][(t[0]["op_type"] == "HcomSend") & (t[0]["op_name"] == "MEMCPY_ASYNC")]
    first_layer = t[2][t[2]["op_name"].str.contains("/layers/")].groupby("index_id")["start_sim_ns"].min()
    copy_end = (send["start_sim_ns"] + send["dur_ns"]).groupby(send["index_id"]).min()
    assert (first_layer.to_numpy() > copy_end.to_numpy()).all()
    # stage 0's iteration ends after stage 1's layers: it waits for the last stage's output
    last1 = t[2][t[2]["op_name"].str.contains("lm_head")].groupby("index_id")["start_sim_ns"].max()
    end0 = t[0].assign(e=t[0]["start_sim_ns"] + t[0]["dur_ns"]).groupby("index_id")["e"].max()
    assert (end0.to_numpy() > last1.to_numpy()).all()


def test_bubble_and_p2p_groups_in_msprof_analyze_outputs(pp_cluster: Path, tmp_path: Path) -> None:
    rep = analyze_cluster(pp_cluster, tmp_path, workers=1)
    assert rep.findings == []  # a pipeline bubble is no fault
    d = tmp_path / "cluster_analysis_output"
    groups = json.loads((d / "communication_group.json").read_text())
    assert groups["p2p"] == [[r, r + 8] for r in range(8)]
    assert groups["collective"] == [list(range(8)), list(range(8, 16))]
    with open(d / "cluster_step_trace_time.csv", newline="") as fp:
        rows = [r for r in csv.DictReader(fp) if r["Type"] == "rank"]
    step = {int(r["Index"]): float(r["Stage"]) + float(r["Bubble"]) for r in rows}
    bubble = {int(r["Index"]): float(r["Bubble"]) for r in rows}
    busy = {int(r["Index"]): float(r["Communication(Not Overlapped and Exclude Receive)"]) + float(r["Computing"])
            for r in rows}
    # two equal stages, one micro-batch: each rank waits about half the step for the other stage
    for r in range(16):
        assert 0.35 < bubble[r] / step[r] < 0.65, (r, bubble[r], step[r])
    # stage 1 waits for what stage 0 computes and communicates, and the other way round
    s0 = np.mean([busy[r] for r in range(8)])
    s1 = np.mean([busy[r] for r in range(8, 16)])
    assert np.mean([bubble[r] for r in range(8, 16)]) == pytest.approx(s0, rel=0.15)
    assert np.mean([bubble[r] for r in range(8)]) == pytest.approx(s1, rel=0.15)
    stages = {r["Index"] for r in csv.DictReader(open(d / "cluster_step_trace_time.csv")) if r["Type"] == "stage"}
    assert stages == {"(0, 1, 2, 3, 4, 5, 6, 7)", "(8, 9, 10, 11, 12, 13, 14, 15)"}


def test_slow_rank_in_a_pipeline_is_found(tmp_path: Path) -> None:
    collect_cluster(get_workload("llm_decoder", **{**PARAMS, "layers": 4}), output=tmp_path / "job", ranks=16,
                    ranks_per_node=8, pp=2, iterations=2, seed=5, fixed_clock=True, slow_ranks={10: 1.3})
    rep = analyze_cluster(tmp_path / "job", tmp_path / "out", workers=1)
    got = {(f.kind, f.subject): f.figure for f in rep.findings}
    assert set(got) == {("slow_rank", "rank 10")}
    assert got[("slow_rank", "rank 10")] == pytest.approx(1.3, rel=0.10)


def test_pipeline_timeline_aligns_the_hosts_on_send_receive_pairs(pp_cluster: Path, tmp_path: Path) -> None:
    # tp 8 x pp 2 on two nodes: no collective spans the nodes, only the stages' sends and receives
    rep = analyze_cluster(pp_cluster, tmp_path, workers=1, timeline=True)
    assert not [w for w in rep.warnings if "not aligned" in w]
    with open(tmp_path / "cluster_analysis_output" / "cluster_clock_alignment.csv", newline="") as fp:
        fit = {r["Host"]: r for r in csv.DictReader(fp)}
    assert fit["node001"]["Aligned"] == "True"
    assert float(fit["node001"]["Offset(us)"]) == pytest.approx(5000, abs=5)
    assert float(fit["node001"]["Max Residual(us)"]) < 1.0  # a send and its receive end within 1 us


def test_collect_cli_pp_and_its_bad_values(tmp_path: Path) -> None:
    from click.testing import CliRunner

    import msprof_py
    from msprof_py.cli import cli

    args = ["collect", "--workload", "llm_decoder", "--ranks", "4", "--ranks-per-node", "2", "--iterations", "1"]
    r = CliRunner().invoke(cli, [*args, "--pp", "2", "--output", str(tmp_path / "job")])
    assert r.exit_code == 0, r.output
    data = msprof_py.load_cluster(tmp_path / "job", workers=1)
    assert {g: tuple(m) for g, m in data.groups.items() if g.startswith("pp")} == {"pp_group_0": (0, 2),
                                                                                  "pp_group_1": (1, 3)}
    for bad, message in ((["--pp", "3"], "do not split into tensor-parallel groups of 2 x 3 pipeline stages"),
                         (["--pp", "2", "--workload", "resnet50"], "'resnet50' is a training graph")):
        r = CliRunner().invoke(cli, [*args, *bad, "--output", str(tmp_path / "bad")])
        assert r.exit_code != 0 and message in r.output and "Traceback" not in r.output
        assert not (tmp_path / "bad").exists()
