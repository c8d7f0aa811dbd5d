"""Run an export's per-device work in worker processes (both cores of the machine).

Why processes: the exporters are numpy/pandas code holding the GIL most of the time, so
threads would not use a second core.  Workers are *forked* once the host tables are in memory,
so they share them copy-on-write instead of each reading them again.

What a task gives back (files, log lines, warnings) is returned to the parent, which puts it in
the order a single process would have produced it; the caller does that (:func:`run_tasks`
yields results in task order).  An error a worker raises comes back as the same one-line
:class:`MsprofError`; a worker that dies (killed, out of memory) is one clear error too.

``MSPROF_PY_WORKERS`` (or ``ExportOptions.workers``) sets the number of processes; the default
is 1 (everything in the calling process): on a quiet 2-core machine two processes export the
1M-task, 2-device collection in 15-20% less wall time but the tree's memory doubles (434 -> 877 MB;
on a shared machine there was no win at all: benchmarks/RESULTS.md, issue 12 phases 3 and 5), and
memory is what the default protects.  ``MSPROF_PY_WORKERS=2`` turns them on.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from msprof_py.errors import MsprofError

WORKERS_ENV = "MSPROF_PY_WORKERS"
DEFAULT_WORKERS = 1  # see the module doc: the memory, not the time, decides
_TASK: Callable[[Any], Any] | None = None  # the function workers run (set before the fork)


class WorkerDiedError(MsprofError):
    """A worker process of the export ended without an answer (killed, or out of memory)."""

    exit_code = 1


def workers_for(tasks: int, asked: int | None = None) -> int:
    """Processes to use for ``tasks`` independent tasks: ``asked`` (else ``MSPROF_PY_WORKERS``,
    else 1: see the module doc), never more than the tasks; 1 without fork."""
    if asked is None:
        env = os.environ.get(WORKERS_ENV, "").strip()
        asked = int(env) if env.isdigit() and int(env) > 0 else DEFAULT_WORKERS
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return max(1, min(asked, tasks))


def _default_signals() -> None:
    """In a new worker: SIGTERM / SIGINT back to their defaults.  A fork inherits the parent's
    handlers (``msprof-py collect`` turns SIGTERM into an orderly abort, and so does any caller
    that ran a collection in-process), and the pool stops workers with SIGTERM when one of them
    died: a worker that caught it instead of ending kept the pool's shutdown waiting forever."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _call(arg: Any) -> tuple[str, Any]:
    """In a worker: run the task; an MsprofError travels back as (class, message, exit code)
    (some of them cannot be pickled as they are)."""
    assert _TASK is not None
    try:
        return "ok", _TASK(arg)
    except MsprofError as err:
        return "error", (type(err), str(err), err.exit_code)


def raise_error(cls: type[MsprofError], message: str, code: int) -> None:
    """Raise the error a forked process reported as (class, message, exit code)."""
    try:
        err = cls(message)
    except TypeError:  # an error class built from several fields (CorruptRecordError): same text
        err = cls.__new__(cls)
        Exception.__init__(err, message)
    err.exit_code = code
    raise err


def run_tasks(fn: Callable[[Any], Any], args: list[Any], workers: int, what: Callable[[Any], str]) -> Iterator[Any]:
    """``fn(arg)`` for each of ``args``, in ``workers`` forked processes (here when 1); yields
    the results in the order of ``args``.  ``what(arg)`` names a task in the error of a dead
    worker."""
    if workers <= 1:
        for a in args:
            yield fn(a)
        return
    global _TASK
    _TASK = fn
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                                 initializer=_default_signals) as pool:
            futures = [pool.submit(_call, a) for a in args]
            for a, fut in zip(args, futures):
                try:
                    status, value = fut.result()
                except BrokenProcessPool:
                    left = [what(x) for x, f in zip(args, futures) if not f.done() or f.exception() is not None]
                    for f in futures:
                        f.cancel()
                    raise WorkerDiedError(f"an export worker process died (killed, or out of memory?) while "
                                          f"{' / '.join(left) or what(a)}; run again with {WORKERS_ENV}=1 to use "
                                          "one process") from None
                if status == "error":
                    for f in futures:
                        f.cancel()
                    raise_error(*value)
                yield value
    finally:
        _TASK = None


__all__ = ["run_tasks", "workers_for", "raise_error", "WorkerDiedError", "WORKERS_ENV"]
