"""A one-device dir's advice and host-side summaries on a thread beside the device's last files
(``Stream.beside_ok``): the same files, log and advice as inline, errors raised where the job
would have run, and the thread always waited for (a failed or interrupted export leaves no
thread and no temporary file)."""
from __future__ import annotations

import errno
import hashlib
import shutil
import threading
from pathlib import Path

import pytest

from msprof_py.errors import MsprofError
from msprof_py.export import ExportOptions, stream
from msprof_py.export.summaries import ApiStatistic
from msprof_py.pipeline import export_with_advice


@pytest.fixture(scope="module")
def one_device(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from msprof_py.collect import collect

    return collect("single_op", output=tmp_path_factory.mktemp("c1"), devices=1, iterations=2, seed=5,
                   fixed_clock=True).prof_dir


def _copy(src: Path, where: Path) -> Path:
    prof = where / src.name
    shutil.copytree(src, prof)
    return prof


def _texts(prof: Path) -> dict[str, str]:
    files = sorted(p for p in prof.rglob("*") if p.is_file() and (
        "mindstudio_profiler_output" in p.parts or p.name == "msprof_py_export.log"))
    return {str(p.relative_to(prof)): hashlib.md5(p.read_bytes().replace(str(prof).encode(), b"P")).hexdigest()
            for p in files}


def _beside_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("msprof-py-beside")]


def test_advice_and_api_statistic_beside_the_last_files(one_device: Path, tmp_path: Path, monkeypatch) -> None:
    ran: list[tuple[str, str]] = []
    write = ApiStatistic.write

    def recorded(self, *a, **k):
        ran.append(("api_statistic", threading.current_thread().name))
        return write(self, *a, **k)

    monkeypatch.setattr(ApiStatistic, "write", recorded)
    monkeypatch.setattr(stream.Stream, "beside_ok", lambda *a: False)
    inline = _copy(one_device, tmp_path / "inline")
    res_inline, adv_inline = export_with_advice(inline, ExportOptions())
    assert ran == [("api_statistic", "MainThread")]
    monkeypatch.undo()
    monkeypatch.setattr(ApiStatistic, "write", recorded)
    ran.clear()
    beside = _copy(one_device, tmp_path / "beside")
    res, adv = export_with_advice(beside, ExportOptions())
    assert [(what, name.startswith("msprof-py-beside")) for what, name in ran] == [("api_statistic", True)]
    assert _texts(beside) == _texts(inline)
    assert (beside / "mindstudio_profiler_output" / "prof_rule_0.json").is_file()
    assert adv is not None and adv_inline is not None
    assert adv.text.replace(str(beside), "P") == adv_inline.text.replace(str(inline), "P")
    assert list(res.warnings) == [w.replace(str(inline), str(beside)) for w in res_inline.warnings]
    assert not _beside_threads()


def test_a_full_disk_beside_is_the_one_line_error(one_device: Path, tmp_path: Path, monkeypatch) -> None:
    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", "api_statistic.csv")

    monkeypatch.setattr(ApiStatistic, "write", full)
    prof = _copy(one_device, tmp_path / "full")
    with pytest.raises(MsprofError) as err:
        export_with_advice(prof, ExportOptions())
    assert "\n" not in str(err.value) and "api_statistic.csv" in str(err.value)
    assert not _beside_threads()


@pytest.mark.parametrize("raised", [KeyboardInterrupt, OSError])
def test_an_interrupted_export_waits_for_the_thread_beside(one_device: Path, tmp_path: Path, monkeypatch,
                                                           raised: type[BaseException]) -> None:
    """Ctrl-C (or any failure) in a file written after the thread started: the export fails with
    it, the thread has ended, no temporary file is left."""
    from msprof_py.export.base import REGISTRY

    started = threading.Event()
    write = ApiStatistic.write

    def slow(self, *a, **k):
        started.set()
        return write(self, *a, **k)

    def interrupted(*a, **k):
        assert started.wait(60)  # (the advice runs first on that thread)
        raise raised(errno.EIO, "I/O error") if raised is OSError else raised()

    monkeypatch.setattr(ApiStatistic, "write", slow)
    monkeypatch.setattr(REGISTRY["timeline:ge"], "write", interrupted)
    prof = _copy(one_device, tmp_path / "int")
    with pytest.raises(MsprofError if raised is OSError else KeyboardInterrupt):
        export_with_advice(prof, ExportOptions())
    assert not _beside_threads()
    out = prof / "mindstudio_profiler_output"
    assert not [p.name for p in out.iterdir() if p.name.startswith(".") or "tmp" in p.name]
