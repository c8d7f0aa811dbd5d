"""Chrome-trace events in msprof's exact shapes, built column-wise.

Key order per event kind follows msprof's C++ writer (``json_trace/*.cpp``):

* X: ``{"name","pid","tid","ts","dur","ph":"X"[,"cat"],"args":{...}}``
* flow: ``{"name","pid","tid","ph":"s"|"f","cat","id","ts"[,"bp":"e"]}``
* M: ``{"name","pid","tid","ph":"M","args":{"name"|"labels"|"sort_index":...}}``
* C: ``{"name","pid","tid","ts","ph":"C","args":{series...}}``

``ts`` is a string of local epoch µs with exactly 3 decimals (integer ns with a decimal point
inserted); ``dur`` is a JSON number (µs).  A :class:`Slices` / :class:`Flows` keeps the integer
columns next to the text builder so the timeline can be validated before it is written.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
import pandas as pd

from msprof_py.export.rows import RowBuilder

# msprof's layer sort indices and the host pseudo device id.  The C++ analysis numbers its layers
# with one enum (domain/entities/json_trace/include/meta_data_event.h ProcessSortIndex: FRAMEWORK 6,
# CANN 7, ..., ASCEND_HW, AICORE_FREQ, HCCL, ..., OVERLAP_ANALYSIS); every layer added upstream
# shifts the later ones.  We write the numbers of the msprof that ships with CANN 9.0.0 (its exports
# of the 910B captures: Ascend Hardware 13, AI Core Freq 14, Overlap Analysis 30; the enum as of
# Ascend/msprof e095568bd, 2026-03, with the CCU layer; the DPU layer of aadad352f, 2026-05, moves
# them to 14 / 15 / 31 in later versions).
SORT_CANN, SORT_ASCEND_HW, SORT_COMM, SORT_OVERLAP = 7, 13, 15, 30
# The msprof of 2024 (Python analysis; the 310B captures of shared/realdata, drvVersion < 0x072211):
# CANN 2 (its LAYER_CANN_SORT, after FRAMEWORK 0 and PTA 1), Ascend Hardware 8, Overlap Analysis 11,
# as its exports show (its source is not in the reference; its Communication index is unknown, kept).
LEGACY_SORT_CANN, LEGACY_SORT_ASCEND_HW, LEGACY_SORT_OVERLAP = 2, 8, 11
HOST_DEVICE = 31


@dataclass(frozen=True)
class LayerSorts:
    """The sort index (and pid field) of each timeline process of one export."""

    cann: int = SORT_CANN
    hw: int = SORT_ASCEND_HW
    comm: int = SORT_COMM
    overlap: int = SORT_OVERLAP


LEGACY_SORTS = LayerSorts(LEGACY_SORT_CANN, LEGACY_SORT_ASCEND_HW, SORT_COMM, LEGACY_SORT_OVERLAP)
STEP_TRACE_TID_OFFSET = 70000


def const(n: int, value: int) -> np.ndarray:
    """``n`` times ``value`` as a read-only int64 column that takes no memory (a broadcast view):
    the pid / tid column of a layer drawn on one process / thread."""
    return np.broadcast_to(np.int64(value), (int(n),))


def format_pid(pid: int, sort_index: int, device_id: int) -> int:
    """msprof's timeline pid: ``(pid << 10) | (sortIndex << 5) | deviceId``."""
    return (int(pid) << 10) | (sort_index << 5) | int(device_id)


def jstr(s: Any) -> str:
    return orjson.dumps(str(s)).decode()


def jstr_many(values: list[str]) -> list[str]:
    """JSON string literals for many strings with one orjson call.  Inside an encoded string a
    quote is always written ``\\"``, so when the array text has no ``\\"`` at all every quote
    in it is a delimiter and splitting on ``","`` is exact; otherwise (a string holding a quote or
    ending in a backslash) each value is encoded on its own."""
    if not values:
        return []
    body = orjson.dumps(values).decode()[2:-2]
    if '\\"' in body:
        return [jstr(v) for v in values]
    return ['"' + s + '"' for s in body.split('","')]


@dataclass
class Arg:
    """One ``args`` entry: key and a column (``kind``: int | u64 | str | us | tsstr | raw)."""

    key: str
    kind: str
    values: Any


def _add_value(rb: RowBuilder, kind: str, values: Any, n: int) -> None:
    if kind == "int":  # (int32 stays int32 and int64 as it is: RowBuilder.int; the rest as int64)
        v = np.asarray(values)
        rb.int(v if v.dtype in (np.int32, np.int64) else v.astype(np.int64))
    elif kind == "u64":  # an int64 column printed as C++ prints a uint64_t (-1 -> 18446744073709551615)
        v = np.asarray(values, dtype=np.int64)
        if (v < 0).any():
            _add_strings(rb, v.view(np.uint64).astype(str), encode=False)
        else:
            rb.int(v)
    elif kind == "us":  # a JSON number in µs from ns
        rb.us3(np.asarray(values, dtype=np.int64))
    elif kind == "tsstr":  # a timestamp string "us.nnn"
        rb.lit('"').us3(np.asarray(values, dtype=np.int64)).lit('"')
    elif kind == "str":
        if isinstance(values, str):
            rb.lit(jstr(values))
        else:
            _add_strings(rb, values)
    elif kind == "raw":  # preformatted JSON texts (categorical/array)
        _add_strings(rb, values, encode=False)
    else:
        raise ValueError(kind)


def _add_strings(rb: RowBuilder, values: Any, encode: bool = True) -> None:
    if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype) or isinstance(values, pd.Categorical):
        cat = pd.Categorical(values)
        codes = np.asarray(cat.codes, dtype=np.int64)
        cats = [str(c) for c in cat.categories.tolist()]
        if (codes < 0).any():
            codes = np.where(codes < 0, len(cats), codes)
            cats.append("N/A")
        rb.cat(codes, (jstr_many(cats) if encode else cats) or ['""'])
    else:
        rb.strings(values, encode=jstr if encode else str)


@dataclass
class Slices:
    """X events of one kind: integer columns kept for validation, text built lazily."""

    name: Any  # str (same for all), or a column of names
    pid: np.ndarray
    tid: np.ndarray
    start_ns: np.ndarray
    dur_ns: np.ndarray
    args: Sequence[Arg] = ()
    cat: str | None = None
    label: str = ""  # what these are, for validation messages
    cache_key: tuple[Any, ...] | None = None  # same key = same rendered bytes (see ExportContext.rendered)

    def __len__(self) -> int:
        return len(self.start_ns)

    def rows(self) -> RowBuilder:
        n = len(self)
        rb = RowBuilder(n).lit('{"name":')
        _add_value(rb, "str", self.name, n)
        rb.lit(',"pid":').int(self.pid).lit(',"tid":').int(self.tid)
        rb.lit(',"ts":"').us3(self.start_ns).lit('","dur":').us3(self.dur_ns).lit(',"ph":"X"')
        if self.cat is not None:
            rb.lit(',"cat":' + jstr(self.cat))
        rb.lit(',"args":{')
        for i, a in enumerate(self.args):
            rb.lit(("," if i else "") + jstr(a.key) + ":")
            _add_value(rb, a.kind, a.values, n)
        return rb.lit("}},\n")


@dataclass
class Flows:
    """Paired HostToDevice-style flow events: one ``s`` and one ``f`` per id."""

    cat: str
    name_prefix: str
    ids: np.ndarray  # int64 flow ids (printed as decimal strings)
    s_pid: np.ndarray
    s_tid: np.ndarray
    s_ns: np.ndarray
    f_pid: np.ndarray
    f_tid: np.ndarray
    f_ns: np.ndarray
    # the slice an ``s`` inside it binds to (its start ns on the same thread), where ``s_ns`` is not
    # a slice start (msprof's Python path starts flows at the launch record inside the Node call);
    # the native trace attaches the flow there
    s_slice_ns: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def rows(self, phase: str) -> RowBuilder:
        pid, tid, ns = ((self.s_pid, self.s_tid, self.s_ns) if phase == "s"
                        else (self.f_pid, self.f_tid, self.f_ns))
        rb = RowBuilder(len(self)).lit('{"name":' + jstr(self.name_prefix)[:-1]).int(self.ids).lit('"')
        rb.lit(',"pid":').int(pid).lit(',"tid":').int(tid)
        rb.lit(f',"ph":"{phase}","cat":{jstr(self.cat)},"id":"').int(self.ids).lit('","ts":"').us3(ns)
        return rb.lit('","bp":"e"},\n' if phase == "f" else '"},\n')


@dataclass
class Counters:
    """C events of one counter (e.g. "AI Core Freq" with series "MHz") on one process.

    ``series`` maps each args key to a float column (one value per ``ts_ns``).  Viewers draw one
    counter track per series, named ``"{name} {key}"``.
    """

    name: str
    pid: int
    ts_ns: np.ndarray
    series: dict[str, np.ndarray]
    tid: int = 0

    def __len__(self) -> int:
        return len(self.ts_ns)

    def rows(self) -> RowBuilder:
        n = len(self)
        rb = RowBuilder(n).lit('{"name":' + jstr(self.name) + f',"pid":{int(self.pid)},"tid":{int(self.tid)}')
        rb.lit(',"ts":"').us3(np.asarray(self.ts_ns, np.int64)).lit('","ph":"C","args":{')
        for i, (key, values) in enumerate(self.series.items()):
            rb.lit(("," if i else "") + jstr(key) + ":")
            # each distinct value formatted once; NaN is one value here (pandas' factorize would
            # give it code -1, which picked another value's text)
            uniq, codes = np.unique(np.asarray(values, dtype=np.float64), return_inverse=True)
            rb.cat(codes.reshape(-1), [_num(u) for u in uniq.tolist()])
        return rb.lit("}},\n")


def _num(v: Any) -> str:
    """A JSON number (ints without a fraction, like msprof's ``{"MHz": 1800}``)."""
    f = float(v)
    if f != f or f in (float("inf"), float("-inf")):
        return "null"
    return str(int(f)) if f.is_integer() else repr(f)


@dataclass
class Meta:
    """M events (few: process/thread names and sort indices)."""

    events: list[dict[str, Any]] = field(default_factory=list)

    def process(self, pid: int, name: str, label: str, sort_index: int) -> None:
        self.events += [
            {"name": "process_name", "pid": pid, "tid": 0, "ph": "M", "args": {"name": name}},
            {"name": "process_labels", "pid": pid, "tid": 0, "ph": "M", "args": {"labels": label}},
            {"name": "process_sort_index", "pid": pid, "tid": 0, "ph": "M", "args": {"sort_index": sort_index}},
        ]

    def thread(self, pid: int, tid: int, name: str, sort_index: int) -> None:
        self.events += [
            {"name": "thread_name", "pid": pid, "tid": tid, "ph": "M", "args": {"name": name}},
            {"name": "thread_sort_index", "pid": pid, "tid": tid, "ph": "M", "args": {"sort_index": sort_index}},
        ]

    def to_bytes(self) -> bytes:
        return b"".join(orjson.dumps(e) + b",\n" for e in self.events)
