"""A roofline cost model: how long one op runs on the device, from its FLOPs and bytes.

``op_cost(op, spec, tuning)`` is a pure function (no randomness; the scheduler applies the seeded
jitter).  For an op it computes

- ``flops``: from the op type's formula (matmul ``2*M*N*K``, convolution ``2*out*Cin*kh*kw``,
  elementwise ``k * numel`` with a per-type ``k``...),
- ``bytes``: all inputs read once plus all outputs written once (HBM traffic),
- ``block_dim``: output size / a per-block tile, capped at the core count of the unit the op runs
  on (AI Core cube cores or AI Vector cores),
- ``duration_ns = max(flops / (peak * block_dim / cores * eff), bytes / (hbm_bw * bw_share * eff))
  + kernel_launch_overhead``,

and a pipe breakdown (cube / vector / scalar / mte1 / mte2 / mte3 busy time in ns, and total
cycles at ``aic_frequency``) that later feeds per-op counters.  The cube entry is the time the
mac pipe actually computes (FLOPs at the unscaled peak of the op's cores), so a compute-bound
cube op's mac ratio is its kernel's efficiency (0.72 by default, lower for a worse kernel).

Task types: cube ops run as ``AI_CORE``; elementwise, norm, softmax ops as ``AI_VECTOR_CORE``;
some fused ops (FlashAttentionScore, a fused MatMul+Add, ...) as ``MIX_AIV`` (cube + vector cores,
``mix_block_dim = 2 * block_dim``); shape ops and ``NonZero`` / ``Unique`` as ``AI_CPU``.
An explicit ``op.task_type`` (graph files) wins over the derived one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from msprof_py.runtime.device import DeviceSpec
from msprof_py.runtime.graph import DTYPE_BYTES, Op, Tensor

# The cost model's behaviour version.  Bump it whenever a change alters any op's cost (a formula,
# a constant, a table entry, a task-type rule): tuned banks (msprof_py.aoe) record it and are
# discarded as stale when it differs.  Doc/comment/refactoring edits that keep every cost do
# not bump it.
COST_MODEL_VERSION = "2"

CUBE_OPS = frozenset({
    "Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "Conv3D", "MatMul", "MatMulV2", "MatMulV3",
    "BatchMatMul", "BatchMatMulV2", "GroupedMatmul", "QuantBatchMatmulV3", "WeightQuantBatchMatmulV2",
})
MIX_OPS = frozenset({
    "FlashAttentionScore", "FlashAttentionScoreGrad", "IncreFlashAttention", "PromptFlashAttention",
    "FusedInferAttentionScore", "MatmulAllReduce", "FusedMatMulAdd",
})
AI_CPU_OPS = frozenset({
    "NonZero", "Unique", "Shape", "DynamicShape", "Where", "TopKV2", "GatherV2D_AICPU", "RandomUniform",
    "DropOutGenMask", "GetNext", "StatelessRandomUniformV2", "Size",
})
# vector op types and their FLOPs per output element (the vector "k")
VECTOR_FLOPS_PER_ELEM: dict[str, float] = {
    "Add": 1, "AddN": 1, "Sub": 1, "Mul": 1, "Muls": 1, "Adds": 1, "RealDiv": 4, "Div": 4, "Relu": 1, "ReluGrad": 1, "ReluGradV2": 1,
    "Gelu": 12, "GeluGrad": 16, "FastGelu": 8, "Swish": 6, "Silu": 6, "Swiglu": 8, "SwigluGrad": 12,
    "Sigmoid": 6, "Tanh": 6, "Exp": 4, "Sqrt": 4, "Rsqrt": 4, "Cast": 1, "Neg": 1,
    "Softmax": 5, "SoftmaxV2": 5, "SoftmaxGrad": 4, "SoftmaxCrossEntropyWithLogits": 8, "LogSoftmaxV2": 6,
    "LayerNorm": 8, "LayerNormV3": 8, "LayerNormGrad": 12, "LayerNormBetaGammaBackpropV2": 6,
    "LayerNormXBackpropV3": 10, "RmsNorm": 5, "RmsNormGrad": 8, "AddRmsNorm": 6,
    "BNTrainingReduce": 2, "BNTrainingUpdate": 6, "BNTrainingReduceGrad": 6, "BNTrainingUpdateGrad": 4,
    "BNInfer": 4, "MaxPool": 9, "MaxPoolV3": 9, "MaxPoolGradWithArgmax": 4, "MaxPoolWithArgmaxV1": 9,
    "AvgPool": 9, "ReduceMean": 1, "ReduceMeanD": 1, "ReduceSum": 1, "ReduceSumD": 1,
    "ApplyMomentum": 4, "ApplyAdamW": 12, "ApplyAdamD": 10, "LambApplyOptimizerAssign": 14,
    "DropOutDoMask": 2, "DropOutDoMaskV3": 2, "DropOutGenMaskV3": 4, "RotaryMul": 4, "RotaryMulGrad": 6,
    "ApplyRotaryPosEmb": 4, "TransData": 0.25, "Transpose": 0.25, "TransposeD": 0.25,
    "ConfusionTransposeD": 0.25, "ConcatD": 0.1,
    "SplitD": 0.1, "Slice": 0.1, "StridedSliceD": 0.1, "GatherV2": 0.1, "Gather": 0.1, "Embedding": 0.1,
    "Fill": 0.1, "ZerosLike": 0.1, "OnesLike": 0.1, "Assign": 0.1, "Identity": 0.1, "Reshape": 0.1,
    "BiasAdd": 1, "BiasAddGrad": 1, "L2Loss": 2, "SquareSumV1": 2, "ArgMaxV2": 1, "Equal": 1, "Select": 1,
    "Maximum": 1, "Minimum": 1, "Pow": 8, "Square": 1, "Abs": 1, "Log": 6, "Less": 1, "Greater": 1,
}
# vector ops that mostly move data: they reach only part of the HBM bandwidth (strided access)
LAYOUT_OPS = frozenset({"TransData", "Transpose", "TransposeD", "ConfusionTransposeD", "ConcatD", "SplitD", "StridedSliceD", "GatherV2",
                        "Gather", "Embedding"})

CUBE_EFFICIENCY = 0.72  # sustained fraction of peak on a well-shaped GEMM/conv
VECTOR_EFFICIENCY = 0.55
BANDWIDTH_EFFICIENCY = 0.80
LAYOUT_BANDWIDTH_EFFICIENCY = 0.45
CUBE_TILE_ELEMS = 64 * 64  # output elements per cube block: kernels split M/N into 64x64 base tiles
VECTOR_TILE_ELEMS = 16 * 1024  # output elements per vector block
BW_SATURATION_BLOCKS = 16  # blocks needed to saturate HBM bandwidth
AI_CPU_BASE_US = 25.0  # AI CPU kernels: scheduling plus a slow scalar core
AI_CPU_BANDWIDTH_GBPS = 8.0
# peak-rate multipliers per data type (cube: fp16 = 1)
CUBE_DTYPE_RATE = {"FLOAT16": 1.0, "BF16": 1.0, "FLOAT": 0.5, "INT8": 2.0, "INT32": 0.5}
VECTOR_DTYPE_RATE = {"FLOAT16": 1.0, "BF16": 1.0, "FLOAT": 0.5, "INT8": 1.0, "INT32": 0.5}


@dataclass(frozen=True)
class TuneChoice:
    """One point in the AOE tuner's search space for an op (None = GE's untuned default).

    Effects on the cost model (multipliers on the default efficiencies; see :meth:`factors`):

    - ``format``: ``"default"``; ``"FRACTAL_NZ"`` keeps cube operands in the cube's native layout,
      cube efficiency x1.12 (cube ops only, no effect elsewhere); ``"ND"`` forces row-major
      operands, cube efficiency x0.9.
    - ``schedule``: ``"default"``; ``"double_buffer"`` overlaps MTE2 with compute, bandwidth
      efficiency x1.15; ``"split_k"`` lets a small-M/N matmul use more cores (block dim x2, but
      cube efficiency x0.95 for the extra reduction); ``"single_core"`` uses one block.
    - ``impl``: ``"default"``; ``"tiled_l1"`` reuses L1 better, bandwidth efficiency x1.1 and
      cube efficiency x1.03; ``"naive"`` is a slow reference kernel, both efficiencies x0.6.

    Unknown values raise ``ValueError`` (the tuner only searches the documented space).
    """

    format: str = "default"
    schedule: str = "default"
    impl: str = "default"

    FORMATS = ("default", "FRACTAL_NZ", "ND")
    SCHEDULES = ("default", "double_buffer", "split_k", "single_core")
    IMPLS = ("default", "tiled_l1", "naive")

    def factors(self, is_cube: bool) -> tuple[float, float, float]:
        """``(compute efficiency x, bandwidth efficiency x, block dim x)`` for this choice."""
        if self.format not in self.FORMATS or self.schedule not in self.SCHEDULES or self.impl not in self.IMPLS:
            raise ValueError(f"unknown tuning choice {self}")
        comp, bw, blocks = 1.0, 1.0, 1.0
        if is_cube:
            comp *= {"default": 1.0, "FRACTAL_NZ": 1.12, "ND": 0.9}[self.format]
        if self.schedule == "double_buffer":
            bw *= 1.15
        elif self.schedule == "split_k" and is_cube:
            blocks, comp = 2.0, comp * 0.95
        elif self.schedule == "single_core":
            blocks = 0.0  # marker: exactly one block
        if self.impl == "tiled_l1":
            bw, comp = bw * 1.1, comp * 1.03
        elif self.impl == "naive":
            bw, comp = bw * 0.6, comp * 0.6
        return comp, bw, blocks


@dataclass(frozen=True)
class OpCost:
    """The device cost of one op (times in ns, FLOPs and bytes absolute)."""

    duration_ns: int
    flops: float
    bytes: int
    block_dim: int
    mix_block_dim: int  # cube+vector ops: vector blocks (0 for non-MIX ops)
    task_type: str  # GE task type name: AI_CORE / AI_VECTOR_CORE / MIX_AIV / AI_CPU
    pipes: dict[str, float] = field(default_factory=dict)  # cube/vector/scalar/mte1/mte2/mte3 busy ns
    total_cycles: int = 0  # busy cycles summed over the blocks, at aic_frequency

    @property
    def block_num_field(self) -> int:
        """node_basic_info ``block_num``: low 16 bits block dim, high 16 bits the mix ratio."""
        ratio = self.mix_block_dim // self.block_dim if self.mix_block_dim and self.block_dim else 0
        return (ratio << 16) | (self.block_dim & 0xFFFF)


# ---------------------------------------------------------------- FLOPs per op type
def _numel(t: Tensor) -> int:
    return t.numel


def _channels(t: Tensor) -> int:
    """Channel count of an activation tensor in its format (C1*C0 for NC1HWC0)."""
    s = t.shape
    if t.format == "NC1HWC0" and len(s) == 5:
        return s[1] * s[4]
    if t.format == "NHWC" and len(s) == 4:
        return s[3]
    return s[1] if len(s) >= 2 else 1


def _matmul_flops(op: Op) -> float:
    a, b = op.inputs[0], op.inputs[1]
    out = op.outputs[0]
    ta = bool(op.attrs.get("transpose_x1", op.attrs.get("transpose_a", False)))
    k = a.shape[-2] if ta else a.shape[-1]
    if a.format == "FRACTAL_NZ" and len(a.shape) >= 4:  # (.., K1, M1, M0, K0)
        k = a.shape[-4] * a.shape[-1]
    del b
    return 2.0 * out.numel * k


def _conv_flops(op: Op) -> float:
    """2 * (elements of the Cout-channel activation) * (weight elements per output channel).

    Input conventions (GE's): Conv2D(x, filter) -> y; Conv2DBackpropInput(filter, dy) -> dx;
    Conv2DBackpropFilter(x, dy) -> dfilter.
    """
    if op.type == "Conv2DBackpropFilter":
        act, weight = op.inputs[1], op.outputs[0]
    elif op.type == "Conv2DBackpropInput":
        weight, act = op.inputs[0], op.inputs[1]
    else:
        act, weight = op.outputs[0], op.inputs[1]
    return 2.0 * act.numel * weight.numel / max(_channels(act), 1)


def _attention_flops(op: Op) -> float:
    q, k = op.inputs[0], op.inputs[1]
    b = q.shape[0]
    sq, h = (q.shape[1], q.shape[2]) if len(q.shape) == 3 else (q.shape[2], q.shape[1] * q.shape[3])
    skv = k.shape[1] if len(k.shape) == 3 else k.shape[2]
    f = 4.0 * b * sq * skv * h
    if op.attrs.get("causal", op.attrs.get("sparse_mode", 0) in (2, 3)):
        f *= 0.5
    return f * (2.5 if op.type.endswith("Grad") else 1.0)


def _attention_vector_flops(op: Op) -> float:
    q, k = op.inputs[0], op.inputs[1]
    heads = int(op.attrs.get("head_num", 1))
    b = q.shape[0]
    sq = q.shape[1] if len(q.shape) == 3 else q.shape[2]
    skv = k.shape[1] if len(k.shape) == 3 else k.shape[2]
    return 6.0 * b * heads * sq * skv


def _vector_flops(op: Op) -> float:
    k = VECTOR_FLOPS_PER_ELEM.get(op.type, 2.0)
    n = max((t.numel for t in op.outputs), default=0)
    if op.type.startswith("MaxPool") or op.type == "AvgPool":
        ksize = op.attrs.get("ksize", (3, 3))
        k = float(math.prod(ksize[-2:])) if ksize else k
    if op.type in ("BNTrainingReduce", "ReduceMean", "ReduceMeanD", "ReduceSum", "ReduceSumD", "L2Loss",
                   "SquareSumV1", "BiasAddGrad", "LayerNormBetaGammaBackpropV2", "BNTrainingReduceGrad"):
        n = max(t.numel for t in op.inputs)
    return k * n


FLOPS_FUNCS: dict[str, Callable[[Op], float]] = {
    **{t: _matmul_flops for t in ("MatMul", "MatMulV2", "MatMulV3", "BatchMatMul", "BatchMatMulV2", "GroupedMatmul",
                                  "QuantBatchMatmulV3", "WeightQuantBatchMatmulV2", "FusedMatMulAdd",
                                  "MatmulAllReduce")},
    **{t: _conv_flops for t in ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "Conv3D")},
    **{t: _attention_flops for t in ("FlashAttentionScore", "FlashAttentionScoreGrad", "IncreFlashAttention",
                                     "PromptFlashAttention", "FusedInferAttentionScore")},
}


def derive_task_type(op: Op) -> str:
    """The GE task type an op runs as (``op.task_type`` if set)."""
    if op.task_type:
        return op.task_type
    if op.type in MIX_OPS:
        return "MIX_AIV"
    if op.type in CUBE_OPS:
        return "AI_CORE"
    if op.type in AI_CPU_OPS:
        return "AI_CPU"
    if op.type.startswith("hcom") or op.type.startswith("Hcom"):
        return "HCCL"
    return "AI_VECTOR_CORE"


def op_flops(op: Op) -> float:
    """Total FLOPs (cube + vector) of ``op``."""
    f = FLOPS_FUNCS.get(op.type)
    base = f(op) if f else _vector_flops(op)
    if op.type in ("FusedMatMulAdd", "MatmulAllReduce"):
        base += op.outputs[0].numel
    return base


def op_bytes(op: Op) -> int:
    """HBM traffic: every input read once, every output written once."""
    return sum(t.nbytes for t in op.inputs) + sum(t.nbytes for t in op.outputs)


def _dtype_rate(op: Op, table: dict[str, float]) -> float:
    dt = op.inputs[0].dtype if op.inputs else (op.outputs[0].dtype if op.outputs else "FLOAT16")
    return table.get(dt, 1.0)


def op_cost(op: Op, spec: DeviceSpec, tuning: TuneChoice | None = None) -> OpCost:
    """The device cost of ``op`` on ``spec`` (pure; see the module docstring for the model)."""
    task_type = derive_task_type(op)
    flops = op_flops(op)
    nbytes = op_bytes(op)
    out_elems = max((t.numel for t in op.outputs), default=1)
    if task_type == "AI_VECTOR_CORE":  # reductions split their (large) input across blocks
        out_elems = max([out_elems] + [t.numel for t in op.inputs])
    elif op.type == "Conv2DBackpropFilter" and op.inputs and op.inputs[0].shape:
        # weight gradients reduce over the batch: CANN's kernels split the batch across cores too
        # (partial sums added atomically), so a small filter still uses every core
        out_elems *= max(int(op.inputs[0].shape[0]), 1)
    is_cube = task_type in ("AI_CORE", "MIX_AIV", "MIX_AIC") and op.type not in VECTOR_FLOPS_PER_ELEM
    comp_x, bw_x, blocks_x = (tuning or TuneChoice()).factors(is_cube)
    overhead_ns = spec.kernel_launch_overhead_us * 1000.0

    if task_type == "AI_CPU":
        dur = AI_CPU_BASE_US * 1000.0 + nbytes / AI_CPU_BANDWIDTH_GBPS
        pipes = {"cube": 0.0, "vector": 0.0, "scalar": dur, "mte1": 0.0, "mte2": 0.0, "mte3": 0.0}
        return OpCost(int(round(dur)), flops, nbytes, 1, 0, task_type, pipes, 0)

    cores = spec.ai_core_num if is_cube else spec.aiv_num
    tile = CUBE_TILE_ELEMS if is_cube else VECTOR_TILE_ELEMS
    block_dim = min(cores, max(1, math.ceil(out_elems / tile)))
    if blocks_x == 0.0:
        block_dim = 1
    elif blocks_x != 1.0:
        block_dim = min(cores, max(1, int(block_dim * blocks_x)))
    share = block_dim / cores

    if is_cube:
        vec_flops = _attention_vector_flops(op) if op.type in FLOPS_FUNCS and "Attention" in op.type else 0.0
        cube_flops = flops
        cube_rate = spec.cube_tflops_fp16 * 1e3 * _dtype_rate(op, CUBE_DTYPE_RATE)  # FLOP per ns
        cube_ns = cube_flops / (cube_rate * share * CUBE_EFFICIENCY * comp_x)
        vec_ns = vec_flops / (spec.vector_tflops_fp16 * 1e3 * VECTOR_EFFICIENCY * min(1.0, 2 * share))
        compute_ns = max(cube_ns, vec_ns)
    else:
        cube_ns = 0.0
        vec_rate = spec.vector_tflops_fp16 * 1e3 * _dtype_rate(op, VECTOR_DTYPE_RATE)
        vec_ns = flops / (vec_rate * share * VECTOR_EFFICIENCY * comp_x)
        compute_ns = vec_ns
    bw_eff = (LAYOUT_BANDWIDTH_EFFICIENCY if op.type in LAYOUT_OPS else BANDWIDTH_EFFICIENCY) * bw_x
    bw_share = min(1.0, block_dim / BW_SATURATION_BLOCKS)
    mem_ns = nbytes / (spec.hbm_bandwidth_gbps * bw_share * bw_eff)  # GB/s == bytes/ns
    busy_ns = max(compute_ns, mem_ns)
    dur = busy_ns + overhead_ns

    in_bytes = sum(t.nbytes for t in op.inputs)
    out_bytes = sum(t.nbytes for t in op.outputs)
    rw = max(nbytes, 1)
    pipes = {
        # the mac pipe computes at its peak rate when it runs: the rest of the op's compute time
        # (1 - efficiency) it stalls on operands, so a worse kernel shows a lower mac ratio
        "cube": cube_ns * CUBE_EFFICIENCY * comp_x,
        "vector": vec_ns,
        "scalar": 0.04 * busy_ns + 200.0,
        "mte1": 0.55 * cube_ns,
        "mte2": mem_ns * in_bytes / rw,
        "mte3": mem_ns * out_bytes / rw,
    }
    mix_block_dim = 2 * block_dim if task_type in ("MIX_AIV", "MIX_AIC") else 0
    total_cycles = int(round(busy_ns * spec.aic_frequency_mhz / 1000.0 * block_dim))
    return OpCost(int(round(dur)), flops, nbytes, block_dim, mix_block_dim, task_type, pipes, total_cycles)


def memcpy_ns(nbytes: int, spec: DeviceSpec, direction: str) -> int:
    """An async copy over PCIe (``h2d``/``d2h``) or HBM (``d2d``), plus a 2 us DMA setup."""
    bw = spec.hbm_bandwidth_gbps / 2 if direction == "d2d" else spec.pcie_bandwidth_gbps
    return int(round(2000.0 + nbytes / bw))


def ring_allreduce_ns(nbytes: int, ranks: int, spec: DeviceSpec) -> int:
    """Ring all-reduce: ``2(N-1)/N * bytes / hccs_bw + 2(N-1) * step latency`` (0 for one rank)."""
    if ranks <= 1:
        return 0
    steps = 2 * (ranks - 1)
    return int(round(steps / ranks * nbytes / spec.hccs_bandwidth_gbps + steps * spec.hccs_latency_us * 1000))


def dtype_bytes(dtype: str) -> int:
    return DTYPE_BYTES[dtype]
