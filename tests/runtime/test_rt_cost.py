"""Cost model: roofline behaviour (issue 2 acceptance 4) and tuning hooks."""
from __future__ import annotations

import dataclasses

import pytest

from msprof_py.runtime.cost import CUBE_EFFICIENCY, TuneChoice, derive_task_type, op_cost, ring_allreduce_ns
from msprof_py.runtime.device import ATLAS_A2
from msprof_py.runtime.graph import Op, Tensor

SPEC = ATLAS_A2
OVERHEAD = SPEC.kernel_launch_overhead_us * 1000


def matmul(m: int, k: int = 4096, n: int = 4096, dtype: str = "FLOAT16") -> Op:
    return Op("mm", "MatMulV2", [Tensor("a", (m, k), dtype), Tensor("b", (k, n), dtype)],
              [Tensor("c", (m, n), dtype)])


def vector(op_type: str, numel: int, dtype: str = "FLOAT16") -> Op:
    return Op("v", op_type, [Tensor("x", (numel,), dtype), Tensor("y", (numel,), dtype)],
              [Tensor("z", (numel,), dtype)])


@pytest.mark.parametrize("m", [2048, 4096, 8192])
def test_doubling_matmul_m_doubles_device_time(m: int) -> None:
    t1 = op_cost(matmul(m), SPEC).duration_ns
    t2 = op_cost(matmul(2 * m), SPEC).duration_ns
    assert t2 / t1 == pytest.approx(2.0, rel=0.10)


def test_matmul_is_compute_bound_and_uses_all_cube_cores() -> None:
    c = op_cost(matmul(8192), SPEC)
    assert c.task_type == "AI_CORE"
    assert c.block_dim == SPEC.ai_core_num
    assert c.flops == 2 * 8192 * 4096 * 4096
    assert c.pipes["cube"] > c.pipes["mte2"]
    # time is the cube time at the sustained rate plus the launch overhead
    # (the mac pipe itself computes at the peak rate: busy the kernel's efficiency of that time)
    assert c.duration_ns == pytest.approx(c.pipes["cube"] / CUBE_EFFICIENCY + OVERHEAD, rel=1e-6)


@pytest.mark.parametrize("op_type", ["Add", "Relu", "Mul", "Cast"])
def test_vector_op_time_follows_bytes_over_bandwidth(op_type: str) -> None:
    small = op_cost(vector(op_type, 1 << 22), SPEC)
    big = op_cost(vector(op_type, 1 << 24), SPEC)
    assert small.task_type == "AI_VECTOR_CORE"
    for c in (small, big):
        expected = c.bytes / (SPEC.hbm_bandwidth_gbps * 0.8) + OVERHEAD  # bytes / (GB/s == B/ns)
        assert c.duration_ns == pytest.approx(expected, rel=0.01)
    # 4x the bytes -> 4x the memory time
    assert (big.duration_ns - OVERHEAD) / (small.duration_ns - OVERHEAD) == pytest.approx(4.0, rel=0.02)


def test_bigger_shapes_take_longer_in_proportion() -> None:
    times = [op_cost(vector("Gelu", n), SPEC).duration_ns - OVERHEAD for n in (1 << 20, 1 << 21, 1 << 22)]
    assert times[1] / times[0] == pytest.approx(2.0, rel=0.05)
    assert times[2] / times[1] == pytest.approx(2.0, rel=0.05)


def test_fp32_matmul_is_slower_than_fp16() -> None:
    assert op_cost(matmul(4096, dtype="FLOAT"), SPEC).duration_ns > op_cost(matmul(4096), SPEC).duration_ns * 1.5


def test_task_types() -> None:
    fa = Op("fa", "FlashAttentionScore", [Tensor("q", (1, 2048, 4096)), Tensor("k", (1, 2048, 4096)),
                                         Tensor("v", (1, 2048, 4096))], [Tensor("o", (1, 2048, 4096))],
            attrs={"head_num": 32})
    c = op_cost(fa, SPEC)
    assert c.task_type == "MIX_AIV" and c.mix_block_dim == 2 * c.block_dim
    assert c.block_num_field == (2 << 16) | c.block_dim
    assert derive_task_type(Op("nz", "NonZero", [], [])) == "AI_CPU"
    assert derive_task_type(Op("c", "Conv2D", [], [])) == "AI_CORE"
    assert derive_task_type(Op("s", "SoftmaxV2", [], [])) == "AI_VECTOR_CORE"
    assert derive_task_type(dataclasses.replace(Op("x", "Add", [], []), task_type="AI_CPU")) == "AI_CPU"


def test_op_cost_is_pure() -> None:
    op = matmul(1024)
    assert op_cost(op, SPEC) == op_cost(op, SPEC)


def test_tuning_changes_efficiency_as_documented() -> None:
    op = matmul(8192)
    base = op_cost(op, SPEC)
    nz = op_cost(op, SPEC, TuneChoice(format="FRACTAL_NZ"))
    assert (base.duration_ns - OVERHEAD) / (nz.duration_ns - OVERHEAD) == pytest.approx(1.12, rel=1e-3)
    naive = op_cost(op, SPEC, TuneChoice(impl="naive"))
    assert naive.duration_ns > base.duration_ns
    db = op_cost(vector("Add", 1 << 24), SPEC, TuneChoice(schedule="double_buffer"))
    assert db.duration_ns < op_cost(vector("Add", 1 << 24), SPEC).duration_ns
    assert op_cost(op, SPEC, TuneChoice(schedule="single_core")).block_dim == 1
    with pytest.raises(ValueError):
        op_cost(op, SPEC, TuneChoice(format="bogus"))


def test_ring_allreduce_formula() -> None:
    nbytes = 100 * 2**20
    t2 = ring_allreduce_ns(nbytes, 2, SPEC)
    t8 = ring_allreduce_ns(nbytes, 8, SPEC)
    assert ring_allreduce_ns(nbytes, 1, SPEC) == 0
    assert t2 == pytest.approx(nbytes / SPEC.hccs_bandwidth_gbps + 2 * SPEC.hccs_latency_us * 1000, rel=1e-6)
    assert t8 > t2
