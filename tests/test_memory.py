"""msprof_py.memory: the glibc knobs are safe to call anywhere (no-ops off glibc)."""
from __future__ import annotations

from msprof_py import memory


def test_release_freed_memory_is_idempotent() -> None:
    first = memory.release_freed_memory()
    assert memory.release_freed_memory() == first
    memory.trim()  # never raises


def test_available_bytes_is_a_positive_count_or_none() -> None:
    have = memory.available_bytes()
    assert have is None or have > 0
