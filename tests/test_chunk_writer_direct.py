"""msprof_py.direct_io's staged writes (through chunk_writer's writers): whole aligned blocks with
O_DIRECT, the rest buffered, other files' ranges read back with O_DIRECT; the bytes are what plain
writes give, whatever the chunk sizes, the file system's answer or the disk's speed."""
from __future__ import annotations

import errno
import fcntl
import io
import os
import random
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from msprof_py import atomic, chunk_writer, direct_io

O_DIRECT = getattr(os, "O_DIRECT", 0)


@pytest.fixture(autouse=True)
def small_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stages of 64 KiB (the pool's buffers may be bigger: only the first STAGE_BYTES are used)
    and a fresh speed record, so a few hundred KB cross many blocks."""
    monkeypatch.setattr(direct_io, "STAGE_BYTES", 64 << 10)
    monkeypatch.setattr(direct_io._Stats, "rates", deque(maxlen=direct_io._Stats.rates.maxlen))
    monkeypatch.setattr(direct_io._Stats, "slow", False)
    monkeypatch.setenv(direct_io.DIRECT_ENV, "1")  # (the default; set against an environment that switched them off)


def _direct_supported(folder: Path) -> bool:
    if not O_DIRECT:
        return False
    try:
        os.close(os.open(folder / ".probe", os.O_WRONLY | os.O_CREAT | O_DIRECT))
    except OSError:
        return False
    finally:
        (folder / ".probe").unlink(missing_ok=True)
    return True


class _Spy(io.FileIO):
    """Records each write's (offset, length, O_DIRECT on); optionally refuses direct writes."""

    refuse_direct = False
    log: list[tuple[int, int, bool]]

    def write(self, b):  # type: ignore[override]
        direct = bool(fcntl.fcntl(self.fileno(), fcntl.F_GETFL) & O_DIRECT)
        if direct and self.refuse_direct:
            raise OSError(errno.EINVAL, "Invalid argument", self.name)
        self.log.append((self.tell(), len(memoryview(b)), direct))
        return super().write(b)


def _chunks(rng: random.Random, total: int) -> list[Any]:
    out: list[Any] = []
    n = 0
    while n < total:
        k = rng.choice([1, 7, 100, 4095, 4096, 4097, 70_000, 200_000])
        kind = rng.randrange(3)
        data = np.frombuffer(rng.randbytes(k), np.uint8)
        if kind == 0:
            out.append(data.tobytes())
        elif kind == 1:
            out.append(data.copy())  # a writable array: copied without the GIL
        else:
            out.append(data)  # read-only
        n += k
    return out


def _spy_open(monkeypatch: pytest.MonkeyPatch, log: list, refuse: bool = False) -> None:
    def opener(f: Any, mode: str = "r", *a: Any, **k: Any) -> Any:
        raw = _Spy(f, "w")
        raw.log, raw.refuse_direct = log, refuse
        return io.BufferedWriter(raw)

    monkeypatch.setattr(atomic, "open", opener, raising=False)


@pytest.mark.parametrize("size", [1, 4095, 4096, 40_000, (64 << 10) - 51])
def test_a_file_that_fits_in_the_stage_is_one_plain_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           size: int) -> None:
    """A file smaller than a staging buffer never waits for the disk: no direct write, one plain
    write at the end (and a copied range that small is read the plain way)."""
    src = tmp_path / "src.bin"
    src.write_bytes(bytes(range(256)) * 40)
    log: list[tuple[int, int, bool]] = []
    _spy_open(monkeypatch, log)
    data = random.Random(size).randbytes(size)
    with atomic.atomic_writer(tmp_path / "out.bin") as w:
        w.write(data[:size // 2])
        w.copy(src, 3, 0 if size < 100 else 50)
        w.write(data[size // 2:])
    want = data[:size // 2] + (b"" if size < 100 else src.read_bytes()[3:53]) + data[size // 2:]
    assert (tmp_path / "out.bin").read_bytes() == want
    assert [d for _, _, d in log] == [False]


def test_a_file_past_the_stage_goes_out_direct(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[tuple[int, int, bool]] = []
    _spy_open(monkeypatch, log)
    data = random.Random(5).randbytes((64 << 10) * 3 + 1234)
    with atomic.atomic_writer(tmp_path / "out.bin") as w:
        for k in range(0, len(data), 10_000):
            w.write(data[k:k + 10_000])
    assert (tmp_path / "out.bin").read_bytes() == data
    if _direct_supported(tmp_path):
        assert sum(n for _, n, d in log if d) >= (64 << 10) * 3 and log[-1] == ((64 << 10) * 3, 1234, False)


@pytest.mark.parametrize("threaded", ["1", "0"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_staged_writes_and_copies_give_the_plain_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       seed: int, threaded: str) -> None:
    monkeypatch.setenv(chunk_writer.WRITER_THREAD_ENV, threaded)
    rng = random.Random(seed)
    src = tmp_path / "src.bin"
    src_bytes = rng.randbytes(300_000)
    src.write_bytes(src_bytes)
    log: list[tuple[int, int, bool]] = []
    _spy_open(monkeypatch, log)
    expected = bytearray()
    with atomic.atomic_writer(tmp_path / "out.bin") as w:
        for k, c in enumerate(_chunks(rng, 600_000)):
            w.write(c)
            expected += bytes(c)
            if k % 9 == 4:  # another file's range, at any offset
                off = rng.randrange(len(src_bytes))
                n = rng.randrange(len(src_bytes) - off + 1)
                w.copy(src, off, n)
                expected += src_bytes[off:off + n]
            if k % 23 == 11:  # a callable on the file object, behind the writes before it
                w.call(lambda fp, n=len(expected): fp.write(b"|" if fp.tell() == n else b"?"))
                expected += b"|"
    assert (tmp_path / "out.bin").read_bytes() == bytes(expected)
    assert all(off % 4096 == 0 and n % 4096 == 0 for off, n, d in log if d)  # direct: whole aligned blocks
    if _direct_supported(tmp_path):
        assert sum(n for _, n, d in log if d) > len(expected) // 2
    assert not any(t.name.startswith("msprof-py-") for t in threading.enumerate())


def test_no_direct_writes_when_switched_off_or_the_disk_is_slow(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[tuple[int, int, bool]] = []
    _spy_open(monkeypatch, log)
    data = np.frombuffer(random.Random(5).randbytes(500_000), np.uint8)
    monkeypatch.setenv(direct_io.DIRECT_ENV, "0")
    with atomic.atomic_writer(tmp_path / "a.bin") as w:
        w.write(data)
    monkeypatch.setenv(direct_io.DIRECT_ENV, "1")
    for k in range(31):  # a busy machine: some writes wait for a core; the median is fast
        direct_io._Stats.add(4 << 20, 1.0 if k % 3 == 0 else 0.002)
    assert not direct_io._Stats.slow and direct_io.direct_io_on()
    for _ in range(16):  # a slow disk: most writes are slow
        direct_io._Stats.add(4 << 20, 0.1)
    assert direct_io._Stats.slow and not direct_io.direct_io_on()
    with atomic.atomic_writer(tmp_path / "b.bin") as w:
        w.write(data)
    assert log and not any(d for _, _, d in log)
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes() == data.tobytes()


def test_a_file_system_that_refuses_direct_writes_gets_buffered_ones(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[tuple[int, int, bool]] = []
    _spy_open(monkeypatch, log, refuse=True)
    data = np.frombuffer(random.Random(6).randbytes(700_000), np.uint8)
    with atomic.atomic_writer(tmp_path / "a.bin") as w:
        for k in range(0, len(data), 30_000):
            w.write(data[k:k + 30_000])
    assert (tmp_path / "a.bin").read_bytes() == data.tobytes()
    assert sum(n for _, n, _ in log) == len(data)


def test_a_full_disk_during_a_direct_write_is_one_line_and_leaves_nothing(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    class Full(io.FileIO):
        def write(self, b):  # type: ignore[override]
            if self.tell() + len(memoryview(b)) > 300_000:
                raise OSError(errno.ENOSPC, "No space left on device", self.name)
            return super().write(b)

    monkeypatch.setattr(atomic, "open", lambda f, mode="r", *a, **k: io.BufferedWriter(Full(f, "w")),
                        raising=False)
    src = tmp_path / "src.bin"
    src.write_bytes(b"s" * 1_000_000)
    with pytest.raises(atomic.DiskFullError, match=r"out\.json: no space left on device \(needed more than"):
        with atomic.atomic_writer(tmp_path / "out.json") as w:
            w.write(b"x" * 100_000)
            w.copy(src, 3, 900_000)  # fails in the copy, with the reader thread running
            w.write(b"y" * 10)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.bin"]
    assert not any(t.name.startswith("msprof-py-") for t in threading.enumerate())


def test_a_copy_past_the_end_of_its_source_is_an_error(tmp_path: Path) -> None:
    src = tmp_path / "src.bin"
    src.write_bytes(b"a" * 10_000)
    with pytest.raises(OSError, match="ended at byte"):
        with atomic.atomic_writer(tmp_path / "out.bin") as w:
            w.copy(src, 5_000, 9_000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.bin"]


def test_staging_buffers_are_reused(tmp_path: Path) -> None:
    before = len(direct_io._POOL._free)
    for name in "abc":
        with atomic.atomic_writer(tmp_path / name) as w:
            w.write(b"z" * 200_000)
            w.copy(tmp_path / "a" if name != "a" else __file__, 0, 1000)
    assert len(direct_io._POOL._free) <= max(before, 3)  # a stage and a reader's two buffers


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_process_writes_with_buffers_of_its_own(tmp_path: Path) -> None:
    """The pool's buffers are private mappings, and a fork starts with a pool of its own: a
    parent and its child writing at once do not share staging memory."""
    with atomic.atomic_writer(tmp_path / "warm") as w:  # the pool holds a buffer from now on
        w.write(b"w" * 100_000)
    pid = os.fork()
    if pid == 0:  # the child: write, report through the exit status
        try:
            with atomic.atomic_writer(tmp_path / "child") as w:
                for _ in range(200):
                    w.write(b"c" * 5_000)
            os._exit(0 if (tmp_path / "child").read_bytes() == b"c" * 1_000_000 else 1)
        except BaseException:
            os._exit(2)
    with atomic.atomic_writer(tmp_path / "parent") as w:
        for _ in range(200):
            w.write(b"p" * 5_000)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert (tmp_path / "parent").read_bytes() == b"p" * 1_000_000


def test_an_abort_stops_a_copy_under_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failing producer (Ctrl-C) does not wait for a long copy queued before it to finish."""
    src = tmp_path / "src.bin"
    src.write_bytes(b"s" * 4_000_000)
    blocks: list[int] = []
    real = direct_io._Sink.write

    def slow_write(self: Any, buf: Any) -> None:
        blocks.append(len(memoryview(buf)))
        time.sleep(0.05)
        real(self, buf)

    monkeypatch.setattr(direct_io._Sink, "write", slow_write)
    with pytest.raises(KeyboardInterrupt):
        with atomic.atomic_writer(tmp_path / "out.bin") as w:
            w.copy(src, 0, 4_000_000)  # ~60 blocks of 64 KiB, 3 s at this pace
            time.sleep(0.1)
            raise KeyboardInterrupt
    assert len(blocks) < 20 and sorted(p.name for p in tmp_path.iterdir()) == ["src.bin"]
    assert not any(t.name.startswith("msprof-py-") for t in threading.enumerate())


def test_direct_writes_are_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Direct writes unless MSPROF_PY_DIRECT_IO=0 (fresh page-cache pages cost a host fault on
    VMs with free page reporting; see direct_io_on)."""
    monkeypatch.delenv(direct_io.DIRECT_ENV, raising=False)
    assert direct_io.direct_io_on() == (bool(O_DIRECT) and direct_io.fcntl is not None)
    monkeypatch.setenv(direct_io.DIRECT_ENV, "0")
    assert not direct_io.direct_io_on()
    monkeypatch.setenv(direct_io.DIRECT_ENV, "1")
    assert direct_io.direct_io_on() == (bool(O_DIRECT) and direct_io.fcntl is not None)


def test_blocks_written_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pwrite_blocks: whole aligned blocks at an aligned offset of an existing file, O_DIRECT from
    a pooled buffer (several stages' worth), else False with nothing written (the caller's plain
    write then)."""
    path = tmp_path / "f.bin"
    path.write_bytes(b"h" * 8192)
    data = random.Random(9).randbytes((64 << 10) * 2 + 8192)
    supported = _direct_supported(tmp_path)
    assert direct_io.pwrite_blocks(path, data, 8192) == supported
    if supported:
        assert path.read_bytes() == b"h" * 8192 + data
    before = path.read_bytes()
    assert not direct_io.pwrite_blocks(path, data[:4096], 8192)  # smaller than min_bytes
    assert not direct_io.pwrite_blocks(path, data[:-1], 8192, min_bytes=4096)  # not whole blocks
    assert not direct_io.pwrite_blocks(path, data, 100, min_bytes=4096)  # not at a block
    monkeypatch.setenv(direct_io.DIRECT_ENV, "0")
    assert not direct_io.pwrite_blocks(path, data, 0, min_bytes=4096)
    assert path.read_bytes() == before


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_process_keeps_what_was_measured_of_the_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """A DB process forked after the disk was found slow writes the plain way too (its own
    pool and lock, the parent's rates and verdict)."""
    for _ in range(direct_io._Stats.rates.maxlen):
        direct_io._Stats.add(1 << 20, 0.1)  # 10 MB/s
    assert direct_io._Stats.slow
    pid = os.fork()
    if pid == 0:  # the child: exit code 0 when it kept both
        ok = direct_io._Stats.slow and len(direct_io._Stats.rates) == direct_io._Stats.rates.maxlen \
            and not direct_io.direct_io_on()
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
