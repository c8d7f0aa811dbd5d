"""Writing a :class:`~msprof_py.export.timeline_model.Timeline` to a JSON array file: check it
(nesting, flows, ids; fit durations to the viewers' grid), stream its chunks to a temporary name."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from msprof_py.atomic import atomic_writer
from msprof_py.direct_io import _copy_into
from msprof_py.export.base import ExportContext
from msprof_py.export.timeline_model import SEPARATOR, FileRange, Timeline

PERFETTO_LIMIT_BYTES = 1 << 30
HEAD = b"[\n"


def json_array(chunks: Iterable[Any]) -> Iterator[Any]:
    """``[`` + events (each ending ``,\\n``) + ``]``: the last separator becomes the bracket.
    Chunks are bytes or uint8 arrays (a :class:`FileRange` passes through; it is never the last
    chunk)."""
    yield HEAD
    prev: Any = b""
    for c in chunks:
        if not isinstance(c, FileRange) and len(c) == 0:
            continue
        if isinstance(prev, FileRange) or len(prev):
            yield prev
        prev = c
    yield (bytes(memoryview(prev)[:-2]) + b"\n]\n") if len(prev) else b"]\n"


def check_timeline(tl: Timeline, path: Path, ctx: ExportContext) -> tuple[tuple[str, ...], int] | None:
    """Warn about events viewers would drop, and fit nested durations to the viewers' grid.
    Returns (problems, durations fitted) when the file's one layer was checked here (what a
    file copying that layer reports again), else None."""
    problems, changed = tl.check(skip=set(ctx.rendered))
    layers = [s for s in tl.slices if len(s)]
    own = None
    if len(layers) == 1 and not tl.flows and getattr(layers[0], "cache_key", None) is not None:
        done = ctx.rendered.get(layers[0].cache_key)
        if done is None:
            own = (tuple(problems), changed)
        elif done.checked is not None:  # copied: what its check found, reported for this file too
            problems, changed = list(done.checked[0]), done.checked[1]
    for p in problems:
        ctx.warnings.warn(f"{path.name}: {p} (viewers drop or misdraw such events)")
    if changed:
        ctx.notes.append(f"{path.name}: {changed} slices end within 1 us of their parent's end or their next "
                         "sibling's start; their dur was written up to 1 us shorter so they stay nested in viewers "
                         "that read ts as doubles (0.25 us resolution at epoch times); exact durations are in the "
                         "summaries")
    return own


def write_timeline(tl: Timeline, path: Path, ctx: ExportContext, what: str) -> Path:
    checked = check_timeline(tl, path, ctx)
    size = 0
    layers: list[tuple[Any, int, int]] = []
    # a file of copied layers only (thread_group, task_time of msprof_N.json's): its copies go on
    # on its writer's thread while the export writes the next files; ctx.later settles it
    later = ctx.later if ctx.later is not None and tl.copies_only(ctx) else None
    with atomic_writer(path, later=later) as w:
        for c in json_array(tl.chunks(ctx, layers)):
            if isinstance(c, FileRange):
                w.copy(c.path, c.offset, c.length)
                size += c.length
            else:
                w.write(c)
                size += len(c)
    # the layers rendered here are copied from this file by the next files that show them (the
    # last one without its separator, which became the closing bracket)
    for key, start, n in layers:
        ctx.rendered[key] = FileRange(path, len(HEAD) + start, n - len(SEPARATOR), checked)
    if later is not None:
        later.sizes[path] = size
    if size > PERFETTO_LIMIT_BYTES:
        ctx.warnings.warn(f"{path} is {size / 2**30:.2f} GB: the Perfetto UI cannot open {what} files over 1 GB; "
                          "export less with --model-id N --iteration-id N")
    return path


def copy_range(r: FileRange, fp: IO[bytes]) -> None:
    """Append ``r``'s bytes to ``fp`` (``copy_file_range``, else a read / write loop).  The
    writers of :func:`atomic_writer` copy with their own ``copy`` (direct reads where they write
    with ``O_DIRECT``)."""
    _copy_into(fp, r.path, r.offset, r.length)
