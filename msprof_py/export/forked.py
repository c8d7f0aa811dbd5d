"""Run one part of an export in a forked child process while the parent does the rest.

The machine this targets has 2 cores and the exporters are single-threaded Python/numpy for the
most part, so an independent output (the unified DB: sqlite inserts, ~20% of the export's CPU)
written by a child overlaps the text outputs written by the parent.  ``fork`` (not ``spawn``)
because the child needs the parsed session: it shares the parent's pages copy-on-write instead
of pickling a session of hundreds of MB.  Only used where fork is safe: POSIX, at least two
CPUs, and no other thread running in the parent (a lock held by another thread at fork time
would stay held in the child forever).
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import sys
import threading
from collections.abc import Callable
from typing import Any


def can_fork() -> bool:
    """True when a forked worker is safe and can win (see the module doc)."""
    return (hasattr(os, "fork") and "fork" in multiprocessing.get_all_start_methods()
            and (os.cpu_count() or 1) >= 2 and threading.active_count() == 1)


class Forked:
    """``fn()`` running in a forked child; :meth:`result` waits for it and returns its value or
    raises its exception in the parent (an exception that does not pickle is re-raised as the
    nearest base class that does, with the same message)."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        mp = multiprocessing.get_context("fork")
        self._recv, send = mp.Pipe(duplex=False)
        sys.stdout.flush()  # or the child would flush the parent's buffered output a second time
        sys.stderr.flush()
        self._proc = mp.Process(target=_child, args=(fn, send), daemon=True)
        self._proc.start()
        send.close()

    def result(self) -> Any:
        try:
            status, value = pickle.loads(self._recv.recv_bytes())
        except EOFError:  # killed (OOM killer, signal) before it could answer
            self._proc.join()
            raise RuntimeError(f"the export worker (pid {self._proc.pid}) died with exit code "
                               f"{self._proc.exitcode}") from None
        finally:
            self._recv.close()
        self._proc.join()
        if status == "err":
            raise value
        return value


def _child(fn: Callable[[], Any], send: Any) -> None:
    try:
        payload = _dumps(("ok", fn()))
    except BaseException as err:  # noqa: BLE001  (every failure goes back to the parent)
        payload = _dumps(("err", err))
    send.send_bytes(payload)
    send.close()


def _dumps(out: tuple[str, Any]) -> bytes:
    """Pickled ``out`` that unpickles; an exception that does not becomes its nearest base class."""
    status, value = out
    candidates = [value]
    if isinstance(value, BaseException):
        candidates += [cls(str(value)) for cls in type(value).__mro__[1:]
                       if issubclass(cls, BaseException) and cls is not BaseException and _makes(cls)]
    for cand in candidates:
        try:
            data = pickle.dumps((status, cand))
            pickle.loads(data)
            return data
        except Exception:  # noqa: BLE001  (try the next, plainer form)
            continue
    return pickle.dumps(("err", RuntimeError(f"{type(value).__name__}: {value}")))


def _makes(cls: type) -> bool:
    try:
        cls("")
        return True
    except Exception:  # noqa: BLE001
        return False
