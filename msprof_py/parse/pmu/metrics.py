"""PMU metric formulas per ``aic_metrics`` set, as msprof computes them (vectorised).

Two families, because msprof has two:

* :data:`CALCULATORS` - msprof's C++ ``MetricCalculator`` tables (``csrc/domain/services/
  association/calculator/metric``), used for Ascend 910B (``platform_version`` 5, chip v4) where
  every task gets an ``aic_`` and an ``aiv_`` block.  The list order is msprof's enum order,
  which is the column order of ``metric_summary`` and of op_summary.
* :data:`LEGACY_SETS` - the Python ``FftsPmuCalculator`` path used for the other chips (310B):
  one un-prefixed block, total time rounded to 2 decimals, each ratio followed by its time
  (``total_time * ratio``).

Inputs are per task: ``counters`` (n, 8) uint64 in the order of the configured events,
``events`` (the 8 event codes from sample.json), ``total_cycle`` (n,), ``total_time`` (n,) µs.
Outputs are float64 columns.  Units: ``*_time`` µs, ``*_ratio`` 0..1, ``*_bw`` GB/s,
``*_datas`` KB, fops as counts.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BW_OFFSET = float(1 << 33)  # msprof divides bandwidths by 2**33
FREQ_TO_HZ = 1_000_000


@dataclass(frozen=True)
class Metric:
    """One output column: ``kind`` names msprof's calculator function."""

    name: str
    regs: tuple[int, ...]
    kind: str  # ratio | time | div | sum | bw | cube_fops | vec_fops | add | sub
    scale: float = 1.0  # msprof's floatBit
    pipe: float = 0.0  # bandwidth pipe size
    scalar: float = 0.0  # bandwidth scalar
    params: tuple[int, ...] = ()  # fops weights per register


def _r(name: str, *regs: int) -> Metric:
    return Metric(name, regs, "ratio")


def _t(name: str, *regs: int) -> Metric:
    return Metric(name, regs, "time")


def _bw(name: str, reg: int, pipe: float, scalar: float) -> Metric:
    return Metric(name, (reg,), "bw", pipe=pipe, scalar=scalar)


CALCULATORS: dict[str, list[Metric]] = {
    "PipeUtilization": [
        _t("vec_time", 0x8), _r("vec_ratio", 0x8), _t("mac_time", 0xA), _r("mac_ratio", 0xA),
        _t("scalar_time", 0x9), _r("scalar_ratio", 0x9), _t("mte1_time", 0xB), _r("mte1_ratio", 0xB),
        _t("mte2_time", 0xC), _r("mte2_ratio", 0xC), _t("mte3_time", 0xD), _r("mte3_ratio", 0xD),
        Metric("icache_miss_rate", (0x55, 0x54), "div")],
    "PipeUtilizationExct": [
        _t("mac_time", 0x416, 0x417), _r("mac_ratio_extra", 0x416, 0x417), _t("scalar_time", 0x9),
        _r("scalar_ratio", 0x9), _t("mte1_time", 0x302), _r("mte1_ratio_extra", 0x302), _t("mte2_time", 0xC),
        _r("mte2_ratio", 0xC), _t("fixpipe_time", 0x303), _r("fixpipe_ratio", 0x303),
        Metric("icache_miss_rate", (0x55, 0x54), "div")],
    "ArithmeticUtilization": [
        _r("mac_fp16_ratio", 0x49), _r("mac_int8_ratio", 0x4A), _r("vec_fp32_ratio", 0x4B),
        _r("vec_fp16_ratio", 0x4C, 0x4D), _r("vec_int32_ratio", 0x4E), _r("vec_misc_ratio", 0x4F),
        Metric("cube_fops", (0x49, 0x4A), "cube_fops", params=(8192, 16384)),
        Metric("vector_fops", (0x4C, 0x4D, 0x4B, 0x4E, 0x4F), "vec_fops", params=(128, 64, 64, 64, 32))],
    "Memory": [
        _bw("ub_read_bw", 0x15, 256, 4), _bw("ub_write_bw", 0x16, 256, 4), _bw("l1_read_bw", 0x31, 256, 16),
        _bw("l1_write_bw", 0x32, 128, 8), _bw("main_mem_read_bw", 0x12, 8, 8),
        _bw("main_mem_write_bw", 0x13, 8, 8), _bw("l2_read_bw", 0xF, 256, 8), _bw("l2_write_bw", 0x10, 256, 8)],
    "MemoryL0": [
        _bw("l0a_read_bw", 0x1B, 256, 16), _bw("l0a_write_bw", 0x1C, 256, 16), _bw("l0b_read_bw", 0x21, 256, 16),
        _bw("l0b_write_bw", 0x22, 256, 8), _bw("l0c_read_bw", 0x27, 256, 8), _bw("l0c_write_bw", 0x29, 256, 8),
        _bw("l0c_read_bw_cube", 0x28, 256, 32), _bw("l0c_write_bw_cube", 0x2A, 256, 32)],
    "ResourceConflictRatio": [
        _r("vec_bankgroup_cflt_ratio", 0x64), _r("vec_bank_cflt_ratio", 0x65), _r("vec_resc_cflt_ratio", 0x66)],
    "MemoryUB": [
        _bw("ub_read_bw_vector", 0x43, 128, 2), _bw("ub_write_bw_vector", 0x44, 128, 2),
        _bw("ub_read_bw_scalar", 0x37, 128, 1), _bw("ub_write_bw_scalar", 0x38, 128, 1)],
    "L2Cache": [Metric(n, (r,), "sum") for n, r in (
        ("write_cache_hit", 0x500), ("write_cache_miss_allocate", 0x502), ("r0_read_cache_hit", 0x504),
        ("r0_read_cache_miss_allocate", 0x506), ("r1_read_cache_hit", 0x508),
        ("r1_read_cache_miss_allocate", 0x50A))],
    "MemoryAccess": [
        Metric("read_main_memory_datas", (0x50D, 0x50E), "add", 0.125),
        Metric("write_main_memory_datas", (0x50C,), "add", 0.125),
        Metric("GM_to_L1_datas", (0x32, 0x206), "sub", 0.25),
        Metric("L0C_to_L1_datas", (0x206,), "add", 0.125),
        Metric("L0C_to_GM_datas", (0x20C, 0x206), "sub", 0.125),
        Metric("GM_to_UB_datas", (0x3E,), "add", 0.125),
        Metric("UB_to_GM_datas", (0x3D,), "add", 0.125)],
}
METRIC_SETS = tuple(CALCULATORS)

# msprof's default PMU events per set (what its collector programs; sample.json
# ai_core_profiling_events).  Registers a set needs but the 8 slots lack count as 0, as in msprof.
DEFAULT_EVENTS: dict[str, tuple[int, ...]] = {
    "PipeUtilization": (0x8, 0xA, 0x9, 0xB, 0xC, 0xD, 0x54, 0x55),
    "PipeUtilizationExct": (0x416, 0x417, 0x9, 0x302, 0xC, 0x303, 0x54, 0x55),
    "ArithmeticUtilization": (0x49, 0x4A, 0x4B, 0x4C, 0x4D, 0x4E, 0x4F, 0x8),
    "Memory": (0x15, 0x16, 0x31, 0x32, 0x12, 0x13, 0xF, 0x10),
    "MemoryL0": (0x1B, 0x1C, 0x21, 0x22, 0x27, 0x29, 0x28, 0x2A),
    "ResourceConflictRatio": (0x64, 0x65, 0x66, 0x8, 0x9, 0xA, 0xB, 0xC),
    "MemoryUB": (0x43, 0x44, 0x37, 0x38, 0x8, 0x9, 0xA, 0xB),
    "L2Cache": (0x500, 0x502, 0x504, 0x506, 0x508, 0x50A, 0x8, 0x9),
    "MemoryAccess": (0x50D, 0x50E, 0x50C, 0x32, 0x206, 0x20C, 0x3E, 0x3D),
}
# the AIV side of a 910B profile: PipeUtilizationExct is the AIC flavour of PipeUtilization
AIV_METRICS = {"PipeUtilizationExct": "PipeUtilization"}

# columns msprof's op_summary drops (C++ MetricProcessor UNSUPPORTED_HEADER)
UNSUPPORTED = frozenset({
    "aic_vec_ratio", "aic_vec_time", "aiv_mac_ratio", "aiv_mac_time", "aiv_mte1_ratio", "aic_ub_read_bw",
    "aiv_mte1_time", "aic_ub_write_bw", "aiv_l1_read_bw", "aiv_l1_write_bw", "aic_l0c_read_bw",
    "aic_l0c_write_bw", "aiv_l0a_read_bw", "aiv_l0a_write_bw", "aiv_l0b_read_bw", "aiv_l0b_write_bw",
    "aiv_l0c_read_bw_cube", "aiv_l0c_write_bw_cube", "aic_ub_read_bw_mte", "aic_ub_write_bw_mte",
    "aic_ub_read_bw_vector", "aic_ub_write_bw_vector", "aiv_mac_fp16_ratio", "aiv_mac_int8_ratio",
    "aic_vec_fp32_ratio", "aic_vec_fp16_ratio", "aic_vec_int32_ratio", "aic_vec_misc_ratio",
    "aic_vec_fp16_128lane_ratio", "aic_vec_fp16_64lane_ratio", "aic_vec_bankgroup_cflt_ratio",
    "aic_vec_bank_cflt_ratio", "aic_vec_resc_cflt_ratio", "aic_vector_fops", "aiv_cube_fops",
    "aiv_fixpipe_ratio", "aiv_fixpipe_time"})

# Python path (non-v4 chips): ratio metrics in msprof's AICORE_METRICS_LIST order, registers
LEGACY_SETS: dict[str, list[tuple[str, tuple[int, ...]]]] = {
    "PipelineExecuteUtilization": [
        ("vec_exe_ratio", (0x12C,)), ("mac_exe_ratio", (0x49, 0x4A)), ("scalar_exe_ratio", (0x9,)),
        ("mte1_exe_ratio", (0x302,)), ("mte2_exe_ratio", (0xC,)), ("mte3_exe_ratio", (0xD,)),
        ("fixpipe_exe_ratio", (0x303,))],
    "PipeUtilization": [
        ("vec_ratio", (0x8,)), ("mac_ratio", (0xA,)), ("scalar_ratio", (0x9,)), ("mte1_ratio", (0xB,)),
        ("mte2_ratio", (0xC,)), ("mte3_ratio", (0xD,))],
    "PipeUtilizationExct": [
        ("mac_ratio_extra", (0x416, 0x417)), ("scalar_ratio", (0x9,)), ("mte1_ratio_extra", (0x302,)),
        ("mte2_ratio", (0xC,)), ("fixpipe_ratio", (0x303,))],
}
LEGACY_EVENTS: dict[str, tuple[int, ...]] = {
    "PipelineExecuteUtilization": (0x12C, 0x49, 0x4A, 0x9, 0x302, 0xC, 0xD, 0x303),
}


def parse_events(text: str | None) -> tuple[int, ...]:
    """``"0x8,0xa,..."`` (sample.json) -> event codes; bad items are skipped."""
    out = []
    for item in str(text or "").split(","):
        try:
            out.append(int(item.strip(), 16))
        except ValueError:
            continue
    return tuple(out)


def total_time_us(cycles: np.ndarray, freq_hz: np.ndarray, block_num: np.ndarray, core_num: int) -> np.ndarray:
    """msprof's CalculatorTotalTime: ``cyc * 1e6 / freq / block * ((block + core - 1) // core)``
    (0 when block, core or freq is 0).  µs."""
    cyc = np.asarray(cycles, np.float64)
    f = np.asarray(freq_hz, np.float64)
    b = np.asarray(block_num, np.int64)
    ok = (b > 0) & (f > 0) & (core_num > 0)
    bs = np.where(ok, b, 1)
    waves = (bs + core_num - 1) // max(core_num, 1)
    t = cyc * FREQ_TO_HZ / np.where(ok, f, 1.0) / bs * waves
    return np.where(ok, t, 0.0)


def compute(metric_set: str, counters: np.ndarray, events: tuple[int, ...], total_cycle: np.ndarray,
            total_time: np.ndarray, bw_freq_hz: float) -> dict[str, np.ndarray]:
    """``{metric name: float64 column}`` in msprof's order for one calculator set."""
    n = len(total_cycle)
    cyc = np.asarray(total_cycle, np.float64)
    has_cyc = cyc != 0
    safe = np.where(has_cyc, cyc, 1.0)
    counters = np.asarray(counters, np.float64).reshape(n, -1) if n else np.zeros((0, 8))

    def reg(r: int) -> np.ndarray:
        if r in events:
            i = events.index(r)
            if i < counters.shape[1]:
                return counters[:, i]
        return np.zeros(n)

    no_cyc = ~has_cyc

    def ratio(m: Metric) -> np.ndarray:
        # = np.where(has_cyc, sum of m.scale * reg(r) / safe, 0.0), the same operations in place
        acc = np.zeros(n)
        for r in m.regs:
            x = np.multiply(m.scale, reg(r))
            np.divide(x, safe, out=x)
            np.add(acc, x, out=acc)
        acc[no_cyc] = 0.0
        return acc

    # a time column's ratio is the next ratio column's (msprof's sets list them in pairs): made once,
    # handed to that column (each output column stays an array of its own)
    made: dict[tuple[tuple[int, ...], float], np.ndarray] = {}
    out: dict[str, np.ndarray] = {}
    for m in CALCULATORS[metric_set]:
        if m.kind == "ratio":
            v = made.pop((m.regs, m.scale), None)
            if v is None:
                v = ratio(m)
        elif m.kind == "time":
            made[(m.regs, m.scale)] = r = ratio(m)
            v = np.asarray(total_time, np.float64) * r
        elif m.kind == "div":
            a, b = reg(m.regs[0]), reg(m.regs[1])
            ok = has_cyc & (a != 0) & (b != 0)
            v = np.where(ok, (a / safe) / np.where(b != 0, b / safe, 1.0), 0.0)
        elif m.kind == "sum":
            v = sum((reg(r) for r in m.regs), np.zeros(n))
        elif m.kind == "bw":
            ok = has_cyc & (bw_freq_hz != 0)
            per = np.where(ok, safe / (bw_freq_hz or 1.0), 1.0)
            v = np.where(ok, m.scale * reg(m.regs[0]) * m.pipe * m.scalar / per / BW_OFFSET, 0.0)
        elif m.kind in ("cube_fops", "vec_fops"):
            acc = np.zeros(n)
            for r, w in zip(m.regs, m.params):
                acc = acc + m.scale * reg(r) * w
            v = np.where(has_cyc, acc, 0.0)
        elif m.kind == "add":
            v = sum((m.scale * reg(r) for r in m.regs), np.zeros(n))
        else:  # sub
            v = m.scale * reg(m.regs[0]) - sum((m.scale * reg(r) for r in m.regs[1:]), np.zeros(n))
        out[m.name] = v
    return out


def summary_header(name: str) -> str:
    """msprof's ModifySummaryHeaders: metric_summary column -> op_summary header."""
    if "_extra" in name:
        return name[:-6]
    if name in ("total_time", "aic_total_time"):
        return "aicore_time(us)"
    if name == "aiv_total_time":
        return "aiv_time(us)"
    if "time" in name:
        return name + "(us)"
    if "bw" in name and "(GB/s)" not in name:
        return name + "(GB/s)"
    if "datas" in name and "(KB)" not in name:
        return name + "(KB)"
    return name


def db_name(name: str) -> str:
    """TASK_PMU_INFO name: the metric_summary column without ``_extra``."""
    return name.replace("_extra", "")
