"""Plausibility checks: decoded values that cannot be right, counted and reported as one
warning per kind of problem with the place of the first (``WarningLog.tally``).

Corrupt data that still decodes (a copied slice, a flipped bit in a timestamp, a count field
past its array) used to export "successfully" with wrong numbers and no word.  These checks do
not change any value; they say that a value is wrong and where the first one is.

| problem                                   | where it is checked                         |
|-------------------------------------------|---------------------------------------------|
| a slice with the same bytes as another    | reader.read_records (every stream)          |
| a gap in a stream's slice numbers         | reader.read_records                         |
| a slice whose size differs from its .done | reader.read_records (msprof writes         |
|   file, or that holds a partial record     |   ``slice_N.done`` with ``filesize:N``),    |
|   between whole-record slices              |   records.dictionaries (hash/type dics)     |
| a record declaring more ids than it holds | registry.KindReader.parts (host records)    |
| an op name / API type missing from the    | registry.KindReader.parts (node_basic_info, |
|   hash_dic / type_info_dic dictionaries   |   api_event)                                |
| a kernel name missing from hash_dic, a    | registry.KindReader.parts (task_track,      |
|   task type missing from type_info_dic, an |   node_basic_info)                          |
|   op type missing from hash_dic            |                                             |
| an API ending before it starts            | registry.KindReader.parts (api_event)       |
| a device task ending before it starts     | device.load_device (paired STARS logs)      |
| a slice or metadata file missing while its | registry.KindReader (every data dir),       |
|   .done / .complete marker is there        |   meta.load_result_dir (host/, device_N/)   |
| a time outside the collection window      | host.load_host, device.load_device          |
| tensor_info without any node_basic_info    | host.load_host (REQUIRES)                   |
| a start log whose cntvct and monotonic     | meta.load_result_dir                        |
|   clock disagree; start_info and the start |                                             |
|   log taken far apart (the sync point that |                                             |
|   places every time of the dir was edited) |                                             |
| device tasks with no host task at all     | join.join_device (task_track missing)       |
"""
from __future__ import annotations

import hashlib
import os
import re
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from msprof_py.errors import WarningLog
from msprof_py.parse.keys import member
from msprof_py.raw.common import LEVEL_RUNTIME

if TYPE_CHECKING:
    from msprof_py.parse.reader import Stream

WINDOW_SLACK_NS = 3600 * 10**9  # an hour either side: clock skew and late flushes are not corruption
# a start log's counter and monotonic clock both count from boot: real captures agree within
# 0.08% / 53 s (200 start logs of shared/realdata), start_info and host_start.log within 28 ms
SYNC_SLACK_NS = 600 * 10**9
SYNC_SLACK_FRACTION = 10
DONE_RE = re.compile(rb"filesize\s*:\s*(\d+)")
HEAD_BYTES = 4096
MARKERS = (".done", ".complete")  # msprof's files written after a slice is complete
SLICE_RE = re.compile(r"slice_(\d+)$")
# host record kinds with a count field and the capacity of the array it counts
DECLARED_COUNTS = {"additional.context_id_info": ("ctx_id_num", 55), "additional.tensor_info": ("tensor_num", 5),
                   "additional.fusion_op_info": ("fusion_op_num", 8)}


# kind -> the kind it describes: the first is never written without the second (shared/realdata:
# 23 of 23 host dirs with tensor_info have node_basic_info; level0 captures have neither)
REQUIRES = {"additional.tensor_info": "compact.node_basic_info"}


def check_companions(kinds, warnings: WarningLog) -> None:
    """A kind present without the kind it describes (``REQUIRES``): the other was removed, and
    what it gave (op names, types, shapes joined to tasks) is missing.  ``kinds``: the data
    dir's registry.KindReader."""
    for tag, needs in REQUIRES.items():
        if kinds.present(tag) and not kinds.present(needs):
            warnings.tally("raw kinds present without the kind they describe (removed? op names and types are "
                           "missing)", 1, f"{kinds.label(tag)} byte 0 ({needs} absent)")


def check_slices(stream: "Stream", sizes: list[int], itemsize: int, maps: list[np.ndarray],
                 warnings: WarningLog) -> None:
    """Duplicated slices, a partial record in the middle of a stream whose other slices hold
    whole records, gaps in the slice numbers, sizes that disagree with msprof's ``.done`` files.
    ``maps``: the slices' read-only memory maps (compared only when size and first 4 KB match)."""
    if len(stream.paths) > 1:
        seen: dict[tuple[int, bytes], int] = {}
        dups = []
        for i, (m, size) in enumerate(zip(maps, sizes)):
            if size == 0:
                continue
            key = (size, hashlib.blake2b(m[:HEAD_BYTES].tobytes(), digest_size=16).digest())
            j = seen.get(key)
            if j is not None and np.array_equal(maps[j], m):
                dups.append((i, j))
            else:
                seen.setdefault(key, i)
        if dups:
            i, j = dups[0]
            warnings.tally("slices with the same bytes as an earlier slice (copied? their records count twice)",
                           len(dups), f"{stream.paths[i]} byte 0 (same as {stream.paths[j].name})")
        whole = [s % itemsize == 0 for s in sizes]
        torn = [i for i in range(len(sizes) - 1) if not whole[i]]
        if torn and sum(whole) >= 2:  # whole-record slices are the rule here, so a torn one is damage
            i = torn[0]
            warnings.tally("slices holding a partial record between slices of whole records (bytes inserted "
                           "or cut?)", len(torn), f"{stream.paths[i]} byte {sizes[i] - sizes[i] % itemsize}")
    numbered = [(int(m.group(1)), p) for p in stream.paths if (m := SLICE_RE.search(p.name))]
    gaps = [(a, b, p) for (a, _), (b, p) in zip(numbered, numbered[1:]) if b > a + 1]
    if gaps:
        a, b, after = gaps[0]
        warnings.tally("gaps in a stream's slice numbers (slices removed? records are missing there)",
                       sum(b - a - 1 for a, b, _ in gaps), f"{after} byte 0 (slice_{a + 1} .. slice_{b - 1} missing)")
    check_done(stream.paths, sizes, warnings)


def check_done(paths: list[Path], sizes: list[int], warnings: WarningLog) -> None:
    """Slices (binary or the text dictionaries) whose size differs from msprof's ``.done`` file."""
    bad = []
    for path, size in zip(paths, sizes):
        declared = _done_size(path)
        if declared is not None and declared != size:
            bad.append((path, size, declared))
    if bad:
        path, size, declared = bad[0]
        warnings.tally("slices whose size differs from their .done file", len(bad),
                       f"{path} byte {min(size, declared)} ({size} bytes, .done says {declared})")


def check_markers(data_dir: Path, warnings: WarningLog, name_re: re.Pattern) -> None:
    """Files whose ``.done`` / ``.complete`` marker is in ``data_dir`` but the file itself is not:
    msprof writes the marker after its file, so the file was removed or renamed and what it held
    is missing (an optional kind or sample.json removed whole would otherwise go unnoticed).
    ``name_re``: the names checked (raw.files: this side's raw slices, or the metadata files).
    All such files of a PROF dir count as one kind of problem."""
    try:
        names = set(os.listdir(data_dir))
    except OSError:
        return
    missing = sorted({base for n in names for suffix in MARKERS if n.endswith(suffix)
                      and name_re.match(base := n[:-len(suffix)]) and base not in names})
    if missing:
        marker = next(f"{missing[0]}{s}" for s in MARKERS if f"{missing[0]}{s}" in names)
        warnings.tally("files missing although their .done / .complete marker is there (removed or renamed? "
                       "what they held is missing)", len(missing), f"{data_dir / missing[0]} (only {marker} found)")


def _done_size(path: Path) -> int | None:
    try:
        with open(path.with_name(path.name + ".done"), "rb") as f:
            m = DONE_RE.search(f.read(4096))
    except OSError:
        return None
    return int(m.group(1)) if m else None


def check_records(tag: str, parts, ctx) -> None:
    """Record-level checks on raw fields (``parts``: registry's Parts of one kind; ``ctx``: its
    DecodeContext, with the dictionaries already loaded)."""
    warnings = ctx.warnings
    if not len(parts):
        return
    if tag == "compact.node_basic_info":
        known = _u64(ctx.dicts.hashes.keys())
        miss = np.flatnonzero(~member(parts.col("op_name", np.uint64), known))
        if len(miss):
            path, off = parts.where(int(miss[0]))
            warnings.tally("op records whose name is not in hash_dic (hash_dic missing or damaged? names shown as "
                           "numbers)", len(miss), f"{path} byte {off}")
        miss = np.flatnonzero(~member(parts.col("op_type", np.uint64), known))
        if len(miss):
            path, off = parts.where(int(miss[0]))
            warnings.tally("op records whose op type is not in hash_dic (a damaged record or hash_dic? op types "
                           "shown as numbers)", len(miss), f"{path} byte {off}")
    if tag == "compact.task_track":
        # 0 = no kernel (a memcpy, an event); any other hash must be in hash_dic, or the task's
        # op name falls back to its runtime type (Ascend C kernels launched directly)
        kernel = parts.col("kernel_name", np.uint64)
        miss = np.flatnonzero((kernel != 0) & ~member(kernel, _u64(ctx.dicts.hashes.keys())))
        if len(miss):
            path, off = parts.where(int(miss[0]))
            warnings.tally("runtime task records whose kernel name is not in hash_dic (hash_dic missing or "
                           "damaged? kernel names shown as N/A)", len(miss), f"{path} byte {off}")
    if tag == "compact.task_track" and ctx.dicts.types:
        # the runtime task type names come from type_info_dic at level 5000 (raw.common.LEVEL_RUNTIME);
        # no dictionary at all is reported once, for the API records
        known = _u64(t for lv, t in ctx.dicts.types if lv == LEVEL_RUNTIME and 0 <= t < 2**32)
        miss = np.flatnonzero(~member(parts.col("task_type", np.uint64) & np.uint64(0xFFFFFFFF), known))
        if len(miss):
            path, off = parts.where(int(miss[0]))
            warnings.tally("runtime task records whose task type is not in type_info_dic (a damaged record or "
                           "type_info_dic? task types shown as numbers)", len(miss), f"{path} byte {off}")
    if tag == "api_event.data":
        known = _u64((lv << 32) | t for lv, t in ctx.dicts.types if 0 <= lv < 2**32 and 0 <= t < 2**32)
        key = (parts.col("level", np.uint64) << np.uint64(32)) | parts.col("type", np.uint64)
        miss = np.flatnonzero(~member(key, known))
        if len(miss):
            path, off = parts.where(int(miss[0]))
            warnings.tally("API records whose type is not in type_info_dic (type_info_dic missing or damaged? "
                           "names shown as numbers)", len(miss), f"{path} byte {off}")
    if tag in DECLARED_COUNTS:
        name, cap = DECLARED_COUNTS[tag]
        over = np.flatnonzero(parts.col(name, np.uint64) > cap)
        if len(over):
            path, off = parts.where(int(over[0]))
            warnings.tally(f"records declaring more ids than they hold ({name} > {cap}; the extra ones are "
                           "ignored)", len(over), f"{path} byte {off}")
    if tag == "api_event.data":
        start, end = parts.col("timestamp", np.uint64), parts.col("end", np.uint64)
        neg = np.flatnonzero(end < start)
        if len(neg):
            path, off = parts.where(int(neg[0]))
            warnings.tally("API calls ending before they start", len(neg), f"{path} byte {off}")


def _u64(values) -> np.ndarray:
    """Dictionary keys as uint64 (a damaged line may hold a number past 64 bits: skipped)."""
    return np.array([v for v in values if 0 <= v < 2**64], dtype=np.uint64)


def check_sync_point(warnings: WarningLog, where: str, cntvct: int, mhz: Fraction, mono_ns: int) -> None:
    """A start log's ``cntvct`` (at ``mhz``) and ``clock_monotonic_raw`` are one moment on two
    clocks that both count from boot; far apart, one of them was edited or damaged and every time
    converted through this sync point is shifted (by up to the machine's uptime)."""
    counter_ns = cntvct * 1000 * mhz.denominator // mhz.numerator
    if abs(counter_ns - mono_ns) > max(SYNC_SLACK_NS, mono_ns // SYNC_SLACK_FRACTION):
        warnings.tally("start logs whose counter and monotonic clock disagree (a value edited or damaged? "
                       "the times of that dir are shifted)", 1,
                       f"{where}: cntvct {cntvct} is {counter_ns / 1e9:.3f} s at {float(mhz):g} MHz, "
                       f"clock_monotonic_raw {mono_ns / 1e9:.3f} s")


def check_same_moment(warnings: WarningLog, where: str, start_ns: int, log_where: str, log_ns: int) -> None:
    """start_info's clockMonotonicRaw and the start log's clock_monotonic_raw are taken together
    at collection start; far apart, one was edited and the dir's times are shifted."""
    if abs(start_ns - log_ns) > SYNC_SLACK_NS:
        warnings.tally("start_info and host_start.log taken far apart (a clock value edited or damaged? the "
                       "times of that dir are shifted)", 1,
                       f"{where}: clockMonotonicRaw {start_ns / 1e9:.3f} s, {log_where} clock_monotonic_raw "
                       f"{log_ns / 1e9:.3f} s")


def check_window(warnings: WarningLog, what: str, where: str, times_ns: np.ndarray, begin_ns: int, end_ns: int,
                 ident=None) -> None:
    """Times more than an hour before collectionTimeBegin or after collectionTimeEnd (when
    known): a wrapped counter or a flipped bit, not a real event.  ``ident(i)``: how to name
    row ``i`` in the message (e.g. "stream 3 task 17")."""
    t = np.asarray(times_ns, np.int64)
    if not len(t) or begin_ns <= 0:
        return
    bad = t < begin_ns - WINDOW_SLACK_NS
    if end_ns > 0:
        bad |= t > end_ns + WINDOW_SLACK_NS
    idx = np.flatnonzero(bad)
    if len(idx):
        i = int(idx[0])
        name = f" ({ident(i)})" if ident is not None else ""
        warnings.tally(f"{what} outside the collection window", len(idx), f"{where}{name}: {int(t[i])} ns")


def check_order(warnings: WarningLog, what: str, where: str, dur: np.ndarray, ident=None) -> None:
    """Rows whose end is before their start (negative duration)."""
    idx = np.flatnonzero(np.asarray(dur) < 0)
    if len(idx):
        i = int(idx[0])
        name = f" ({ident(i)})" if ident is not None else ""
        warnings.tally(f"{what} ending before they start", len(idx), f"{where}{name}")
