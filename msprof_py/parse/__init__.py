"""Raw PROF data -> pandas tables (see :mod:`msprof_py.parse.schema`); entry point :func:`load`."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from msprof_py.parse.session import Session


def load(path, use_cache: bool = True) -> "Session":
    """Parse a PROF dir (or a dir of PROF dirs) into a :class:`~msprof_py.parse.session.Session`."""
    from msprof_py.parse.session import load as _load

    return _load(path, use_cache=use_cache)


__all__ = ["load"]
