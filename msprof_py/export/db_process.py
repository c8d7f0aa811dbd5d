"""The unified DB of a one-process streamed export, written by forked processes beside the text
writers: the default on Linux for a collection whose host and largest device hold at most
``PROCESS_RAW_LIMIT`` of raw data (:func:`use_processes`); else the thread of
:mod:`msprof_py.export.db_thread`.  ``MSPROF_PY_DB_PROCESS=1`` / ``0`` force either way.

Why processes: the DB (``msprof_*.db``) is ~20-40 % of an export's CPU.  On a thread its SQLite
work runs on the second core, but its Python work (the insert lists, binding every parameter)
holds the GIL against the text writers: the two take turns on one GIL.  A forked process shares
no GIL.  Measured on a quiet 2-core machine (benchmarks/RESULTS.md, issue 12 phases 7 and 8):
collection A (1M tasks, 2 devices, 131 MB raw) 4.34 s against 4.74 s with the thread, the same
tasks with PMU data (B', 25 M TASK_PMU_INFO rows, 243 MiB raw) 11.0 s against 12.8 s and 4-5 s
less CPU, the single-op million 15.1 s against 19.1 s.

Why the size rule: the memory.  The processes' pages shared copy-on-write count once in the tree's
PSS but in every process's RSS, and a process forked with a device in memory maps all of the
export's heap (the interpreter's ~50 MB, the host tables, the device's tables).  The limit was
192 MiB until phase 10 of issue 12, when, after phase 8-10's memory work, the collections above it
were measured with the processes (quiet 2-core VM, benchmarks/RESULTS.md): the single-op million
(759 MB of host and device raw data) 9.45-9.60 s against 10.96-12.59 s on the thread, PSS
1.51-1.53 GB against 1.46 GB, sum of RSS 2.25 GB; the 10M-task collection (8 devices of ~290 MB
raw) 64.8 s against 101.4 s, sum of RSS 1,637 MB against 1,256 MB (largest process 919 MB), under
the 2 GB issue 12 allows.  The extra sum of RSS is about the host's and one device's raw data
(+0.78 GB for the million's 759 MB), so past 1 GiB of them (not measured) the thread stays the
default.

Why one process per device: a process forked when the export has read a device sees that
device's tables (and the host tables) copy-on-write, without a copy and without reading the
parse cache again: one device's tables in memory, shared.  Right after the fork it lets go of
what the DB does not read (:meth:`DbProcesses._own`: the task columns no DB table reads, the
export's own session objects; its freed heap handed back at once, ``memory.trim_at_once``), so
its RSS is the interpreter, the host tables and the DB's columns of the device.  The
processes take turns on the DB file, in device order, each going on from where the one before
stopped (:class:`msprof_py.export.unified_db_fill.Fill`): each waits until the one before has ended
(a pipe whose only writer is that process: end of file when it exits, killed or not), opens the
DB, reads the state the one before pickled (string ids, a device's COMPUTE_TASK_INFO columns),
adds its device and pickles the state again; the last one writes the tables after the devices'
and closes the DB.  A device before the last has its COMPUTE_TASK_INFO and TASK_PMU_INFO rows
inserted into the DB file by its own process at once (``Fill.early``: with the string ids their
tables' turn is predicted to give, mapped in place at that turn if the prediction missed): the last
process's work after the text files is the DB's critical path with PMU data (issue 12 phases 9
and 10, benchmarks/RESULTS.md; before phase 10 these rows were made in a second file and copied in
by the last process, ~0.6 s of its CPU on B'; the last device's rows on a thread of that process
beside its other tables, as the DB thread does, cost 1.3-2.8 s of CPU and 27-47 MB of tree PSS
more on B' in phase 9).  The export reads the next device only once the previous device's process
has ended (:meth:`DbProcesses.wait_room`), so at most one device's tables are in memory; it tells
that process first (closing a pipe), which then stops making rows and hands the tasks it has not
made over in a file (``pmu_db.hand_over``): the export does not wait ~0.7 s for it on B' (issue 12
phase 9b).  The next process inserts them first, before its own device's rows (``Fill._finish``),
so the DB file is given the same statements in the same order wherever the cut fell: the same
bytes in every run.  They are not the bytes of the DB written in one go (on a thread, or after the
text files): the same tables, rows, rowids and values, but those two tables' pages come before the
next device's TASK pages (README, "Unified DB").

Fork safety: the export forks between two devices, when no other thread of its own runs (the
text writers' chunk-writer threads and the row renderer's pool end with their file, the parse
cache's writer thread before the export's second pass; a test checks it), so no lock of theirs
is held in the new process.  What the new process touches: malloc (glibc locks its arenas
around ``fork``), the GIL and the import lock (CPython resets them in the child), numpy on its
own arrays (no thread pool), SQLite through connections of its own (the export's process uses
none while a DB process lives), the status and chain pipes, its scratch files; it imports
nothing new (its modules are imported with this one), prints only through stdout / stderr
objects of its own, and ends with ``os._exit`` (no atexit handler, no flush of the export's
buffers).  SIGINT is blocked across the fork and ignored in the new process before it is
unblocked: a Ctrl-C there would otherwise raise KeyboardInterrupt in the export's code it came
from (a test).

Errors: a process reports its result on a pipe; the export collects them after the text files
(:meth:`DbProcesses.result`, where the sequential export writes the DB): a DB error is the same
one-line error (a full disk names the DB), a process that died (killed, out of memory) is one
clear error, and the DB is renamed into place only when every process succeeded.  When the
export stops (an error, Ctrl-C: the processes ignore SIGINT, the export handles it)
:meth:`DbProcesses.stop` kills the processes still running and removes the scratch dir that
holds the DB under construction and its staging files.

Past 2 cores: one DB process runs at a time (SQLite writes one file from one connection), so the
DB uses one core whatever the machine has; the text writers use the rest (the main process, the
row renderer's threads, ``MSPROF_PY_WORKERS`` processes for several devices).
"""
from __future__ import annotations

import dataclasses
import os
import pickle
import shutil
import signal
import sqlite3
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from msprof_py.atomic import disk_full, scratch_dir
from msprof_py.errors import MsprofError
from msprof_py.export.db_thread import db_view
from msprof_py.export.parallel import WorkerDiedError, raise_error
from msprof_py.export.unified_db import connect, is_full
from msprof_py.export.unified_db_fill import Fill
from msprof_py.export.unified_db_tasks import UNREAD_TASK_COLUMNS
from msprof_py.memory import trim, trim_at_once
from msprof_py.parse.session import Session, data_bytes

DB_PROCESS_ENV = "MSPROF_PY_DB_PROCESS"  # "1": the DB by these processes, "0": on a thread; else the rule
PROCESS_RAW_LIMIT = 1 << 30  # bytes of raw data (host + largest device) up to which processes are the default


def use_processes(prof: Path, devices: Sequence[int]) -> bool:
    """Whether the DB of the PROF dir ``prof`` (device ids ``devices``) is written by these
    processes: ``MSPROF_PY_DB_PROCESS=1`` wherever ``fork`` exists, ``0`` never; by default on
    Linux when the raw data of ``host/`` and of the largest ``device_*/`` are together at most
    ``PROCESS_RAW_LIMIT`` (the module doc: why; elsewhere the thread, which was measured where
    ``fork`` is not a given)."""
    if not hasattr(os, "fork"):
        return False
    asked = os.environ.get(DB_PROCESS_ENV, "")
    if asked in ("0", "1"):
        return asked == "1"
    if not sys.platform.startswith("linux"):
        return False
    largest = max((data_bytes(prof / f"device_{d}") for d in devices), default=0)
    return data_bytes(prof / "host") + largest <= PROCESS_RAW_LIMIT


@dataclass
class _Proc:
    pid: int
    status_fd: int  # read end of the pipe the process reports on
    go_fd: int = -1  # write end of the pipe closed when the export reaches the next device (wait_room)
    code: int | None = None  # wait status once reaped


class DbProcesses:
    """The DB ``path`` of host tables ``host`` and ``count`` devices, each added by a process
    forked by :meth:`put` (``categories``: the whole session's, for :func:`db_view`).  ``path``
    None: no DB (:meth:`UnifiedDb.path_for`), nothing forked."""

    def __init__(self, host: Session, count: int, path: Path | None, categories: dict[str, list[str]]) -> None:
        self.host, self.count, self.path, self.cats = host, count, path, categories
        # the DB under construction, its staging file, the states
        self.dir = scratch_dir(path.parent) if path is not None else None
        self.db = self.dir / "db" if self.dir is not None else Path()
        self.procs: list[_Proc] = []
        self.prev: int | None = None  # read end of the last process's chain pipe

    # -- the export's process
    def let_go(self) -> None:
        """Tell the previous device's process that the export has reached the next device: it
        hands over the rows it has not yet made early (``Fill.more``) and ends (:meth:`wait_room`
        waits for that)."""
        if self.procs:
            self._go(self.procs[-1])

    def wait_room(self) -> None:
        """Block until the previous device's process has ended (it let go of that device): told
        first (:meth:`let_go`, if not yet), it hands over the rows it has not yet made early
        (``Fill.more``) and ends."""
        if self.procs:
            self._go(self.procs[-1])
            self._reap(self.procs[-1])

    def put(self, session: Session) -> None:
        """Fork the process that adds the next device (``session``) to the DB."""
        if self.path is None:
            return
        d = len(self.procs)
        trim()  # free heap pages handed back first: the two processes would each keep a copy of one the other reuses
        status_r, status_w = os.pipe()
        chain_r, chain_w = os.pipe()
        go_r, go_w = os.pipe()
        # Ctrl-C (SIGINT to the whole process group) held back across the fork: in the new process
        # before it ignores SIGINT, a KeyboardInterrupt would return into the export's own code there
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if _MASK else None
        try:
            with warnings.catch_warnings():  # Python >= 3.12 warns of any thread (a caller's) at a fork
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
        except BaseException:
            _unmask(mask)
            raise
        if pid == 0:  # the DB process: never returns
            self._child(d, session, status_w, (status_r, chain_r, go_w), mask, go_r)
        os.close(status_w)
        os.close(chain_w)  # the process holds the only write end: its exit is the next one's start
        os.close(go_r)
        if self.prev is not None:
            os.close(self.prev)
        self.prev = chain_r
        self.procs.append(_Proc(pid, status_r, go_w))
        _unmask(mask)  # a Ctrl-C meanwhile: raised here, the process known to stop()

    def result(self) -> list[Path]:
        """Wait for every process; the DB renamed into place, or the first process's error."""
        if self.path is None:
            return []
        try:
            for d, p in enumerate(self.procs):
                self._reap(p)
                status = self._status(p)
                if status is None or status[0] == "skip":
                    raise WorkerDiedError(f"the process writing {self.path} (device {d} of {self.count}) died "
                                          f"(killed, or out of memory?); run again with {DB_PROCESS_ENV}=0 to "
                                          "write it on a thread")
                if status[0] == "error":
                    if status[1] == "msprof":
                        raise_error(*status[2])
                    raise status[2]
            if len(self.procs) != self.count:
                raise RuntimeError("the DB was not given every device")
            os.replace(self.db, self.path)
            return [self.path]
        finally:
            self.stop()

    def stop(self) -> None:
        """Kill the processes still running, wait for them, remove the scratch dir."""
        for p in self.procs:
            if p.code is None:
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self._reap(p)
        for p in self.procs:
            self._go(p)
            if p.status_fd >= 0:
                os.close(p.status_fd)
                p.status_fd = -1
        if self.prev is not None:
            os.close(self.prev)
            self.prev = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)

    @staticmethod
    def _go(p: _Proc) -> None:
        if p.go_fd >= 0:
            os.close(p.go_fd)  # (end of file for the process: the export has reached the next device)
            p.go_fd = -1

    @staticmethod
    def _reap(p: _Proc) -> None:
        if p.code is None:
            p.code = os.waitpid(p.pid, 0)[1]

    @staticmethod
    def _status(p: _Proc) -> tuple[Any, ...] | None:
        chunks = []
        while chunk := os.read(p.status_fd, 1 << 16):
            chunks.append(chunk)
        try:
            return pickle.loads(b"".join(chunks)) if chunks else None
        except Exception:  # noqa: BLE001  (cut short: the process died while reporting)
            return None

    # -- a DB process
    def _child(self, d: int, session: Session, status_w: int, other: tuple[int, ...], mask: Any,
               go_r: int) -> None:
        status: tuple[Any, ...] = ("skip",)
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the export stops us (stop)
            _unmask(mask)  # (a SIGINT held back since the fork is dropped: ignored)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            for fd in other:
                os.close(fd)
            for p in self.procs:  # (the earlier processes' ended: the export closed their go_fd)
                if p.go_fd >= 0:
                    os.close(p.go_fd)
            _own_stdio()
            view = self._own(session)
            del session
            status = self._add(d, view, go_r)
        except MsprofError as err:
            status = ("error", "msprof", (type(err), str(err), err.exit_code))
        except BaseException as err:  # noqa: BLE001  (handed to the export's process)
            status = ("error", "other", err)
        try:
            try:
                blob = pickle.dumps(status)
            except Exception:  # noqa: BLE001  (an error that does not pickle: its text)
                blob = pickle.dumps(("error", "other", RuntimeError(f"{type(status[-1]).__name__}: {status[-1]}")))
            os.write(status_w, blob)
        finally:
            os._exit(0)

    def _own(self, session: Session) -> Session:
        """The DB's view of the device ``session`` (:func:`db_view` without the task columns no DB
        table reads, ``UNREAD_TASK_COLUMNS``), and nothing else of it.  This process never returns
        to the export's code, so the session its frames hold is emptied: what the DB does not read
        is freed and trimmed here at once (no longer counted in this process; freed for good when
        the export frees its own), and from now on this process hands freed heap back at once."""
        trim_at_once()
        view = db_view(session, self.cats)
        view.tasks = view.tasks.drop(columns=[c for c in UNREAD_TASK_COLUMNS if c in view.tasks.columns])
        for f in dataclasses.fields(session):
            if isinstance(getattr(session, f.name), pd.DataFrame):
                setattr(session, f.name, None)
        trim()
        return view

    def _add(self, d: int, session: Session, go_r: int = -1) -> tuple[Any, ...]:
        if d > 0:
            while os.read(self.prev, 1 << 12):  # type: ignore[arg-type]  (the previous process ended)
                pass
            if not self._state(d - 1).exists():
                return ("skip",)  # it failed: the export reports its error
        open_tx, extra = False, 0
        before = _counter(self.db)
        con = connect(self.db)
        try:
            if d == 0:
                fill = Fill(self.host, self.count, early=True)
            else:
                with open(self._state(d - 1), "rb") as f:
                    fill, open_tx, extra = pickle.load(f)
                fill.host = self.host
                if open_tx:  # one connection would still be in the transaction the last process began
                    con.execute("BEGIN")
            if go_r >= 0:  # rows made early until the export reaches the next device (then handed over)
                fill.more, fill.rest_dir = _waiting(go_r), self.dir
            fill.add(con, session)
            fill.more = None
            del session
            trim()  # the device's temporaries (the last device's too: Fill.add trims the others')
            if d == self.count - 1:
                fill.end(con)
            ends_open = con.in_transaction
            con.commit()
        except sqlite3.OperationalError as err:
            if is_full(err):
                raise disk_full(self.path, written=_size(self.db)) from None
            raise
        finally:
            con.close()
        if open_tx and _counter(self.db) != before:
            extra += 1  # a commit one connection would not have made
        if d < self.count - 1:
            tmp = self.dir / f"state_{d}.tmp"
            with open(tmp, "wb") as f:
                pickle.dump((fill, ends_open, extra), f, protocol=5)
            os.replace(tmp, self._state(d))
        elif extra:
            _set_counter(self.db, _counter(self.db) - extra)
        return ("ok",)

    def _state(self, d: int) -> Path:
        return self.dir / f"state_{d}"


_MASK = hasattr(signal, "pthread_sigmask")


def _waiting(go_r: int) -> Callable[[], bool]:
    """Whether the export is still short of the next device: the pipe ``go_r`` still has a writer
    (:meth:`DbProcesses._go` closes it)."""
    os.set_blocking(go_r, False)

    def more() -> bool:
        try:
            return os.read(go_r, 1) != b""
        except BlockingIOError:
            return True

    return more


def _unmask(mask: Any) -> None:
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _own_stdio() -> None:
    """stdout / stderr of this process's own (the same fds): the export's objects' locks may be
    held by a thread that does not exist here (a warning printed here would wait for ever)."""
    for name, fd in (("stdout", 1), ("stderr", 2)):
        try:
            setattr(sys, name, open(fd, "w", closefd=False, errors="backslashreplace"))
        except OSError:
            setattr(sys, name, open(os.devnull, "w"))


# The SQLite header's file change counter (offset 24) and version-valid-for number (offset 92):
# each commit adds one, so a DB written by several processes (one commit each) would differ from
# the DB one connection writes in these 8 bytes only; they are set back to what it writes.
_CHANGE_COUNTER, _VALID_FOR = 24, 92


def _counter(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            f.seek(_CHANGE_COUNTER)
            return int.from_bytes(f.read(4) or b"\0", "big")
    except FileNotFoundError:
        return 0


def _set_counter(path: Path, value: int) -> None:
    with open(path, "r+b") as f:
        for offset in (_CHANGE_COUNTER, _VALID_FOR):
            f.seek(offset)
            f.write(value.to_bytes(4, "big"))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


__all__ = ["DbProcesses", "DB_PROCESS_ENV", "PROCESS_RAW_LIMIT", "use_processes"]
