"""Run one (mutated) PROF dir through ``load`` and ``export`` in-process and classify the outcome.

| outcome   | meaning                                                                       |
|-----------|-------------------------------------------------------------------------------|
| "error"   | an ``MsprofError`` whose message is one line (what a user should get)          |
| "warning" | load + export succeeded with at least one warning the unmutated seed does not |
|           | give (``known``: the seed's own warnings, see :func:`run_case`)               |
| "silent"  | load + export succeeded without a new word; ``changed`` says whether the      |
|           | decoded tables differ from the unmutated seed's (a silent wrong answer)       |
| "crash"   | anything else: another exception, a multi-line MsprofError, or a Python       |
|           | warning raised from msprof_py, or any RuntimeWarning (numpy's invalid casts)  |

Shared by the CI fuzz tests and ``benchmarks/fuzz.py``.
"""
from __future__ import annotations

import hashlib
import shutil
import traceback
import warnings as pywarnings
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

TABLES = ("api", "tasks", "steps", "all_reduce", "communication", "comm_tasks", "fusion_ops", "memcpy")


@dataclass
class Outcome:
    kind: str  # error | warning | silent | crash
    message: str = ""  # the error / first warning / traceback
    where: str = ""  # crash site: "Exception @ file:line" of the innermost msprof_py frame
    digest: str = ""  # tables' digest on success
    warnings: tuple[str, ...] = ()  # every warning on success, the case's path replaced by <PROF>

    def changed(self, baseline: str) -> bool:
        return bool(self.digest) and self.digest != baseline


def digest(session) -> str:
    """Content digest of the decoded tables (row order and values; not the warnings)."""
    h = hashlib.sha256()
    for name in TABLES:
        df = getattr(session, name)
        h.update(f"{name}:{len(df)}:{','.join(map(str, df.columns))}".encode())
        if len(df):
            h.update(pd.util.hash_pandas_object(df.astype(str), index=False).to_numpy().tobytes())
    return h.hexdigest()


def crash_site(err: BaseException) -> str:
    frames = traceback.extract_tb(err.__traceback__)
    mine = [f for f in frames if "msprof_py" in f.filename] or frames
    f = mine[-1] if mine else None
    where = f"{Path(f.filename).name}:{f.lineno} {f.name}" if f else "?"
    return f"{type(err).__name__} @ {where}"


def run_case(prof: Path, export: bool = True, known: frozenset[str] = frozenset(),
             always_digest: bool = True) -> Outcome:
    """Load ``prof`` (no cache), then export it (text: timelines, summaries, db) into ``prof`` as the
    CLI does (its own parse, cached in parts, streamed per device), with the advice that
    ``msprof-py export`` writes after it (prof_rule_{device}.json, aoe_tune_ops.json).

    ``known``: the unmutated seed's own warnings (``Outcome.warnings`` of its run).  A case that
    only repeats them is "silent": a seed that warns by itself (a real capture with an unused
    raw kind, say) must not make every mutation of it look noticed.  ``always_digest=False``:
    the tables' digest only for a silent case (the only one compared with its seed's; it costs
    ~5% of a case).
    """
    from msprof_py.errors import MsprofError
    from msprof_py.export.runner import ExportOptions
    from msprof_py.parse.session import load
    from msprof_py.pipeline import export_with_advice

    try:
        with pywarnings.catch_warnings():
            pywarnings.filterwarnings("error", module=r"msprof_py(\.|$)")
            # numpy's "invalid value encountered in cast" is issued from inside pandas when we
            # ask for int64 of a column holding NaN: a wrong value either way
            pywarnings.filterwarnings("error", category=RuntimeWarning)
            session = load(prof, use_cache=False)
            msgs = list(session.warnings)
            if export:
                # the export's own path, as `msprof-py export` runs it (the streamed per-device
                # export with its parse cache in parts), not the session loaded above: handing it
                # that session would test the whole-session path only; and the advice after it,
                # which reads that export's per-device source
                res, advice = export_with_advice(prof, ExportOptions(type="text"))
                later = list(res.warnings) + (list(advice.warnings) if advice is not None else [])
                msgs += [m for m in later if m not in msgs]
    except MsprofError as err:
        text = str(err)
        if "\n" in text or not text.strip():
            return Outcome("crash", text, f"multi-line {type(err).__name__}")
        return Outcome("error", text)
    except Exception as err:  # noqa: BLE001 - classifying every failure is the point
        return Outcome("crash", "".join(traceback.format_exception(err)), crash_site(err))
    shown = tuple(_normalised(m, prof) for m in msgs)
    new = [m for m in shown if m not in known]
    return Outcome("warning" if new else "silent", new[0] if new else "",
                   digest=digest(session) if always_digest or not new else "", warnings=shown)


def _normalised(message: str, prof: Path) -> str:
    """The warning without the case's scratch path (so a seed's warnings compare across copies)."""
    return message.replace(str(prof.resolve()), "<PROF>").replace(str(prof), "<PROF>")


def fresh_copy(seed: Path, dest: Path) -> Path:
    """A private copy of the seed PROF dir at ``dest`` (removed first)."""
    if dest.exists() or dest.is_symlink():
        shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(seed, dest, symlinks=True)
    return dest
