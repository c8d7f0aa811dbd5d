"""msprof_py.memory: the glibc knobs are safe to call anywhere (no-ops off glibc)."""
from __future__ import annotations

import pytest

from msprof_py import memory


def test_release_freed_memory_is_idempotent() -> None:
    first = memory.release_freed_memory()
    assert memory.release_freed_memory() == first
    memory.trim()  # never raises


def test_available_bytes_is_a_positive_count_or_none() -> None:
    have = memory.available_bytes()
    assert have is None or have > 0


def _numpy_huge_pages() -> tuple[object, object] | None:
    try:
        from numpy._core import multiarray as m  # numpy 2
    except ImportError:
        from numpy.core import multiarray as m  # numpy 1.x
    get = getattr(m, "_get_madvise_hugepage", None)
    return (get, m._set_madvise_hugepage) if get is not None else None


def test_numpy_arrays_in_small_pages(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """release_freed_memory stops numpy's madvise(MADV_HUGEPAGE) (fresh huge pages cost a host
    fault per 4 KiB and a compaction on VMs with free page reporting); the environment variable
    wins."""
    switch = _numpy_huge_pages()
    if switch is None:
        pytest.skip("numpy without the huge-page switch")
    get, set_ = switch
    before = get()
    try:
        set_(True)
        monkeypatch.setenv("NUMPY_MADVISE_HUGEPAGE", "1")
        assert not memory.no_huge_pages() and get() is True  # the user's choice
        monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE")
        memory.release_freed_memory()
        assert get() is False
        assert memory.no_huge_pages() and get() is False
    finally:
        set_(before)
