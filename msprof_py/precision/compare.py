"""Compare a dump directory's NPU tensors with the CPU reference (the seed's
run_precision_analysis.py).

Inputs: ``npu/*.npy`` and ``cpu/*.npy`` (any dump laid out like :mod:`dumpdir`; the files
msprof_py writes next to them are used when present: node names, execution order, fusion
record).  Outputs in ``result/``:

- ``cpu_vs_npu.csv``: one row per compared node, the seed's columns, in execution order;
- ``{op_name}.csv`` per node with errors: ``index, std_value, npu_value, abs_diff,
  relative_diff`` for the first ``diff_cnt`` error elements (``std_value`` is the *standard*,
  i.e. reference, value);
- ``compare_skip.log`` (node: reason), ``invalid_out_nodename.log`` (NPU nodes with no
  reference node), ``op_config.csv`` (per-node atol/rtol, NA = the global value; written as a
  template when absent, read when present), ``compare_meta.json`` (options, name mapping,
  criterion), and with ``show_graph`` the three plots per failing node.

Name mapping, NPU node -> reference node: ``map_node_dict`` (the seed's ``{"cpu_name":
"npu_name"}``) first; else the *last* original op of a fused node (the fusion record in
``graph_npu.json``); else the same name.  Node names become file names with "/" -> "_".

Options live in :mod:`.compare_options`, the reading of names, order, fusion record and
tolerances in :mod:`.compare_inputs`, the result files in :mod:`.compare_write`.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from msprof_py.errors import InvalidParamError, InvalidPathError, WarningLog
from msprof_py.precision import dumpdir, graphio
from msprof_py.precision.compare_inputs import (check_user_map, execution_order, fusion_map, node_names,
                                                read_op_config, resolve_in)
from msprof_py.precision.compare_options import CompareOptions, parse_map_node_dict, parse_skip_keys
from msprof_py.precision.compare_write import MANIFEST, write_results
from msprof_py.precision.metrics import TensorCompare, compare_tensors

__all__ = ["MANIFEST", "CompareOptions", "CompareResult", "NodeResult", "compare_dump", "parse_map_node_dict",
           "parse_skip_keys"]


@dataclass
class NodeResult:
    """One NPU node: its reference node, tolerances, and the comparison or the skip reason."""

    order: int
    npu_node: str
    cpu_node: str | None
    atol: float
    rtol: float
    cmp: TensorCompare | None = None
    reason: str = ""  # why it was skipped (cmp is None)
    note: str = ""  # e.g. force-compared with different shapes

    @property
    def label(self) -> str:
        return f"{self.npu_node}(atol:{self.atol:g},rtol:{self.rtol:g})"


@dataclass
class CompareResult:
    root: Path
    nodes: list[NodeResult]
    warnings: WarningLog
    outputs: list[Path]
    files: dict[str, tuple[Path, Path]] = field(default_factory=dict)  # npu node -> (npu file, cpu file)

    @property
    def compared(self) -> list[NodeResult]:
        return [n for n in self.nodes if n.cmp is not None]

    @property
    def failed(self) -> list[NodeResult]:
        return [n for n in self.compared if not n.cmp.passed]


def compare_dump(dump_path: str | None, opts: CompareOptions, *, cpu_dir: str | None = None,
                 npu_dir: str | None = None, node_runtime_filename: str | None = None,
                 op_config_name: str | None = None) -> CompareResult:
    """Compare every dumped NPU node with its reference node and write the result files.

    Raises InvalidParamError / InvalidPathError before writing anything when the options, the
    directories or the node names do not fit together.
    """
    opts.validate()
    root = dumpdir.existing_dump_dir(dump_path)
    npu_path = Path(npu_dir) if npu_dir else root / "npu"
    cpu_path = Path(cpu_dir) if cpu_dir else root / "cpu"
    result_dir = root / "result"
    for side, p in (("NPU", npu_path), ("CPU", cpu_path)):
        if not p.is_dir():
            raise InvalidPathError(f"{side} data directory {p} does not exist")
    warnings = WarningLog()
    npu_stems = node_names(npu_path, result_dir / "dump_memory_nodename.log")
    cpu_stems = node_names(cpu_path, None)
    cpu_graph = result_dir / "graph_cpu.json"
    if cpu_graph.is_file():
        from msprof_py.precision.dump import output_keys

        for op in graphio.load_graph(cpu_graph).ops:
            for k in output_keys(op):
                if dumpdir.node_file_name(k) in cpu_stems:
                    cpu_stems[dumpdir.node_file_name(k)] = k
    for side, stems, p in (("NPU", npu_stems, npu_path), ("CPU", cpu_stems, cpu_path)):
        if not stems:
            raise InvalidPathError(f"{side} data directory {p} holds no .npy tensors")
    npu_file = {name: npu_path / f"{stem}.npy" for stem, name in npu_stems.items()}
    cpu_file = {name: cpu_path / f"{stem}.npy" for stem, name in cpu_stems.items()}
    # the reference side is matched by file name: a node's name and its sanitised file stem
    for stem, name in cpu_stems.items():
        cpu_file.setdefault(stem, cpu_path / f"{stem}.npy")

    user_map = check_user_map(opts.map_node_dict, cpu_file, npu_file)
    fusion = fusion_map(result_dir)
    order = execution_order(result_dir, resolve_in(result_dir, node_runtime_filename, "node_runtime.file"),
                            list(npu_file))
    op_config_path = resolve_in(result_dir, op_config_name, "op_config.csv")
    tolerances = read_op_config(op_config_path, opts, warnings)
    for name in tolerances:
        if name not in npu_file:
            warnings.warn(f"{op_config_path}: op {name!r} is not a dumped NPU node; its tolerances are unused")

    nodes: list[NodeResult] = []
    for i, npu in enumerate(order):
        cpu = user_map.get(npu)
        if cpu is None:  # the fused node's last original op, if the reference has it
            cpu = fusion.get(npu)
            if cpu is None or (cpu not in cpu_file and dumpdir.node_file_name(cpu) not in cpu_file):
                cpu = npu
        atol, rtol = tolerances.get(npu, (opts.atol, opts.rtol))
        if cpu not in cpu_file and dumpdir.node_file_name(cpu) in cpu_file:
            cpu = cpu_stems.get(dumpdir.node_file_name(cpu), cpu)
        node = NodeResult(i, npu, cpu if cpu in cpu_file else None, atol, rtol)
        if any(k in npu for k in opts.skip_keys):
            node.reason = "skipped: name contains a --skip_keys keyword"
        elif node.cpu_node is None:
            node.reason = f"no reference node {cpu!r} in {cpu_path}"
        nodes.append(node)
    if not any(n.cpu_node is not None for n in nodes):
        cpu_names = list(cpu_stems.values())
        raise InvalidParamError(
            f"no NPU node matches a reference node: {len(npu_file)} NPU nodes in {npu_path} (e.g. "
            f"{', '.join(list(npu_file)[:3])}), {len(cpu_names)} CPU nodes in {cpu_path} (e.g. "
            f"{', '.join(cpu_names[:3])}); pass --map_node_dict to map them")

    todo = [n for n in nodes if not n.reason]
    workers = max(1, min(opts.max_cores, os.cpu_count() or 1, len(todo)))

    def work(n: NodeResult) -> None:
        _compare_node(n, npu_file[n.npu_node], cpu_file[n.cpu_node], opts)

    if workers > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(work, todo))
    else:
        for n in todo:
            work(n)
    outputs = write_results(result_dir, nodes, opts, op_config_path, npu_file, cpu_file, warnings, user_map, fusion)
    files = {n.npu_node: (npu_file[n.npu_node], cpu_file[n.cpu_node]) for n in nodes if n.cpu_node is not None}
    return CompareResult(root, nodes, warnings, outputs, files)


def _compare_node(n: NodeResult, npu_path: Path, cpu_path: Path, opts: CompareOptions) -> None:
    npu = dumpdir.load_tensor(npu_path)
    ref = dumpdir.load_tensor(cpu_path)
    if npu.size == 0 or ref.size == 0:
        n.reason = f"empty data, can not compare (npu shape {npu.shape}, ref shape {ref.shape})"
        return
    if npu.shape != ref.shape:
        if npu.size != ref.size:
            n.reason = f"shape mismatch with different size: npu {npu.shape} vs ref {ref.shape}"
            return
        if not opts.force_compare:
            n.reason = (f"shape mismatch: npu {npu.shape} vs ref {ref.shape} (same size; "
                        "--force_compare=True compares them)")
            return
        n.note = f"force compared: npu shape {npu.shape} read in the reference shape {ref.shape}"
        npu = npu.reshape(ref.shape)
    n.cmp = compare_tensors(npu, ref, n.atol, n.rtol, opts.diff_cnt)
