"""Finding the ranks' PROF dirs and running the per-rank work on an existing engine.

Engines: a local process pool (:class:`concurrent.futures.ProcessPoolExecutor`, one process per
core by default) or a Dask cluster (``dask.distributed``; ``--scheduler tcp://HOST:8786`` or the
``MSPROF_PY_SCHEDULER`` environment variable).  Workers read the PROF dirs where they lie (a file
system shared with the workers), so only the path goes out and only the small
:class:`~msprof_py.cluster.rank.RankTables` come back.  Results are put back in input order, so
every engine yields the same tables and therefore the same output files.
"""
from __future__ import annotations

import os
import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Callable, Iterable

from msprof_py.cluster.rank import RankTables, analyze_rank
from msprof_py.errors import InvalidParamError, InvalidPathError

SCHEDULER_ENV = "MSPROF_PY_SCHEDULER"
CONNECT_TIMEOUT_S = 10  # how long to try reaching a Dask scheduler
MAX_DEPTH = 4  # input/<job>/<node>/<rank>/PROF_*: deep enough for the layouts jobs write
SKIP_DIRS = frozenset({"cluster_analysis_output", "mindstudio_profiler_output", "mindstudio_profiler_log",
                       "msprof_py_cache", "sqlite", "query", "timeline", "summary", "log", "data"})
_RESULT_DIR = re.compile(r"^(host|device_\d+)$")


def find_rank_dirs(root: str | os.PathLike[str]) -> list[Path]:
    """Every PROF dir under ``root`` (itself included), sorted by path; a PROF dir is not searched further."""
    top = Path(os.path.expanduser(os.fspath(root)))
    if not top.is_dir():
        raise InvalidPathError(f'The path "{top}" does not exist or is not a directory.')
    found: list[Path] = []

    def walk(p: Path, depth: int) -> None:
        try:
            subs = sorted(c for c in p.iterdir() if c.is_dir() and not c.name.startswith("."))
        except OSError as err:
            raise InvalidPathError(f'The path "{p}" cannot be read ({err.strerror}).') from None
        if any(_RESULT_DIR.match(c.name) for c in subs):
            found.append(p)
            return
        if depth < MAX_DEPTH:
            for c in subs:
                if c.name not in SKIP_DIRS:
                    walk(c, depth + 1)

    walk(top, 0)
    if not found:
        raise InvalidPathError(f'The path "{top}" holds no PROF dir (searched {MAX_DEPTH} levels deep).')
    return found


def scheduler_address(given: str | None) -> str | None:
    """``--scheduler`` or ``$MSPROF_PY_SCHEDULER``; None = the local process pool."""
    addr = given if given else os.environ.get(SCHEDULER_ENV) or None
    if addr is not None and not re.match(r"^[a-z]+://[^\s/]+(:\d+)?/?$", addr):
        raise InvalidParamError(f"scheduler address {addr!r} is not of the form tcp://HOST:PORT")
    return addr


def map_ranks(paths: Iterable[Path], workers: int | None = None, scheduler: str | None = None,
              work: Callable[[str], RankTables] = analyze_rank) -> list[RankTables]:
    """``work`` on every path, in parallel; results in input order.

    Args:
        workers: local processes (default: the machine's cores; 1 = in this process).
        scheduler: a Dask scheduler address; then ``workers`` is ignored.
    """
    items = [str(p) for p in paths]
    if scheduler:
        return _on_dask(items, scheduler, work)
    n = min(workers or os.cpu_count() or 1, len(items))
    if n <= 1:
        return [work(p) for p in items]
    with ProcessPoolExecutor(max_workers=n) as pool:
        return list(pool.map(work, items, chunksize=max(1, len(items) // (4 * n))))


def _on_dask(items: list[str], address: str, work: Callable[[str], RankTables]) -> list[RankTables]:
    try:
        from distributed import Client
    except ImportError:
        raise InvalidParamError("a Dask scheduler was given but Dask is not installed: "
                                "pip install 'msprof_py[cluster]'") from None
    try:
        client = Client(address, timeout=f"{CONNECT_TIMEOUT_S}s")
    except (OSError, TimeoutError) as err:
        raise InvalidParamError(f"cannot reach the Dask scheduler at {address}: {err}") from None
    try:
        futures = client.map(work, items, pure=False)
        return client.gather(futures)
    finally:
        client.close()
