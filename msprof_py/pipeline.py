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

from msprof_py.analyse.advise.parts import DeviceAdvice, device_advice
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
    parts: dict[int, DeviceAdvice] = {}  # of the PROF dir being exported

    def per_device(prof: Path, dev: int, session: Session) -> None:
        """A device's advice from the session the export has (no second read of the device);
        the rules run while the DB's process works on that device.  A failure here is left to
        ``after`` (the device read again there, the error raised where it always was)."""
        try:
            parts[dev] = device_advice(session)
        except Exception:  # noqa: BLE001
            parts.pop(dev, None)

    def after(prof: Path, parsed: Session | ProfSource) -> None:
        if isinstance(parsed, ProfSource):
            texts.append(advise_source(prof, parsed, advice, summary_only=True, done=dict(parts)))
        else:
            texts.append(advise_session(prof, parsed, advice, summary_only=True))
        parts.clear()

    result = export(path, options, after=after, per_device=per_device)
    advice.text = "\n".join(t for t in texts if t)
    return result, advice


__all__ = ["export_with_advice"]
