"""``load`` says how much memory it needs before it reads anything (issue 12, acceptance 2)."""
from __future__ import annotations

from pathlib import Path

import pytest

from msprof_py.errors import NotEnoughMemoryError
from msprof_py.parse import session as sess


def test_memory_needed_grows_with_the_raw_bytes(small_prof: Path) -> None:
    raw = sess.raw_bytes(small_prof)
    assert raw > 0
    assert sess.memory_needed(small_prof) == int(sess.IMPORT_BYTES + sess.PARSE_PEAK_PER_RAW_BYTE * raw)


def test_load_refuses_before_reading_when_memory_is_short(small_prof: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sess, "available_bytes", lambda: 1_000_000)
    monkeypatch.setattr(sess, "load_prof", lambda *a, **k: pytest.fail("parsed although memory was short"))
    with pytest.raises(NotEnoughMemoryError, match=r"loading needs about [\d,]+ MB of memory, 1 MB are available"):
        sess.load(small_prof)


def test_load_can_be_told_to_try_anyway(small_prof: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sess, "available_bytes", lambda: 1_000_000)
    assert len(sess.load(small_prof, use_cache=False, check_memory=False).tasks) > 0


def test_unknown_memory_does_not_stop_a_load(small_prof: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sess, "available_bytes", lambda: None)  # no /proc/meminfo
    assert len(sess.load(small_prof, use_cache=False).tasks) > 0


def test_data_bytes_counts_a_result_dirs_raw_files_and_closes_its_listing(tmp_path: Path) -> None:
    import warnings
    (tmp_path / "dev" / "data").mkdir(parents=True)
    (tmp_path / "dev" / "data" / "a.data.slice_0").write_bytes(b"x" * 10)
    (tmp_path / "dev" / "data" / "b.data.slice_0").write_bytes(b"y" * 5)
    (tmp_path / "dev" / "data" / "sub").mkdir()  # not a file: not counted
    (tmp_path / "dev" / "data" / "gone").symlink_to(tmp_path / "nowhere")  # dangling: not counted
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)  # the listing is closed, also on the way out
        assert sess.data_bytes(tmp_path / "dev") == 15
        assert sess.data_bytes(tmp_path / "no_such_dir") == 0
