"""Write AOE result files exactly in the documented schema, while tuning runs.

The file is ``aoe_result_{opat|sgat}_{YYYYMMDD_HHMMSSmmm}_pid{PID}.json`` in the work directory
(``ASCEND_WORK_PATH`` or the working directory).  Every :meth:`ResultWriter.update` rewrites it
atomically (temporary name, then rename), so a reader always sees a complete document -- the
running state says ``"tune tuning incomplete"`` and has no ``tuning_time(s)``, as AOE's file
after an interruption.  Keys are sorted at every level and percentages are strings with two
decimals, as in the documented examples.

Layouts: ``"list"`` writes ``[{"basic": ...}, {"OPAT": ...}]``; ``"report"`` writes
``{"report_{timestamp}_{tid}": [...]}`` and keeps every task a process tuned in one file (AOE's
training layout).  What makes the numbers simulated (simulator, seed, measurement method, every
candidate measured) goes into the side file ``<result>.provenance.json``, never into the result.
"""
from __future__ import annotations

import json
import os
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from msprof_py import atomic
from msprof_py.errors import InvalidPathError

def aoe_timestamp(now: datetime) -> str:
    """AOE's ``YYYYMMDD_HHMMSSmmm`` (milliseconds as three digits)."""
    return now.strftime("%Y%m%d_%H%M%S") + f"{now.microsecond // 1000:03d}"


def dumps(doc: Any) -> str:
    """The result file's text: sorted keys, 4-space indent, UTF-8 (not ASCII-escaped)."""
    return json.dumps(doc, sort_keys=True, indent=4, ensure_ascii=False) + "\n"


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (temporary name, then rename), creating its directory."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InvalidPathError(f"{path}: cannot write ({err.strerror})") from None
    atomic.write_text(path, text, error="cannot write")


class ResultWriter:
    """One result file; each tuning task is a list ``[{"basic":..}, {"OPAT"|"SGAT":..}]``."""

    def __init__(self, directory: Path, mode: str, *, now: datetime, pid: int | None = None,
                 layout: str = "list") -> None:
        if mode not in ("opat", "sgat"):
            raise ValueError(f"mode must be opat or sgat, not {mode!r}")
        if layout not in ("list", "report"):
            raise ValueError(f"layout must be list or report, not {layout!r}")
        self.mode = mode
        self.layout = layout
        self.timestamp = aoe_timestamp(now)
        self.path = Path(directory) / f"aoe_result_{mode}_{self.timestamp}_pid{pid if pid is not None else os.getpid()}.json"
        self.tasks: dict[str, list[dict[str, Any]]] = {}

    def task_key(self, now: datetime | None = None, tid: int | None = None) -> str:
        """A new ``report_{timestamp}_{tid}`` key (``list`` layout: the only task)."""
        ts = aoe_timestamp(now) if now is not None else self.timestamp
        tid = tid if tid is not None else threading.get_native_id()
        while f"report_{ts}_{tid}" in self.tasks:  # two tasks in one millisecond on one thread
            tid += 1
        return f"report_{ts}_{tid}"

    def update(self, key: str, basic: dict[str, Any], section_name: str, section: dict[str, Any] | None) -> None:
        """Replace task ``key``'s content and rewrite the file.  ``section`` None omits the section
        (documented: no OPAT section when no operator could be tuned; no SGAT section on failure)."""
        items: list[dict[str, Any]] = [{"basic": basic}]
        if section is not None:
            items.append({section_name: section})
        self.tasks[key] = items
        if self.layout == "list":
            if len(self.tasks) > 1:
                raise ValueError("the list layout holds one tuning task; use layout='report'")
            doc: Any = items
        else:
            doc = self.tasks
        atomic_write(self.path, dumps(doc))

    @property
    def provenance_path(self) -> Path:
        return self.path.with_name(self.path.name + ".provenance.json")

    def write_provenance(self, info: dict[str, Any]) -> None:
        atomic_write(self.provenance_path, json.dumps(info, sort_keys=True, indent=1, ensure_ascii=False) + "\n")
