"""Built-in workloads: well-formed graphs with the op mixes and names msprof users see."""
from __future__ import annotations

import pytest

from msprof_py.runtime.cost import op_cost
from msprof_py.runtime.device import ATLAS_A2
from msprof_py.runtime.sim import run
from msprof_py.runtime.workloads import WORKLOADS, get_workload

EXPECTED_TYPES = {
    "resnet50": {"Conv2D", "BNTrainingReduce", "BNTrainingUpdate", "Relu", "Add", "MaxPoolWithArgmaxV1", "TransData",
                 "MatMulV2", "SoftmaxCrossEntropyWithLogits", "Conv2DBackpropFilter", "Conv2DBackpropInput",
                 "BNTrainingUpdateGrad", "ReluGradV2", "ApplyMomentum"},
    "bert": {"MatMulV2", "BatchMatMul", "SoftmaxV2", "LayerNormV3", "Gelu", "Add", "DropOutDoMask", "GeluGrad",
             "SoftmaxGrad", "ApplyAdamW"},
    "llm_decoder": {"MatMulV2", "RmsNorm", "RotaryMul", "FlashAttentionScore", "Swiglu", "Add", "Cast"},
    "single_op": {"MatMulV2", "Add", "Relu", "Cast", "SoftmaxV2", "NonZero"},
}
SMALL = {"resnet50": {"batch": 2, "image": 64}, "bert": {"batch": 2, "seq_len": 32, "layers": 2},
         "llm_decoder": {"batch": 1, "seq_len": 64, "layers": 2}, "single_op": {"batch": 2, "size": 64}}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_graph_is_well_formed(name: str) -> None:
    wl = get_workload(name)
    g = wl.graph
    assert EXPECTED_TYPES[name] <= {op.type for op in g.ops}
    names = [op.name for op in g.ops]
    assert len(names) == len(set(names))
    known = {t.name for t in g.inputs + g.weights}
    for op in g.ops:
        for x in op.inputs:
            assert x.name in known, (op.name, x.name)
        known |= {t.name for t in op.outputs}
    assert all(o.name in known for o in g.outputs)
    if wl.training:
        phases = [op.phase for op in g.ops if op.phase]
        assert phases == sorted(phases, key=["fp", "bp", "update"].index)  # fp, then bp, then update
    assert any(op.dynamic for op in g.ops)


def test_names_look_like_msprof() -> None:
    names = {op.name for op in get_workload("resnet50").graph.ops}
    assert "resnet50/layer1/0/conv1/Conv2D" in names
    assert "gradients/resnet50/layer1/0/conv1/Conv2D_grad/Conv2DBackpropFilter" in names
    assert any(op.fused_from for op in get_workload("resnet50").graph.ops)
    single = {op.name for op in get_workload("single_op").graph.ops}
    assert "aclnnMatmul_MatMulCommon_MatMulV2" in single


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_small_workloads_run(name: str) -> None:
    res = run(get_workload(name, **SMALL[name]), devices=2, iterations=2, seed=1)
    assert len(res.truth) > 0 and set(res.truth.device_id) == {0, 1}


def test_bigger_batch_takes_longer() -> None:
    def device_ns(batch: int) -> float:
        g = get_workload("resnet50", batch=batch).graph
        return sum(op_cost(op, ATLAS_A2).duration_ns for op in g.ops if op.phase != "update")
    t8, t32 = device_ns(8), device_ns(32)
    assert 2.5 < t32 / t8 < 4.2  # roughly proportional (fixed launch overheads and small ops)


@pytest.mark.parametrize("name,hidden", [("bert", 100), ("llm_decoder", 200), ("llm_decoder", 63)])
def test_hidden_sizes_that_do_not_split_into_heads_are_refused(name: str, hidden: int) -> None:
    from msprof_py.errors import WorkloadError

    with pytest.raises(WorkloadError, match="hidden must be a multiple"):
        get_workload(name, hidden=hidden, layers=1)
