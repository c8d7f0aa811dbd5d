"""The forked export worker: its value, its errors (also ones that do not pickle) reach the parent."""
from __future__ import annotations

import os

import pytest

from msprof_py.atomic import DiskFullError
from msprof_py.errors import InvalidPathError
from msprof_py.export.forked import Forked, can_fork

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork only")


def test_value_comes_back_from_the_child() -> None:
    assert Forked(lambda: (os.getpid(), [1, 2])).result()[0] != os.getpid()


def test_oserror_keeps_errno_and_file() -> None:
    def fail() -> None:
        raise PermissionError(13, "Permission denied", "/x/msprof_1.db")
    with pytest.raises(PermissionError) as err:
        Forked(fail).result()
    assert (err.value.errno, err.value.filename) == (13, "/x/msprof_1.db")


def test_unpicklable_error_becomes_its_base_class_with_the_message() -> None:
    def fail() -> None:
        raise DiskFullError("/x/msprof_1.db: disk full")
    with pytest.raises(InvalidPathError, match="^/x/msprof_1.db: disk full$"):
        Forked(fail).result()


def test_a_killed_child_is_an_error_not_a_hang() -> None:
    with pytest.raises(RuntimeError, match="died with exit code"):
        Forked(lambda: os._exit(3)).result()


def test_export_with_a_worker_gives_the_same_files(tmp_path, monkeypatch) -> None:
    """The runner writes the DB in a worker when it can; forcing it off gives the same bytes and log."""
    from msprof_py.collect import collect
    from msprof_py.export import runner
    from msprof_py.export.runner import ExportOptions, export

    if not can_fork():
        pytest.skip("no fork here")
    prof = collect("resnet50", output=tmp_path / "a", iterations=2, seed=1).prof_dir
    outs = []
    for forked in (True, False):
        monkeypatch.setattr(runner, "can_fork", lambda f=forked: f)
        res = export(prof, ExportOptions())
        outs.append({p.name: p.read_bytes() for p, _ in res.files}
                    | {"log": (prof / runner.LOG_DIR / "msprof_py_export.log").read_bytes()})
    assert outs[0] == outs[1] and any(n.endswith(".db") for n in outs[0])
