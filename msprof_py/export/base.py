"""The exporter interface, output naming and atomic file writing.

Every exporter is an object with a ``name``, a ``kind`` ("timeline" | "summary" | "db"), a
``describe`` line for README.txt, and ``write(session, out_dir, naming) -> list[Path]``.
Exporters only *format* the parsed session tables (see :mod:`msprof_py.parse.schema`); they
never look at raw data.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from msprof_py.atomic import atomic_writer
from msprof_py.errors import WarningLog
from msprof_py.parse.session import Session


@dataclass(frozen=True)
class Naming:
    """What an output file name is made of: ``{name}_{device_id}_{model_id}_{iter_id}.{ext}``.

    Parts that do not apply are left out (seed 003): an all-iterations export of device 0 gives
    ``op_summary_0.csv``; ``--model-id 1 --iteration-id 3`` gives ``op_summary_0_1_3.csv``;
    host-side files (``api_statistic``, ``fusion_op``) have no device part.
    """

    device_id: int | None = None
    model_id: int | None = None
    iteration_id: int | None = None
    summary_format: str = "csv"  # csv | json
    timestamp: str = ""  # YYYYMMDDhhmmss of the collection start (for msprof_{ts}.db)

    def file(self, name: str, ext: str, device: bool = True) -> str:
        parts = [name]
        if device and self.device_id is not None:
            parts.append(str(self.device_id))
        if self.model_id is not None and self.iteration_id is not None:
            parts += [str(self.model_id), str(self.iteration_id)]
        return "_".join(parts) + "." + ext

    def for_device(self, device_id: int | None) -> "Naming":
        return Naming(device_id, self.model_id, self.iteration_id, self.summary_format, self.timestamp)


@dataclass
class ExportContext:
    """Things an exporter may need besides the session: warnings and the enabled timeline layers."""

    warnings: WarningLog = field(default_factory=WarningLog)
    layers: frozenset[str] | None = None  # json_process keys switched on; None = all
    # rendered timeline layers (key -> timeline_model.FileRange: where an earlier output file
    # holds its bytes), so a layer that several files show (CANN in msprof_*.json and
    # thread_group_*.json, tasks in msprof_* and task_time_*) is formatted and validated once and
    # copied by the kernel; scratch None disables the cache (the dir holds nothing any more)
    notes: list[str] = field(default_factory=list)  # [INFO] lines for the export log
    scratch: Path | None = None
    rendered: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    slice_bytes: int | None = None  # --slice-size: msprof_*.json is split into files under this size
    # files still being written on their threads (atomic.Later), completed by its settle(): set by
    # the streamed export for a device's jobs; None: every file complete when its exporter returns
    later: Any = None

    def layer_on(self, key: str) -> bool:
        return self.layers is None or key in self.layers


class Exporter(Protocol):
    name: str
    kind: str  # "timeline" | "summary" | "db"
    per_device: bool
    describe: str

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        """Write this exporter's file(s) for ``naming.device_id``; return the paths written
        (empty when the session has no data for it)."""
        ...


REGISTRY: dict[str, Exporter] = {}
"""``"{kind}:{name}"`` -> exporter, e.g. ``"summary:task_time"`` and ``"timeline:task_time"``."""


def register(exporter: Exporter) -> Exporter:
    key = f"{exporter.kind}:{exporter.name}"
    if key in REGISTRY:
        raise ValueError(f"duplicate exporter {key}")
    REGISTRY[key] = exporter
    return exporter


def write_chunks(path: Path, chunks: Iterable[Any]) -> Path:
    """Write the chunks (``bytes`` or contiguous buffers, not changed after they are yielded) to
    ``path`` atomically, on a writer thread while the next chunks are rendered."""
    with atomic_writer(path) as w:
        for c in chunks:
            w.write(c)
    return path
