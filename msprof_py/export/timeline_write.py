"""Writing a :class:`~msprof_py.export.timeline_model.Timeline` to a JSON array file: check it
(nesting, flows, ids; fit durations to the viewers' grid), stream its chunks to a temporary name."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from msprof_py.atomic import atomic_open
from msprof_py.export.base import ExportContext
from msprof_py.export.timeline_model import Timeline
from msprof_py.memory import trim

PERFETTO_LIMIT_BYTES = 1 << 30


def json_array(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """``[`` + events (each ending ``,\\n``) + ``]``: the last separator becomes the bracket."""
    yield b"[\n"
    prev = b""
    for c in chunks:
        if not c:
            continue
        if prev:
            yield prev
        prev = c
    yield (prev[:-2] + b"\n]\n") if prev else b"]\n"


def check_timeline(tl: Timeline, path: Path, ctx: ExportContext) -> None:
    """Warn about events viewers would drop, and fit nested durations to the viewers' grid."""
    problems, changed = tl.check(skip=set(ctx.rendered))
    for p in problems:
        ctx.warnings.warn(f"{path.name}: {p} (viewers drop or misdraw such events)")
    if changed:
        ctx.notes.append(f"{path.name}: {changed} slices end within 1 us of their parent's end or their next "
                         "sibling's start; their dur was written up to 1 us shorter so they stay nested in viewers "
                         "that read ts as doubles (0.25 us resolution at epoch times); exact durations are in the "
                         "summaries")


def write_timeline(tl: Timeline, path: Path, ctx: ExportContext, what: str) -> Path:
    check_timeline(tl, path, ctx)
    trim()  # the check's sort keys back to the system before rendering
    size = 0
    with atomic_open(path) as fp:
        for c in json_array(tl.chunks(ctx)):
            fp.write(c)
            size += len(c)
    if size > PERFETTO_LIMIT_BYTES:
        ctx.warnings.warn(f"{path} is {size / 2**30:.2f} GB: the Perfetto UI cannot open {what} files over 1 GB; "
                          "export less with --model-id N --iteration-id N")
    return path
