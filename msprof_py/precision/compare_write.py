"""The files ``compare`` writes in ``result/`` (see :mod:`msprof_py.precision.compare`), each
through a temporary name, and the manifest that lets the next compare remove exactly them."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from msprof_py import atomic
from msprof_py.errors import WarningLog
from msprof_py.precision import dumpdir, graphio
from msprof_py.precision.compare_options import CompareOptions
from msprof_py.precision.metrics import CSV_COLUMNS, DETAIL_COLUMNS, detail_rows

if TYPE_CHECKING:
    from msprof_py.precision.compare import NodeResult

MANIFEST = ".compare_outputs"  # files the previous compare wrote (removed before a new one)


def write_results(result_dir: Path, nodes: list[NodeResult], opts: CompareOptions, op_config_path: Path,
                  npu_file: dict, cpu_file: dict, warnings: WarningLog, user_map: dict, fusion: dict) -> list[Path]:
    """Write every result file of one comparison (removing the previous comparison's first);
    returns the files written (the manifest lists them)."""
    import pandas as pd

    result_dir.mkdir(exist_ok=True)
    _remove_previous(result_dir)
    written: list[Path] = []

    def csv(path: Path, df: "pd.DataFrame") -> None:
        with atomic.temp_path(path) as tmp:
            df.to_csv(tmp, index=False)
        written.append(path)

    rows = [n.cmp.csv_row(n.label) for n in nodes if n.cmp is not None]
    csv(result_dir / "cpu_vs_npu.csv", pd.DataFrame(rows, columns=list(CSV_COLUMNS)))
    for n in nodes:
        if n.cmp is not None and not n.cmp.passed:
            det = detail_rows(n.cmp)  # at most diff_cnt rows
            body = "".join(f"{i},{a:.6g},{b:.6g},{c:.6g},{d:.6g}\n" for i, a, b, c, d in zip(
                det["index"].tolist(), det["std_value"].tolist(), det["npu_value"].tolist(),
                det["abs_diff"].tolist(), det["relative_diff"].tolist()))
            _text(result_dir / f"{dumpdir.node_file_name(n.npu_node)}.csv", ",".join(DETAIL_COLUMNS) + "\n" + body,
                  written)
    skip = [f"{n.npu_node}: {n.reason}\n" for n in nodes if n.reason]
    skip += [f"{n.npu_node}: {n.note}\n" for n in nodes if n.note]
    _text(result_dir / "compare_skip.log", "".join(skip), written)
    _text(result_dir / "invalid_out_nodename.log",
          "".join(f"{n.npu_node}\n" for n in nodes if n.cpu_node is None), written)
    if not op_config_path.exists():
        df = pd.DataFrame({"op_name": [n.npu_node for n in nodes], "atol": "NA", "rtol": "NA"})
        with atomic.temp_path(op_config_path) as tmp:  # a template for the user; kept across compares
            df.to_csv(tmp, index=False)
    meta = {
        "atol": opts.atol, "rtol": opts.rtol, "diff_cnt": opts.diff_cnt, "force_compare": opts.force_compare,
        "skip_keys": list(opts.skip_keys), "map_node_dict": opts.map_node_dict,
        "criterion": "error iff |npu-ref| > atol and |npu-ref| > rtol*|ref|; NaN->0, Inf->dtype max first",
        "relative_error": "|npu-ref|/|ref| over |ref| > 1e-7 (max_abs_total, mean_abs_total)",
        "mapping": {n.npu_node: n.cpu_node for n in nodes},
        "mapping_source": {n.npu_node: ("map_node_dict" if n.npu_node in user_map else
                                        "fusion record" if n.cpu_node is not None and n.cpu_node != n.npu_node
                                        else "same name") for n in nodes},
        "compared": sum(n.cmp is not None for n in nodes),
        "failed": sum(n.cmp is not None and not n.cmp.passed for n in nodes),
        "skipped": sum(bool(n.reason) for n in nodes),
    }
    _text(result_dir / "compare_meta.json", graphio.dump_json(meta).decode(), written)
    if opts.show_graph:
        from msprof_py.precision import plots

        for n in nodes:
            if n.cmp is not None and not n.cmp.passed:
                written += plots.plot_node(result_dir, dumpdir.node_file_name(n.npu_node),
                                           dumpdir.load_tensor(npu_file[n.npu_node]),
                                           dumpdir.load_tensor(cpu_file[n.cpu_node]), n.cmp, opts)
    unmatched = sum(n.cpu_node is None for n in nodes)
    if unmatched:
        warnings.warn(f"{unmatched} NPU node(s) have no reference node (see {result_dir / 'invalid_out_nodename.log'})")
    others = sum(bool(n.reason) for n in nodes) - unmatched
    if others:
        warnings.warn(f"{others} node(s) skipped (see {result_dir / 'compare_skip.log'})")
    _text(result_dir / MANIFEST, "".join(p.name + "\n" for p in written), [])
    return written


def _text(path: Path, text: str, written: list[Path]) -> None:
    atomic.write_text(path, text)
    written.append(path)


def _remove_previous(result_dir: Path) -> None:
    """Delete the files the previous compare listed in its manifest (only those)."""
    manifest = result_dir / MANIFEST
    if not manifest.is_file():
        return
    for name in manifest.read_text().splitlines():
        p = result_dir / name
        if name and "/" not in name and p.is_file():
            p.unlink()
