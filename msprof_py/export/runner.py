"""``export(path, options)``: parse (or reuse the cache), then run the exporters for every PROF
directory under ``path`` and write ``PROF_X/mindstudio_profiler_output/`` + README.txt,
``PROF_X/msprof_{ts}.db`` and a log in ``PROF_X/mindstudio_profiler_log/``.

The ``{ts}`` of ``msprof_{ts}.db`` is the collection start (``collection_date_begin`` of the
first device, as written by the collector: the local time at collection), never "now", so
exporting twice gives the same names and the same bytes.
"""
from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from msprof_py.atomic import atomic_open, clean_dead, disk_full, is_disk_full, scratch_dir
from msprof_py.errors import InvalidParamError, InvalidPathError, MsprofError, WarningLog
from msprof_py.export import base
from msprof_py.export.base import REGISTRY, ExportContext, Naming
from msprof_py.export.session_access import device_ids
from msprof_py.memory import release_freed_memory, trim
from msprof_py.parse import cache
from msprof_py.parse.session import Session

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
    so later stages (advice) reuse the loaded session instead of parsing again.
    """
    import msprof_py.export  # noqa: F401  (registers every exporter)

    release_freed_memory()  # freed columns go back to the system between parse and exporters
    if (options.model_id is None) != (options.iteration_id is None):
        raise InvalidParamError(IDS_TOGETHER)
    result = ExportResult()
    layers = read_reports(Path(options.reports), result.warnings) if options.reports is not None else None
    profs = (finder or _default_finder)(Path(path))
    for prof in profs:
        session = _export_prof(Path(prof), options, loader or _default_loader, layers, result)
        if after is not None:
            after(Path(prof), session)
        del session  # one PROF dir's tables in memory at a time
    return result


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


def _export_prof(prof: Path, options: ExportOptions, loader: Callable[[Path], Any],
                 layers: frozenset[str] | None, result: ExportResult) -> Session:
    session = loader(prof)
    result.warnings.extend(session.warnings)
    selected = options.model_id is not None and options.type != "db"
    view = session.select(options.model_id, options.iteration_id) if selected else session
    stamp = collection_stamp(session)
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
                    options.summary_format, stamp)
    ctx = ExportContext(warnings=WarningLog(), layers=layers,
                        slice_bytes=int(options.slice_size_mb * 1_000_000) if options.slice_size_mb else None)
    if options.type != "db":  # rendered timeline layers shared between files; removed below
        ctx.scratch = scratch_dir(out_dir)
    written: list[tuple[base.Exporter, Path]] = []
    jobs = _jobs(view, options)
    bar = click.progressbar(length=len(jobs), label=f"exporting {prof.name}", file=sys.stderr) \
        if options.progress and jobs else None
    try:
        if bar is not None:
            bar.__enter__()
        for ex, dev in jobs:
            target = prof if ex.kind == "db" else out_dir
            # the DB covers the whole collection, whatever model/iteration was selected
            src = session if ex.kind == "db" else view
            try:
                paths = ex.write(src, target, naming.for_device(dev), ctx)
            except OSError as err:  # one line naming the file, whatever the exporter was doing
                raise _write_error(err, target) from None
            trim()  # this exporter's freed tables back to the system before the next one
            written += [(ex, p) for p in paths]
            log_lines += [f"[INFO] wrote {p.name} ({p.stat().st_size} bytes)" for p in paths]
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
        if ctx.scratch is not None:
            shutil.rmtree(ctx.scratch, ignore_errors=True)
    if options.type != "db":
        readme = write_readme(out_dir, [(ex, p) for ex, p in written if ex.kind != "db"])
        written.append((None, readme))  # type: ignore[arg-type]
    if options.clear:
        _clear_cache(prof, ctx.warnings)
    log_lines += [f"[INFO] {m}" for m in ctx.notes]
    # the parser's warnings first (the session's WarningLog), then the exporters'
    log_lines += [f"[WARNING] {m}" for m in session.warnings]
    log_lines += [f"[WARNING] {m}" for m in ctx.warnings]
    _write_log(prof / LOG_DIR, log_lines)
    result.warnings.extend(ctx.warnings)
    result.files += [(p, p.stat().st_size) for _, p in written]
    return session


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
