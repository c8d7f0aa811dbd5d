"""advise on clean runs of the built-in workloads: only findings that are true of what the
simulated workload does (a perf engineer reading the run would agree)."""
from __future__ import annotations

from pathlib import Path

import pytest

import msprof_py
from msprof_py.analyse.advise import findings
from msprof_py.collect import collect
from msprof_py.runtime.workloads import get_workload

EXPECTED = {
    # the gradients' all-reduce runs beside the backward pass; 1x1 weight gradients use every
    # core (the batch is split across cores), so none is memory-bound at a low bandwidth
    ("resnet50", 2): {},
    ("bert", 1): {},
    # the sampler's TopKV2 runs as an AI CPU kernel (k is a tensor input); CANN ships an AI Core TopK
    ("llm_decoder", 1): {"aicpu": ["sampler/TopKV2"]},
    # eager aclnn calls, one launch per op and a synchronisation per step: the device waits for the host
    ("single_op", 1): {"bubbles": [], "host_bound": [], "sync_hot_path": ["aclrtSynchronizeStream"]},
}


@pytest.mark.parametrize("workload,devices", list(EXPECTED), ids=[f"{w}x{d}" for w, d in EXPECTED])
def test_clean_workload_findings(tmp_path: Path, workload: str, devices: int) -> None:
    res = collect(get_workload(workload), output=tmp_path, devices=devices, iterations=3, seed=0, fixed_clock=True)
    s = msprof_py.load(res.prof_dir)
    assert len(s.pmu)  # the PMU rules ran
    got: dict[str, list[str]] = {}
    for f in findings(s):
        got.setdefault(f.rule, f.ops)
        assert f.ops == got[f.rule]  # the same on every device
    assert got == EXPECTED[(workload, devices)]
