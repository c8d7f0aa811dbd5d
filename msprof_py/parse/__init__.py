"""Raw PROF data -> pandas tables (see :mod:`msprof_py.parse.schema`); entry point :func:`load`."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from msprof_py.parse.session import Session


def load(path, use_cache: bool = True, check_memory: bool = True) -> "Session":
    """Parse a PROF dir (or a dir of PROF dirs) into a :class:`~msprof_py.parse.session.Session`.
    Says before loading when the machine lacks the memory it needs
    (:func:`~msprof_py.parse.session.memory_needed`)."""
    from msprof_py.parse.session import load as _load

    return _load(path, use_cache=use_cache, check_memory=check_memory)


def memory_needed(path) -> int:
    """Bytes ``load(path)`` will need at its peak, estimated from the raw file sizes."""
    from msprof_py.parse.session import memory_needed as _needed

    return _needed(path)


__all__ = ["load", "memory_needed"]
