"""Outputs are written to a temporary name next to the target and renamed over it.

A reader (or a crash, a full disk, a Ctrl-C) therefore never sees a half-written output: the
target is either its old self or the complete new file, and the temporary file is removed on
any exception.  Temporary files are ``.{name}.{random}.tmp`` in the target's directory (the
rename must not cross file systems) and are created with mode ``0666 & ~umask`` like any file
``open()`` makes (``tempfile.mkstemp`` would make them 0600).

A leaf module: only the standard library and :mod:`msprof_py.errors`, so every stage may use it.
"""
from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from msprof_py.errors import InvalidPathError

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _create(path: Path) -> Path:
    """A new empty file beside ``path``; the kernel applies the umask to 0666."""
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            os.close(os.open(tmp, _FLAGS, 0o666))
            return tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path))


@contextmanager
def temp_path(path: str | os.PathLike[str], *, error: str | None = None) -> Iterator[Path]:
    """Yield the path of a new empty temporary file beside ``path`` for writers that want a
    file name (pandas, sqlite, matplotlib); rename it to ``path`` when the block completes,
    remove it on any exception (KeyboardInterrupt included).

    ``error``: when given, an ``OSError`` (from creating, writing or renaming) becomes
    ``InvalidPathError("{path}: {error} ({strerror})")``; otherwise it propagates unchanged.
    """
    path = Path(path)
    try:
        tmp = _create(path)
        try:
            yield tmp
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    except OSError as err:
        if error is None:
            raise
        raise InvalidPathError(f"{path}: {error} ({err.strerror or err})") from None


@contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "wb", *, encoding: str | None = None,
                error: str | None = None) -> Iterator[IO[Any]]:
    """Like ``open(path, mode)`` (a writing mode) through :func:`temp_path`."""
    with temp_path(path, error=error) as tmp, open(tmp, mode, encoding=encoding) as fp:
        yield fp


def write_bytes(path: str | os.PathLike[str], data: bytes, *, error: str | None = None) -> Path:
    """Write ``data`` to ``path`` atomically; returns ``path``."""
    with atomic_open(path, "wb", error=error) as fp:
        fp.write(data)
    return Path(path)


def write_text(path: str | os.PathLike[str], text: str, *, encoding: str = "utf-8",
               error: str | None = None) -> Path:
    """Write ``text`` to ``path`` atomically (no newline translation on POSIX); returns ``path``."""
    with atomic_open(path, "w", encoding=encoding, error=error) as fp:
        fp.write(text)
    return Path(path)
