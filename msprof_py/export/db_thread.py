"""The unified DB of a one-process streamed export, written on a thread beside the text writers.

Why a thread: the DB (``msprof_*.db``) was the last stage of the export, on one core, ~18-25 %
of its time.  Most of its time is SQLite's own work (``sqlite3_step``, page writes), during
which Python's ``sqlite3`` releases the GIL, so a thread runs it on the second core while the
main thread writes the text files (forked processes instead: :mod:`msprof_py.export.db_process`).

Why the text pass's sessions: the DB reads each device's tables once
(:func:`msprof_py.export.unified_db.write_db` with ``parts``), in device order, as the text
pass does; the main thread hands each device's session to the DB thread (:meth:`DbFeed.put`)
before writing its files, so no device is read twice and at most one device's tables are in
memory: the main thread waits before reading the next device until the DB thread is done with
the previous one (:meth:`DbFeed.wait_room`; the DB's part of a device is the smaller one).  The
DB sees each device with the whole session's categories (:func:`db_view`), as before.

Errors: a DB error surfaces when the main thread collects the DB (:meth:`DbThread.result`), as
the same one-line error the sequential export gives, after the text files (their order in the
sequential export).  When the main thread stops (an error, Ctrl-C) it interrupts the DB
(:meth:`DbThread.stop`: the running SQLite statement is interrupted, the DB's temporary file
removed) and waits for it.

Past 2 cores: the DB uses one core (SQLite writes the file from one connection; the last
device's TASK_PMU_INFO rows are made beside it on a thread of their own, ``unified_db_side``), the text writers
the rest (the row renderer's threads; ``MSPROF_PY_WORKERS`` processes for several devices).  A
forked process per device instead of this thread, which shares no GIL with the text writers:
:mod:`msprof_py.export.db_process`, the default on Linux up to a collection size (its
``use_processes``), measured against this thread there; this thread is the DB's way where
there is no ``fork``, past that size, and with ``MSPROF_PY_DB_PROCESS=0``.
"""
from __future__ import annotations

import dataclasses
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd

from msprof_py.parse.session import Session


class Cancelled(Exception):
    """The export stopped: the DB thread ends (its temporary file removed)."""


class DbFeed:
    """Device sessions from the main thread to the DB thread, one at a time, in device order;
    also the DB's handle to stop it (:meth:`cancel`)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.cond = threading.Condition()
        self.items: deque[Session] = deque()
        self.busy = 0  # sessions given and not yet done with by the DB thread
        self.holding = False  # the DB thread holds a session it will let go of (release)
        self.ended = False  # the DB thread ended (done or failed): nothing to wait for
        self.cancelled = False
        self.con: Any = None  # the DB's open sqlite3 connection (interrupted by cancel)

    # -- main thread
    def wait_room(self) -> None:
        """Block until the DB thread has let go of every session given before."""
        with self.cond:
            self.cond.wait_for(lambda: self.busy == 0 or self.ended)

    def put(self, session: Session) -> None:
        with self.cond:
            if self.ended:
                return
            self.items.append(session)
            self.busy += 1
            self.cond.notify_all()

    def cancel(self) -> None:
        """Stop the DB thread: no more sessions, the running statement interrupted."""
        with self.cond:
            self.cancelled = True
            self.items.clear()
            self.cond.notify_all()
            if self.con is not None:
                self.con.interrupt()

    # -- DB thread
    def sessions(self) -> Iterator[Session]:
        """The ``count`` sessions as they come (each let go of by :meth:`release`, or when the
        next is asked for; the last one is kept by the DB until its end)."""
        for k in range(self.count):
            with self.cond:
                self.cond.wait_for(lambda: bool(self.items) or self.cancelled)
                if self.cancelled:
                    raise Cancelled
                self.holding = k < self.count - 1
                box = [self.items.popleft()]
            yield box.pop()  # not kept in this frame: release() lets go of it
            self.release()

    def idle(self) -> bool:
        """Whether the DB thread would wait for the next session (none given yet)."""
        return not self.items and not self.cancelled

    def release(self) -> None:
        """The DB thread is done with the session it was given last (not the last device's):
        the main thread may read the next device."""
        with self.cond:
            if self.holding:
                self.holding = False
                self.busy -= 1
                self.cond.notify_all()

    def attach(self, con: Any) -> None:
        with self.cond:
            if self.cancelled:
                raise Cancelled
            self.con = con

    def detach(self) -> None:
        with self.cond:
            self.con = None

    def end(self) -> None:
        with self.cond:
            self.ended = True
            self.cond.notify_all()


def db_view(session: Session, categories: dict[str, list[str]]) -> Session:
    """The DB's own view of a device session: its task columns with the whole session's
    categories (as :meth:`ProfSource.device` sets them for the DB), every table a shallow copy
    (the text writers' later changes to theirs do not reach it)."""
    t = session.tasks.copy(deep=False)
    for c, values in categories.items():
        if c in t.columns and isinstance(t[c].dtype, pd.CategoricalDtype) and \
                t[c].cat.categories.tolist() != values:  # (one device: its own are the session's)
            t[c] = t[c].cat.set_categories(values)
    tables = {f.name: getattr(session, f.name) for f in dataclasses.fields(session)
              if isinstance(getattr(session, f.name), pd.DataFrame)}
    return dataclasses.replace(session, **{**{n: df.copy(deep=False) for n, df in tables.items()}, "tasks": t})


class DbThread:
    """Runs ``write(feed)`` (the DB job, returning its result) on a thread."""

    def __init__(self, write: Callable[[DbFeed], Any], count: int) -> None:
        self.feed = DbFeed(count)
        self.write = write
        self.out: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="msprof-py-db", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.out = self.write(self.feed)
        except BaseException as err:  # noqa: BLE001  (handed to the main thread)
            self.error = err
        finally:
            self.feed.end()

    def result(self) -> Any:
        """Wait for the DB; its result, or its error raised here."""
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.out

    def stop(self) -> None:
        """Interrupt the DB (if still running) and wait until it has removed its temporary file."""
        while self.thread.is_alive():
            self.feed.cancel()  # again: an interrupt reaches only a statement that is running
            self.thread.join(0.02)


__all__ = ["DbThread", "DbFeed", "Cancelled", "db_view"]
