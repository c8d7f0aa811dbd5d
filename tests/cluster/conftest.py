"""Small simulated clusters shared by the cluster tests (made once per session)."""
from __future__ import annotations

from pathlib import Path

import pytest

from msprof_py.collect.cluster import collect_cluster
from msprof_py.runtime.workloads import get_workload

# big enough gradients that a transfer's fixed setup cost (1.5 us) is small against its bytes
PARAMS = dict(batch=1, seq_len=128, layers=2, hidden=1024, vocab=32000)


def make_cluster(out: Path, **faults) -> Path:
    collect_cluster(get_workload("llm_decoder", **PARAMS), output=out, ranks=16, ranks_per_node=8, iterations=3,
                    seed=3, fixed_clock=True, **faults)
    return out


@pytest.fixture(scope="session")
def faulty_cluster(tmp_path_factory) -> Path:
    return make_cluster(tmp_path_factory.mktemp("faulty"), slow_ranks={5: 1.3}, slow_links={(3, 11): 0.5},
                        clock_offset_us={1: 5000})


@pytest.fixture(scope="session")
def clean_cluster(tmp_path_factory) -> Path:
    return make_cluster(tmp_path_factory.mktemp("clean"))


@pytest.fixture(scope="session")
def pp_cluster(tmp_path_factory) -> Path:
    """tp 8 x pp 2 on two nodes (stage 1 = node 1, its clock 5 ms ahead), 4 layers, 2 iterations."""
    out = tmp_path_factory.mktemp("pp")
    collect_cluster(get_workload("llm_decoder", **{**PARAMS, "layers": 4}), output=out, ranks=16, ranks_per_node=8,
                    pp=2, iterations=2, seed=5, fixed_clock=True, clock_offset_us={1: 5000})
    return out
