"""One PROF dir read device by device: the host tables once, then each device's tables alone.

Why: the whole session of a PROF dir grows with the run (every device's tasks, PMU rows...).
An export needs, at any time, the host tables (API calls, memcpy, fusion ops, device info) and
the tables of the one device it is writing, so :class:`ProfSource` decodes (or reads from the
parse cache) the host side once and then one device at a time; the caller drops a device's
session before asking for the next.  Peak memory is then host + one device, whatever the number
of devices.

The parse cache (:mod:`msprof_py.parse.cache`) keeps the same parts: ``session.pkl`` (the host
tables, the device ids, each device's :func:`part_meta` and every parse warning, written last)
and ``device_{id}.pkl`` per device.  :func:`cached_tables` assembles the whole session from them
exactly as one build of every device gives it (:func:`msprof_py.parse.build.assemble`).

Warnings keep the order of a whole build: the host's, then each device's in device order
(:meth:`ProfSource.add` replays a device's log, tallies included), then those given once every
device is built (:meth:`ProfSource.finish`).
"""
from __future__ import annotations

import os
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd

from msprof_py.errors import WarningLog
from msprof_py.parse import build, cache
from msprof_py.parse.session import Session

HOST_TABLES = ("api", "memcpy", "fusion_ops", "devices", "msproftx")


def part_name(device_id: int) -> str:
    return f"device_{device_id}"


def part_meta(part: dict[str, pd.DataFrame], readers: list[Any]) -> dict[str, Any]:
    """What the rest of an export needs to know of a device without its tables: the categories
    of its task columns (the whole session's are their sorted union), whether it has data, the
    signature of its PMU table and the raw kinds its readers did not use (picklable)."""
    t = part["tasks"]
    return {"cats": {c: [str(x) for x in t[c].cat.categories] for c in t.columns
                     if isinstance(t[c].dtype, pd.CategoricalDtype)},
            "has_data": build.has_data(part),
            "pmu": pmu_signature(part["pmu"]),
            "all_reduce": part["all_reduce"],  # small (one row per all-reduce); exporters of a
            # device number its reduces after those of the devices before it
            "readers": [SimpleNamespace(data_dir=r.data_dir, unused=list(r.unused), unknown=list(r.unknown))
                        for r in readers if r is not None]}


def pmu_signature(p: pd.DataFrame) -> tuple[Any, ...] | None:
    """What decides a device's TASK_PMU_INFO rows besides its values (the ``pmu`` table's
    columns, their dtypes, the columns with a value): a DB written one device at a time equals
    the whole session's only when every device with PMU rows has the same."""
    if not len(p):
        return None
    # (the columns with a value = ``p.dropna(axis=1, how="all").columns``, without that frame: B' 23 -> 7 ms a device)
    return (tuple(p.columns), tuple(str(t) for t in p.dtypes), tuple(c for i, c in enumerate(p.columns) if p.iloc[:, i].notna().any()))


def replay(into: WarningLog, log: WarningLog) -> None:
    """Add ``log``'s messages to ``into`` as if they had been given to it (tallies add up)."""
    into.replay(log)


def cached_tables(prof: Path, key: str) -> dict[str, Any] | None:
    """The whole session's tables (and ``warnings``) from the cache, or None when a part is
    missing, stale or unreadable."""
    index = cache.load(prof, key)
    if not isinstance(index, dict) or "devices" not in index:
        return None
    parts = []
    for d in index["devices"]:
        part = cache.load(prof, key, part_name(d))
        if part is None:
            return None
        parts.append(part)
    return {**build.assemble(index["host"], parts), "warnings": list(index["warnings"])}


class PartWriter:
    """Stores each device part as it is built, then the index (host tables, device ids, metas,
    warnings).  A part that cannot be written stops the caching (one warning, added last).

    A part may be stored on a thread (``background``, started by :meth:`start` once the caller
    has done reading it) while the caller goes on, e.g. to decode the next device on the other
    core: pickling a part is mostly the write of its arrays to the page cache (A: 79 MB, 60-130 ms
    a device), during which the GIL is free.  The store is waited for before the next part's and
    before the index (written last: a cache whose index is there has every part)."""

    def __init__(self, prof: Path, key: str) -> None:
        self.prof, self.key = prof, key
        self.devices: list[int] = []
        self.meta: dict[int, dict[str, Any]] = {}
        self.failed = WarningLog()
        self._pending: tuple[dict[str, pd.DataFrame], str] | None = None
        self._storing: threading.Thread | None = None
        self._error: BaseException | None = None
        self._warnings: WarningLog | None = None  # given to finish(background=True), completed by settle()
        self._held: threading.Thread | None = None  # finish(hold=True)'s store, not started until release()
        _WRITERS.add(self)

    def device(self, device_id: int, part: dict[str, pd.DataFrame], readers: list[Any] | None = None,
               background: bool = False) -> None:
        self.devices.append(device_id)
        self.meta[device_id] = part_meta(part, readers or [])
        self.wait()
        if self.failed:
            return
        self._pending = (part, part_name(device_id))
        if not background:
            self.wait()

    def start(self) -> None:
        """Store the part given last on a thread (the caller no longer reads its tables: pickling
        reads them)."""
        if self._pending is not None and self._storing is None:
            self._storing = threading.Thread(target=self._store, args=self._pending,
                                             name="msprof-py-cache")  # not a daemon: a part is never cut short
            self._pending = None
            self._storing.start()

    def _store(self, part: dict[str, pd.DataFrame], name: str) -> None:
        try:
            cache.store(self.prof, self.key, part, self.failed, part=name)
        except BaseException as err:  # noqa: BLE001  (raised by wait(), on the caller's thread)
            self._error = err

    def wait(self) -> None:
        """Until the part given last is written (here when not started; its error raised here)."""
        if self._pending is not None:
            part, name = self._pending
            self._pending = None
            cache.store(self.prof, self.key, part, self.failed, part=name)
        self._join()

    def _join(self) -> None:
        """Until the thread's store is done (its error raised here; a held store started first)."""
        self.release()
        if self._storing is not None:
            self._storing.join()
            self._storing = None
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def finish(self, host: dict[str, pd.DataFrame], warnings: WarningLog, background: bool = False,
               hold: bool = False) -> None:
        """Write the index with the complete ``warnings``; then add a failure to write to them.

        ``background``: the part still pending (a one-device dir's, which the export reads
        anyway) and the index are written on a thread while the caller goes on (the million:
        device_0.pkl 393 MB and session.pkl 359 MB, ~1.2 s of the main thread before its first
        file, with the GIL free for most of it); :meth:`settle` waits for them and adds a
        failure to ``warnings``.  The thread pickles shallow copies of the tables (pandas'
        copy-on-write: the caller may add or replace columns meanwhile).  ``hold`` (with
        ``background``): the thread is started by :meth:`release` (the export forks its DB process
        first: no thread may run at a fork), or by :meth:`settle`."""
        for m in self.meta.values():
            m["readers"] = []  # reported already; not needed from the cache
        index = {"host": host, "devices": list(self.devices), "meta": self.meta, "warnings": list(warnings.messages)}
        if not background:
            self.wait()
            self._index(index)
            warnings.extend(self.failed)
            return
        self._join()  # (a part started on the thread before: its store comes first)
        self._warnings = warnings
        if self._pending is not None:
            part, name = self._pending
            self._pending = ({k: _snapshot(v) for k, v in part.items()}, name)
        index["host"] = {k: _snapshot(v) for k, v in host.items()}
        thread = threading.Thread(target=self._finish, args=(self._pending, index), name="msprof-py-cache")
        self._pending = None
        if hold:
            self._held = thread
        else:
            self._storing = thread
            thread.start()

    def release(self) -> None:
        """Start the store :meth:`finish` was asked to hold."""
        if self._held is not None:
            self._storing, self._held = self._held, None
            self._storing.start()

    def _forget(self) -> None:
        """In a process forked while a store is held: never written here (the export's process
        writes it), and its tables not kept alive by it."""
        self._held = None

    def _finish(self, pending: tuple[dict[str, pd.DataFrame], str] | None, index: dict[str, Any]) -> None:
        try:
            # (past the page cache: the export holds these tables, it reads neither file back)
            if pending is not None:
                cache.store(self.prof, self.key, pending[0], self.failed, part=pending[1], direct=True)
            self._index(index, direct=True)
        except BaseException as err:  # noqa: BLE001  (raised by settle(), on the caller's thread)
            self._error = err

    def _index(self, index: dict[str, Any], direct: bool = False) -> None:
        if not self.failed:
            cache.store(self.prof, self.key, index, self.failed, direct=direct)

    def busy(self) -> bool:
        """Whether a store runs on the thread (or is held for it)."""
        return self._storing is not None or self._held is not None

    def settle(self) -> None:
        """After ``finish(background=True)``: wait for the thread, raise its error, add a
        failure to write to the warnings."""
        warnings, self._warnings = self._warnings, None
        self.wait()
        if warnings is not None:
            warnings.extend(self.failed)


_WRITERS: weakref.WeakSet[PartWriter] = weakref.WeakSet()


def _forget_held() -> None:
    for w in list(_WRITERS):
        w._forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_held)


def _snapshot(df: Any) -> Any:
    return df.copy(deep=False) if isinstance(df, pd.DataFrame) else df


@dataclass
class DevicePart:
    """What building one device gives besides its tables: its meta and warnings (small, so a
    worker process can send it back)."""

    device_id: int
    meta: dict[str, Any]
    warnings: WarningLog = field(default_factory=WarningLog)


class ProfSource:
    """The host tables of ``prof`` (:attr:`host`, a session without device rows) and each
    device's session on demand (:meth:`build` in device order, then :meth:`finish`; afterwards
    :meth:`device` reads a device again, e.g. for the DB).  ``ahead``: see
    :func:`msprof_py.parse.build.build_host` (for a dir whose devices are built in this process)."""

    def __init__(self, prof: Path, use_cache: bool = True, ahead: bool = False) -> None:
        self.prof = prof
        self.use_cache = use_cache
        self.key = cache.fingerprint(prof)
        self.warnings = WarningLog()
        self.stage: build.HostStage | None = None
        index = cache.load(prof, self.key) if use_cache else None
        self.cached = isinstance(index, dict) and "devices" in index
        if self.cached:
            assert isinstance(index, dict)
            host, self.devices = index["host"], [int(d) for d in index["devices"]]
            self.meta: dict[int, dict[str, Any]] = dict(index["meta"])
            self.warnings = WarningLog(list(index["warnings"]))
        else:
            # ahead: each device's raw decode on a thread ahead of its turn (built in this process)
            self.stage = build.build_host(prof, self.warnings, ahead)
            host, self.devices, self.meta = self.stage.tables, list(self.stage.units), {}
        self.writer = PartWriter(prof, self.key) if use_cache and not self.cached else None
        dev_ids = set(pd.to_numeric(host["devices"]["device_id"]).astype("int64").tolist()) \
            if len(host["devices"]) else set()
        self.all_devices = tuple(sorted(dev_ids | set(self.devices)))
        self.host = Session.from_tables(path=prof, **host)
        self.host.all_devices = self.all_devices
        self.finished = False
        # the tables of a one-device dir just built: an export reads that device again right away
        # (:meth:`device`), so they are handed over instead of read back from the cache
        self._kept: tuple[int, dict[str, pd.DataFrame]] | None = None

    def session(self, part: dict[str, pd.DataFrame]) -> Session:
        """A session of the host tables and one device's (``part``); once every device is built,
        with the small tables and facts of every device (``all_reduce``, ``device_facts``)."""
        tables = {name: getattr(self.host, name) for name in HOST_TABLES}
        s = Session.from_tables(path=self.prof, **tables, **part)
        s.all_devices = self.all_devices
        if self.finished:
            s.all_reduce = self.host.all_reduce
            s.device_facts = self.host.device_facts
        return s

    def build(self, device_id: int, background: bool = False) -> tuple[Session, DevicePart]:
        """Device ``device_id``'s session, decoded (and cached) or read from the cache, with
        the warnings its decode gave (for :meth:`add`, in device order).  ``background``: the
        part (without PMU rows) is cached on a thread once :meth:`store` is called
        (:class:`PartWriter`; waited for by the next build and by :meth:`finish`)."""
        log = WarningLog()
        part = cache.load(self.prof, self.key, part_name(device_id)) if self.cached else None
        if part is not None:
            return self.session(part), DevicePart(device_id, self.meta.get(device_id) or part_meta(part, []), log)
        part, readers = build.build_device(self._stage(), device_id, log)
        if self.writer is not None:
            # not with PMU rows: such a part is large (B': ~2.6x A's), the next device's decode
            # peaks early (its PMU records), and the export of such a dir waits for its DB thread,
            # not for the main thread, so the store is not worth holding the part longer
            # a one-device dir's part is kept for the export anyway: pending until finish() stores it
            # with the index (on a thread: see PartWriter.finish)
            kept = self.devices == [device_id]
            self.writer.device(device_id, part, readers, kept or (background and not len(part["pmu"])))
            meta = self.writer.meta[device_id]
        else:
            meta = part_meta(part, readers)
        if self.devices == [device_id]:
            self._kept = (device_id, part)
        return self.session(part), DevicePart(device_id, meta, log)

    def store(self) -> None:
        """Start caching the part built last with ``background`` (its session no longer read)."""
        if self.writer is not None:
            self.writer.start()

    def add(self, info: DevicePart) -> None:
        """Take in what building a device gave (call in device order)."""
        replay(self.warnings, info.warnings)
        self.meta[info.device_id] = info.meta
        if self.writer is not None and info.device_id not in self.writer.meta:  # built in a worker process
            self.writer.devices.append(info.device_id)
            self.writer.meta[info.device_id] = info.meta

    def finish(self, background: bool = False, hold: bool = False) -> None:
        """Every device built and added: the warnings given last, DataError when the dir held
        no data at all, and the cache index (``background``: with a one-device dir's part, on a
        thread until :meth:`settle`; :meth:`PartWriter.finish`; ``hold``: that thread started by
        :meth:`release`, e.g. after a fork, or by :meth:`settle`).  Sessions made from now on
        carry every device's ``all_reduce`` rows and ``facts`` (see :meth:`session`)."""
        self.finished = True
        self.host.all_reduce = build.join_parts("all_reduce", [self.meta[d]["all_reduce"] for d in self.devices])
        self.host.device_facts = {d: self.meta[d].get("facts", {}) for d in self.devices}
        if self.cached:
            return
        assert self.stage is not None
        self.stage.ahead = None  # a device decoded again (the cache failed) is decoded in line
        readers = [r for d in self.devices for r in self.meta[d]["readers"]]
        build.finish(self.stage, readers, any(self.meta[d]["has_data"] for d in self.devices), self.warnings)
        if self.writer is not None:
            self.writer.devices = list(self.devices)
            self.writer.finish({name: getattr(self.host, name) for name in HOST_TABLES}, self.warnings, background,
                               hold)
            if not background:
                self._settled()
            else:  # the decoded host records go now (kept, they would outlive the thread's store); should
                self.stage = None  # the store fail, a device read again decodes the host side again

    def release(self) -> None:
        """Start the cache's store held by ``finish(hold=True)`` on its thread."""
        if self.writer is not None:
            self.writer.release()

    def settle(self, quiet: bool = False) -> None:
        """Wait for the cache written on a thread by ``finish(background=True)`` (its error raised
        here, a failure to write added to :attr:`warnings`).  Call before the warnings are read.
        ``quiet``: on the way out of another error (the thread's own dropped)."""
        if self.writer is not None and self.writer.busy():
            try:
                self.writer.settle()
            except BaseException:
                if not quiet:
                    raise
            self._settled()

    def _settled(self) -> None:
        assert self.writer is not None
        self.cached = not self.writer.failed
        if self.cached:
            self.stage = None  # the decoded host records: only needed to decode a device again

    def device(self, device_id: int, categories: dict[str, list[str]] | None = None) -> Session:
        """Device ``device_id``'s session again (after :meth:`finish`): from the cache, else
        decoded again (its warnings were given the first time).  ``categories``: the task
        columns' categories to set (:meth:`categories`: then every string function of the
        columns sees what it sees on the whole session)."""
        part = None
        if self._kept is not None and self._kept[0] == device_id and not categories:
            part = self._kept[1]  # once: a later read (the advice, the DB) comes from the cache
            self._kept = None
        elif self.use_cache:
            self.settle()  # (a part may still be written)
            part = cache.load(self.prof, self.key, part_name(device_id))
        if part is None:
            part, _ = build.build_device(self._stage(), device_id, WarningLog())
        if categories:
            t = part["tasks"]
            for c, values in categories.items():
                if c in t.columns and isinstance(t[c].dtype, pd.CategoricalDtype):
                    t[c] = t[c].cat.set_categories(values)
        return self.session(part)

    def categories(self) -> dict[str, list[str]]:
        """Per categorical task column, the whole session's categories (sorted union)."""
        out: dict[str, set[str]] = {}
        for d in self.devices:
            for c, values in self.meta[d]["cats"].items():
                out.setdefault(c, set()).update(values)
        return {c: sorted(v) for c, v in out.items()}

    def _stage(self) -> build.HostStage:
        if self.stage is None:  # a cached part went missing: decode the host side again
            self.stage = build.build_host(self.prof, WarningLog())
        return self.stage


__all__ = ["ProfSource", "DevicePart", "PartWriter", "cached_tables", "replay", "HOST_TABLES"]
