"""Bad input (acceptance 6): each case gives a clear error naming the file (and byte offset for
records) and a non-zero CLI exit, or a warning where msprof carries on.  Never a traceback,
never a silent empty result, never a change to the raw data."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from msprof_py.cli import cli
from msprof_py.errors import CorruptRecordError, DataError, InvalidPathError
from msprof_py.parse.session import load
from msprof_py.raw.common import MAGIC

ROOT = Path(__file__).resolve().parents[2]


def raw_digest(prof: Path) -> dict[str, str]:
    return {str(p.relative_to(prof)): hashlib.sha256(p.read_bytes()).hexdigest()
            for top in ("host", "device_0") for p in sorted((prof / top).rglob("*")) if p.is_file()}


def run_query(path: Path):
    return CliRunner().invoke(cli, ["query", "--output", str(path)])


def _one_line_error(result, *needles: str) -> None:
    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    err_lines = [line for line in result.output.splitlines() if line.startswith("msprof-py: error:")]
    assert len(err_lines) == 1, result.output
    assert "Traceback" not in result.output
    for n in needles:
        assert n in err_lines[0], err_lines[0]


def test_truncated_slice_warns_with_file_and_offset(small_prof: Path) -> None:
    f = small_prof / "host" / "data" / "unaging.compact.task_track.slice_0"
    data = f.read_bytes()
    f.write_bytes(data[:-10])  # the last record loses 10 of its 64 bytes
    before = raw_digest(small_prof)
    s = load(small_prof, use_cache=False)
    msgs = [m for m in s.warnings if "truncated record" in m]
    assert len(msgs) == 1 and str(f) in msgs[0] and f"byte {len(data) - 64}" in msgs[0]
    # the truncated record was mm1's launch: its device tasks are now device-only, nothing vanished
    assert len(s.tasks[s.tasks["match"] == "device_only"]) > 1
    assert raw_digest(small_prof) == before


@pytest.mark.parametrize("field, value, reason", [("magic", 0x1234, "bad magic number 0x1234"),
                                                   ("level", 4242, "unknown report level 4242")])
def test_corrupt_host_record_is_an_error_naming_file_and_offset(small_prof: Path, field, value, reason) -> None:
    from msprof_py.raw import task_track

    f = small_prof / "host" / "data" / "aging.compact.task_track.slice_0"
    buf = bytearray(f.read_bytes())
    rec = np.frombuffer(buf, task_track.DTYPE)
    rec[field][3] = value  # 4th record
    f.write_bytes(bytes(buf))
    before = raw_digest(small_prof)
    with pytest.raises(CorruptRecordError) as info:
        load(small_prof, use_cache=False)
    assert info.value.path == str(f) and info.value.offset == 3 * 64 and reason in str(info.value)
    _one_line_error(run_query(small_prof), str(f), "byte 192", reason)
    assert raw_digest(small_prof) == before


def test_corrupt_record_in_second_slice_names_that_slice(small_prof: Path) -> None:
    """api_event straddles slices and its aging stream has a 16-byte torn head: the offset is
    still the record's own position inside the slice file that holds its first byte."""
    f0 = small_prof / "host" / "data" / "aging.api_event.data.slice_0"
    f1 = small_prof / "host" / "data" / "aging.api_event.data.slice_1"
    size0 = f0.stat().st_size
    k = (size0 - 16) // 40 + 1  # first record that starts inside slice_1
    start = 16 + k * 40 - size0
    buf = bytearray(f1.read_bytes())
    buf[start:start + 2] = (0xBEEF).to_bytes(2, "little")
    f1.write_bytes(bytes(buf))
    with pytest.raises(CorruptRecordError) as info:
        load(small_prof, use_cache=False)
    assert info.value.path == str(f1) and info.value.offset == start


def test_garbage_bytes_slice(small_prof: Path) -> None:
    data = small_prof / "host" / "data"
    rng = np.random.default_rng(7)
    garbage = rng.integers(0, 256, 4096, dtype=np.uint8).tobytes()
    (data / "unaging.compact.memcpy_info.slice_0").write_bytes(garbage)
    result = run_query(small_prof.parent)
    _one_line_error(result, "unaging.compact.memcpy_info.slice_0", "byte 0")
    # garbage in a device stream: msprof drops STARS logs without their magic and carries on
    (data / "unaging.compact.memcpy_info.slice_0").unlink()
    dev = small_prof / "device_0" / "data" / "stars_soc.data.0.slice_4"
    dev.write_bytes(garbage)
    s = load(small_prof, use_cache=False)
    assert any("without the magic number 0x6BD3" in m and str(dev) in m for m in s.warnings)
    assert len(s.tasks) > 30


def test_empty_data_dirs_are_an_error_not_an_empty_result(small_prof: Path) -> None:
    for d in ("host", "device_0"):
        for p in (small_prof / d / "data").iterdir():
            p.unlink()
    with pytest.raises(DataError, match="no profiling data"):
        load(small_prof, use_cache=False)
    _one_line_error(run_query(small_prof), "no profiling data")


@pytest.mark.parametrize("name", ["info.json.0", "start_info.0"])
def test_missing_metadata(small_prof: Path, name: str) -> None:
    (small_prof / "device_0" / name).unlink()
    with pytest.raises(DataError) as info:
        load(small_prof, use_cache=False)
    assert str(small_prof / "device_0") in str(info.value)
    _one_line_error(run_query(small_prof), "device_0", "missing")


def test_unusable_start_info_is_an_error(small_prof: Path) -> None:
    (small_prof / "host" / "start_info").write_text('{"collectionTimeBegin": ""}')
    _one_line_error(run_query(small_prof), "start_info", "collectionTimeBegin")


def test_device_dir_without_host_data(small_prof: Path) -> None:
    shutil.rmtree(small_prof / "host")
    s = load(small_prof, use_cache=False)
    assert any("no host/ dir" in m for m in s.warnings)
    assert len(s.tasks) == 33 - 2  # every device task kept (host-only rows are gone with the host)
    assert set(s.tasks["match"]) == {"device_only"}
    result = run_query(small_prof)
    assert result.exit_code == 0 and "device_0" in result.output and "msprof-py: warning:" in result.output


@pytest.mark.parametrize("make", ["empty", "file", "missing", "plain_dir"])
def test_not_a_prof_dir(tmp_path: Path, make: str) -> None:
    p = tmp_path / "x"
    if make == "file":
        p.write_text("hello")
    elif make == "plain_dir":
        (p / "sub" / "data").mkdir(parents=True)
    elif make == "empty":
        p.mkdir()
    with pytest.raises(InvalidPathError):
        load(p)
    result = run_query(p)
    _one_line_error(result, str(p))
    assert result.exit_code == 2


def test_unwritable_cache_is_a_warning(small_prof: Path) -> None:
    (small_prof / "mindstudio_profiler_log").write_text("in the way")  # mkdir of the cache dir fails
    s = load(small_prof)
    assert any("cannot write the parse cache" in m for m in s.warnings)
    assert len(s.tasks) == 33


def test_warnings_printed_once_at_the_end(small_prof: Path) -> None:
    result = run_query(small_prof)
    assert result.exit_code == 0
    lines = result.output.splitlines()
    warn = [i for i, line in enumerate(lines) if line.startswith("msprof-py: warning:")]
    assert warn and warn == list(range(len(lines) - len(warn), len(lines)))
    assert sum("torn record" in lines[i] for i in warn) == 1


def test_query_in_a_real_subprocess(small_prof: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "msprof_py", "query", "--output", str(small_prof.parent)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Job Info\tDevice ID\tDir Name\t")
    assert "Traceback" not in proc.stderr and "torn record" in proc.stderr
