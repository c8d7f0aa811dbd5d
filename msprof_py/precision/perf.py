"""Per-operator performance counters: ``op_perf.csv`` and ``perf/{op_name}.csv`` (the seed's
DUMP_OP_PERF output), from the runtime's cost model and a simulated run.

Every number is a cost-model output for the task the simulator actually ran: the run's
duration (with its jitter, the number the profiler's op_summary reports) split in the
proportions of ``runtime.cost.op_cost`` for that op and its tuning.  A tuned op's counters move
with its time.  The seed's counters map onto the model's pipes as follows (cycles at the AI Core
clock, ``aic_frequency_mhz``):

============================  ==================================================================
mcu_cycle                     the task's duration in cycles
mme_cycle / vme_cycle         cube pipe / vector pipe busy time
vec_cycle                     scalar pipe (the seed's RVV unit runs on the control core)
syn_cycle                     the kernel's fixed start/sync overhead
mte_total_cycle               MTE1 + MTE2 + MTE3
mte_pld_cycle / _byte         MTE2 (GM -> on-chip loads) / all input bytes
mte_icmov_cycle / _byte       MTE1 (L1 -> L0 operand moves of cube ops) / the cube operands' bytes
mte_l12llb_cycle / _byte      MTE3 (write back) / all output bytes
pal_X_Y_cycle                 overlap of two pipes, ``min(X, Y)``: the roofline model overlaps
                              the shorter pipe completely with the longer one
pal_total_cycle               ``vme + mme + mte - busy`` (>= 0): cycles hidden by overlap
*_slot_wait_cycle             ``busy - pipe`` for a pipe with work: cycles it waited
syn_wait_cycle                ``busy - the busiest pipe``: cycles every pipe waited on a flag
mme_inst / vme_inst           cube FLOPs / 8192 (a 16x16x16 fp16 MAC, msprof's cube_fops weight) /
                              vector FLOPs / 256 (a 128-lane fp16 FMA)
vec_inst / syn_inst           scalar cycles x 0.5 (IPC) / 2 set-wait flags per block
mte_pld/icmov/mov_inst        input / cube operand / output bytes per 512-byte MTE burst
instruction_cnt               the sum of the instruction counts above
mte_llb2l1_byte / _cycle      cube operand bytes served from L2 (the L2 hit-rate model of
                              ``runtime.pmu_model``) / at 128 bytes a cycle
l1_conflict / im_conflict     2 % of MTE1 cycles (L1 bank clashes of operand moves) / 5 % of vector
                              cycles (UB bank conflicts, the PMU model's 0x65 ratio)
icache / dcache_miss_cnt      cycles x 0.02 requests x 4 % misses (the PMU model) / 1 % of scalar cycles
dma0 / dma1                   the load / store DMA engine: two channels sharing the bytes; cycle0 the
                              channel's busy cycles (MTE2 / MTE3), cycle1 the cycles it stalled on
                              L2 misses (20 per missed 128-byte line), llb_conflict 5 % of its cycles
============================  ==================================================================

Every counter is a model output (the formulas above), none is measured; ``op_perf_meta.json``
says so.  ``op_perf.csv`` has one
row per op, counters summed over all its runs; ``perf/{op}.csv`` has one row per run.  A
sidecar ``op_perf_meta.json`` records this mapping, the clock and the run.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from msprof_py import atomic
from msprof_py.precision import dumpdir, graphio
from msprof_py.runtime import pmu_model
from msprof_py.runtime.graph import Graph

COLUMNS = ("name", "mcu_cycle", "vme_cycle", "mme_cycle", "vec_cycle", "syn_cycle", "mte_total_cycle",
           "vme_inst", "mme_inst", "vec_inst", "syn_inst", "mte_pld_inst", "mte_icmov_inst", "mte_mov_inst",
           "pal_vme_mme_cycle", "pal_mte_mme_cycle", "pal_vme_mte_cycle", "pal_total_cycle", "mte_icmov_cycle",
           "mte_l12llb_cycle", "mte_llb2l1_cycle", "mte_pld_cycle", "mte_pld_byte", "mte_l12llb_byte",
           "mte_llb2l1_byte", "mte_icmov_byte", "syn_wait_cycle", "vec_slot_wait_cycle", "mme_slot_wait_cycle",
           "mte_slot_wait_cycle", "l1_conflict_cycle", "im_conflict_cycle", "dcache_miss_cnt", "icache_miss_cnt",
           "instruction_cnt", "dma0_llb_conflict_cycle", "dma0_c0_cycle0", "dma0_c0_cycle1", "dma0_c0_byte",
           "dma0_c1_cycle0", "dma0_c1_cycle1", "dma0_c1_byte", "dma1_llb_conflict_cycle", "dma1_c0_cycle0",
           "dma1_c0_cycle1", "dma1_c0_byte", "dma1_c1_cycle0", "dma1_c1_cycle1", "dma1_c1_byte")
MODELLED = COLUMNS[1:]  # every counter (see the table above)
KERNEL_TASK_TYPES = ("AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV", "AI_CPU")


@dataclass
class PerfTables:
    """``runs``: one row per executed kernel task (COLUMNS + device_id, index_id, start_sim_ns,
    dur_ns); ``ops``: op_perf.csv (COLUMNS, one row per op in first-run order, summed)."""

    runs: pd.DataFrame
    ops: pd.DataFrame
    meta: dict[str, Any]

    def timings_ns(self) -> dict[str, tuple[int, int]]:
        """op name -> (start relative to the first task, duration) of its first run."""
        first = self.runs.drop_duplicates("name")
        t0 = int(first["start_sim_ns"].min()) if len(first) else 0
        return {n: (int(s) - t0, int(d)) for n, s, d in zip(first["name"], first["start_sim_ns"], first["dur_ns"])}

    def without(self, key: str) -> "PerfTables":
        """The tables without the nodes whose names contain ``key`` (``--perf_all_nodes=False``
        drops the seed's ``_span`` nodes)."""
        keep_runs = ~self.runs["name"].astype(str).str.contains(key, regex=False)
        keep_ops = ~self.ops["name"].astype(str).str.contains(key, regex=False)
        return PerfTables(self.runs[keep_runs].reset_index(drop=True), self.ops[keep_ops].reset_index(drop=True),
                          dict(self.meta))

    def write(self, result_dir: Path) -> list[Path]:
        """op_perf.csv, perf/{op}.csv and op_perf_meta.json under ``result_dir``."""
        result_dir.mkdir(parents=True, exist_ok=True)
        out = [_csv(self.ops, result_dir / "op_perf.csv")]
        perf_dir = result_dir / "perf"
        perf_dir.mkdir(exist_ok=True)
        # one to_csv for all runs, then the lines split per op (hundreds of small files)
        header = ",".join(COLUMNS) + "\n"
        lines = self.runs[list(COLUMNS)].to_csv(index=False, header=False, lineterminator="\n").splitlines(True)
        groups: dict[str, list[str]] = {}
        for name, line in zip(self.runs["name"].astype(str), lines):
            groups.setdefault(name, []).append(line)
        for name, rows in groups.items():
            path = perf_dir / f"{dumpdir.node_file_name(name)}.csv"
            atomic.write_text(path, header + "".join(rows))
            out.append(path)
        atomic.write_text(result_dir / "op_perf_meta.json", graphio.dump_json(self.meta).decode())
        return out


def _csv(df: pd.DataFrame, path: Path) -> Path:
    with atomic.temp_path(path) as tmp:
        df.to_csv(tmp, index=False)
    return path


def perf_from_sim(sim: Any, graph: Graph, *, tuning: dict | None = None, device_id: int = 0) -> PerfTables:
    """The counters of every kernel task device ``device_id`` ran in ``sim`` (a SimResult of
    ``graph``'s workload, run with ``tuning``)."""
    from msprof_py.runtime.cost import op_cost

    spec = sim.spec
    truth = sim.truth
    t = truth[(truth["device_id"] == device_id) & truth["task_type"].astype(str).isin(KERNEL_TASK_TYPES)]
    ops = {op.name: op for op in graph.ops}
    t = t[t["op_name"].astype(str).isin(ops.keys())].sort_values(["index_id", "start_sim_ns"], kind="stable")
    names = t["op_name"].astype(str).to_numpy()
    uniq = list(dict.fromkeys(names))
    per_op: dict[str, dict[str, float]] = {}
    overhead_ns = spec.kernel_launch_overhead_us * 1000.0
    for n in uniq:
        op = ops[n]
        c = op_cost(op, spec, (tuning or {}).get(n))
        p = c.pipes
        cube_in = sum(x.nbytes for x in op.inputs[:2]) if p.get("cube", 0) > 0 else 0
        per_op[n] = {
            "cost_ns": float(c.duration_ns), "overhead_ns": min(overhead_ns, float(c.duration_ns)),
            "cube": p.get("cube", 0.0), "vector": p.get("vector", 0.0), "scalar": p.get("scalar", 0.0),
            "mte1": p.get("mte1", 0.0), "mte2": p.get("mte2", 0.0), "mte3": p.get("mte3", 0.0),
            "in_bytes": float(sum(x.nbytes for x in op.inputs)), "out_bytes": float(sum(x.nbytes for x in op.outputs)),
            "cube_in": float(cube_in), "flops": float(c.flops), "block_dim": float(max(c.block_dim, 1)),
        }
    base = pd.DataFrame.from_dict(per_op, orient="index")
    b = base.reindex(names) if len(names) else pd.DataFrame(columns=base.columns, dtype=float)
    f = spec.aic_frequency_mhz / 1000.0  # cycles per ns
    dur = t["dur_ns"].to_numpy(dtype=np.float64)
    scale = dur / np.maximum(b["cost_ns"].to_numpy(), 1.0)
    cyc = lambda col: b[col].to_numpy() * scale * f  # noqa: E731
    busy = (b["cost_ns"].to_numpy() - b["overhead_ns"].to_numpy()) * scale * f
    mme, vme, vec = cyc("cube"), cyc("vector"), cyc("scalar")
    mte1, mte2, mte3 = cyc("mte1"), cyc("mte2"), cyc("mte3")
    mte = mte1 + mte2 + mte3

    def wait(pipe: np.ndarray) -> np.ndarray:
        return np.where(pipe > 0, np.maximum(busy - pipe, 0), 0)

    is_cube = b["cube"].to_numpy() > 0
    flops, in_b, out_b = b["flops"].to_numpy(), b["in_bytes"].to_numpy(), b["out_bytes"].to_numpy()
    cube_in = b["cube_in"].to_numpy()
    hit = pmu_model.L2_HIT_SMALL * np.minimum(1.0, pmu_model.L2_BYTES / np.maximum(in_b + out_b, 1.0))
    inst = {
        "mme_inst": np.where(is_cube, flops / 8192.0, 0.0), "vme_inst": np.where(is_cube, 0.0, flops / 256.0),
        "vec_inst": vec * 0.5, "syn_inst": 2.0 * b["block_dim"].to_numpy(),
        "mte_pld_inst": in_b / 512.0, "mte_icmov_inst": cube_in / 512.0, "mte_mov_inst": out_b / 512.0,
    }
    llb2l1 = cube_in * hit
    dma = {}
    for eng, nbytes, cyc_ in (("dma0", in_b, mte2), ("dma1", out_b, mte3)):
        stall = nbytes / 128.0 * (1 - hit) * 20.0
        dma[f"{eng}_llb_conflict_cycle"] = 0.05 * cyc_
        for ch in ("c0", "c1"):
            dma[f"{eng}_{ch}_cycle0"] = cyc_
            dma[f"{eng}_{ch}_cycle1"] = stall / 2
            dma[f"{eng}_{ch}_byte"] = nbytes / 2

    vals = {
        "mcu_cycle": dur * f, "vme_cycle": vme, "mme_cycle": mme, "vec_cycle": vec,
        "syn_cycle": b["overhead_ns"].to_numpy() * scale * f, "mte_total_cycle": mte,
        "pal_vme_mme_cycle": np.minimum(vme, mme), "pal_mte_mme_cycle": np.minimum(mte, mme),
        "pal_vme_mte_cycle": np.minimum(vme, mte), "pal_total_cycle": np.maximum(vme + mme + mte - busy, 0),
        "mte_icmov_cycle": mte1, "mte_l12llb_cycle": mte3, "mte_pld_cycle": mte2,
        "mte_pld_byte": b["in_bytes"].to_numpy(), "mte_l12llb_byte": b["out_bytes"].to_numpy(),
        "mte_icmov_byte": b["cube_in"].to_numpy(),
        "vec_slot_wait_cycle": wait(vec), "mme_slot_wait_cycle": wait(mme), "mte_slot_wait_cycle": wait(mte),
        "syn_wait_cycle": np.maximum(busy - np.maximum.reduce([vme, mme, vec, mte]), 0),
        **inst, "instruction_cnt": sum(inst.values()),
        "mte_llb2l1_byte": llb2l1, "mte_llb2l1_cycle": llb2l1 / 128.0,
        "l1_conflict_cycle": 0.02 * mte1, "im_conflict_cycle": 0.05 * vme,
        "icache_miss_cnt": dur * f * pmu_model.ICACHE_REQ_PER_CYCLE * pmu_model.ICACHE_MISS_RATE,
        "dcache_miss_cnt": 0.01 * vec, **dma,
    }
    runs = pd.DataFrame({"name": names})
    for col in COLUMNS[1:]:
        runs[col] = pd.array(np.rint(vals[col]).astype(np.int64), dtype="Int64") if col in vals \
            else pd.array([pd.NA] * len(names), dtype="Int64")
    runs["device_id"] = device_id
    runs["index_id"] = t["index_id"].to_numpy()
    runs["start_sim_ns"] = t["start_sim_ns"].to_numpy()
    runs["dur_ns"] = t["dur_ns"].to_numpy()
    ops_df = runs.groupby("name", sort=False)[list(COLUMNS[1:])].sum(min_count=1).reset_index()
    ops_df = ops_df.set_index("name").reindex(uniq).reset_index()
    meta = {
        "simulated": True, "device_id": device_id, "aic_frequency_mhz": spec.aic_frequency_mhz,
        "aggregation": "op_perf.csv: counters summed over every run of the op; perf/{op}.csv: one row per run",
        "modelled_columns": list(MODELLED),
        "not_modelled_columns_left_empty": [c for c in COLUMNS[1:] if c not in MODELLED],
        "measured": False,  # every counter is a cost-model / PMU-model output (msprof_py.precision.perf)
        "runs": int(len(runs)), "iterations": sorted({int(i) for i in runs["index_id"]}),
        "tuned_ops": sorted((tuning or {}).keys()),
    }
    return PerfTables(runs, ops_df, meta)


def op_perf(workload: Any, *, iterations: int = 1, seed: int = 0, tuning: dict | None = None,
            device_id: int = 0) -> PerfTables:
    """Run ``workload`` (a runtime Workload, name or Graph) on the simulator, profiling off,
    and return its counters."""
    from msprof_py.runtime import sim

    res = sim.run(workload, iterations=iterations, seed=seed, tuning=tuning)
    wl = sim.resolve(workload)
    tables = perf_from_sim(res, wl.graph, tuning=tuning, device_id=device_id)
    tables.meta.update({"seed": seed, "workload": wl.name})
    return tables
