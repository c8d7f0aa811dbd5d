"""Run a graph numerically on both sides and write the seed's dump directory.

Files written (besides the tensors, see :mod:`dumpdir`), all under ``result/``:

- ``dump_memory_nodename.log``: dumped NPU node names in execution order, one per line (a
  node with several outputs appears as ``name``, ``name:1``, ...).
- ``node_runtime.file``: tab-separated ``order, node, start_ns, duration_ns`` of the NPU nodes;
  ``compare`` sorts its rows by it.  Times come from the cost model when one is given, else 0.
- ``consumer_map_dict.file``: the reference (CPU) model's node -> consumer nodes, as JSON
  (the seed's tool pickles it; JSON cannot execute code when read).
- ``check_skip.log``: ops that were not dumped, with the reason.  ``concate_skip.log``:
  nodes whose ``dump_data/`` slices could not be joined (:mod:`npu_data`).
- ``graph_npu.json`` / ``graph_cpu.json``: the two graphs (fusion record for name mapping and
  the isolation re-run); ``run.json``: provenance (``simulated: true``, seed, precision
  policy, injected faults).  ``fault_injection.log`` lists injected faults, if any.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from msprof_py import __version__, atomic
from msprof_py.precision import dumpdir, graphio, npu_data
from msprof_py.precision.numerics import CPU, NPU, Execution, Fault, check_faults, execute, fuse, make_leaves
from msprof_py.runtime.graph import Graph, Op

PRECISION_POLICY = {
    "npu": "FLOAT16 tensors stored in fp16 (BF16 rounded to bfloat16); cube ops: fp16 operands, fp32 "
           "accumulation; vector intermediates rounded to fp16; fused ops keep internal tensors in fp32",
    "cpu": "unfused graph, all tensors fp32",
}


def output_keys(op: Op) -> list[str]:
    """Dump keys of an op's outputs: the node name, then ``name:1``, ``name:2``..."""
    return [op.name if i == 0 else f"{op.name}:{i}" for i in range(len(op.outputs))]


@dataclass
class DumpResult:
    root: Path
    npu: Execution
    cpu: Execution
    npu_graph: Graph
    cpu_graph: Graph
    faults: tuple[Fault, ...]
    leaves: dict[str, np.ndarray] = field(repr=False, default_factory=dict)


def run_and_dump(cpu_graph: Graph, dump_path: str | None, *, npu_graph: Graph | None = None, seed: int = 0,
                 faults: tuple[Fault, ...] = (), timings_ns: dict[str, tuple[int, int]] | None = None,
                 meta: dict[str, Any] | None = None, npu_output_dir: Path | None = None,
                 exclude_nodes: tuple[str, ...] = (), default_concat_dim: int = 0) -> DumpResult:
    """Execute ``cpu_graph`` (unfused, fp32) and ``npu_graph`` (default: :func:`fuse` of it, NPU
    precision) and write both dumps to a fresh ``dump_path``.

    The path is validated before any work and the directory is (re)created only after both
    sides ran, so a failing graph never costs the user an old dump.  ``timings_ns`` maps NPU op
    names to (start, duration) for node_runtime.file.  NPU outputs are dumped as hex slices in
    ``dump_data/`` and then converted into ``npu_output_dir`` (default ``npu/``) by the seed's NPU
    data analysis (:func:`msprof_py.precision.npu_data.analyse`, with ``exclude_nodes`` and
    ``default_concat_dim``).
    """
    dumpdir.check_new_dump_dir(dump_path)
    npu_graph = npu_graph if npu_graph is not None else fuse(cpu_graph)
    check_faults(faults, npu_graph)
    leaves = make_leaves(cpu_graph, seed)
    leaves.update(make_leaves(npu_graph, seed, skip=leaves))
    cpu = execute(cpu_graph, CPU, leaves)
    npu = execute(npu_graph, NPU, leaves, faults=faults, originals={op.name: op for op in cpu_graph.ops})
    root = dumpdir.prepare_new_dump_dir(dump_path)
    result = root / "result"
    npu_keys: list[str] = []
    for op in npu.executed:
        for key, t in zip(output_keys(op), op.outputs):
            if t.name in npu.values:
                npu_data.write_slices(root, key, npu.values[t.name])
                npu_keys.append(key)
    for op in cpu.executed:
        for key, t in zip(output_keys(op), op.outputs):
            if t.name in cpu.values:
                dumpdir.save_tensor(root / "cpu", key, cpu.values[t.name])
    atomic.write_text(result / "dump_memory_nodename.log", "".join(k + "\n" for k in npu_keys))
    rows = ["order\tnode\tstart_ns\tduration_ns"]
    for i, op in enumerate(npu.executed):
        start, dur = (timings_ns or {}).get(op.name, (0, 0))
        rows.append(f"{i}\t{op.name}\t{start}\t{dur}")
    atomic.write_text(result / "node_runtime.file", "\n".join(rows) + "\n")
    atomic.write_text(result / "consumer_map_dict.file", graphio.dump_json(consumer_map(cpu_graph)).decode())
    atomic.write_text(result / "check_skip.log",
                              "".join(f"{name}: {why}\n" for name, why in (*npu.skipped, *cpu.skipped)))
    atomic.write_text(result / "concate_skip.log", "")
    npu_data.analyse(root, npu_output_dir, exclude=exclude_nodes, default_concat_dim=default_concat_dim)
    atomic.write_text(result / "graph_npu.json", graphio.dump_json(graphio.graph_to_dict(npu_graph)).decode())
    atomic.write_text(result / "graph_cpu.json", graphio.dump_json(graphio.graph_to_dict(cpu_graph)).decode())
    run_meta = {"simulated": True, "msprof_py_version": __version__, "seed": seed,
                "precision_policy": PRECISION_POLICY, "faults": [f.as_dict() for f in faults],
                "graph": cpu_graph.name, **(meta or {})}
    atomic.write_text(result / "run.json", graphio.dump_json(run_meta).decode())
    if faults:
        atomic.write_text(result / "fault_injection.log",
                                  "".join(f"INJECTED FAULT on NPU op {f.op}: {f.kind}\n" for f in faults))
    return DumpResult(root, npu, cpu, npu_graph, cpu_graph, tuple(faults), leaves)


def consumer_map(g: Graph) -> dict[str, list[str]]:
    """Node -> the nodes that consume one of its outputs (execution order)."""
    prod = {t.name: op.name for op in g.ops for t in op.outputs}
    out: dict[str, list[str]] = {op.name: [] for op in g.ops}
    for op in g.ops:
        for t in op.inputs:
            p = prod.get(t.name)
            if p is not None and op.name not in out[p]:
                out[p].append(op.name)
    return out
