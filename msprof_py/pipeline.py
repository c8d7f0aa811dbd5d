"""Stages chained over one loaded session: what ``msprof-py export`` runs.

``export`` (timelines, summaries, DB) and ``analyse`` (advice) are separate stages that must not
import each other (tests/test_import_direction.py); msprof prints its tuning suggestions right
after an export, so this module, above both, runs the export and hands each PROF dir's
already-parsed data to the advice instead of letting the advice parse the dir again: the whole
session an export loaded, or the :class:`ProfSource` a streamed export read one device at a time
(the advice then reads one device at a time too).
"""
from __future__ import annotations

from pathlib import Path

from msprof_py.analyse.advise.run import AdviseResult, advise_session, advise_source
from msprof_py.export.runner import ExportOptions, ExportResult, export
from msprof_py.parse.session import Session
from msprof_py.parse.source import ProfSource


def export_with_advice(path: str | Path, options: ExportOptions) -> tuple[ExportResult, AdviseResult | None]:
    """Export every PROF dir under ``path``; for an all-iterations text export also write msprof's
    advice files (prof_rule_{device}.json, aoe_tune_ops.json) from the same session.  Returns the
    export result and the advice (None when no advice runs: a db/perfetto or one-iteration export)."""
    if options.type != "text" or options.model_id is not None:
        return export(path, options), None
    advice = AdviseResult()
    texts: list[str] = []

    def after(prof: Path, parsed: Session | ProfSource) -> None:
        if isinstance(parsed, ProfSource):
            texts.append(advise_source(prof, parsed, advice, summary_only=True))
        else:
            texts.append(advise_session(prof, parsed, advice, summary_only=True))

    result = export(path, options, after=after)
    advice.text = "\n".join(t for t in texts if t)
    return result, advice


__all__ = ["export_with_advice"]
