"""Export under faults: a full disk is one line naming the file and how much was needed; an
export after a killed one removes what the dead one left (and only that); a read-only PROF dir
names the folder that could not be made."""
from __future__ import annotations

import errno
import io
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from msprof_py import atomic
from msprof_py.cli import cli

FIXTURE = next((Path(__file__).parents[2] / "fixtures" / "prof_small").glob("PROF_*"))


def _leftovers(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if atomic.TMP_RE.match(p.name) or atomic.SCRATCH_RE.match(p.name)]


def _one_error_line(res) -> str:
    assert res.exit_code != 0 and isinstance(res.exception, SystemExit), res.output
    errors = [ln for ln in res.output.splitlines() if ln.startswith("msprof-py: error:")]
    assert len(errors) == 1, res.output
    return errors[0]


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# ------------------------------------------------------------------ disk full
class _FullAfter(io.FileIO):
    """A file whose writes fail with ENOSPC once ``limit`` bytes are written."""

    limit = 2000

    def write(self, b):  # type: ignore[override]
        if self.tell() + len(b) > self.limit:
            raise OSError(errno.ENOSPC, "No space left on device", self.name)
        return super().write(b)


def test_disk_full_injected_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prof = shutil.copytree(FIXTURE, tmp_path / FIXTURE.name)

    def small_disk_open(file, mode="r", *a, **kw):
        if "w" in mode:
            raw = _FullAfter(file, "w")
            return raw if "b" in mode else io.TextIOWrapper(io.BufferedWriter(raw), encoding=kw.get("encoding"))
        return open(file, mode, *a, **kw)

    monkeypatch.setattr(atomic, "open", small_disk_open, raising=False)
    line = _one_error_line(CliRunner().invoke(cli, ["export", "--output", str(prof)]))
    assert "no space left on device" in line and "mindstudio_profiler_output" in line and " B written" in line
    assert _leftovers(prof) == []
    assert not list((prof / "mindstudio_profiler_output").glob("*.json"))  # nothing partial


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("mount"),
                    reason="mounting a small tmpfs needs root")
def test_disk_full_on_a_real_small_tmpfs(tmp_path: Path) -> None:
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=220k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount tmpfs here")
    try:
        prof = shutil.copytree(FIXTURE, mnt / FIXTURE.name)
        line = _one_error_line(CliRunner().invoke(cli, ["export", "--output", str(prof)]))
        assert "no space left on device" in line and str(mnt) in line
        assert _leftovers(mnt) == []
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_disk_full_message_states_the_need(tmp_path: Path) -> None:
    err = atomic.disk_full(tmp_path / "x.db", needed=5 * 2**20)
    assert str(err).startswith(f"{tmp_path / 'x.db'}: no space left on device (needed 5.0 MB, ")
    assert "free there" in str(err) and "\n" not in str(err)
    assert isinstance(err, OSError) and err.errno == errno.ENOSPC  # best-effort writers still see an OSError


# ------------------------------------------------------------------ killed exports
def test_next_export_removes_what_a_dead_export_left_and_only_that(tmp_path: Path) -> None:
    prof = shutil.copytree(FIXTURE, tmp_path / FIXTURE.name)
    out = prof / "mindstudio_profiler_output"
    out.mkdir()
    dead, alive = _dead_pid(), os.getppid()
    dead_files = [out / f".msprof_0.json.{dead}-0123abcd.tmp", prof / f".msprof_1.db.{dead}-deadbeef.tmp"]
    for p in dead_files:
        p.write_bytes(b"x" * 1000)
    scratch = out / f".msprof_py_scratch_{dead}-abc123"
    scratch.mkdir()
    (scratch / "layer.bin").write_bytes(b"y")
    kept = [out / f".op_summary_0.csv.{alive}-0123abcd.tmp",  # a live export's
            out / ".notes.tmp", prof / "my.0123abcd.tmp"]  # the user's own
    for p in kept:
        p.write_bytes(b"z")
    res = CliRunner().invoke(cli, ["export", "--output", str(prof)])
    assert res.exit_code == 0, res.output
    assert not any(p.exists() for p in [*dead_files, scratch])
    assert all(p.exists() for p in kept)
    log = (prof / "mindstudio_profiler_log" / "msprof_py_export.log").read_text()
    assert f".msprof_0.json.{dead}-0123abcd.tmp, left by an export that was killed" in log


def test_next_export_removes_what_an_older_version_left_and_only_that(tmp_path: Path) -> None:
    """Versions before the pid was in the names (the kill -9 runs of issue #16) left
    ``.{name}.{8 chars}.tmp`` files and ``.msprof_py_scratch_{8 chars}`` dirs: removed when their
    target is one of the export's outputs, untouched for 10 minutes and open nowhere."""
    prof = shutil.copytree(FIXTURE, tmp_path / FIXTURE.name)
    out = prof / "mindstudio_profiler_output"
    out.mkdir()
    old = time.time() - 3600
    dead = [out / ".msprof_0.json.k2j_9xqa.tmp", out / ".op_summary_0.csv.0123abcd.tmp",  # mkstemp, token_hex
            prof / ".msprof_20260101000000.db.ab_1cdef.tmp"]
    scratch = out / ".msprof_py_scratch_x7_qk2mz"
    scratch.mkdir()
    dead_all = [*dead, scratch / "layer0.part", scratch]
    fresh = out / ".task_time_0.csv.zzzzzzzz.tmp"  # could be a live old export's: too recent
    held = out / ".step_trace_0.csv.openopen.tmp"  # held open by a live process
    users = [prof / ".notes.abcdefgh.tmp", prof / ".host.abcdefgh.tmp", out / ".my_notes.abcdefgh.tmp",
             prof / "device_0" / ".msprof_0.db.abcdefgh.tmp"]  # not ours, or not a folder the export writes
    for p in [*dead, scratch / "layer0.part", fresh, held, *users]:
        p.write_bytes(b"x" * 100)
    for p in [*dead_all, held, *users]:
        os.utime(p, (old, old))
    with open(held, "rb"):
        res = CliRunner().invoke(cli, ["export", "--output", str(prof)])
    assert res.exit_code == 0, res.output
    assert [p for p in dead_all if p.exists()] == []
    assert [p for p in [fresh, held, *users] if not p.exists()] == []
    log = (prof / "mindstudio_profiler_log" / "msprof_py_export.log").read_text()
    assert ".msprof_0.json.k2j_9xqa.tmp, left by an export that was killed" in log


def test_kill_9_mid_export_then_export_again(tmp_path: Path) -> None:
    """A real SIGKILL while the export writes; the next export leaves no temporary file."""
    prof = shutil.copytree(FIXTURE, tmp_path / FIXTURE.name)
    # the child stops at its first rename, so the kill always lands while a temporary file exists
    # (polling a free-running export for its temp files raced with the export's own speed)
    child = "import os, time\nos.replace = lambda *a, **k: time.sleep(600)\nfrom msprof_py.cli import main; main()"
    proc = subprocess.Popen([sys.executable, "-c", child, "export",
                             "--output", str(prof)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while proc.poll() is None and not _leftovers(prof) and time.monotonic() < deadline:
        time.sleep(0.002)
    finished = proc.poll() is not None
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    left = _leftovers(prof)
    assert not finished, proc.stderr.read().decode()  # it was killed mid-export
    assert left  # ... while it had temporary files
    res2 = CliRunner().invoke(cli, ["export", "--output", str(prof)])
    assert res2.exit_code == 0, res2.output
    assert _leftovers(prof) == [], f"left before: {left}"
    assert (prof / "mindstudio_profiler_output" / "op_summary_0.csv").stat().st_size > 0


# ------------------------------------------------------------------ read-only PROF dir
@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes to read-only dirs")
def test_db_export_on_read_only_dir_names_the_log_folder(tmp_path: Path) -> None:
    prof = shutil.copytree(FIXTURE, tmp_path / FIXTURE.name)
    prof.chmod(0o555)
    try:
        line = _one_error_line(CliRunner().invoke(cli, ["export", "--output", str(prof), "--type", "db"]))
        assert "mindstudio_profiler_log" in line and "mindstudio_profiler_output" not in line
    finally:
        prof.chmod(0o755)


def test_db_export_folder_error_names_the_log_folder(tmp_path: Path) -> None:
    """Same check as root can run it: the log folder's name is taken by a file."""
    prof = shutil.copytree(FIXTURE, tmp_path / FIXTURE.name)
    (prof / "mindstudio_profiler_log").write_text("not a folder")
    line = _one_error_line(CliRunner().invoke(cli, ["export", "--output", str(prof), "--type", "db"]))
    assert "mindstudio_profiler_log" in line and "mindstudio_profiler_output" not in line
