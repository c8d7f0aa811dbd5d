"""``export(path, options)``: parse (or reuse the cache), then run the exporters for every PROF
directory under ``path`` and write ``PROF_X/mindstudio_profiler_output/`` + README.txt,
``PROF_X/msprof_{ts}.db`` and a log in ``PROF_X/mindstudio_profiler_log/``.

The ``{ts}`` of ``msprof_{ts}.db`` is the collection start (``collection_date_begin`` of the
first device, as written by the collector: the local time at collection), never "now", so
exporting twice gives the same names and the same bytes.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from msprof_py.atomic import atomic_open, clean_dead, disk_full, is_disk_full, scratch_dir
from msprof_py.errors import InvalidParamError, InvalidPathError, MsprofError, WarningLog
from msprof_py.export import base
from msprof_py.export.base import REGISTRY, ExportContext, Naming
from msprof_py.export.parallel import run_tasks, workers_for
from msprof_py.export.session_access import device_ids
from msprof_py.export.views import cpp_export
from msprof_py.memory import release_freed_memory, trim
from msprof_py.parse import cache
from msprof_py.parse.session import Session
from msprof_py.parse.source import DevicePart, ProfSource, replay

OUTPUT_DIR = "mindstudio_profiler_output"
LOG_DIR = "mindstudio_profiler_log"
CACHE_DIR = "msprof_py_cache"  # the parser's cache dir name (msprof_py/parse/cache.py), legacy place
REPORTS_MAX_BYTES = 64 * 1024 * 1024
# what each folder of an export receives: older versions' pid-less temporary names of these
# are cleaned too (atomic.clean_dead ``legacy``), never any other file of the user's
LEGACY_TARGETS = {"prof": re.compile(r"msprof_[0-9A-Za-z_]*\.db"),
                  "output": re.compile(r"[A-Za-z0-9_.-]+\.(json|csv|txt|pftrace|db)"),
                  "log": re.compile(r"msprof_py_export\.log"), "cache": re.compile(r"session(\.pkl)?")}
# msprof's json_process keys (§5.4); the ones our timeline has layers for are marked in LAYER_KEYS
JSON_PROCESS_KEYS = frozenset({
    "ascend", "acc_pmu", "cann", "ddr", "stars_chip_trans", "hbm", "communication", "hccs", "os_runtime_api",
    "network_usage", "disk_usage", "memory_usage", "cpu_usage", "msproftx", "npu_mem", "overlap_analyse", "pcie",
    "sio", "stars_soc", "step_trace", "freq", "llc", "nic", "roce", "qos", "device_tx", "ccu", "biu_perf", "ub",
    "block_detail", "dpu", "fusion_task"})
IDS_TOGETHER = ("Please set 'model-id' and 'iteration-id' simultaneously (recommend using 'query' to obtain "
                "proper 'model-id' and 'iteration-id' values).")


@dataclass
class ExportOptions:
    type: str = "text"  # text | db | perfetto (only the native trace)
    model_id: int | None = None
    iteration_id: int | None = None
    summary_format: str = "csv"
    reports: Path | None = None
    clear: bool = False
    progress: bool = False  # show a progress bar (the CLI turns it on for terminals)
    perfetto: bool = False  # with type "text": also write the native trace msprof.pftrace
    slice_size_mb: float | None = None  # split each msprof_*.json into files under this size
    workers: int | None = None  # processes for the devices (None: MSPROF_PY_WORKERS, else up to 2 CPUs)


@dataclass
class ExportResult:
    files: list[tuple[Path, int]] = field(default_factory=list)  # (path, bytes)
    warnings: WarningLog = field(default_factory=WarningLog)


def read_reports(path: Path, warnings: WarningLog) -> frozenset[str] | None:
    """Enabled json_process keys, or None (= every layer) when the file is malformed."""
    try:
        if path.is_symlink():
            raise InvalidPathError(f'The reports file "{path}" is a soft link. Please use a regular file.')
        size = path.stat().st_size
        if size > REPORTS_MAX_BYTES:
            raise InvalidParamError(f'The reports file "{path}" is larger than 64 MB.')
        raw = path.read_bytes()
    except OSError as err:
        raise InvalidPathError(f'The reports file "{path}" cannot be read ({err.strerror or err}).') from None
    try:
        doc = json.loads(raw)
        proc = doc["json_process"]
        if not isinstance(proc, dict):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        warnings.warn(f'{path}: not a valid reports file (expected {{"json_process": {{...}}}}); '
                      "exporting every timeline layer")
        return None
    unknown = sorted(k for k in proc if k not in JSON_PROCESS_KEYS)
    if unknown:
        warnings.warn(f"{path}: unknown json_process keys ignored: {', '.join(unknown)}")
    return frozenset(k for k, v in proc.items() if v is True or str(v).lower() in ("true", "on"))


def collection_stamp(session: Session) -> str:
    """YYYYMMDDhhmmss of the collection start (deterministic, see module doc)."""
    dv = session.devices
    if len(dv):
        for v in dv["collection_date_begin"].astype(str):
            digits = "".join(ch for ch in v if ch.isdigit())
            if len(digits) >= 14:
                return digits[:14]
        ns = [int(x) for x in dv["collection_start_ns"].dropna()]
        if ns:
            return datetime.fromtimestamp(min(ns) / 1e9, tz=timezone.utc).strftime("%Y%m%d%H%M%S")
    return "00000000000000"


def _default_finder(path: Path) -> list[Path]:
    from msprof_py.parse.session import find_prof_dirs

    return find_prof_dirs(path)


def _default_loader(prof: Path) -> Any:
    from msprof_py.parse.session import load_prof

    return load_prof(prof)


def export(path: str | Path, options: ExportOptions,
           loader: Callable[[Path], Any] | None = None,
           finder: Callable[[Path], list[Path]] | None = None,
           after: Callable[[Path, Session], None] | None = None) -> ExportResult:
    """Export every PROF dir under ``path``.  Raises :class:`MsprofError` for bad options/paths.

    Returns the files written (with sizes) and the warnings to print once at the end.  ``after``
    is called with each PROF dir and its whole (unselected) session once that dir is exported,
    so later stages (advice) reuse the parse instead of parsing again.

    Without a ``loader``, an all-iterations text or db export reads one device at a time
    (:func:`_export_streamed`); a selected iteration, the perfetto trace or a given ``loader``
    work on the whole session.
    """
    import msprof_py.export  # noqa: F401  (registers every exporter)

    release_freed_memory()  # freed columns go back to the system between parse and exporters
    if (options.model_id is None) != (options.iteration_id is None):
        raise InvalidParamError(IDS_TOGETHER)
    result = ExportResult()
    layers = read_reports(Path(options.reports), result.warnings) if options.reports is not None else None
    profs = (finder or _default_finder)(Path(path))
    for prof in profs:
        session = None
        if loader is None and streamable(options):
            session = _export_streamed(Path(prof), options, layers, result, want_session=after is not None)
        else:
            session = _export_prof(Path(prof), options, loader or _default_loader, layers, result)
        if after is not None:
            after(Path(prof), session if session is not None else _default_loader(Path(prof)))
        del session  # one PROF dir's tables in memory at a time
    return result


STREAM_ENV = "MSPROF_PY_STREAM"  # "0": export from the whole session (for comparisons)


def streamable(options: ExportOptions) -> bool:
    """Whether an export can read one device at a time: all iterations (a selection is checked
    against every device first), text or db, no perfetto trace (one file of every device)."""
    return (options.model_id is None and options.type in ("text", "db") and not options.perfetto
            and os.environ.get(STREAM_ENV, "1") != "0")


def _jobs(session: Session, options: ExportOptions) -> list[tuple[base.Exporter, int | None]]:
    kinds = {"db"} if options.type == "db" else {"trace"} if options.type == "perfetto" \
        else {"timeline", "summary", "db"} | ({"trace"} if options.perfetto else set())
    devs = device_ids(session)
    jobs: list[tuple[base.Exporter, int | None]] = []
    for ex in REGISTRY.values():
        if ex.kind not in kinds:
            continue
        if ex.per_device:
            jobs += [(ex, d) for d in devs]
        else:
            jobs.append((ex, None))
    return jobs


@dataclass
class _Done:
    """What one job gave: its files, its log lines, warnings and notes (kept apart so the log
    lists them in job order whatever order the jobs ran in)."""

    paths: list[Path] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    warnings: WarningLog = field(default_factory=WarningLog)
    notes: list[str] = field(default_factory=list)


def _prepare(prof: Path, options: ExportOptions, session: Session, selected: bool,
             layers: frozenset[str] | None) -> tuple[Path, list[str], Naming, ExportContext]:
    """Output folders (what a killed export left removed), the naming and the context."""
    out_dir = prof / OUTPUT_DIR
    log_lines: list[str] = []
    for folder in ([out_dir] if options.type != "db" else []) + [prof / LOG_DIR]:
        try:
            folder.mkdir(exist_ok=True)
        except OSError as err:  # name the folder that failed (db mode makes no output dir)
            raise InvalidPathError(f'Cannot create "{folder}" ({err.strerror or err}).') from None
    for folder, kind in ((prof, "prof"), (out_dir, "output"), (prof / LOG_DIR, "log"),
                         (cache.cache_dir(prof), "cache")):  # what a killed export left
        left = clean_dead(folder, legacy=LEGACY_TARGETS[kind], legacy_scratch=kind == "output")
        log_lines += [f"[INFO] removed {p.name}, left by an export that was killed" for p in left]
    naming = Naming(None, options.model_id if selected else None, options.iteration_id if selected else None,
                    options.summary_format, collection_stamp(session))
    ctx = ExportContext(warnings=WarningLog(), layers=layers,
                        slice_bytes=int(options.slice_size_mb * 1_000_000) if options.slice_size_mb else None)
    if options.type != "db":  # rendered timeline layers shared between files; removed below
        ctx.scratch = scratch_dir(out_dir)
    return out_dir, log_lines, naming, ctx


def _run(ex: base.Exporter, session: Session, target: Path, naming: Naming, ctx: ExportContext,
         write: Callable[[], list[Path]] | None = None) -> _Done:
    """Run one job; its warnings and notes go to its own :class:`_Done`."""
    done = _Done()
    ctx.warnings, ctx.notes = done.warnings, done.notes
    try:
        done.paths = write() if write is not None else ex.write(session, target, naming, ctx)
    except OSError as err:  # one line naming the file, whatever the exporter was doing
        raise _write_error(err, target) from None
    trim()  # this exporter's freed tables back to the system before the next one
    done.lines = [f"[INFO] wrote {p.name} ({p.stat().st_size} bytes)" for p in done.paths]
    return done


def _export_prof(prof: Path, options: ExportOptions, loader: Callable[[Path], Any],
                 layers: frozenset[str] | None, result: ExportResult) -> Session:
    session = loader(prof)
    result.warnings.extend(session.warnings)
    selected = options.model_id is not None and options.type != "db"
    view = session.select(options.model_id, options.iteration_id) if selected else session
    out_dir, log_lines, naming, ctx = _prepare(prof, options, session, selected, layers)
    jobs = _jobs(view, options)
    done: list[_Done] = []
    with _progress(options, prof, len(jobs)) as bar:
        try:
            for ex, dev in jobs:
                # the DB covers the whole collection, whatever model/iteration was selected
                done.append(_run(ex, session if ex.kind == "db" else view, prof if ex.kind == "db" else out_dir,
                                 naming.for_device(dev), ctx))
                bar.update(1)
        finally:
            if ctx.scratch is not None:
                shutil.rmtree(ctx.scratch, ignore_errors=True)
    _finish(prof, options, out_dir, log_lines, jobs, done, session.warnings, ctx, result)
    return session


def _export_streamed(prof: Path, options: ExportOptions, layers: frozenset[str] | None,
                     result: ExportResult, want_session: bool = False) -> Session | None:
    """The export of one PROF dir reading one device at a time (:class:`ProfSource`).

    First every device is decoded (or found in the parse cache) one after the other and cached,
    keeping only what other devices' files need of it (``Session.device_facts``, its all-reduce
    rows); a dir without any data stops here, before any file is written.  Then for each device
    its tables are read back, its files written and the tables dropped; then the host-side files
    and the DB (device after device).  Files, log and warnings are those of :func:`_export_prof`
    (jobs keep their order in the log).  Returns None (no whole session was loaded), or with
    ``want_session`` and ``--clear`` the whole session, read from the cache before it goes."""
    source = ProfSource(prof)
    with_facts = cpp_export(source.host)
    # 1. every device decoded and cached (or found in the cache), one at a time per process
    todo = [d for d in source.devices if not source.cached or "facts" not in source.meta[d]]
    workers = workers_for(len(todo), options.workers)
    for info in run_tasks(lambda d: _build_device(source, d, with_facts), todo, workers,
                          lambda d: f"decoding {prof / f'device_{d}'}"):
        if source.cached:
            source.meta[info.device_id]["facts"] = info.meta["facts"]
        else:
            source.add(info)
    source.finish()
    # 2. each device's files, then the host-side files, then the DB
    out_dir, log_lines, naming, ctx = _prepare(prof, options, source.host, False, layers)
    jobs = _jobs(source.host, options)
    done: list[_Done | None] = [None] * len(jobs)
    tasks: list[int | None] = [d for d in source.all_devices if any(dev == d for _, dev in jobs)]
    db = [i for i, (ex, dev) in enumerate(jobs) if dev is None and ex.kind == "db"]
    tasks += [None] if db else []
    workers = workers_for(len(tasks), options.workers)
    state = _Stream(source, jobs, out_dir, naming, ctx, prof, parallel=workers > 1)
    with _progress(options, prof, len(jobs)) as bar:
        try:
            for got in run_tasks(state.run, tasks, workers, state.what):
                for i, d in got.items():
                    done[i] = d
                bar.update(len(got))
            for i, (ex, dev) in enumerate(jobs):
                if dev is None and ex.kind != "db":
                    done[i] = _run(ex, source.host, out_dir, naming, ctx)
                    bar.update(1)
        finally:
            if ctx.scratch is not None:
                shutil.rmtree(ctx.scratch, ignore_errors=True)
    result.warnings.extend(source.warnings)
    whole = _default_loader(prof) if want_session and options.clear else None
    _finish(prof, options, out_dir, log_lines, jobs, [d for d in done if d is not None], source.warnings, ctx,
            result)
    return whole


def _build_device(source: ProfSource, dev: int, with_facts: bool) -> DevicePart:
    """Decode (or read from the cache) one device and keep what others need of it."""
    import msprof_py.export.wait_time as wait_time

    if source.cached:
        session, info = source.device(dev), DevicePart(dev, {})
    else:
        session, info = source.build(dev)
    info.meta["facts"] = wait_time.device_facts(session, dev) if with_facts else {}
    del session
    trim()
    return info


@dataclass
class _Stream:
    """The second pass of a streamed export: one task per device (its jobs), one for the DB."""

    source: ProfSource
    jobs: list[tuple[base.Exporter, int | None]]
    out_dir: Path
    naming: Naming
    ctx: ExportContext
    prof: Path
    parallel: bool = False

    def what(self, dev: int | None) -> str:
        return f"exporting device {dev} of {self.prof}" if dev is not None else f"writing the DB of {self.prof}"

    def run(self, dev: int | None) -> dict[int, _Done]:
        ctx = self.ctx
        if self.parallel and ctx.scratch is not None:  # a worker: scratch files of its own
            ctx.scratch = ctx.scratch / f"w{os.getpid()}"
            ctx.scratch.mkdir(exist_ok=True)
        if dev is None:
            i = next(i for i, (ex, d) in enumerate(self.jobs) if d is None and ex.kind == "db")
            ex = self.jobs[i][0]
            return {i: _run(ex, self.source.host, self.prof, self.naming, ctx,
                            lambda: _stream_db(ex, self.source, self.prof, self.naming))}
        # a device id of the info files without a device dir (the host's) has no device rows
        session = self.source.device(dev) if dev in self.source.devices else self.source.host
        out = {i: _run(ex, session, self.out_dir, self.naming.for_device(dev), ctx)
               for i, (ex, d) in enumerate(self.jobs) if d == dev}
        del session
        trim()
        return out


def _stream_db(ex: Any, source: ProfSource, prof: Path, naming: Naming) -> list[Path]:
    """The DB from the host tables and each device read again (from the parse cache), with the
    whole session's categories; the whole session when the devices' PMU tables differ in shape
    (their union would change which metrics each task row lists)."""
    sigs = {source.meta[d]["pmu"] for d in source.devices} - {None}
    if len(sigs) > 1 or not hasattr(ex, "write_parts"):
        return ex.write(_default_loader(prof), prof, naming, ExportContext())
    cats = source.categories()
    return ex.write_parts(source.host, lambda: (source.device(d, cats) for d in source.devices), prof, naming)


class _NoBar:
    def update(self, n: int) -> None:
        pass


@contextmanager
def _progress(options: ExportOptions, prof: Path, n: int) -> Iterator[Any]:
    if not (options.progress and n):
        yield _NoBar()
        return
    with click.progressbar(length=n, label=f"exporting {prof.name}", file=sys.stderr) as bar:
        yield bar


def _finish(prof: Path, options: ExportOptions, out_dir: Path, log_lines: list[str],
            jobs: list[tuple[base.Exporter, int | None]], done: list[_Done], parse_warnings: WarningLog,
            ctx: ExportContext, result: ExportResult) -> None:
    """README.txt, --clear, the export log (jobs in job order) and the result."""
    ctx.warnings, ctx.notes = WarningLog(), []
    written: list[tuple[base.Exporter, Path]] = []
    for (ex, _), d in zip(jobs, done):
        written += [(ex, p) for p in d.paths]
        log_lines += d.lines
        replay(ctx.warnings, d.warnings)
        ctx.notes += d.notes
    if options.type != "db":
        readme = write_readme(out_dir, [(ex, p) for ex, p in written if ex.kind != "db"])
        written.append((None, readme))  # type: ignore[arg-type]
    if options.clear:
        _clear_cache(prof, ctx.warnings)
    log_lines += [f"[INFO] {m}" for m in ctx.notes]
    # the parser's warnings first (the session's WarningLog), then the exporters'
    log_lines += [f"[WARNING] {m}" for m in parse_warnings]
    log_lines += [f"[WARNING] {m}" for m in ctx.warnings]
    _write_log(prof / LOG_DIR, log_lines)
    result.warnings.extend(ctx.warnings)
    result.files += [(p, p.stat().st_size) for _, p in written]


def _write_error(err: OSError, folder: Path) -> MsprofError:
    if isinstance(err, MsprofError):  # atomic's DiskFullError: already worded
        return err
    where = Path(err.filename) if err.filename else folder
    if is_disk_full(err):
        return disk_full(where)
    return InvalidPathError(f"{where}: cannot write ({err.strerror or err})")


def write_readme(out_dir: Path, written: list[tuple[Any, Path]]) -> Path:
    """msprof-style README.txt: numbered ``N.file:description`` lines per kind."""
    lines = []
    for kinds, title in ((("timeline", "trace"), "Timeline file description:"),
                         (("summary",), "Summary file description:")):
        items = sorted((p.name, ex.describe) for ex, p in written if ex.kind in kinds)
        if not items:
            continue
        lines.append(title)
        lines += [f"{i}.{name}:{desc}" for i, (name, desc) in enumerate(items, 1)]
        lines.append("")
    path = out_dir / "README.txt"
    with atomic_open(path) as fp:
        fp.write(("\n".join(lines) + "\n").encode())
    return path


def _write_log(log_dir: Path, lines: list[str]) -> None:
    with atomic_open(log_dir / "msprof_py_export.log") as fp:
        fp.write(("\n".join(lines) + "\n").encode())


def _clear_cache(prof: Path, warnings: WarningLog) -> None:
    """``--clear``: remove our parse cache (msprof removes its sqlite/ dirs)."""
    for d in [cache.cache_dir(prof), prof / CACHE_DIR] + [c / CACHE_DIR for c in prof.iterdir() if c.is_dir()]:
        if d.is_dir():
            try:
                shutil.rmtree(d)
            except OSError as err:
                warnings.warn(f"{d}: cannot remove the parse cache ({err.strerror or err})")


__all__ = ["ExportOptions", "ExportResult", "export", "MsprofError"]
