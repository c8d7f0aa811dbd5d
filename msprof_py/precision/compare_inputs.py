"""What ``compare`` reads besides the tensors: node names of the dumped files, the execution
order, the fusion record (fused NPU node -> reference node), per-node tolerances
(``op_config.csv``) and the user's ``--map_node_dict``."""
from __future__ import annotations

from pathlib import Path

from msprof_py.errors import InvalidParamError, InvalidPathError, WarningLog
from msprof_py.precision import dumpdir, graphio
from msprof_py.precision.compare_options import CompareOptions


def node_names(directory: Path, names_log: Path | None) -> dict[str, str]:
    """file stem -> node name for the .npy files in ``directory``."""
    stems = sorted(p.stem for p in directory.glob("*.npy"))
    known: dict[str, str] = {}
    if names_log is not None and names_log.is_file():
        for line in names_log.read_text().splitlines():
            if line.strip():
                known.setdefault(dumpdir.node_file_name(line.strip()), line.strip())
    return {s: known.get(s, s) for s in stems}


def execution_order(result_dir: Path, runtime_file: Path, npu_names: list[str]) -> list[str]:
    """``npu_names`` in execution order: from the node runtime file (index, name), else the dump's
    node-name log; extra outputs follow their node, unknown nodes go last by name."""
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


def fusion_map(result_dir: Path) -> dict[str, str]:
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


def read_op_config(path: Path, opts: CompareOptions, warnings: WarningLog) -> dict[str, tuple[float, float]]:
    """Per-node (atol, rtol) from ``op_config.csv`` (NA = the global value); {} when there is none."""
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


def resolve_in(result_dir: Path, name: str | None, default: str) -> Path:
    """``name`` (or ``default``) as given when absolute, else inside ``result_dir``."""
    p = Path(name or default)
    return p if p.is_absolute() else result_dir / p


def check_user_map(m: dict[str, str], cpu_file: dict, npu_file: dict) -> dict[str, str]:
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
