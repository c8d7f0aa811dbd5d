"""The seed's NPU data analysis (``run_npu_data_analysis.py``): ``dump_data/`` hex slices -> ``npu/``.

The NPU dumps a node's output from device memory as hex text, one file per slice (the cores
that computed it); this step turns the hex back into binary and concatenates each node's slices
into the tensor ``compare`` reads.  msprof_py's ``dump_data/`` layout (the seed does not give the
driver's, so this one is ours, written by :func:`write_slices` and read by :func:`analyse`)::

    dump_data/{node file}.{k}.hex
        # node: resnet/conv1/Conv2D
        # dtype: float16
        # shape: 1,8,32,32              (this slice's shape)
        # group: 2 concat_dim=1         (slices of the node, and the axis they are cut along)
        3c003c00...                     (the slice's bytes, little-endian, 32 per line)

A node with one slice has no ``group`` line; a ``group`` line without ``concat_dim`` (a dump
whose grouping info is incomplete) is concatenated along ``default_concat_dim`` (``-1``: the
first axis whose size is not 1, the seed's rule).  Results go to ``output_dir`` (default
``npu/``) as ``{node file}.npy``.  Nodes in ``exclude`` (names) or whose names contain a
``skip_keys`` keyword are left out and listed in ``result/check_skip.log``; slices that cannot
be read or joined (missing slice, bad hex, sizes that disagree with the header, shapes that do
not concatenate) are listed per node in ``result/concate_skip.log`` (rewritten by each
analysis) and the node is skipped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from msprof_py import atomic
from msprof_py.errors import InvalidParamError
from msprof_py.precision import dumpdir

DUMP_DATA = "dump_data"
BYTES_PER_LINE = 32
SLICE_RE = re.compile(r"^(?P<stem>.+)\.(?P<k>\d+)\.hex$")


@dataclass
class AnalysisResult:
    written: list[str] = field(default_factory=list)  # node names converted
    check_skipped: list[tuple[str, str]] = field(default_factory=list)  # (node, why)
    concat_skipped: list[tuple[str, str]] = field(default_factory=list)


def split_axis(shape: tuple[int, ...]) -> int:
    """The first axis whose size is not 1 (0 for a scalar or all-ones shape)."""
    return next((i for i, n in enumerate(shape) if n != 1), 0)


def write_slices(root: Path, node: str, array: np.ndarray, n_slices: int = 2) -> list[Path]:
    """Dump ``array`` (node ``node``) as hex slices cut along its first non-1 axis."""
    a = np.ascontiguousarray(array)
    axis = split_axis(a.shape)
    n = max(1, min(n_slices, a.shape[axis] if a.ndim else 1))
    parts = np.array_split(a, n, axis=axis) if a.ndim else [a]
    out = []
    stem = dumpdir.node_file_name(node)
    for k, part in enumerate(parts):
        raw = np.ascontiguousarray(part).tobytes()
        hexed = raw.hex()
        step = BYTES_PER_LINE * 2
        body = "\n".join(hexed[i:i + step] for i in range(0, len(hexed), step))
        head = [f"# node: {node}", f"# dtype: {a.dtype.name}", f"# shape: {','.join(map(str, part.shape))}"]
        if n > 1:
            head.append(f"# group: {n} concat_dim={axis}")
        path = root / DUMP_DATA / f"{stem}.{k}.hex"
        atomic.write_text(path, "\n".join(head) + "\n" + body + ("\n" if body else ""))
        out.append(path)
    return out


def parse_concat_dim(value: int | str | None) -> int:
    if value is None:
        return 0
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise InvalidParamError(f"--default_concat_dim must be an integer axis (or -1), got {value!r}") from None
    if v < -1:
        raise InvalidParamError(f"--default_concat_dim must be >= -1, got {v}")
    return v


def parse_node_list(value: str | None) -> tuple[str, ...]:
    """``--exclude_node_list``: comma-separated node names."""
    return tuple(n.strip() for n in (value or "").split(",") if n.strip())


def analyse(root: Path, output_dir: Path | None = None, *, exclude: tuple[str, ...] = (),
            skip_keys: tuple[str, ...] = (), default_concat_dim: int = 0) -> AnalysisResult:
    """Convert and concatenate ``root/dump_data`` into ``output_dir`` (default ``root/npu``);
    append what was skipped to ``result/check_skip.log`` / ``result/concate_skip.log``."""
    src = root / DUMP_DATA
    out_dir = output_dir if output_dir is not None else root / "npu"
    res = AnalysisResult()
    groups: dict[str, dict[int, Path]] = {}
    for p in sorted(src.iterdir()) if src.is_dir() else []:
        m = SLICE_RE.match(p.name)
        if m is None:
            res.check_skipped.append((p.name, "not a dump_data slice file ({node}.{k}.hex)"))
            continue
        groups.setdefault(m["stem"], {})[int(m["k"])] = p
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InvalidParamError(f"--output_dir {out_dir}: cannot create it ({err.strerror})") from None
    for stem, slices in sorted(groups.items()):
        try:
            node, arrays, dim = _read_group(slices, default_concat_dim)
        except ValueError as err:
            res.concat_skipped.append((stem, str(err)))
            continue
        if node in exclude or any(k in node for k in skip_keys):
            res.check_skipped.append((node, "in --exclude_node_list" if node in exclude else "matches --skip_keys"))
            continue
        try:
            tensor = arrays[0] if len(arrays) == 1 else np.concatenate(arrays, axis=dim)
        except ValueError as err:
            res.concat_skipped.append((node, f"slices do not concatenate along axis {dim}: {err}"))
            continue
        dumpdir.save_tensor(out_dir, node, tensor)
        res.written.append(node)
    result = root / "result"
    result.mkdir(exist_ok=True)
    atomic.write_text(result / "concate_skip.log", "".join(f"{n}: {why}\n" for n, why in res.concat_skipped))
    old = (result / "check_skip.log").read_text().splitlines(True) if (result / "check_skip.log").is_file() else []
    new = [line for line in (f"{n}: {why}\n" for n, why in res.check_skipped) if line not in old]
    atomic.write_text(result / "check_skip.log", "".join(old + new))  # the run's own lines kept, ours once
    return res


def _read_group(slices: dict[int, Path], default_dim: int) -> tuple[str, list[np.ndarray], int]:
    n_files = max(slices) + 1
    heads, arrays = [], []
    for k in range(n_files):
        if k not in slices:
            raise ValueError(f"slice {k} of {n_files} missing")
        head, arr = _read_slice(slices[k])
        heads.append(head)
        arrays.append(arr)
    node = heads[0]["node"]
    if any(h["node"] != node for h in heads):
        raise ValueError("slices name different nodes")
    group = heads[0].get("group")
    if n_files > 1 or group:
        want = int(group.split()[0]) if group and group.split()[0].isdigit() else n_files
        if want != n_files:
            raise ValueError(f"group says {want} slices, {n_files} found")
    dim = None
    if group and "concat_dim=" in group:
        dim = int(group.split("concat_dim=", 1)[1].split()[0])
    if dim is None:
        dim = split_axis(arrays[0].shape) if default_dim == -1 else default_dim
    if arrays[0].ndim and not 0 <= dim < arrays[0].ndim:
        raise ValueError(f"concat axis {dim} out of range for shape {arrays[0].shape}")
    return node, arrays, dim


def _read_slice(path: Path) -> tuple[dict[str, str], np.ndarray]:
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{path.name}: unreadable ({err})") from None
    head: dict[str, str] = {}
    body = []
    for line in text.splitlines():
        if line.startswith("#"):
            key, _, val = line[1:].partition(":")
            head[key.strip()] = val.strip()
        elif line.strip():
            body.append(line.strip())
    for key in ("node", "dtype", "shape"):
        if key not in head:
            raise ValueError(f"{path.name}: no '# {key}:' line")
    try:
        dt = np.dtype(head["dtype"])
    except TypeError:
        raise ValueError(f"{path.name}: dtype {head['dtype']!r} not supported") from None
    if dt.kind not in "biuf":
        raise ValueError(f"{path.name}: dtype {head['dtype']!r} not supported")
    try:
        shape = tuple(int(x) for x in head["shape"].split(",") if x.strip())
        raw = bytes.fromhex("".join(body))
    except ValueError as err:
        raise ValueError(f"{path.name}: {err}") from None
    want = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if len(raw) != want:
        raise ValueError(f"{path.name}: {len(raw)} bytes, the shape {shape} needs {want}")
    return head, np.frombuffer(raw, dtype=dt.newbyteorder("<")).astype(dt, copy=False).reshape(shape)
