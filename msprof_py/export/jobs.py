"""One PROF dir's export frame, whatever reads the session: the output folders (what a killed
export left removed), the jobs (exporter, device) in registry order, running one job, and at the
end README.txt, ``--clear`` and the export log with every job's lines in job order.

The ``{ts}`` of ``msprof_{ts}.db`` is the collection start (``collection_date_begin`` of the
first device, as written by the collector: the local time at collection), never "now", so
exporting twice gives the same names and the same bytes.
"""
from __future__ import annotations

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
from msprof_py.errors import InvalidPathError, MsprofError, WarningLog
from msprof_py.export import base
from msprof_py.export.base import REGISTRY, ExportContext, Naming
from msprof_py.export.session_access import device_ids
from msprof_py.memory import trim
from msprof_py.parse import cache
from msprof_py.parse.session import Session
from msprof_py.parse.source import replay

OUTPUT_DIR = "mindstudio_profiler_output"
LOG_DIR = "mindstudio_profiler_log"
CACHE_DIR = "msprof_py_cache"  # the parser's cache dir name (msprof_py/parse/cache.py), legacy place
# what each folder of an export receives: older versions' pid-less temporary names of these
# are cleaned too (atomic.clean_dead ``legacy``), never any other file of the user's
LEGACY_TARGETS = {"prof": re.compile(r"msprof_[0-9A-Za-z_]*\.db"),
                  "output": re.compile(r"[A-Za-z0-9_.-]+\.(json|csv|txt|pftrace|db)"),
                  "log": re.compile(r"msprof_py_export\.log"), "cache": re.compile(r"session(\.pkl)?")}


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


def default_loader(prof: Path) -> Any:
    from msprof_py.parse.session import load_prof

    return load_prof(prof)


def jobs_for(session: Session, options: ExportOptions) -> list[tuple[base.Exporter, int | None]]:
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
class Done:
    """What one job gave: its files, its log lines, warnings and notes (kept apart so the log
    lists them in job order whatever order the jobs ran in)."""

    paths: list[Path] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    warnings: WarningLog = field(default_factory=WarningLog)
    notes: list[str] = field(default_factory=list)


def prepare(prof: Path, options: ExportOptions, session: Session, selected: bool,
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
    if options.type != "db":  # switches on the sharing of rendered timeline layers between files
        # (their bytes are copied from the output file that wrote them: the dir itself stays empty;
        # only its presence is the switch, a leftover of the scratch files it once held)
        ctx.scratch = scratch_dir(out_dir)
    return out_dir, log_lines, naming, ctx


def run_job(ex: base.Exporter, session: Session, target: Path, naming: Naming, ctx: ExportContext,
         write: Callable[[], list[Path]] | None = None, trim_after: bool = True) -> Done:
    """Run one job; its warnings and notes go to its own :class:`Done`.  ``trim_after``: the heap
    it freed handed back to the system (``malloc_trim``) before the next job.  Off for the jobs of a
    one-device dir (:meth:`~msprof_py.export.stream.Stream.run`): the next exporter takes the heap
    this one freed, where a trim handed it back and every page came again as a fresh page fault
    (the single-op million's main thread: 168-213 k -> 110-118 k minor faults with the other cuts
    of issue 12 phase 13); its peak is its parse's.  On with several devices (B', the 10M), whose
    peak is a device's files beside its DB process: the heap kept from a device's earlier files
    counted there (B' PSS +6 MB on average in 7 pairs without the trims)."""
    done = Done()
    ctx.warnings, ctx.notes = done.warnings, done.notes
    try:
        done.paths = write() if write is not None else ex.write(session, target, naming, ctx)
    except OSError as err:  # one line naming the file, whatever the exporter was doing
        raise write_error(err, target) from None
    if trim_after:
        trim()  # this exporter's freed tables back to the system before the next one
    sizes = ctx.later.sizes if ctx.later is not None else {}  # (a file still being written: its size to be)
    done.lines = [f"[INFO] wrote {p.name} ({sizes[p] if p in sizes else p.stat().st_size} bytes)" for p in done.paths]
    return done


class NoBar:
    def update(self, n: int) -> None:
        pass


@contextmanager
def progress(options: ExportOptions, prof: Path, n: int) -> Iterator[Any]:
    if not (options.progress and n):
        yield NoBar()
        return
    with click.progressbar(length=n, label=f"exporting {prof.name}", file=sys.stderr) as bar:
        yield bar


def finish(prof: Path, options: ExportOptions, out_dir: Path, log_lines: list[str],
            jobs: list[tuple[base.Exporter, int | None]], done: list[Done], parse_warnings: WarningLog,
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
        clear_cache(prof, ctx.warnings)
    log_lines += [f"[INFO] {m}" for m in ctx.notes]
    # the parser's warnings first (the session's WarningLog), then the exporters'
    log_lines += [f"[WARNING] {m}" for m in parse_warnings]
    log_lines += [f"[WARNING] {m}" for m in ctx.warnings]
    write_log(prof / LOG_DIR, log_lines)
    result.warnings.extend(ctx.warnings)
    result.files += [(p, p.stat().st_size) for _, p in written]


def write_error(err: OSError, folder: Path) -> MsprofError:
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


def write_log(log_dir: Path, lines: list[str]) -> None:
    with atomic_open(log_dir / "msprof_py_export.log") as fp:
        fp.write(("\n".join(lines) + "\n").encode())


def clear_cache(prof: Path, warnings: WarningLog) -> None:
    """``--clear``: remove our parse cache (msprof removes its sqlite/ dirs)."""
    for d in [cache.cache_dir(prof), prof / CACHE_DIR] + [c / CACHE_DIR for c in prof.iterdir() if c.is_dir()]:
        if d.is_dir():
            try:
                shutil.rmtree(d)
            except OSError as err:
                warnings.warn(f"{d}: cannot remove the parse cache ({err.strerror or err})")


__all__ = ["ExportOptions", "ExportResult", "Done", "OUTPUT_DIR", "LOG_DIR", "CACHE_DIR", "LEGACY_TARGETS",
           "collection_stamp", "default_loader", "jobs_for", "prepare", "run_job", "progress", "finish",
           "write_readme", "write_log", "clear_cache", "write_error"]
