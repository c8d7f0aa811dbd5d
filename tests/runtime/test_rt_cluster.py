"""The simulated cluster: topology, collectives over communicators, injected faults, node clocks."""
from __future__ import annotations

import numpy as np
import pytest

from msprof_py.errors import WorkloadError
from msprof_py.runtime.clock import SimClock
from msprof_py.runtime.cluster import Faults, Topology, node_clocks, run_cluster
from msprof_py.runtime.device import ATLAS_A2
from msprof_py.runtime.hooks import NullHooks
from msprof_py.runtime.workloads import get_workload


def _llm():
    return get_workload("llm_decoder", batch=1, seq_len=64, layers=2, hidden=256, vocab=1000)


def _run(topo, faults=None, iterations=2, target=None):
    faults = faults or Faults()
    base = SimClock.create(ATLAS_A2.host_cpu_frequency_mhz, ATLAS_A2.hwts_frequency_mhz, fixed=True)
    return run_cluster(target or _llm(), topo, iterations=iterations, seed=1, hooks=lambda r: NullHooks(),
                       clocks=node_clocks(base, topo, faults), faults=faults)


def test_topology_groups() -> None:
    t = Topology(16, 8, tp=8)
    assert t.nodes == 2 and t.dp == 2
    assert t.tp_group(11) == tuple(range(8, 16))
    assert t.dp_group(3) == (3, 11)
    assert t.groups()["dp"][3] == (3, 11)
    with pytest.raises(WorkloadError):
        Topology(12, 8)
    with pytest.raises(WorkloadError):
        Topology(16, 8, tp=3)
    with pytest.raises(WorkloadError):
        Faults(slow_ranks={16: 2.0}).check(t)


def test_collectives_end_together_in_their_communicator() -> None:
    ranks = _run(Topology(4, 2, tp=2))
    truth = {cr.rank: cr.result.truth for cr in ranks}
    # the last sub-task of every all-reduce (a notify wait) ends at once on every member, up to its own duration
    ends = {}
    for r, t in truth.items():
        c = t[t["op_type"] == "HcomAllReduce"]
        ends[r] = (c["start_sim_ns"] + c["dur_ns"]).to_numpy()
    assert len({len(e) for e in ends.values()}) == 1
    # TP groups {0,1} and {2,3}; the DP all-reduce over {0,2} closes the step
    last0, last2 = ends[0][-1], ends[2][-1]
    assert abs(int(last0) - int(last2)) < 2_000  # same barrier, durations differ by their jitter only


def test_slow_link_and_slow_rank_change_only_their_tasks() -> None:
    topo = Topology(4, 2, tp=2)
    base = {cr.rank: cr.result.truth for cr in _run(topo)}
    slow = {cr.rank: cr.result.truth for cr in _run(topo, Faults(slow_ranks={1: 1.5}, slow_links={(0, 2): 0.5}))}

    def compute(t):
        return t[t["task_type"].isin(["AI_CORE", "AI_VECTOR_CORE", "MIX_AIV", "AI_CPU"])]["dur_ns"].sum()

    ratio = {r: compute(slow[r]) / compute(base[r]) for r in range(4)}
    assert ratio[1] == pytest.approx(1.5, rel=0.02)
    assert all(ratio[r] == pytest.approx(1.0, rel=0.02) for r in (0, 2, 3))

    def copies(t):  # the DP all-reduce's copies run over RoCE: the last hccl op of the model
        c = t[(t["op_type"] == "HcomAllReduce") & (t["op_name"] == "MEMCPY_ASYNC")]
        return c["dur_ns"].to_numpy()

    c0b, c0s, c1b, c1s = copies(base[0]), copies(slow[0]), copies(base[1]), copies(slow[1])
    assert c0s.max() > 1.8 * c0b.max()  # rank 0 sends to rank 2 over the slow link
    assert c1s.max() == pytest.approx(c1b.max(), rel=0.1)


def test_hierarchical_allreduce_for_data_parallel_training() -> None:
    wl = get_workload("resnet50", batch=2, image=32)
    ranks = _run(Topology(4, 2, tp=1), iterations=1, target=wl)
    t = ranks[0].result.truth
    c = t[t["op_type"] == "HcomAllReduce"]
    # handshake + intra-node reduce-scatter (1 step) + inter-node all-reduce (2 steps) + all-gather (1 step),
    # 3 tasks per step, per gradient segment
    per_segment = 2 + 3 * (1 + 2 + 1)
    assert len(c) % per_segment == 0 and len(c) >= per_segment


def test_node_clocks_offset_and_drift() -> None:
    topo = Topology(4, 2)
    base = SimClock.create(100.0, 50.0, fixed=True)
    clocks = node_clocks(base, topo, Faults(clock_offset_us={1: 5000}, clock_drift_ppm={1: 10.0}))
    t = np.array([0, 1_000_000_000])
    d0 = clocks[0].local_ns(t)
    d1 = clocks[1].local_ns(t)
    assert d1[0] - d0[0] == 5_000_000
    assert (d1[1] - d0[1]) - (d1[0] - d0[0]) == 10_000  # 10 ppm of 1 s
