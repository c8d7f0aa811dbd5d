"""msprof_py.drop_behind through the streamed writers: the writeback of a file's bytes is started every
STEP_BYTES and pages WINDOW_BYTES behind it are dropped, copies drop their source's range, the bytes
are the same with and without it, and it stays off when asked, where unsupported and on a slow disk."""
from __future__ import annotations

import os
import random
from collections import deque
from pathlib import Path

import pytest

from msprof_py import atomic, direct_io, drop_behind

KiB = 1 << 10


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[tuple[int, int, int]]]:
    """Small steps (64 KiB, window 128 KiB), a fresh pace record, and the kernel calls recorded
    (then made for real)."""
    monkeypatch.setattr(drop_behind, "STEP_BYTES", 64 * KiB)
    monkeypatch.setattr(drop_behind, "WINDOW_BYTES", 128 * KiB)
    monkeypatch.setattr(drop_behind._Pace, "rates", deque(maxlen=drop_behind._Pace.SAMPLES))
    monkeypatch.setattr(drop_behind._Pace, "slow", False)
    monkeypatch.delenv(drop_behind.ENV, raising=False)
    monkeypatch.delenv(direct_io.DIRECT_ENV, raising=False)
    log: dict[str, list[tuple[int, int, int]]] = {"sync": [], "drop": []}
    real_sync, real_advise = drop_behind._sync_file_range, os.posix_fadvise
    if real_sync is None:
        pytest.skip("no sync_file_range on this platform")

    def sync(fd: int, off: int, n: int, flags: int) -> int:
        log["sync"].append((fd, off, n))
        return real_sync(fd, off, n, flags)  # type: ignore[operator,no-any-return]

    def advise(fd: int, off: int, n: int, advice: int) -> None:
        if advice == os.POSIX_FADV_DONTNEED:
            log["drop"].append((fd, off, n))
        real_advise(fd, off, n, advice)

    monkeypatch.setattr(drop_behind, "_sync_file_range", sync)
    monkeypatch.setattr(drop_behind.os, "posix_fadvise", advise)
    return log


def _write(path: Path, chunks: list[bytes], copies: dict[int, tuple[Path, int, int]] | None = None) -> None:
    with atomic.atomic_writer(path) as w:
        for i, c in enumerate(chunks):
            w.write(c)
            if copies and i in copies:
                w.copy(*copies[i])


def _chunks(seed: int, total: int) -> list[bytes]:
    rnd = random.Random(seed)
    out, n = [], 0
    while n < total:
        k = rnd.choice([1, 7, 4095, 4096, 10_000, 65_536, 200_000])
        out.append(rnd.randbytes(k))
        n += k
    return out


def test_writeback_started_each_step_and_dropped_a_window_behind(tmp_path: Path, calls: dict) -> None:
    chunks = _chunks(1, 2 << 20)
    _write(tmp_path / "a.json", chunks)
    data = b"".join(chunks)
    assert (tmp_path / "a.json").read_bytes() == data
    sync, drop = calls["sync"], calls["drop"]
    # the writeback is started on contiguous ranges from byte 0, each at least a step
    assert sync and sync[0][1] == 0
    assert all(a[1] + a[2] == b[1] for a, b in zip(sync, sync[1:]))
    assert all(n >= drop_behind.STEP_BYTES for _, _, n in sync)
    covered = sync[-1][1] + sync[-1][2]
    assert len(data) - covered < drop_behind.STEP_BYTES
    # dropped ranges: contiguous, page-aligned, never within WINDOW_BYTES of the started writeback
    assert drop and drop[0][1] == 0
    assert all(a[1] + a[2] == b[1] for a, b in zip(drop, drop[1:]))
    assert all(off % 4096 == 0 and n % 4096 == 0 for _, off, n in drop)
    assert drop[-1][1] + drop[-1][2] <= covered - drop_behind.WINDOW_BYTES
    assert covered - (drop[-1][1] + drop[-1][2]) < drop_behind.WINDOW_BYTES + drop_behind.STEP_BYTES + 4096


def test_same_bytes_with_and_without(tmp_path: Path, calls: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes, copies of another file's ranges and a callable's own writes, in random sizes."""
    src = tmp_path / "src.bin"
    src.write_bytes(random.Random(3).randbytes(1_500_000))
    for seed in range(4):
        chunks = _chunks(seed, 600_000)
        rnd = random.Random(seed)
        copies = {i: (src, rnd.randrange(0, 500_000), rnd.randrange(0, 900_000)) for i in range(0, len(chunks), 5)}
        monkeypatch.setenv(drop_behind.ENV, "0")
        n_sync = len(calls["sync"])
        _write(tmp_path / "plain.json", chunks, copies)
        assert len(calls["sync"]) == n_sync
        monkeypatch.delenv(drop_behind.ENV)
        _write(tmp_path / "behind.json", chunks, copies)
        assert len(calls["sync"]) > n_sync
        assert (tmp_path / "behind.json").read_bytes() == (tmp_path / "plain.json").read_bytes()


def test_a_copy_drops_its_source_range(tmp_path: Path, calls: dict) -> None:
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(300 * KiB))
    with atomic.atomic_writer(tmp_path / "a.json") as w:
        w.write(b"[")
        w.copy(src, 1000, 250 * KiB)
        w.write(b"]")
    assert (tmp_path / "a.json").read_bytes() == b"[" + src.read_bytes()[1000:1000 + 250 * KiB] + b"]"
    # the source's range, in steps of at most STEP_BYTES, from byte 1000 on
    src_drops = [(off, n) for _, off, n in calls["drop"] if n and off >= 1000 and (off - 1000) % drop_behind.STEP_BYTES == 0]
    assert sum(n for _, n in src_drops) >= 250 * KiB
    assert min(off for off, _ in src_drops) == 1000


def test_off_when_asked(tmp_path: Path, calls: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(drop_behind.ENV, "0")
    _write(tmp_path / "a.json", _chunks(2, 1 << 20))
    assert calls == {"sync": [], "drop": []}


def test_off_for_the_process_after_slow_starts(tmp_path: Path, calls: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """A slow disk: starting the writeback takes long each time -> off once the median is slow."""
    clock = iter(range(0, 10**6, 1))  # every call to perf_counter one second later
    monkeypatch.setattr(drop_behind, "_clock", lambda: float(next(clock)))
    _write(tmp_path / "a.json", [os.urandom(drop_behind.STEP_BYTES) for _ in range(drop_behind._Pace.SAMPLES + 5)])
    assert drop_behind._Pace.slow and not drop_behind.enabled()
    assert len(calls["sync"]) == drop_behind._Pace.SAMPLES  # none after the verdict
    n = len(calls["sync"])
    _write(tmp_path / "b.json", _chunks(5, 1 << 20))
    assert len(calls["sync"]) == n


def test_not_for_direct_writes(tmp_path: Path, calls: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """Direct writes bypass the page cache already: no drop-behind on top (where O_DIRECT works)."""
    monkeypatch.setenv(direct_io.DIRECT_ENV, "1")
    _write(tmp_path / "a.json", _chunks(6, 1 << 20))
    probe = tmp_path / ".probe"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | getattr(os, "O_DIRECT", 0)))
        direct_ok = bool(getattr(os, "O_DIRECT", 0))
    except OSError:
        direct_ok = False
    if direct_ok:
        assert calls == {"sync": [], "drop": []}


def test_unsupported_descriptor_is_left_alone(calls: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """sync_file_range failing (a pipe): nothing dropped, no error."""
    monkeypatch.setattr(drop_behind, "_sync_file_range", lambda fd, off, n, fl: -1)
    r, w = os.pipe()
    try:
        d = drop_behind.DropBehind(w)
        d.wrote(10 * drop_behind.STEP_BYTES)
        assert calls["drop"] == []
    finally:
        os.close(r)
        os.close(w)
