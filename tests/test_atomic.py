"""msprof_py.atomic: outputs appear whole (rename on success) or not at all (old file kept,
temporary file removed), with the permissions ``open()`` would give them."""
from __future__ import annotations

import errno
import io
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from msprof_py import atomic, chunk_writer
from msprof_py.errors import InvalidPathError


def test_success_renames_and_leaves_only_the_target(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    with atomic.atomic_open(target, "w", encoding="utf-8") as fp:
        fp.write("new ")
        assert target.read_text() == "old"  # nothing visible until the block completes
        fp.write("text")
    assert target.read_text() == "new text"
    assert atomic.write_bytes(tmp_path / "b.bin", b"\x00\x01") == tmp_path / "b.bin"
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    with atomic.temp_path(tmp_path / "c.csv") as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".c.csv.") and tmp.name.endswith(".tmp")
        tmp.write_text("a,b\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.bin", "c.csv", "out.json"]


@pytest.mark.parametrize("exc", [ValueError, KeyboardInterrupt, OSError])
def test_exception_mid_write_keeps_the_target_and_removes_the_temp_file(tmp_path: Path, exc: type) -> None:
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(exc):
        with atomic.atomic_open(target) as fp:
            fp.write(b"half")
            raise exc("interrupted")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_error_message_names_the_path_and_cleans_up(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    with pytest.raises(InvalidPathError, match=r"r\.json: cannot write the thing \(Permission denied\)"):
        with atomic.atomic_open(target, "w", error="cannot write the thing"):
            raise OSError(13, "Permission denied")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InvalidPathError, match="missing/x.txt: cannot write"):
        atomic.write_text(tmp_path / "missing" / "x.txt", "x", error="cannot write")
    with pytest.raises(FileNotFoundError):  # without ``error`` the OSError is the caller's to map
        atomic.write_text(tmp_path / "missing" / "x.txt", "x")


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_permissions_follow_the_umask(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        atomic.write_bytes(tmp_path / "f", b"x")
        with atomic.temp_path(tmp_path / "g") as tmp:
            tmp.write_bytes(b"y")
    finally:
        os.umask(old)
    for name in ("f", "g"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~umask


# ------------------------------------------------------------------ the writer thread
class _SlowFile(io.BytesIO):
    """Records the largest backlog its writer had while it was slow to write."""

    writer: "chunk_writer.ChunkWriter | None" = None
    most = 0

    def write(self, b):  # type: ignore[override]
        time.sleep(0.001)
        if self.writer is not None:
            self.most = max(self.most, self.writer.pending_bytes)
        return super().write(b)


def test_writer_thread_keeps_the_order_and_a_bounded_backlog() -> None:
    fp = _SlowFile()
    w = chunk_writer.ChunkWriter(fp, limit=100)
    fp.writer = w
    expected = b""
    for k in range(60):
        chunk = np.full(30, k % 251, np.uint8) if k % 2 else bytes([k % 251]) * 30
        w.write(chunk)
        assert w.pending_bytes <= 100 + 30
        expected += bytes(chunk)
        if k % 7 == 0:  # a call runs on the thread, after the writes before it
            w.call(lambda f, n=len(expected): f.write(b"|" if f.tell() == n else b"?"))
            expected += b"|"
    w.close()
    assert fp.getvalue() == expected and fp.most <= 130
    assert not w._thread.is_alive()


def test_a_failed_write_on_the_thread_is_one_line_and_leaves_nothing(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    class Full(io.FileIO):
        def write(self, b):  # type: ignore[override]
            if self.tell() + len(b) > 1000:
                raise OSError(errno.ENOSPC, "No space left on device", self.name)
            return super().write(b)

    monkeypatch.setattr(atomic, "open", lambda f, mode="r", *a, **k: Full(f, "w"), raising=False)
    target = tmp_path / "out.json"
    target.write_bytes(b"old")
    with pytest.raises(atomic.DiskFullError, match=r"out\.json: no space left on device \(needed more than"):
        with atomic.atomic_writer(target) as w:
            for _ in range(100):  # the error reaches the producer at a later write or at the end
                w.write(b"x" * 300)
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["out.json"]
    assert not any(t.name == "msprof-py-writer" for t in threading.enumerate())


@pytest.mark.parametrize("exc", [ValueError, KeyboardInterrupt])
def test_a_failing_producer_stops_the_writer_thread(tmp_path: Path, exc: type) -> None:
    target = tmp_path / "out.bin"
    with pytest.raises(exc):
        with atomic.atomic_writer(target) as w:
            w.write(b"half")
            raise exc("interrupted")
    assert list(tmp_path.iterdir()) == []
    assert not any(t.name == "msprof-py-writer" for t in threading.enumerate())


def test_an_abort_while_a_chunk_is_written_ends_the_thread_cleanly() -> None:
    class Slow(io.BytesIO):
        def write(self, b):  # type: ignore[override]
            time.sleep(0.05)
            return super().write(b)

    errors: list[BaseException] = []
    old = threading.excepthook
    threading.excepthook = lambda a: errors.append(a.exc_value)
    try:
        w = chunk_writer.ChunkWriter(Slow())
        w.write(b"x" * 10)
        time.sleep(0.01)  # the thread is inside write()
        w.abort()
    finally:
        threading.excepthook = old
    assert errors == [] and not w._thread.is_alive()


def test_temporary_file_reopened_without_truncation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The new empty temporary file is reopened for writing without O_TRUNC (ext4 starts writing
    back a file truncated to 0 when it is closed, from the closing thread), in binary and text
    modes alike, and the written bytes are all there."""
    flags: list[int] = []
    real_open = os.open

    def spy(path: Any, fl: int, *args: Any, **kwargs: Any) -> int:
        flags.append(fl)
        return real_open(path, fl, *args, **kwargs)

    monkeypatch.setattr(atomic.os, "open", spy)
    with atomic.atomic_writer(tmp_path / "a.bin") as w:
        w.write(b"x" * 100_000)
    with atomic.atomic_open(tmp_path / "b.txt", "w", encoding="utf-8") as fp:
        fp.write("é\n")
    assert len(flags) == 4 and not any(f & os.O_TRUNC for f in flags)
    assert (tmp_path / "a.bin").read_bytes() == b"x" * 100_000
    assert (tmp_path / "b.txt").read_bytes() == "é\n".encode()
