"""``advise_path(path, fmt)``: advice for every PROF dir under ``path``.

Writes into each ``PROF_*/mindstudio_profiler_output/``: ``prof_rule_{device}.json`` (msprof's
layout, :mod:`prof_rule`), ``aoe_tune_ops.json`` (``{"tune_ops_name": [...]}`` for
``msprof-py tune --tune_ops_file``) when there are AOE candidates, and ``advice.json`` /
``advice.html`` for ``fmt`` json / html.  The raw data is never touched; every file is written
to a temporary name and renamed.  The rules run on one device's tables at a time
(:func:`advise_source`, :mod:`msprof_py.analyse.advise.parts`), or on a whole session a caller
already has (:func:`advise_session`): same files, same text.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from msprof_py.analyse.advise import findings, pmu, prof_rule, report
from msprof_py.analyse.advise.base import device_ids
from msprof_py.analyse.advise.parts import Combined, DeviceAdvice, combine, device_advice
from msprof_py.atomic import write_text
from msprof_py.errors import InvalidParamError, InvalidPathError, WarningLog
from msprof_py.memory import trim
from msprof_py.parse.session import Session
from msprof_py.parse.source import ProfSource

HOST_DEVICE_ID = 64  # msprof's id of the host dir in the devices table

OUTPUT_DIR = "mindstudio_profiler_output"
TUNE_OPS_FILE = "aoe_tune_ops.json"
TUNE_RULES = ("aoe_candidates", "low_utilisation", "memory_bound")
FORMATS = ("text", "json", "html")


@dataclass
class AdviseResult:
    text: str = ""  # what to print
    files: list[Path] = field(default_factory=list)
    warnings: WarningLog = field(default_factory=WarningLog)
    findings: list = field(default_factory=list)


def _write(path: Path, data: str) -> Path:
    return write_text(path, data, error="cannot write")


def advise_path(path: str | Path, fmt: str = "text", summary_only: bool = False,
                use_cache: bool = True) -> AdviseResult:
    """Advice for every PROF dir under ``path`` (see the module doc), one device in memory at a
    time.  ``summary_only``: print only msprof's Performance Summary Report (what ``export``
    prints); ``use_cache=False`` parses without reading or writing the parse cache (after
    ``export --clear``)."""
    from msprof_py.parse.session import find_prof_dirs

    check_format(fmt)
    res = AdviseResult()
    texts: list[str] = []
    for prof in find_prof_dirs(Path(path)):
        texts.append(advise_source(prof, ProfSource(prof, use_cache=use_cache), res, fmt, summary_only))
    res.text = "\n".join(t for t in texts if t)
    return res


def check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise InvalidParamError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")


def advise_session(prof: Path, session: Session, res: AdviseResult, fmt: str = "text",
                   summary_only: bool = False) -> str:
    """Advice for one PROF dir from its already loaded (whole, unselected) session: writes its
    files, adds them, the findings and warnings to ``res``; returns the text to print."""
    check_format(fmt)
    res.warnings.extend(session.warnings)
    errors: list[str] = []
    found = findings(session, errors=errors)
    par = {d: prof_rule.op_parallel(session, d) for d in device_ids(session)}
    return report_advice(prof, Combined(found, errors, par, bool(pmu.pmu_columns(session))), res, fmt, summary_only)


def advise_source(prof: Path, source: ProfSource, res: AdviseResult, fmt: str = "text",
                  summary_only: bool = False, done: dict[int, DeviceAdvice] | None = None) -> str:
    """:func:`advise_session` reading one device at a time from ``source`` (decoding and caching
    each device first if ``source`` has not yet been through them): the same files and text
    (:mod:`msprof_py.analyse.advise.parts`), with the whole session's memory only when the
    devices' tables do not join as they are.  ``done``: devices whose part a caller already has
    (:func:`device_advice` of the session it had, e.g. the export's)."""
    check_format(fmt)
    parts = []
    for dev in source.devices:
        if done and dev in done:
            parts.append(done[dev])
            continue
        if source.finished:
            session = source.device(dev)
        else:
            session, info = source.build(dev)
            source.add(info)
        parts.append(device_advice(session))
        del session
        trim()  # this device's tables back to the system before the next one
    if not source.finished:
        source.finish()
    res.warnings.extend(source.warnings)
    combined = combine(parts)
    if combined is None:
        from msprof_py.parse.session import load_prof

        return advise_session(prof, load_prof(prof, use_cache=source.use_cache), res, fmt, summary_only)
    return report_advice(prof, combined, res, fmt, summary_only)


def report_advice(prof: Path, advice: Combined, res: AdviseResult, fmt: str, summary_only: bool) -> str:
    """Write one PROF dir's advice files (prof_rule_{device}.json for every device that ran
    tasks or has a device dir, the tune-ops file, advice.json / .html), add them, the findings
    and the rule errors to ``res``; return the text to print."""
    found = advice.found
    for e in advice.errors:
        res.warnings.warn(f"{prof.name}: {e}")
    res.findings += found
    notes = [] if advice.has_pmu else [
        "no PMU columns in this profile: the utilisation and memory-bound rules were skipped"]
    out = prof / OUTPUT_DIR
    try:
        out.mkdir(exist_ok=True)
    except OSError as err:
        raise InvalidPathError(f'Cannot create "{out}" ({err.strerror or err}).') from None
    summary = []
    for dev in sorted(set(advice.parallel) | _device_dirs(prof)):
        doc = prof_rule.document(dev, found, advice.parallel.get(dev))
        res.files.append(_write(out / f"prof_rule_{dev}.json", json.dumps(doc)))
        summary.append(prof_rule.summary_report(doc))
    tune = sorted({op for f in found if f.rule in TUNE_RULES for op in f.ops})
    if tune:
        res.files.append(_write(out / TUNE_OPS_FILE, json.dumps({"tune_ops_name": tune}, indent=1) + "\n"))
    if summary_only:
        return "\n".join(summary)
    if fmt == "json":
        res.files.append(_write(out / "advice.json", report.to_json(found, notes)))
    elif fmt == "html":
        res.files.append(_write(out / "advice.html", report.html(found, str(prof), notes)))
    return report.text(found, str(prof), notes)


def _device_dirs(prof: Path) -> set[int]:
    """Ids of the PROF dir's ``device_N`` folders: msprof writes a prof_rule_N.json (with empty
    results) for a device even when it recorded no task."""
    out = set()
    for p in prof.glob("device_*"):
        tail = p.name[len("device_"):]
        if p.is_dir() and tail.isdigit() and int(tail) < 64:  # device 64 is the host's id in msprof
            out.add(int(tail))
    return out
