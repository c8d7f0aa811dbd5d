"""One call per CLI command: parse the loose option values, run, and say what happened."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from msprof_py.errors import InvalidParamError, InvalidPathError, WarningLog

MAX_NUMERIC_FLOPS = 20e9  # numpy on a laptop core: about a minute


@dataclass
class CompareOutcome:
    lines: list[str] = field(default_factory=list)  # what the command prints
    warnings: WarningLog = field(default_factory=WarningLog)
    compare: Any = None  # CompareResult, when a comparison ran
    location: Any = None  # locate.Location
    perf: Any = None  # perf.PerfTables


def parse_params(params: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` strings -> dict; values become int, float, bool or stay strings."""
    out: dict[str, Any] = {}
    for p in params:
        if "=" not in p:
            raise InvalidParamError(f"--param {p!r}: expected KEY=VALUE")
        k, v = p.split("=", 1)
        val: Any = v
        for conv in (int, float):
            try:
                val = conv(v)
                break
            except ValueError:
                continue
        if v.lower() in ("true", "false"):
            val = v.lower() == "true"
        out[k.strip()] = val
    return out


def run_compare(dump_path: str | None, *, workload: str | None = None, graph_file: str | None = None,
                params: Sequence[str] = (),
                seed: int = 0, injects: Sequence[str] = (), dump_op_perf: int = 2,
                cpu_dir: str | None = None, npu_dir: str | None = None,
                node_runtime_filename: str | None = None, op_config_name: str | None = None,
                diff_cnt: int = 128, atol: float = 0.005, rtol: float = 0.2, show_graph: bool = False,
                max_bins: int = 128, min_bins: int = 1, max_cores: int = 16,
                map_node_dict: str | None = None, force_compare: bool = False,
                skip_keys: str | None = None, output_dir: str | None = None, perf_all_nodes: bool = True,
                exclude_node_list: str | None = None, default_concat_dim: int | str = 0) -> CompareOutcome:
    """The ``compare`` command: optionally run ``workload`` into a fresh dump directory, then
    compare it and locate where error starts.  Every option is checked before anything is
    written.

    ``output_dir`` / ``exclude_node_list`` / ``default_concat_dim``: the seed's NPU data analysis
    (``dump_data/`` -> ``npu/``, :mod:`msprof_py.precision.npu_data`), run after a numeric run
    and before comparing a dump directory that holds ``dump_data/``; the comparison then reads
    ``output_dir`` unless ``npu_dir`` is given.  ``perf_all_nodes=False`` leaves nodes whose
    names contain ``_span`` out of op_perf.csv and perf/.
    """
    from pathlib import Path

    from msprof_py.precision import dumpdir, npu_data
    from msprof_py.precision.compare import CompareOptions, compare_dump, parse_map_node_dict, parse_skip_keys
    from msprof_py.precision.locate import locate
    from msprof_py.precision.numerics import parse_fault

    out = CompareOutcome()
    opts = CompareOptions(atol=atol, rtol=rtol, diff_cnt=diff_cnt, show_graph=bool(show_graph),
                          max_bins=max_bins, min_bins=min_bins, max_cores=max_cores,
                          map_node_dict=parse_map_node_dict(map_node_dict), force_compare=bool(force_compare),
                          skip_keys=parse_skip_keys(skip_keys))
    opts.validate()
    exclude = npu_data.parse_node_list(exclude_node_list)
    concat_dim = npu_data.parse_concat_dim(default_concat_dim)
    out_dir = Path(output_dir) if output_dir else None
    if out_dir is not None and not out_dir.is_absolute():
        raise InvalidParamError(f"--output_dir must be an absolute path, got {output_dir!r}")
    if dump_op_perf not in (0, 1, 2):
        raise InvalidParamError("DUMP_OP_PERF must be 0 (precision), 1 (performance) or 2 (both)")
    faults = tuple(parse_fault(s) for s in injects)
    if workload is not None and graph_file is not None:
        raise InvalidParamError("give --workload NAME or --graph FILE, not both")
    if workload is None and graph_file is None and (faults or params):
        raise InvalidParamError("--inject and --param need --workload or --graph (they change the numeric run)")
    if graph_file is not None:
        workload = graph_file
    for side, d in (("NPU", npu_dir), ("CPU", cpu_dir)):  # checked again by compare_dump; here before a run
        if d is not None and not Path(d).is_dir():
            raise InvalidPathError(f"{side} data directory {d} does not exist")
    if workload is not None:
        from msprof_py.precision.dump import run_and_dump
        from msprof_py.precision.workloads import load_graph, load_workload

        dumpdir.check_new_dump_dir(dump_path)
        wl = load_graph(graph_file, parse_params(params)) if graph_file else load_workload(workload, parse_params(params))
        if dump_op_perf != 1:
            # numpy runs the network for real: refuse sizes that would take minutes
            from msprof_py.precision.numerics import forward_flops

            flops = forward_flops(wl.npu_graph)
            if flops > MAX_NUMERIC_FLOPS:
                raise InvalidParamError(
                    f"workload {workload!r} needs {flops / 1e9:.1f} GFLOP per forward pass; numeric runs are "
                    f"limited to {MAX_NUMERIC_FLOPS / 1e9:.0f} GFLOP: pass small shapes with --param "
                    "(e.g. batch=1 image=32 for resnet50)")
        perf_tables = None
        timings = None
        if dump_op_perf in (1, 2):
            from msprof_py.precision.perf import op_perf

            perf_tables = op_perf(wl.workload, iterations=1, seed=seed)
            if not perf_all_nodes:
                perf_tables = perf_tables.without("_span")
            timings = perf_tables.timings_ns()
        if dump_op_perf == 1:
            root = dumpdir.prepare_new_dump_dir(dump_path)
            perf_tables.write(root / "result")
            out.perf = perf_tables
            out.lines.append(f"op_perf: {root / 'result' / 'op_perf.csv'} ({len(perf_tables.ops)} ops)")
            return out
        res = run_and_dump(wl.cpu_graph, dump_path, npu_graph=wl.npu_graph, seed=seed, faults=faults,
                           timings_ns=timings, meta={"workload": workload, "params": parse_params(params)},
                           npu_output_dir=out_dir, exclude_nodes=exclude, default_concat_dim=concat_dim)
        for f in faults:
            out.warnings.warn(f"fault injected into NPU op {f.op!r} ({f.kind}); recorded in "
                              f"{res.root / 'result' / 'fault_injection.log'}")
        out.lines.append(f"dumped {len(res.npu.executed)} NPU nodes and {len(res.cpu.executed)} CPU nodes "
                         f"to {res.root}")
        if perf_tables is not None:
            perf_tables.write(res.root / "result")
            out.perf = perf_tables
            out.lines.append(f"op_perf: {res.root / 'result' / 'op_perf.csv'}")
    elif (dumpdir.check_dump_path(dump_path) / npu_data.DUMP_DATA).is_dir():
        root = dumpdir.existing_dump_dir(dump_path)
        conv = npu_data.analyse(root, out_dir, exclude=exclude, default_concat_dim=concat_dim)
        out.lines.append(f"npu data analysis: {len(conv.written)} nodes from {root / npu_data.DUMP_DATA} to "
                         f"{out_dir or root / 'npu'} ({len(conv.concat_skipped)} not joined, "
                         f"{len(conv.check_skipped)} skipped)")
    if out_dir is not None and npu_dir is None:
        npu_dir = str(out_dir)
    result = compare_dump(dump_path, opts, cpu_dir=cpu_dir, npu_dir=npu_dir,
                          node_runtime_filename=node_runtime_filename, op_config_name=op_config_name)
    out.compare = result
    out.warnings.extend(result.warnings)
    out.lines.append(f"compared {len(result.compared)} nodes, {len(result.failed)} with errors: "
                     f"{result.root / 'result' / 'cpu_vs_npu.csv'}")
    out.location = locate(result)
    out.lines.extend(out.location.summary().splitlines())
    return out
