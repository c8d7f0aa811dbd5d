"""Simulated runs shared by the advice / diff tests (collected once per session)."""
from __future__ import annotations

from pathlib import Path

import pytest

from . import scenarios as sc

DOC = sc.graph_doc()
GRAPHS = {
    "clean": DOC,
    "aicpu": sc.with_op(DOC, "l2/Add", task_type="AI_CPU"),
    "dynamic": sc.with_op(DOC, "l1/MatMulV2", dynamic=True),
    "dynamic_recompile": sc.with_op(DOC, "l1/MatMulV2", dynamic=True, attrs={"recompile_us": 300}),
    "low_bandwidth": sc.with_op(DOC, "l2/Add", attrs={"kernel_choice": {"schedule": "single_core"}}),
    "unbalanced": sc.with_op(DOC, "l2/MatMulV2", attrs={"slow_iterations": {"3": 3.0}}),
    "slow_kernel": sc.with_op(DOC, "l2/MatMulV2", attrs={"kernel_choice": {"impl": "naive"}}),
}
SCRIPTS = {
    "script_clean": sc.matmul_loop(),
    "host_work": sc.matmul_loop(work_us=100),
    "sync_each": sc.matmul_loop(sync_each=True),
}


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("advise_runs")
    out = {k: sc.run_graph(doc, root / k) for k, doc in GRAPHS.items()}
    out.update({k: sc.run_script(body, root / k) for k, body in SCRIPTS.items()})
    return out
