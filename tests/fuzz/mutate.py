"""Mutations of a PROF directory, as a hostile user (or a broken disk) would make them.

One generator, two sources of choices: :func:`generate` takes a :class:`Chooser`, so the same
mutation space is drawn by hypothesis in the CI tests (``tests/fuzz/test_fuzz.py``, shrinkable)
and by ``random.Random`` in the long campaigns (``benchmarks/fuzz.py``, fast and reproducible
from a seed).  A :class:`Mutation` is plain data (JSON-serialisable), so a crash reproducer is
the seed dir's name plus ``mutation.json``.

Kinds: bit flips, truncation, duplicated / inserted chunks, copied slices (a slice saved again
under another number), renamed / removed / replaced files (directory, dangling symlink, symlink
loop, empty file), metadata values of the wrong type or range (JSON files and the
``*_start.log`` key: value files), duplicated JSON keys.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, Sequence

KINDS = ("bitflip", "truncate", "dup_chunk", "insert_chunk", "copy_slice", "rename", "remove", "replace",
         "meta_value", "dup_json_key", "start_log_value", "rename_dir")

# values of the wrong type or out of range (JSON); 1e308 and -1e308 are valid JSON floats
HOSTILE_VALUES: tuple[Any, ...] = (
    -1, 0, 2**63, 2**64, 99999999999999999999999999, -(2**63) - 1, 1e308, -1e308, 0.5, -0.0,
    "18446744073709551615", "-1", "", "abc", "1e308", "nan", "inf", None, True, [], [1, 2], {}, {"a": 1})
# values for the text start logs (clock_monotonic_raw / cntvct / cntvct_diff)
HOSTILE_LOG_VALUES = ("99999999999999999999999999", "-1", "18446744073709551615", "9223372036854775807",
                      "-9223372036854775808", "1e308", "abc", "", "0", "0x10")
SLICE_NAMES = ("slice_500", "slice_-0", "slice_99999999999999999999", "slice_1", "slice_0", "slice_x",
               "slice_00", "slice_3.done")
DIR_NAMES = ("device_99999999999999999999", "device_64", "device_-1", "device_1", "device_00", "host2")
REPLACEMENTS = ("directory", "dangling_symlink", "symlink_loop", "empty")
META_RE = re.compile(r"(info\.json|start_info|end_info|sample\.json)(\.\d+)?$")
LOG_RE = re.compile(r"(host|dev)_start\.log(\.\d+)?$")


class Chooser(Protocol):
    def choice(self, options: Sequence[Any]) -> Any: ...

    def integer(self, lo: int, hi: int) -> int: ...


class RandomChooser:
    """Choices from ``random.Random`` (the campaign)."""

    def __init__(self, rng) -> None:
        self.rng = rng

    def choice(self, options: Sequence[Any]) -> Any:
        return options[self.rng.randrange(len(options))]

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


@dataclass
class Mutation:
    kind: str
    target: str  # path relative to the PROF dir
    args: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "Mutation":
        return cls(**json.loads(text))


def inventory(prof: Path) -> dict[str, list[str]]:
    """Relative paths of the PROF dir's files by role: raw slices, JSON metadata, start logs, dirs."""
    raw, meta, logs, dirs = [], [], [], []
    for p in sorted(prof.rglob("*")):
        rel = str(p.relative_to(prof))
        if rel.split("/")[0] in ("mindstudio_profiler_output", "mindstudio_profiler_log", "msprof_py_cache"):
            continue
        if p.is_dir():
            if p.parent == prof:
                dirs.append(rel)
        elif META_RE.search(p.name):
            meta.append(rel)
        elif LOG_RE.search(p.name):
            logs.append(rel)
        elif p.parent.name == "data":
            raw.append(rel)
    return {"raw": raw, "meta": meta, "logs": logs, "dirs": dirs, "files": raw + meta + logs}


def generate(c: Chooser, inv: dict[str, list[str]], sizes: dict[str, int]) -> Mutation:
    """One mutation of a PROF dir described by ``inv`` (:func:`inventory`) and file ``sizes``."""
    kind = c.choice(KINDS)
    if kind in ("meta_value", "dup_json_key") and not inv["meta"]:
        kind = "bitflip"
    if kind == "start_log_value" and not inv["logs"]:
        kind = "truncate"
    if kind in ("bitflip", "truncate", "dup_chunk", "insert_chunk"):
        target = c.choice(inv["raw"] or inv["files"])
        size = max(sizes.get(target, 0), 1)
        if kind == "bitflip":
            return Mutation(kind, target, {"flips": [[c.integer(0, size - 1), c.integer(0, 7)]
                                                     for _ in range(c.integer(1, 4))]})
        if kind == "truncate":
            return Mutation(kind, target, {"size": c.integer(0, size - 1)})
        start = c.integer(0, size - 1)
        length = c.integer(1, min(256, size))
        at = c.integer(0, size)
        if kind == "dup_chunk":
            return Mutation(kind, target, {"start": start, "length": length, "at": at})
        return Mutation(kind, target, {"at": at, "length": length, "byte": c.integer(0, 255)})
    if kind == "copy_slice":
        return Mutation(kind, c.choice(inv["raw"] or inv["files"]), {"name": c.choice(SLICE_NAMES)})
    if kind == "rename":
        return Mutation(kind, c.choice(inv["files"]), {"name": c.choice(SLICE_NAMES)})
    if kind == "remove":
        return Mutation(kind, c.choice(inv["files"]))
    if kind == "replace":
        return Mutation(kind, c.choice(inv["files"]), {"with": c.choice(REPLACEMENTS)})
    if kind == "rename_dir":
        return Mutation(kind, c.choice(inv["dirs"]), {"name": c.choice(DIR_NAMES)})
    if kind == "start_log_value":
        return Mutation(kind, c.choice(inv["logs"]), {"key": c.choice(("clock_monotonic_raw", "cntvct",
                                                                       "cntvct_diff")),
                                                      "value": c.choice(HOSTILE_LOG_VALUES)})
    return Mutation(kind, c.choice(inv["meta"]), {"pick": c.integer(0, 10_000), "value": c.choice(HOSTILE_VALUES)})


def apply(m: Mutation, prof: Path) -> None:
    """Apply ``m`` to the PROF dir ``prof`` (a copy: this destroys data)."""
    path = prof / m.target
    a = m.args
    if m.kind in ("bitflip", "truncate", "dup_chunk", "insert_chunk"):
        data = bytearray(path.read_bytes())
        if m.kind == "bitflip":
            for off, bit in a["flips"]:
                if off < len(data):
                    data[off] ^= 1 << bit
        elif m.kind == "truncate":
            del data[a["size"]:]
        elif m.kind == "dup_chunk":
            data[a["at"]:a["at"]] = data[a["start"]:a["start"] + a["length"]]
        else:
            data[a["at"]:a["at"]] = bytes([a["byte"]]) * a["length"]
        path.write_bytes(bytes(data))
    elif m.kind == "copy_slice":
        shutil.copyfile(path, path.with_name(_renamed(path.name, a["name"])))
    elif m.kind == "rename":
        path.rename(path.with_name(_renamed(path.name, a["name"])))
    elif m.kind == "remove":
        path.unlink()
    elif m.kind == "replace":
        path.unlink()
        if a["with"] == "directory":
            path.mkdir()
        elif a["with"] == "dangling_symlink":
            os.symlink(path.with_name("no_such_file"), path)
        elif a["with"] == "symlink_loop":
            os.symlink(path.name, path)
        else:
            path.write_bytes(b"")
    elif m.kind == "rename_dir":
        dest = path.with_name(a["name"])
        if not dest.exists():
            path.rename(dest)
    elif m.kind == "start_log_value":
        text = path.read_text()
        path.write_text(re.sub(rf"^({a['key']}:\s*).*$", lambda mm: mm.group(1) + a["value"], text, flags=re.M))
    elif m.kind == "meta_value":
        _set_json_value(path, a["pick"], a["value"])
    elif m.kind == "dup_json_key":
        _dup_json_key(path, a["pick"], a["value"])
    else:
        raise ValueError(f"unknown mutation kind {m.kind}")


def _renamed(name: str, new_slice: str) -> str:
    """``aging.api_event.data.slice_0`` -> ``aging.api_event.data.slice_500`` (any other name
    gets the suffix appended, e.g. ``info.json.slice_500``)."""
    if re.search(r"slice_\d+$", name):
        return re.sub(r"slice_\d+$", new_slice, name)
    return f"{name}.{new_slice}"


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path of a JSON value (dict keys and list indices), containers included."""
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, prefix + (i,))
    return out


def _set_json_value(path: Path, pick: int, value: Any) -> None:
    try:
        obj = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError):
        return
    keys = _paths(obj)
    if not keys:
        return
    where = keys[pick % len(keys)]
    node = obj
    for k in where[:-1]:
        node = node[k]
    node[where[-1]] = value
    path.write_text(json.dumps(obj))


def _dup_json_key(path: Path, pick: int, value: Any) -> None:
    """Append a second copy of one top-level key holding ``value`` (JSON text allows it; the
    last one wins in orjson and json)."""
    text = path.read_text(errors="replace").rstrip()
    try:
        obj = json.loads(text)
    except ValueError:
        return
    if not isinstance(obj, dict) or not obj or not text.endswith("}"):
        return
    key = list(obj)[pick % len(obj)]
    path.write_text(text[:-1] + f", {json.dumps(key)}: {json.dumps(value)}}}")


def file_sizes(prof: Path, inv: dict[str, list[str]]) -> dict[str, int]:
    return {rel: (prof / rel).stat().st_size for rel in inv["files"]}
