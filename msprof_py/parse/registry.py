"""The registry of raw record kinds: one entry per kind of file found in a ``data/`` dir.

Each :class:`Kind` names its file tag (``{aging|unaging}.{tag}.slice_N`` on the host,
``{tag}.{device}.slice_N`` on a device), its record dtype (from :mod:`msprof_py.raw`), its
decoder (``decode(parts, ctx) -> columns``, from :mod:`msprof_py.parse.records`), the table it
makes and where that table joins.  A kind whose ``decode`` is None is one real captures hold
but msprof_py does not use: it is reported once per PROF dir.  Adding a kind = one decoder
module + one :func:`register` call (or one entry in ``KINDS``).

:class:`KindReader` discovers the files of one ``data/`` dir once and decodes each kind on
first use (slices memory-mapped, records viewed with the kind's dtype: no per-record Python).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from msprof_py.errors import WarningLog
from msprof_py.parse import plausible, reader
from msprof_py.parse.records import aicpu, l2_cache, msproftx
from msprof_py.parse.records import (api_event, context_id_info, expand_stream_spec, ffts_profile, lpm_info,
                                     node_basic_info, simple, stars_soc, task_track, tensor_info, ts_track)
from msprof_py.parse.records.parts import DecodeContext, Parts
from msprof_py.raw import ffts_profile as raw_ffts, files as raw_files, lpm_info as raw_lpm
from msprof_py.raw import aicpu as raw_aicpu, l2_cache as raw_l2, msproftx as raw_tx
from msprof_py.raw import (api_event as raw_api, context_id_info as raw_ctx, expand_stream_spec as raw_expand,
                           fusion_op_info as raw_fusion, graph_id_map as raw_graph, hash_dic as raw_hash,
                           hccl_info as raw_hccl_info, hccl_op_info as raw_hccl_op, memcpy_info as raw_memcpy,
                           node_basic_info as raw_node, stars_soc as raw_stars, task_track as raw_task,
                           tensor_info as raw_tensor, ts_track as raw_ts)

HOST = "host"
DEVICE = "device"

Decoder = Callable[[Parts, DecodeContext], Any]
TextLoader = Callable[[Path, DecodeContext], None]


@dataclass(frozen=True)
class Kind:
    """One raw record kind."""

    side: str  # HOST or DEVICE
    tag: str  # file tag, e.g. "compact.task_track", "stars_soc.data"
    dtype: np.dtype | None  # record layout; None for text kinds (``text`` set) and unused kinds
    decode: Decoder | None  # None: known, not used by msprof_py (reported once)
    table: str  # the table the decoder makes (a key of HostData/DeviceData.tables)
    joins: str  # where that table joins (documentation)
    text: TextLoader | None = None  # text kinds (dictionaries): merged into the DecodeContext


KINDS: list[Kind] = [
    # host: text dictionaries first (every other host decoder resolves names through them)
    Kind(HOST, raw_hash.HASH_FILE_TAG, None, None, "dicts.hashes", "names of every hash column",
         text=lambda p, ctx: ctx.dicts.add_hash_file(p, ctx.warnings)),
    Kind(HOST, raw_hash.TYPE_FILE_TAG, None, None, "dicts.types", "API / task type names by (level, type)",
         text=lambda p, ctx: ctx.dicts.add_type_file(p, ctx.warnings)),
    Kind(HOST, raw_expand.FILE_TAG, raw_expand.DTYPE, expand_stream_spec.decode, "expand_stream_spec",
         "DecodeContext.expand_status -> STARS stream/task id decoding"),
    Kind(HOST, raw_api.FILE_TAG, raw_api.DTYPE, api_event.decode, "api", "call tree (thread, time containment)"),
    Kind(HOST, raw_task.FILE_TAG, raw_task.DTYPE, task_track.decode, "host_tasks",
         "its Runtime API (call tree); device tasks on (device, stream, task, batch)"),
    Kind(HOST, raw_node.FILE_TAG, raw_node.DTYPE, node_basic_info.decode, "node_info", "its Node-level API"),
    Kind(HOST, raw_tensor.FILE_TAG, raw_tensor.DTYPE, tensor_info.decode, "tensor_info", "its Node-level API"),
    Kind(HOST, raw_ctx.FILE_TAG, raw_ctx.DTYPE, context_id_info.decode, "context_ids",
         "its Node-level API -> one host task row per context id"),
    Kind(HOST, raw_hccl_op.FILE_TAG, raw_hccl_op.DTYPE, simple.hccl_op_info, "hccl_op_info", "its Node-level API"),
    Kind(HOST, raw_hccl_info.FILE_TAG, raw_hccl_info.DTYPE, simple.hccl_info, "hccl_info",
         "its HCCL-level API; k-th record <-> k-th task under it"),
    Kind(HOST, raw_memcpy.FILE_TAG, raw_memcpy.DTYPE, simple.memcpy_info, "memcpy", "its Runtime API"),
    Kind(HOST, raw_fusion.FILE_TAG, raw_fusion.DTYPE, simple.fusion_op_info, "fusion", "its Model-level API"),
    Kind(HOST, raw_graph.FILE_TAG, raw_graph.DTYPE, simple.graph_id_map, "graph_ids", "model id"),
    Kind(HOST, raw_tx.FILE_TAG, raw_tx.DTYPE, msproftx.decode, "msproftx",
         "none: host-clock marks and ranges of the profiled process (parse.counters)"),
    # device
    Kind(DEVICE, raw_stars.FILE_TAG, raw_stars.DTYPE, stars_soc.decode, "device_tasks",
         "host tasks on (stream, task, context, batch)"),
    Kind(DEVICE, raw_ts.FILE_TAG, raw_ts.PREFIX_DTYPE, ts_track.decode, "ts_track",
         "steps (model, iteration); flips -> batch ids"),
    Kind(DEVICE, raw_ffts.FILE_TAG, raw_ffts.DTYPE, ffts_profile.decode, "ffts_pmu",
         "device tasks on (stream, task, context) + time window -> parse.pmu (PmuAssociation)"),
    Kind(DEVICE, raw_lpm.FILE_TAG, raw_lpm.DTYPE, lpm_info.decode_info, "freq_info",
         "AICORE_FREQ / AI Core Freq track; PMU times on non-910B chips"),
    Kind(DEVICE, raw_lpm.FREQ_FILE_TAG, raw_lpm.DTYPE, lpm_info.decode_freq, "freq_conv", "PMU times on the 910B"),
    Kind(DEVICE, raw_aicpu.FILE_TAG, raw_aicpu.NODE_DTYPE, aicpu.decode, "aicpu",
         "AI CPU runs: device tasks on (stream, task) with the run's end in the task window (parse.counters)"),
    Kind(DEVICE, raw_l2.FILE_TAG, raw_l2.DTYPE, l2_cache.decode, "l2_cache",
         "op names on (stream, task) (parse.counters)"),
    Kind(DEVICE, "aicore.data", None, None, "pmu", "AI Core PMU counters (not decoded)"),
    Kind(DEVICE, "aiVectorCore.data", None, None, "pmu", "AI Vector Core PMU counters (not decoded)"),
]


def register(kind: Kind) -> None:
    """Add ``kind`` (or replace the entry of the same side and tag, e.g. a kind that was listed
    as not used and now has a decoder)."""
    for i, k in enumerate(KINDS):
        if (k.side, k.tag) == (kind.side, kind.tag):
            KINDS[i] = kind
            return
    KINDS.append(kind)


def lookup(side: str, tag: str) -> Kind | None:
    for k in KINDS:
        if (k.side, k.tag) == (side, tag):
            return k
    return None


class KindReader:
    """The raw kinds of one ``data/`` dir, discovered once, decoded on first use.

    ``unused``: registered kinds present whose decoder is None; ``unknown``: tags (or file names)
    no entry describes.  Both are reported by the caller, once per PROF dir."""

    def __init__(self, side: str, data_dir: Path, ctx: DecodeContext, device_id: int | None = None) -> None:
        self.side, self.data_dir, self.ctx, self.device_id = side, data_dir, ctx, device_id
        self._streams: dict[str, list[reader.Stream]] = {}
        names = reader.list_data(data_dir)
        matched: set[str] = set()
        if side == HOST:
            for (tag, _aging), s in reader.discover_host(data_dir).items():  # aging first, as msprof
                self._streams.setdefault(tag, []).append(s)
                matched.update(p.name for p in s.paths)
        else:
            for (tag, dev), s in reader.discover_device(data_dir).items():
                matched.update(p.name for p in s.paths)
                if device_id is not None and dev != device_id:
                    ctx.warnings.warn(f"{s.paths[0]}: data of device {dev} inside {data_dir.parent.name}; ignored")
                    continue
                self._streams.setdefault(tag, []).append(s)
        plausible.check_markers(data_dir, ctx.warnings,
                                raw_files.HOST_DATA_RE if side == HOST else raw_files.DEVICE_DATA_RE)
        self.unused = sorted(t for t in self._streams if (k := lookup(side, t)) and k.decode is None and k.text is None)
        self.unknown = sorted([t for t in self._streams if lookup(side, t) is None]
                              + [n for n in names if n not in matched])
        self._cache: dict[str, Any] = {}
        self._ahead: dict[str, dict[str, Any]] = {}  # tags decoded on a thread (prefetch)
        self._thread: threading.Thread | None = None

    def prefetch(self, tags: list[str]) -> None:
        """Decode the present ``tags`` (in this order) on a thread, each taken by :meth:`get` at
        its turn: the result, or the error raised there; the warnings of each decode given into
        the reader's log at that point, so the log reads as if decoded in line.  For kinds that
        need only the dictionaries (the host's task_track, node_basic_info, tensor_info and
        context ids, decoded while the API calls are: the single-op million's 4.2 M of them keep
        one core busy for ~1.5 s while the other idles).  Call after :meth:`load_text`."""
        todo = [t for t in tags if t in self._streams and t not in self._cache and t not in self._ahead
                and (k := lookup(self.side, t)) is not None and k.decode is not None]
        if not todo or self._thread is not None:
            return
        for tag in todo:
            self._ahead[tag] = {"log": WarningLog(), "done": threading.Event()}

        def run() -> None:
            for tag in todo:
                box = self._ahead[tag]
                ctx = DecodeContext(dicts=self.ctx.dicts, warnings=box["log"], expand_status=self.ctx.expand_status)
                try:
                    box["out"] = lookup(self.side, tag).decode(self.parts(tag, ctx), ctx)
                except BaseException as err:  # noqa: BLE001  (raised by get(), on the caller's thread)
                    box["err"] = err
                box["done"].set()

        # a daemon: an error elsewhere does not wait for decodes nobody takes
        self._thread = threading.Thread(target=run, name="msprof-py-kinds", daemon=True)
        self._thread.start()

    def settle(self) -> None:
        """Wait for the prefetch thread (e.g. before a fork); its results stay to be taken."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def present(self, tag: str) -> bool:
        return tag in self._streams

    def load_text(self) -> None:
        """Merge the text kinds (dictionaries) into the context; call before any ``get``."""
        for k in KINDS:
            if k.side == self.side and k.text is not None:
                for s in self._streams.get(k.tag, []):
                    for path in s.paths:
                        k.text(path, self.ctx)

    def parts(self, tag: str, ctx: DecodeContext | None = None) -> Parts:
        """The records of ``tag`` (raises CorruptRecordError on a bad host record)."""
        ctx = ctx if ctx is not None else self.ctx
        kind = lookup(self.side, tag)
        if kind is None or kind.dtype is None:
            raise KeyError(f"no record layout registered for {self.side} kind {tag!r}")
        streams = self._streams.get(tag, [])
        decoded = [reader.read_records(s, kind.dtype, ctx.warnings, host=self.side == HOST) for s in streams]
        parts = Parts(decoded, kind.dtype, self.label(tag))
        plausible.check_records(tag, parts, ctx)  # warns only; values are kept as decoded
        return parts

    def label(self, tag: str) -> str:
        """Where ``tag``'s records come from, for messages: its first slice file."""
        streams = self._streams.get(tag, [])
        return str(streams[0].paths[0]) if streams else str(self.data_dir / tag)

    def get(self, tag: str) -> Any:
        """The decoded table of ``tag`` (decoded once; an absent kind decodes to empty columns)."""
        if tag not in self._cache and tag in self._ahead:
            box = self._ahead.pop(tag)
            box["done"].wait()
            if not self._ahead:
                self.settle()
            self.ctx.warnings.replay(box["log"])
            if "err" in box:
                raise box["err"]
            self._cache[tag] = box["out"]
        if tag not in self._cache:
            kind = lookup(self.side, tag)
            if kind is None or kind.decode is None:
                raise KeyError(f"no decoder registered for {self.side} kind {tag!r}")
            self._cache[tag] = kind.decode(self.parts(tag), self.ctx)
        return self._cache[tag]

    def drop(self, *tags: str, tables: tuple[str, ...] = ()) -> None:
        """Drop the decoded tables of ``tags`` and of the kinds named ``tables`` (used up: their
        columns are in the caller's tables), before the whole reader is released."""
        for tag in list(self._cache):
            k = lookup(self.side, tag)
            if tag in tags or (k is not None and k.table in tables):
                del self._cache[tag]

    def release(self) -> None:
        """Drop the decoded tables (and with them the slices' memory maps); what was present
        stays known for :func:`report`.  Called once a dir's tables are built: a reader kept for
        the report must not keep every decoded column of its dir alive."""
        self.settle()
        self._ahead.clear()
        self._cache.clear()

    def extra_tables(self, core: set[str]) -> dict[str, Any]:
        """Decoded tables of every present kind with a decoder that is not in ``core`` (kinds
        registered by other features, e.g. PMU counters), keyed by their ``table`` name."""
        out = {}
        for tag in self._streams:
            k = lookup(self.side, tag)
            if k is not None and k.decode is not None and tag not in core:
                out[k.table] = self.get(tag)
        return out


def report(prof: Path, readers: list[KindReader], warnings) -> None:
    """One warning naming the kinds present but not used, one naming the unknown ones."""
    unused = [f"{r.data_dir.parent.name}: {', '.join(r.unused)}" for r in readers if r.unused]
    if unused:
        warnings.warn(f"{prof}: raw kinds present but not used by msprof_py: {'; '.join(unused)}")
    unknown = [f"{r.data_dir.parent.name}: {', '.join(r.unknown)}" for r in readers if r.unknown]
    if unknown:
        warnings.warn(f"{prof}: unknown raw file kinds ignored: {'; '.join(unknown)}")


__all__ = ["Kind", "KINDS", "KindReader", "register", "lookup", "report", "HOST", "DEVICE"]
