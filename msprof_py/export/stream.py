"""The export of one PROF dir reading one device at a time (:class:`ProfSource`), in one or
two processes (:mod:`msprof_py.export.parallel`): what ``export`` runs for an all-iterations
text or db export.  Its files, log and warnings are those of the whole-session export."""
from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from msprof_py.atomic import Later
from msprof_py.export import base
from msprof_py.export.base import ExportContext, Naming
from msprof_py.export.db_process import DbProcesses, use_processes
from msprof_py.export.db_thread import DbFeed, DbThread, db_view
from msprof_py.export.jobs import (Done, ExportOptions, ExportResult, default_loader, finish, jobs_for, prepare,
                                   progress, run_job, write_error)
from msprof_py.export.parallel import run_tasks, workers_for
from msprof_py.export.views import cpp_export
from msprof_py.memory import trim
from msprof_py.parse.session import Session
from msprof_py.parse.source import DevicePart, ProfSource

BESIDE_AFTER = ("timeline", "msprof")  # the device job after which the thread beside starts (Stream.beside_ok)
STREAM_ENV = "MSPROF_PY_STREAM"  # "0": export from the whole session (for comparisons)
DB_THREAD_ENV = "MSPROF_PY_DB_THREAD"  # "0": the DB after the text files, not beside them (process or thread)


def streamable(options: ExportOptions) -> bool:
    """Whether an export can read one device at a time: all iterations (a selection is checked
    against every device first), text or db, no perfetto trace (one file of every device)."""
    return (options.model_id is None and options.type in ("text", "db") and not options.perfetto
            and os.environ.get(STREAM_ENV, "1") != "0")


def export_streamed(prof: Path, options: ExportOptions, layers: frozenset[str] | None,
                    result: ExportResult, per_device: Callable[[Path, int, Session], None] | None = None) -> ProfSource:
    """The export of one PROF dir reading one device at a time (:class:`ProfSource`).

    First every device is decoded (or found in the parse cache) one after the other and cached,
    keeping only what other devices' files need of it (``Session.device_facts``, its all-reduce
    rows); a dir without any data stops here, before any file is written.  Then for each device
    its tables are read back, its files written and the tables dropped; then the host-side files
    and the DB (device after device).  Files, log and warnings are those of :func:`_export_prof`
    (jobs keep their order in the log).  Returns the source (its host tables; its devices read
    again one at a time, e.g. by the advice: from the cache, decoded again after ``--clear``)."""
    source = ProfSource(prof, ahead=workers_for(2, options.workers) == 1)  # (one process: decode ahead)
    with_facts = cpp_export(source.host)
    # 1. every device decoded and cached (or found in the cache), one at a time per process
    todo = [d for d in source.devices if not source.cached or "facts" not in source.meta[d]]
    workers = workers_for(len(todo), options.workers)
    # (one process: a device's cache part is written on a thread while the next one is decoded)
    for info in run_tasks(lambda d: build_device(source, d, with_facts, background=workers == 1 and d != todo[-1]),
                          todo, workers, lambda d: f"decoding {prof / f'device_{d}'}"):
        if source.cached:
            source.meta[info.device_id]["facts"] = info.meta["facts"]
        else:
            source.add(info)
    # (the cache index, and a one-device dir's part, written on a thread: settled below; a
    # one-device dir's, ~750 MB on the single-op million, held until its DB process is forked: no
    # thread may run at a fork, and the export need not wait for it before its first file)
    processes = use_processes(prof, source.devices)
    held = processes and len(source.devices) == 1
    source.finish(background=True, hold=held)
    # 2. each device's files, then the host-side files, then the DB
    out_dir, log_lines, naming, ctx = prepare(prof, options, source.host, False, layers)
    jobs = jobs_for(source.host, options)
    done: list[Done | None] = [None] * len(jobs)
    tasks: list[int | None] = [d for d in source.all_devices if any(dev == d for _, dev in jobs)]
    db = [i for i, (ex, dev) in enumerate(jobs) if dev is None and ex.kind == "db"]
    tasks += [None] if db else []
    workers = workers_for(len(tasks), options.workers)
    state = Stream(source, jobs, out_dir, naming, ctx, prof, parallel=workers > 1,
                   per_device=per_device if workers == 1 else None)
    if db and workers == 1 and os.environ.get(DB_THREAD_ENV, "1") != "0" and beside_ok(source, jobs, tasks):
        tasks.remove(None)
        state.db = state.db_beside()
    if held and workers == 1 and isinstance(state.db, DbProcesses):
        pass  # released by the DB process's fork (Stream.run)
    elif workers > 1 or processes:
        source.settle()  # no store thread across a fork
    else:
        source.release()  # (nothing held)
    with progress(options, prof, len(jobs)) as bar:
        try:
            for got in run_tasks(state.run, tasks, workers, state.what):
                for i, d in got.items():
                    done[i] = d
                bar.update(len(got))
            for i, (ex, dev) in enumerate(jobs):
                if dev is None and ex.kind != "db":
                    done[i] = state.host_job(i) or run_job(ex, source.host, out_dir, naming, ctx)
                    bar.update(1)
            if state.db is not None:
                done[db[0]] = state.db_result()
                bar.update(1)
            state.held = None  # (the last device's tables: see Stream.run)
            state.settle_later()  # the last device's copied-layer files (Stream.run)
        except BaseException as err:
            state.later.abort(err)
            source.settle(quiet=True)
            raise
        finally:
            state.stop_beside()  # (its thread done: nothing written after the export returns or fails)
            state.held = None
            if state.db is not None:
                state.db.stop()
            if ctx.scratch is not None:
                shutil.rmtree(ctx.scratch, ignore_errors=True)
    source.settle()
    result.warnings.extend(source.warnings)
    finish(prof, options, out_dir, log_lines, jobs, [d for d in done if d is not None], source.warnings, ctx,
           result)
    return source


def build_device(source: ProfSource, dev: int, with_facts: bool, background: bool = False) -> DevicePart:
    """Decode (or read from the cache) one device and keep what others need of it (``background``:
    its cache part written on a thread, :meth:`ProfSource.build`)."""
    import msprof_py.export.wait_time as wait_time

    if source.cached:
        session, info = source.device(dev), DevicePart(dev, {})
    else:
        session, info = source.build(dev, background)
    info.meta["facts"] = wait_time.device_facts(session, dev) if with_facts else {}
    del session
    if background:
        source.store()  # pickled on a thread from here: nothing reads the part any more
    trim()
    return info


@dataclass
class Stream:
    """The second pass of a streamed export: one task per device (its jobs), one for the DB."""

    source: ProfSource
    jobs: list[tuple[base.Exporter, int | None]]
    out_dir: Path
    naming: Naming
    ctx: ExportContext
    prof: Path
    parallel: bool = False
    db: DbProcesses | DbThread | None = None  # the DB beside the text writers, fed the devices' sessions
    per_device: Callable[[Path, int, Session], None] | None = None  # given each device's session after its files
    # the last device's session, kept until its DB process has ended: let go of while that process
    # lives, the pages the two share would become that process's alone at once (its PSS jumps while
    # this one's falls: a sampler reading one process after the other counts them twice; B': up to
    # ~530 MB where the memory never passed ~460 MB); nothing more than its files held
    held: Session | None = None
    # files of copied layers still being written on their threads (atomic.Later; ctx.later while
    # a device's jobs run): settled before the next fork (a device's DB process) and at the end
    later: Later = field(default_factory=Later)
    # the thread beside a one-device dir's last files (see beside_ok): the device's advice, then the
    # host-side summaries (their results by job index, collected in job order by host_job)
    beside: ThreadPoolExecutor | None = None
    advice: Future | None = None
    host_done: dict[int, Future] = field(default_factory=dict)

    def what(self, dev: int | None) -> str:
        return f"exporting device {dev} of {self.prof}" if dev is not None else f"writing the DB of {self.prof}"

    @cached_property
    def cats(self) -> dict[str, list[str]]:
        return self.source.categories()

    def db_job(self) -> Any:
        return next(ex for ex, d in self.jobs if d is None and ex.kind == "db")

    def db_beside(self) -> DbProcesses | DbThread:
        """The DB written beside the text writers: by forked processes (:mod:`db_process`) where
        :func:`use_processes` says so, else on a thread (:mod:`db_thread`)."""
        count = len(self.source.devices)
        if not use_processes(self.prof, self.source.devices):
            return DbThread(self.write_db, count)
        return DbProcesses(self.source.host, count, self.db_job().path_for(self.source.host, self.prof, self.naming),
                           self.cats)

    def db_result(self) -> Done:
        """The DB's result, collected after the text files (its error raised here)."""
        if isinstance(self.db, DbThread):
            return self.db.result()
        assert self.db is not None
        return run_job(self.db_job(), self.source.host, self.prof, self.naming, ExportContext(), self.db.result)

    def write_db(self, feed: DbFeed) -> Done:
        """The DB job on the DB thread, from the sessions the device tasks hand it."""
        ex = self.db_job()
        return run_job(ex, self.source.host, self.prof, self.naming, ExportContext(),
                       lambda: ex.write_parts(self.source.host, feed.sessions, feed.count, self.prof, self.naming,
                                              feed))

    def settle_later(self) -> None:
        """Complete the files still written on their threads (:attr:`later`); a write error is
        the one line :func:`run_job` gives."""
        try:
            self.later.settle()
        except OSError as err:
            raise write_error(err, self.out_dir) from None

    def beside_ok(self, dev: int | None, db: Any, told: bool) -> bool:
        """Whether ``dev``'s advice and the host-side summaries run on a thread beside its last
        files: a one-device dir whose DB a forked process writes (in this process, one task at a
        time).  Its DB process, forked at the start of the device, ends during or before the
        device's last files (the component timelines after msprof_N.json: renders bound by their
        writer threads' ~0.5 GB of fresh page-cache pages, and copies), so a core idles there
        while the advice and api_statistic (~0.5-0.8 s of the single-op million's main thread)
        waited for the end.  Several devices (B', the 10M): as before, each device's advice while
        the next DB process works (the memory of a thread beside the files counted on B')."""
        return (isinstance(db, DbProcesses) and not told and not self.parallel and len(self.source.devices) == 1
                and dev in self.source.devices)

    def start_beside(self, dev: int, session: Session) -> None:
        """The thread of :meth:`beside_ok`: the advice (``per_device``), then each host-side
        summary with a context of its own (warnings, notes; summaries share no rendered layer)."""
        self.beside = ThreadPoolExecutor(1, thread_name_prefix="msprof-py-beside")
        if self.per_device is not None:
            self.advice = self.beside.submit(self.per_device, self.prof, dev, session)
        for i, (ex, d) in enumerate(self.jobs):
            if d is None and ex.kind == "summary":
                own = ExportContext(layers=self.ctx.layers, slice_bytes=self.ctx.slice_bytes)
                self.host_done[i] = self.beside.submit(run_job, ex, self.source.host, self.out_dir, self.naming, own,
                                                       trim_after=False)  # (one device: see run_job)

    def host_job(self, i: int) -> Done | None:
        """Host-side job ``i``'s result when it ran beside the last device (its error raised
        here, where the job would have run), else None."""
        got = self.host_done.pop(i, None)
        return got.result() if got is not None else None

    def stop_beside(self) -> None:
        """Wait for the thread beside the files (a failed export: its summaries not yet started
        are dropped, the one running completes its file)."""
        if self.beside is not None:
            self.beside.shutdown(wait=True, cancel_futures=True)
            self.beside, self.advice = None, None
            self.host_done.clear()

    def run(self, dev: int | None) -> dict[int, Done]:
        ctx = self.ctx
        if self.parallel and ctx.scratch is not None:  # a worker: scratch files of its own
            ctx.scratch = ctx.scratch / f"w{os.getpid()}"
            ctx.scratch.mkdir(exist_ok=True)
        if dev is None:
            i = next(i for i, (ex, d) in enumerate(self.jobs) if d is None and ex.kind == "db")
            ex = self.jobs[i][0]
            return {i: run_job(ex, self.source.host, self.prof, self.naming, ctx,
                            lambda: stream_db(ex, self.source, self.prof, self.naming))}
        # a device id of the info files without a device dir (the host's) has no device rows
        db = self.db if dev in self.source.devices else None
        if isinstance(db, DbProcesses):
            self.settle_later()  # (no writer thread of the export at the fork of this device's process)
        if isinstance(db, DbThread):
            db.feed.wait_room()  # one device's tables in memory at a time
        elif db is not None:
            db.wait_room()  # (the previous device's process: ended at the end of that device, below)
        session = self.source.device(dev) if dev in self.source.devices else self.source.host
        if isinstance(db, DbThread):
            db.feed.put(db_view(session, self.cats))
        elif db is not None:
            db.put(session)  # the DB's process applies db_view itself (a later device's: read after settle())
            self.source.release()  # the cache's store held for the first fork (finish(hold=True)): beside the files
        # the device's files of copied layers complete on their writers' threads while the next
        # files (the advice, the next device's, the host's) are written: see settle_later
        ctx.later = self.later
        # a device before the last: its DB process told once the files are written, so that it hands
        # over and ends while the advice runs, and waited for before this device's tables go (its pages
        # shared with this process are then never its own alone: no jump of its PSS beside the next
        # device's)
        told = isinstance(db, DbProcesses) and dev != self.source.devices[-1]
        if isinstance(db, DbProcesses) and not told:
            self.held = session  # (until the DB's result: see held)
        beside = self.beside_ok(dev, db, told)
        try:
            out = {}
            for i, (ex, d) in enumerate(self.jobs):
                if d == dev:
                    out[i] = run_job(ex, session, self.out_dir, self.naming.for_device(dev), ctx,
                                     trim_after=len(self.source.devices) > 1)  # (see run_job)
                    if beside and (ex.kind, ex.name) == BESIDE_AFTER:
                        self.start_beside(dev, session)
            if told:
                db.let_go()
            if self.advice is not None:
                self.advice.result()  # (before this device's tables go, as inline)
                self.advice = None
            elif self.per_device is not None and dev in self.source.devices:
                self.per_device(self.prof, dev, session)
            if told:
                db.wait_room()
            if self.parallel:
                self.settle_later()  # (a worker process: its files complete before it reports)
        except BaseException as err:
            self.later.abort(err)
            raise
        finally:
            ctx.later = None
        del session
        trim()
        return out


def beside_ok(source: ProfSource, jobs: list[tuple[base.Exporter, int | None]], tasks: list[int | None]) -> bool:
    """Whether the DB can be written on a thread from the device tasks' sessions: the tasks
    read every device, in the DB's device order, and the DB is written device by device
    (:func:`stream_db` does not fall back to the whole session)."""
    ex = next(ex for ex, d in jobs if d is None and ex.kind == "db")
    return (hasattr(ex, "write_parts") and len({source.meta[d]["pmu"] for d in source.devices} - {None}) <= 1
            and [d for d in tasks if d in source.devices] == list(source.devices) and bool(source.devices))


def stream_db(ex: Any, source: ProfSource, prof: Path, naming: Naming) -> list[Path]:
    """The DB from the host tables and each device read again (from the parse cache), with the
    whole session's categories; the whole session when the devices' PMU tables differ in shape
    (their union would change which metrics each task row lists)."""
    sigs = {source.meta[d]["pmu"] for d in source.devices} - {None}
    if len(sigs) > 1 or not hasattr(ex, "write_parts"):
        return ex.write(default_loader(prof), prof, naming, ExportContext())
    cats = source.categories()
    return ex.write_parts(source.host, lambda: (source.device(d, cats) for d in source.devices), len(source.devices),
                          prof, naming)


__all__ = ["export_streamed", "streamable", "STREAM_ENV", "DB_THREAD_ENV"]
