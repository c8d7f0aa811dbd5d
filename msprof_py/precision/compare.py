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
"""
from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from msprof_py import atomic
from msprof_py.errors import InvalidParamError, InvalidPathError, WarningLog
from msprof_py.precision import dumpdir, graphio
from msprof_py.precision.metrics import CSV_COLUMNS, DETAIL_COLUMNS, TensorCompare, compare_tensors, detail_rows

MANIFEST = ".compare_outputs"  # files the previous compare wrote (removed before a new one)


@dataclass(frozen=True)
class CompareOptions:
    """The seed's options (defaults as documented there)."""

    atol: float = 0.005
    rtol: float = 0.2
    diff_cnt: int = 128
    show_graph: bool = False
    max_bins: int = 128
    min_bins: int = 1
    max_cores: int = 16
    map_node_dict: dict[str, str] = field(default_factory=dict)  # cpu name -> npu name
    force_compare: bool = False
    skip_keys: tuple[str, ...] = ()

    def validate(self) -> None:
        for name in ("atol", "rtol"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise InvalidParamError(f"--{name} must be a finite number >= 0, got {v}")
        if self.rtol > 1.0:
            raise InvalidParamError(f"--rtol must be in [0.0, 1.0], got {self.rtol}")
        if not 0 <= self.diff_cnt <= 2**63 - 1:  # it is stored as a 64-bit count (compare_params.json)
            raise InvalidParamError(f"--diff_cnt must be in 0 .. 2^63-1 (it caps the error elements written per "
                                    f"node; no tensor has more), got {self.diff_cnt}")
        if self.max_bins < 1:
            raise InvalidParamError(f"--max_bins must be >= 1, got {self.max_bins}")
        if not 1 <= self.min_bins <= self.max_bins:
            raise InvalidParamError(f"--min_bins must be in [1, max_bins={self.max_bins}], got {self.min_bins}")
        if self.show_graph:
            from msprof_py.precision.plots import require_matplotlib

            require_matplotlib()
        if self.max_cores < 1:
            raise InvalidParamError(f"--max_cores must be >= 1, got {self.max_cores}")


def parse_map_node_dict(text: str | None) -> dict[str, str]:
    """The seed's ``'{"cpu_name":"npu_name"}'`` (a JSON object given inline, or ``@file``)."""
    if not text:
        return {}
    src = "--map_node_dict"
    if text.startswith("@"):
        src = text[1:]
        try:
            text = Path(src).read_text()
        except OSError as err:
            raise InvalidPathError(f"{src}: cannot read --map_node_dict file ({err.strerror})") from None
    try:
        d = orjson.loads(text)
    except orjson.JSONDecodeError as err:
        raise InvalidParamError(f"{src}: not a JSON object like '{{\"cpu_name\":\"npu_name\"}}' ({err})") from None
    if not isinstance(d, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in d.items()):
        raise InvalidParamError(f"{src}: must map reference (CPU) node names to NPU node names, strings only")
    return d


def parse_skip_keys(text: str | None) -> tuple[str, ...]:
    """Comma-separated keywords; a node whose name contains one is skipped."""
    return tuple(k.strip() for k in (text or "").split(",") if k.strip())


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


# ---------------------------------------------------------------- discovery -------------------------

def _names(directory: Path, names_log: Path | None) -> dict[str, str]:
    """file stem -> node name for the .npy files in ``directory``."""
    stems = sorted(p.stem for p in directory.glob("*.npy"))
    known: dict[str, str] = {}
    if names_log is not None and names_log.is_file():
        for line in names_log.read_text().splitlines():
            if line.strip():
                known.setdefault(dumpdir.node_file_name(line.strip()), line.strip())
    return {s: known.get(s, s) for s in stems}


def _order(result_dir: Path, runtime_file: Path, npu_names: list[str]) -> list[str]:
    order: list[str] = []
    if runtime_file.is_file():
        rows = []
        for line in runtime_file.read_text().splitlines()[1:]:
            parts = line.split("\t")
            if len(parts) >= 2 and parts[0].strip().lstrip("-").isdigit():
                rows.append((int(parts[0]), parts[1]))
        order = [n for _, n in sorted(rows)]
    elif (result_dir / "dump_memory_nodename.log").is_file():
        order = [ln.strip() for ln in (result_dir / "dump_memory_nodename.log").read_text().splitlines() if ln.strip()]
    pos: dict[str, int] = {}
    for n in order:
        pos.setdefault(n, len(pos))
    # extra outputs (name:i) follow their node; unknown nodes go last, by name
    def key(n: str) -> tuple:
        base = n.rsplit(":", 1)[0] if ":" in n and n not in pos else n
        return (pos.get(n, pos.get(base, len(pos))), n)
    return sorted(npu_names, key=key)


def _fusion_map(result_dir: Path) -> dict[str, str]:
    """NPU node key -> the reference node it is compared with, from the fusion record."""
    path = result_dir / "graph_npu.json"
    if not path.is_file():
        return {}
    g = graphio.load_graph(path)
    out = {}
    for op in g.ops:
        if op.fused_from:
            out[op.name] = op.fused_from[-1]
            for i in range(1, len(op.outputs)):
                out[f"{op.name}:{i}"] = f"{op.fused_from[-1]}:{i}"
    return out


def _op_config(path: Path, opts: CompareOptions, warnings: WarningLog) -> dict[str, tuple[float, float]]:
    if not path.is_file():
        return {}
    import pandas as pd

    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError) as err:
        raise InvalidPathError(f"{path}: not a readable op_config.csv ({err})") from None
    if not {"op_name", "atol", "rtol"} <= set(df.columns):
        raise InvalidPathError(f"{path}: op_config.csv needs the columns op_name, atol, rtol")
    out = {}
    for name, a, r in zip(df["op_name"], df["atol"], df["rtol"]):
        try:
            atol = opts.atol if a.strip().upper() in ("", "NA") else float(a)
            rtol = opts.rtol if r.strip().upper() in ("", "NA") else float(r)
        except ValueError:
            raise InvalidPathError(f"{path}: op {name!r}: atol/rtol must be numbers or NA") from None
        try:
            CompareOptions(atol=atol, rtol=rtol).validate()
        except InvalidParamError as err:
            raise InvalidPathError(f"{path}: op {name!r}: {err}") from None
        out[name] = (atol, rtol)
    return out


def _resolve(result_dir: Path, name: str | None, default: str) -> Path:
    p = Path(name or default)
    return p if p.is_absolute() else result_dir / p


# ---------------------------------------------------------------- the comparison -------------------

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
    npu_stems = _names(npu_path, result_dir / "dump_memory_nodename.log")
    cpu_stems = _names(cpu_path, None)
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

    user_map = _check_user_map(opts.map_node_dict, cpu_file, npu_file)
    fusion = _fusion_map(result_dir)
    order = _order(result_dir, _resolve(result_dir, node_runtime_filename, "node_runtime.file"), list(npu_file))
    op_config_path = _resolve(result_dir, op_config_name, "op_config.csv")
    tolerances = _op_config(op_config_path, opts, warnings)
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
    outputs = _write(result_dir, nodes, opts, op_config_path, npu_file, cpu_file, warnings, user_map, fusion)
    files = {n.npu_node: (npu_file[n.npu_node], cpu_file[n.cpu_node]) for n in nodes if n.cpu_node is not None}
    return CompareResult(root, nodes, warnings, outputs, files)


def _check_user_map(m: dict[str, str], cpu_file: dict, npu_file: dict) -> dict[str, str]:
    """Invert and validate the seed's {cpu: npu} map into npu -> cpu."""
    if not m:
        return {}
    bad_cpu = [c for c in m if c not in cpu_file]
    bad_npu = [n for n in m.values() if n not in npu_file]
    if bad_cpu or bad_npu:
        parts = []
        if bad_cpu:
            parts.append(f"reference node(s) not in the CPU dump: {', '.join(bad_cpu)}")
        if bad_npu:
            parts.append(f"NPU node(s) not in the NPU dump: {', '.join(bad_npu)}")
        raise InvalidParamError("--map_node_dict names unknown nodes: " + "; ".join(parts))
    inv: dict[str, str] = {}
    for c, n in m.items():
        if n in inv:
            raise InvalidParamError(f"--map_node_dict maps both {inv[n]!r} and {c!r} to NPU node {n!r}; "
                                    "the mapping must be one-to-one")
        inv[n] = c
    return inv


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


# ---------------------------------------------------------------- writing --------------------------

def _write(result_dir: Path, nodes: list[NodeResult], opts: CompareOptions, op_config_path: Path,
           npu_file: dict, cpu_file: dict, warnings: WarningLog, user_map: dict, fusion: dict) -> list[Path]:
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
