"""Files whose writes complete on their writer's thread while the export goes on (atomic.Later):
the copied-layer timelines of a device (thread_group, task_time: copies of msprof_N.json's
layers).  Same bytes and log; renamed only when complete; a full disk during such a copy is the
same one-line error naming the file, and a failure of the export meanwhile (Ctrl-C) removes them;
no temporary file and no writer thread is left either way."""
from __future__ import annotations

import errno
import shutil
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from msprof_py import atomic, direct_io
from msprof_py.cli import cli
from msprof_py.export import ExportOptions, export
from msprof_py.export import timeline_model

from .test_streamed_export import _outputs, two_devices  # noqa: F401  (fixture)


def _leftovers(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if atomic.TMP_RE.match(p.name) or atomic.SCRATCH_RE.match(p.name)]


def _writers() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("msprof-py-writer")]


def test_a_later_file_is_renamed_when_settled(tmp_path: Path) -> None:
    src = tmp_path / "src.bin"
    src.write_bytes(b"0123456789" * 1000)
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    later = atomic.Later()
    with atomic.atomic_writer(target, later=later) as w:
        w.write(b"[")
        w.copy(src, 5, 9000)
        w.write(b"]")
    assert later and target.read_bytes() == b"old"  # not yet in place
    later.settle()
    assert target.read_bytes() == b"[" + (b"0123456789" * 1000)[5:9005] + b"]"
    assert not later and sorted(p.name for p in tmp_path.iterdir()) == ["out.bin", "src.bin"] and not _writers()


def test_a_full_disk_during_a_later_copy_is_one_line_and_leaves_nothing(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    def full(fp, path, offset, length):  # type: ignore[no-untyped-def]
        fp.write(b"x" * 100)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(direct_io, "_copy_into", full)
    monkeypatch.setenv(direct_io.DIRECT_ENV, "0")  # the buffered writers' copy (direct ones: test_chunk_writer_direct)
    src = tmp_path / "src.bin"
    src.write_bytes(b"y" * 1000)
    later = atomic.Later()
    for name in ("a.json", "b.json"):
        with atomic.atomic_writer(tmp_path / name, later=later) as w:
            w.write(b"[")
            w.copy(src, 0, 1000)
    with pytest.raises(atomic.DiskFullError, match=r"a\.json: no space left on device \(needed more than"):
        later.settle()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.bin"] and not later and not _writers()


def test_an_abort_removes_the_later_files(tmp_path: Path) -> None:
    src = tmp_path / "src.bin"
    src.write_bytes(b"y" * 100_000)
    later = atomic.Later()
    with atomic.atomic_writer(tmp_path / "a.json", later=later) as w:
        w.copy(src, 0, 100_000)
    later.abort(KeyboardInterrupt())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.bin"] and not later and not _writers()


def _later_names(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    names: list[str] = []
    real = atomic.Later.add

    def add(self, path, w, stack):  # type: ignore[no-untyped-def]
        names.append(path.name)
        real(self, path, w, stack)

    monkeypatch.setattr(atomic.Later, "add", add)
    return names


def test_copied_layer_timelines_complete_later_with_the_same_bytes(two_devices: Path, tmp_path: Path,  # noqa: F811
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    names = _later_names(monkeypatch)
    prof = Path(shutil.copytree(two_devices, tmp_path / "p" / two_devices.name))
    export(prof, ExportOptions())
    assert sorted(names) == ["task_time_0.json", "task_time_1.json", "thread_group_0.json", "thread_group_1.json"]
    monkeypatch.setattr(timeline_model.Timeline, "copies_only", lambda self, ctx: False)
    names.clear()
    now = Path(shutil.copytree(two_devices, tmp_path / "n" / two_devices.name))
    export(now, ExportOptions())
    assert names == [] and _outputs(prof) == _outputs(now)  # the files and the log's sizes
    assert _leftovers(prof) == [] and not _writers()


def test_a_full_disk_in_a_later_copy_is_one_line(two_devices: Path, tmp_path: Path,  # noqa: F811
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    names = _later_names(monkeypatch)

    def copy(fp, path, offset, length):  # type: ignore[no-untyped-def]
        fp.write(b"x" * 10)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(direct_io, "_copy_into", copy)  # (every copy: the first later file's fails first)
    monkeypatch.setenv(direct_io.DIRECT_ENV, "0")  # the buffered writers' copy (direct ones: test_chunk_writer_direct)
    prof = Path(shutil.copytree(two_devices, tmp_path / two_devices.name))
    res = CliRunner().invoke(cli, ["export", "--output", str(prof)])
    assert res.exit_code != 0 and isinstance(res.exception, SystemExit), res.output
    errors = [ln for ln in res.output.splitlines() if ln.startswith("msprof-py: error:")]
    assert len(errors) == 1 and f"{names[0]}: no space left on device (needed more than the " in errors[0], res.output
    assert _leftovers(prof) == [] and not _writers()
    assert not any((prof / "mindstudio_profiler_output" / n).exists() for n in names)


@pytest.mark.parametrize("exc", [KeyboardInterrupt, RuntimeError])
def test_a_failure_after_a_later_file_removes_it(two_devices: Path, tmp_path: Path, exc: type,  # noqa: F811
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The export fails (Ctrl-C, a bug) in the next file while a copied-layer file is under way."""
    names = _later_names(monkeypatch)
    from msprof_py.export import timeline_write

    real = timeline_write.write_timeline

    def write(tl, path, ctx, what):  # type: ignore[no-untyped-def]
        if names and ctx.later:
            raise exc("stop")
        return real(tl, path, ctx, what)

    for mod in ("timeline", "component_timelines"):
        monkeypatch.setattr(f"msprof_py.export.{mod}.write_timeline", write)
    prof = Path(shutil.copytree(two_devices, tmp_path / two_devices.name))
    with pytest.raises(exc):
        export(prof, ExportOptions())
    assert names and _leftovers(prof) == [] and not _writers()
    assert not any((prof / "mindstudio_profiler_output" / n).exists() for n in names)


def test_later_files_settle_before_each_fork_and_at_the_end(two_devices: Path, tmp_path: Path,  # noqa: F811
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A device's copied-layer files go on beside its advice and the next device's read-back; they
    are complete before the next device's DB process is forked (no writer thread at a fork) and the
    last device's before the export ends (beside the host-side files and the DB's last process)."""
    from msprof_py.export import db_process

    events: list[tuple[str, str]] = []
    real_add, real_settle, real_put = atomic.Later.add, atomic.Later.settle, db_process.DbProcesses.put

    def add(self, path, w, stack):  # type: ignore[no-untyped-def]
        events.append(("add", path.name))
        real_add(self, path, w, stack)

    def settle(self):  # type: ignore[no-untyped-def]
        if self:
            events.append(("settle", ",".join(sorted(p.name for p, _, _ in self._files))))
        real_settle(self)

    def put(self, session):  # type: ignore[no-untyped-def]
        events.append(("fork", str(len(self.procs))))
        assert not _writers()
        real_put(self, session)

    monkeypatch.setattr(atomic.Later, "add", add)
    monkeypatch.setattr(atomic.Later, "settle", settle)
    monkeypatch.setattr(db_process.DbProcesses, "put", put)
    monkeypatch.setenv("MSPROF_PY_DB_PROCESS", "1")
    prof = Path(shutil.copytree(two_devices, tmp_path / two_devices.name))
    export(prof, ExportOptions())
    assert [e for e in events if e[0] != "add"] == [
        ("fork", "0"), ("settle", "task_time_0.json,thread_group_0.json"), ("fork", "1"),
        ("settle", "task_time_1.json,thread_group_1.json")]
    assert _leftovers(prof) == [] and not _writers()
