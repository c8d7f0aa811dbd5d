"""``export(path, options)``: parse (or reuse the cache), then run the exporters for every PROF
directory under ``path`` and write ``PROF_X/mindstudio_profiler_output/`` + README.txt,
``PROF_X/msprof_{ts}.db`` and a log in ``PROF_X/mindstudio_profiler_log/``.

An all-iterations text or db export reads one device at a time (:mod:`msprof_py.export.stream`);
the rest works on the whole session (:func:`_export_prof`).  The frame both share (folders,
jobs, README, log): :mod:`msprof_py.export.jobs`.
"""
from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from msprof_py.errors import InvalidParamError, InvalidPathError, MsprofError, WarningLog
from msprof_py.export.jobs import (CACHE_DIR, LEGACY_TARGETS, LOG_DIR, OUTPUT_DIR, Done, ExportOptions, ExportResult,
                                   collection_stamp, default_loader, finish, jobs_for, prepare, progress, run_job,
                                   write_readme)
from msprof_py.export.stream import STREAM_ENV, export_streamed, streamable
from msprof_py.memory import release_freed_memory
from msprof_py.parse.session import Session
from msprof_py.parse.source import ProfSource

REPORTS_MAX_BYTES = 64 * 1024 * 1024
# msprof's json_process keys (§5.4); the ones our timeline has layers for are marked in LAYER_KEYS
JSON_PROCESS_KEYS = frozenset({
    "ascend", "acc_pmu", "cann", "ddr", "stars_chip_trans", "hbm", "communication", "hccs", "os_runtime_api",
    "network_usage", "disk_usage", "memory_usage", "cpu_usage", "msproftx", "npu_mem", "overlap_analyse", "pcie",
    "sio", "stars_soc", "step_trace", "freq", "llc", "nic", "roce", "qos", "device_tx", "ccu", "biu_perf", "ub",
    "block_detail", "dpu", "fusion_task"})
IDS_TOGETHER = ("Please set 'model-id' and 'iteration-id' simultaneously (recommend using 'query' to obtain "
                "proper 'model-id' and 'iteration-id' values).")


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


def _default_finder(path: Path) -> list[Path]:
    from msprof_py.parse.session import find_prof_dirs

    return find_prof_dirs(path)


def export(path: str | Path, options: ExportOptions,
           loader: Callable[[Path], Any] | None = None,
           finder: Callable[[Path], list[Path]] | None = None,
           after: Callable[[Path, Session | ProfSource], None] | None = None,
           per_device: Callable[[Path, int, Session], None] | None = None) -> ExportResult:
    """Export every PROF dir under ``path``.  Raises :class:`MsprofError` for bad options/paths.

    Returns the files written (with sizes) and the warnings to print once at the end.  ``after``
    is called with each PROF dir once that dir is exported, and with what the export parsed, so
    later stages (advice) reuse the parse instead of parsing again: the whole (unselected)
    session, or for a streamed export its :class:`ProfSource` (every device built; read them
    one at a time: from the parse cache, decoded again after ``--clear``).  ``per_device``: called
    by a streamed export in this process with each device's session once that device's files are
    written (the advice takes its part from it instead of reading the device again).

    Without a ``loader``, an all-iterations text or db export reads one device at a time
    (:func:`export_streamed`); a selected iteration, the perfetto trace or a given ``loader``
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
        parsed: Session | ProfSource
        if loader is None and streamable(options):
            parsed = export_streamed(Path(prof), options, layers, result, per_device)
        else:
            parsed = _export_prof(Path(prof), options, loader or default_loader, layers, result)
        if after is not None:
            after(Path(prof), parsed)
        del parsed  # one PROF dir's tables in memory at a time
    return result


def _export_prof(prof: Path, options: ExportOptions, loader: Callable[[Path], Any],
                 layers: frozenset[str] | None, result: ExportResult) -> Session:
    session = loader(prof)
    result.warnings.extend(session.warnings)
    selected = options.model_id is not None and options.type != "db"
    view = session.select(options.model_id, options.iteration_id) if selected else session
    out_dir, log_lines, naming, ctx = prepare(prof, options, session, selected, layers)
    jobs = jobs_for(view, options)
    done: list[Done] = []
    with progress(options, prof, len(jobs)) as bar:
        try:
            for ex, dev in jobs:
                # the DB covers the whole collection, whatever model/iteration was selected
                done.append(run_job(ex, session if ex.kind == "db" else view,
                                    prof if ex.kind == "db" else out_dir, naming.for_device(dev), ctx))
                bar.update(1)
        finally:
            if ctx.scratch is not None:
                shutil.rmtree(ctx.scratch, ignore_errors=True)
    finish(prof, options, out_dir, log_lines, jobs, done, session.warnings, ctx, result)
    return session


__all__ = ["ExportOptions", "ExportResult", "export", "MsprofError", "OUTPUT_DIR", "LOG_DIR", "CACHE_DIR",
           "LEGACY_TARGETS", "STREAM_ENV", "collection_stamp", "write_readme"]
