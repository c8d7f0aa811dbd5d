"""Outputs are written to a temporary name next to the target and renamed over it.

A reader (or a crash, a full disk, a Ctrl-C) therefore never sees a half-written output: the
target is either its old self or the complete new file, and the temporary file is removed on
any exception.  Temporary files are ``.{name}.{pid}-{random}.tmp`` in the target's directory (the
rename must not cross file systems) and are created with mode ``0666 & ~umask`` like any file
``open()`` makes (``tempfile.mkstemp`` would make them 0600).

A process killed with SIGKILL cannot remove its temporary files; the pid in their names lets the
next run remove exactly those whose writer is dead (:func:`clean_dead`), and nothing else.
A full disk (ENOSPC / EDQUOT) is always a one-line :class:`DiskFullError` naming the target and
how much was written or needed and how much is free.

Large streamed outputs (:func:`atomic_writer`) are written by a thread of their own: the producer
hands each rendered chunk over and goes on rendering while the kernel copies the previous one into
the page cache (``write()`` releases the GIL), so a long export keeps both cores busy; the bytes
queued for that thread are bounded (:mod:`msprof_py.chunk_writer`) and a failed write is raised in
the producer, with the same message and clean-up as a write made there.

A leaf module: only the standard library, :mod:`msprof_py.errors` and :mod:`msprof_py.chunk_writer`
(with :mod:`msprof_py.direct_io`), so every stage may use it.
"""
from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any

from msprof_py.chunk_writer import ChunkWriter, SyncWriter, for_file
from msprof_py.errors import InvalidPathError

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_FULL = (errno.ENOSPC, errno.EDQUOT)
TMP_RE = re.compile(r"^\..+\.(?P<pid>\d+)-[0-9a-f]{8}\.tmp$")
SCRATCH_PREFIX = ".msprof_py_scratch_"
SCRATCH_RE = re.compile(r"^\.msprof_py_scratch_(?P<pid>\d+)-")
# names of versions before the pid was in them (tempfile.mkstemp / mkdtemp: 8 of [a-z0-9_],
# then secrets.token_hex(4)): ``.{name}.{8}.tmp`` files and ``.msprof_py_scratch_{8}`` dirs
LEGACY_TMP_RE = re.compile(r"^\.(?P<target>.+)\.[a-z0-9_]{8}\.tmp$")
LEGACY_SCRATCH_RE = re.compile(r"^\.msprof_py_scratch_[a-z0-9_]{8}$")
LEGACY_QUIET_S = 600.0  # a pid-less leftover untouched this long, and open nowhere, has no live writer


class DiskFullError(InvalidPathError, OSError):
    """No space left (or quota exceeded) while writing an output.  Also an ``OSError`` with
    errno ENOSPC, so code that already handles a failed write (a cache that is optional, a
    repository written best-effort) keeps handling it; ``str()`` is the one-line message."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.ENOSPC, message)

    def __str__(self) -> str:
        return self.strerror


def _human(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _free(folder: Path) -> int | None:
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def disk_full(path: str | os.PathLike[str], *, written: int | None = None, needed: int | None = None) -> DiskFullError:
    """The one-line error for a full disk while writing ``path``."""
    path = Path(path)
    free = _free(path.parent)
    if needed is not None:
        amount = f"needed {_human(needed)}"
    elif written is not None:
        amount = f"needed more than the {_human(written)} written when the disk filled"
    else:
        amount = "not even an empty file could be created"
    where = f", {_human(free)} free there" if free is not None else ""
    return DiskFullError(f"{path}: no space left on device ({amount}{where}); free some space and run again")


def is_disk_full(err: BaseException) -> bool:
    return isinstance(err, OSError) and err.errno in _FULL


def _create(path: Path) -> Path:
    """A new empty file beside ``path``; the kernel applies the umask to 0666."""
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
        try:
            os.close(os.open(tmp, _FLAGS, 0o666))
            return tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path))


@contextmanager
def temp_path(path: str | os.PathLike[str], *, error: str | None = None, size: int | None = None) -> Iterator[Path]:
    """Yield the path of a new empty temporary file beside ``path`` for writers that want a
    file name (pandas, sqlite, matplotlib); rename it to ``path`` when the block completes,
    remove it on any exception (KeyboardInterrupt included).

    ``error``: when given, an ``OSError`` (from creating, writing or renaming) becomes
    ``InvalidPathError("{path}: {error} ({strerror})")``; otherwise it propagates unchanged.
    A full disk is always a :class:`DiskFullError` (``size``: the bytes to be written, if known).
    """
    path = Path(path)
    try:
        tmp = _create(path)
        try:
            yield tmp
            os.replace(tmp, path)
        except BaseException as exc:
            written = _size(tmp)
            tmp.unlink(missing_ok=True)
            if is_disk_full(exc) and not isinstance(exc, DiskFullError):
                raise disk_full(path, written=written, needed=size) from None
            raise
    except OSError as err:
        if isinstance(err, DiskFullError):
            raise
        if is_disk_full(err):
            raise disk_full(path, needed=size) from None
        if error is None:
            raise
        raise InvalidPathError(f"{path}: {error} ({err.strerror or err})") from None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


@contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "wb", *, encoding: str | None = None,
                error: str | None = None, size: int | None = None) -> Iterator[IO[Any]]:
    """Like ``open(path, mode)`` (a writing mode) through :func:`temp_path`."""
    with temp_path(path, error=error, size=size) as tmp, _reopen(tmp, mode, encoding) as fp:
        yield fp


def _reopen(tmp: Path, mode: str, encoding: str | None = None) -> IO[Any]:
    """``open(tmp, mode)`` of the new empty temporary file, a writing mode without ``O_TRUNC``.
    Why: ext4 (``auto_da_alloc``, on by default) marks a file truncated to size 0 and, when it
    is closed, starts writing all of it back from the closing thread; ``open(tmp, "wb")`` of the
    file :func:`_create` made is such a truncation, so every output's close waited for the
    submission of its writeback (0.2 s per 800 MB here; ~1.3 s over the single-op million's
    text files) instead of leaving it to the kernel's flusher."""
    if not mode.startswith("w"):
        return open(tmp, mode, encoding=encoding)
    fd = os.open(tmp, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    try:
        return open(fd, mode, encoding=encoding)
    except BaseException:
        os.close(fd)
        raise




@contextmanager
def atomic_writer(path: str | os.PathLike[str], *, error: str | None = None,
                  size: int | None = None, later: Later | None = None) -> Iterator[ChunkWriter | SyncWriter]:
    """Like ``atomic_open(path, "wb")``, the writes made by a :class:`ChunkWriter`'s thread: the
    file is complete (and renamed) when the block ends; an error in the block or in a write
    stops the thread and removes the temporary file.  ``later``: the block's end does not wait for
    the thread's writes; the file is completed (renamed, or its error raised and the temporary
    file removed) by ``later``'s :meth:`Later.settle` (or removed by :meth:`Later.abort`)."""
    with ExitStack() as stack:
        tmp = stack.enter_context(temp_path(path, error=error, size=size))
        fp = stack.enter_context(_reopen(tmp, "wb"))
        w = for_file(fp)
        try:
            yield w
        except BaseException:
            w.abort()
            raise
        if later is not None and isinstance(w, ChunkWriter):
            later.add(Path(path), w, stack.pop_all())
            return
        w.close()


class Later:
    """Files of :func:`atomic_writer` whose writes are still under way on their threads (each a
    copy of earlier outputs' bytes, say), so the producer goes on with the next file meanwhile.
    :meth:`settle` waits for each, in order, and renames it into place (or raises its error, the
    same one-line error as at the block's end, after removing every temporary file);
    :meth:`abort` stops them and removes their temporary files (the producer failed).  One of
    them must end every use: no thread is left."""

    def __init__(self) -> None:
        self._files: list[tuple[Path, ChunkWriter, ExitStack]] = []
        self.sizes: dict[Path, int] = {}  # a file's size once complete (given by its producer)

    def add(self, path: Path, w: ChunkWriter, stack: ExitStack) -> None:
        self._files.append((path, w, stack))

    def __bool__(self) -> bool:
        return bool(self._files)

    def settle(self) -> None:
        while self._files:
            path, w, stack = self._files[0]
            try:
                with stack:  # renamed into place, or the temporary file removed and the error worded
                    w.close()
            except BaseException as err:
                self._files.pop(0)
                self.abort(err)
                raise
            self._files.pop(0)

    def abort(self, err: BaseException | None = None) -> None:
        """Stop the writes still under way and remove their temporary files (``err``: the
        producer's error, given to their clean-up)."""
        err = err if err is not None else RuntimeError("aborted")
        files, self._files = self._files, []
        for _, w, stack in files:
            try:
                w.abort()
            finally:
                try:
                    stack.__exit__(type(err), err, err.__traceback__)
                except BaseException:  # noqa: BLE001  (its own error: the producer's is raised)
                    pass


def write_bytes(path: str | os.PathLike[str], data: bytes, *, error: str | None = None) -> Path:
    """Write ``data`` to ``path`` atomically; returns ``path``."""
    with atomic_open(path, "wb", error=error, size=len(data)) as fp:
        fp.write(data)
    return Path(path)


def write_text(path: str | os.PathLike[str], text: str, *, encoding: str = "utf-8",
               error: str | None = None) -> Path:
    """Write ``text`` to ``path`` atomically (no newline translation on POSIX); returns ``path``."""
    with atomic_open(path, "w", encoding=encoding, error=error) as fp:
        fp.write(text)
    return Path(path)


@contextmanager
def folders_removed_on_failure(path: str | os.PathLike[str]) -> Iterator[None]:
    """For a block that creates the folder ``path`` (and missing parents): if the block fails,
    remove the folders that did not exist before it, deepest first and only while empty (never
    anything a user or another run put there)."""
    made = []
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        made.append(p)
        p = p.parent
    try:
        yield
    except BaseException:
        for d in made:
            try:
                d.rmdir()
            except OSError:
                break
        raise


def scratch_dir(parent: str | os.PathLike[str]) -> Path:
    """A new private scratch directory in ``parent`` named with this process's pid (so
    :func:`clean_dead` can tell whether its owner is still running)."""
    return Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-", dir=parent))


def clean_dead(folder: str | os.PathLike[str], extra: tuple[re.Pattern[str], ...] = (),
               legacy: re.Pattern[str] | None = None, legacy_scratch: bool = False) -> list[Path]:
    """Remove the temporary files and scratch dirs in ``folder`` left by a msprof_py process
    that is no longer running (killed with SIGKILL, power loss); returns what was removed.

    Only names this module makes (``.{name}.{pid}-{8 hex}.tmp``, ``.msprof_py_scratch_{pid}-*``)
    are touched, plus directories matching one of ``extra`` (patterns with a ``pid`` group, e.g.
    the collector's temporary PROF dirs), and only when no process has that pid (a live one,
    ours or another user's, keeps its files).  ``legacy``: the output names this folder gets
    (e.g. ``msprof_[0-9]+[.]db``); older versions named their temporary files without a pid
    (``.{name}.{8 chars}.tmp``, and ``.msprof_py_scratch_{8 chars}`` dirs: ``legacy_scratch``),
    so those are removed when their target's name matches ``legacy``, no process holds them (or
    a file in them) open and nothing in them changed for :data:`LEGACY_QUIET_S`.  Errors are
    ignored: cleaning is best effort."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    stale_legacy = _stale_legacy(entries, legacy, legacy_scratch) if legacy or legacy_scratch else set()
    for e in entries:
        if e.is_file(follow_symlinks=False):
            m = TMP_RE.match(e.name)
        elif e.is_dir(follow_symlinks=False):
            m = next((r.match(e.name) for r in (SCRATCH_RE, *extra) if r.match(e.name)), None)
        else:
            m = None
        if e.path not in stale_legacy and (m is None or _alive(int(m["pid"]))):
            continue
        try:
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path)
            else:
                os.unlink(e.path)
            removed.append(Path(e.path))
        except OSError:
            pass
    return removed


def _stale_legacy(entries: list[os.DirEntry], legacy: re.Pattern[str] | None, scratch: bool) -> set[str]:
    """The pid-less temporary names of older versions among ``entries`` that no one writes."""
    now = time.time()
    cands: dict[str, list[str]] = {}  # entry -> its files (itself for a file)
    for e in entries:
        try:
            if e.is_file(follow_symlinks=False):
                m = LEGACY_TMP_RE.match(e.name)
                if m and legacy is not None and legacy.fullmatch(m["target"]) and not TMP_RE.match(e.name):
                    cands[e.path] = [os.path.realpath(e.path)]
            elif scratch and e.is_dir(follow_symlinks=False) and LEGACY_SCRATCH_RE.match(e.name):
                cands[e.path] = [os.path.realpath(os.path.join(r, f)) for r, _, fs in os.walk(e.path)
                                 for f in [".", *fs]]
        except OSError:
            continue
    quiet = set()
    for path, files in cands.items():
        try:
            if all(now - os.lstat(f).st_mtime >= LEGACY_QUIET_S for f in files):
                quiet.add(path)
        except OSError:
            continue
    if not quiet:
        return quiet
    held = _open_files()
    return {p for p in quiet if not any(f in held for f in cands[p])}


def _open_files() -> set[str]:
    """Paths any process (that we may look at) holds open, from /proc/PID/fd (Linux; elsewhere
    nothing is known to be open and the age rule alone applies)."""
    held: set[str] = set()
    try:
        pids = [d for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return held
    for pid in pids:
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                held.add(os.readlink(f"{fd_dir}/{fd}"))
            except OSError:
                continue
    return held


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    if pid <= 0 or pid > 2**22:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, owned by someone else
        return True
    return True
