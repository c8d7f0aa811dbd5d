"""``advise_path(path, fmt)``: advice for every PROF dir under ``path``.

Writes into each ``PROF_*/mindstudio_profiler_output/``: ``prof_rule_{device}.json`` (msprof's
layout, :mod:`prof_rule`), ``aoe_tune_ops.json`` (``{"tune_ops_name": [...]}`` for
``msprof-py tune --tune_ops_file``) when there are AOE candidates, and ``advice.json`` /
``advice.html`` for ``fmt`` json / html.  The raw data is never touched; every file is written
to a temporary name and renamed.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from msprof_py.analyse.advise import findings, pmu, prof_rule, report
from msprof_py.atomic import write_text
from msprof_py.errors import InvalidParamError, InvalidPathError, WarningLog
from msprof_py.parse.session import Session

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
    """Advice for every PROF dir under ``path`` (see the module doc).  ``summary_only``: print
    only msprof's Performance Summary Report (what ``export`` prints); ``use_cache=False``
    parses without reading or writing the parse cache (after ``export --clear``)."""
    from msprof_py.parse.session import find_prof_dirs, load_prof

    if fmt not in FORMATS:
        raise InvalidParamError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    res = AdviseResult()
    texts: list[str] = []
    for prof in find_prof_dirs(Path(path)):
        texts.append(advise_session(prof, load_prof(prof, use_cache=use_cache), res, fmt, summary_only))
    res.text = "\n".join(t for t in texts if t)
    return res


def advise_session(prof: Path, session: Session, res: AdviseResult, fmt: str = "text",
                   summary_only: bool = False) -> str:
    """Advice for one PROF dir from its already loaded (whole, unselected) session: writes its
    files, adds them, the findings and warnings to ``res``; returns the text to print."""
    if fmt not in FORMATS:
        raise InvalidParamError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    res.warnings.extend(session.warnings)
    errors: list[str] = []
    found = findings(session, errors=errors)
    for e in errors:
        res.warnings.warn(f"{prof.name}: {e}")
    res.findings += found
    notes = [] if pmu.pmu_columns(session) else [
        "no PMU columns in this profile: the utilisation and memory-bound rules were skipped"]
    out = prof / OUTPUT_DIR
    try:
        out.mkdir(exist_ok=True)
    except OSError as err:
        raise InvalidPathError(f'Cannot create "{out}" ({err.strerror or err}).') from None
    devs = sorted({int(d) for d in session.tasks.loc[session.tasks["start_ns"] >= 0, "device_id"].unique()}
                  | _device_dirs(prof))
    summary = []
    for dev in devs:
        doc = prof_rule.prof_rule(session, dev, found)
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
