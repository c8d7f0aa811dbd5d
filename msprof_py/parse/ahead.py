"""A device dir's raw decode (:func:`msprof_py.parse.device.load_device`) on a thread, ahead of
its turn, so that the second core works while the first one builds the host side or the
device before.

Why: building a PROF dir is one chain on one core (host side, then each device: its raw records
decoded, joined to the host tasks, PMU rows matched, tables normalised).  A device's raw decode
needs only the host's dictionaries, its ``expand_stream_spec`` status and the clocks, so it can
start as soon as those are known: the first device's while the host's API calls and tasks are
decoded (the single-op million: 4.2 M API rows, ~2 s), the next device's while this one is joined.
Most of the decode is numpy's bulk work (the GIL free), so the two overlap.

What it costs: the decoded raw tables of one device (its STARS task rows, PMU records: what
:class:`DeviceData` holds) live while the work beside them runs, i.e. one device's decode output
earlier than before.  Only one device is decoded ahead at a time, and only in one process (a
parallel build decodes each device in its own process).

Warnings keep their order: the thread gives its own log, replayed into the device's at the place
where the decode would have run; an error of the thread (a corrupt record) is raised there too.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from msprof_py.errors import WarningLog


class Ahead:
    """Raw decodes started ahead (:meth:`start`), each taken once by its key (:meth:`take`)."""

    def __init__(self) -> None:
        self._jobs: dict[Any, tuple[threading.Thread, dict[str, Any]]] = {}

    def start(self, key: Any, decode: Callable[[WarningLog], Any]) -> None:
        """Run ``decode(log)`` on a thread (``log``: its own warnings)."""
        if key in self._jobs:
            return
        box: dict[str, Any] = {"log": WarningLog()}

        def run() -> None:
            try:
                box["out"] = decode(box["log"])
            except BaseException as err:  # noqa: BLE001  (raised by take(), on the caller's thread)
                box["err"] = err

        # a daemon: an export stopped by an error or Ctrl-C does not wait for a decode nobody takes
        t = threading.Thread(target=run, name="msprof-py-decode", daemon=True)
        self._jobs[key] = (t, box)
        t.start()

    def take(self, key: Any, warnings: WarningLog) -> Any | None:
        """The decode started for ``key`` (None if none was): waited for, its warnings replayed
        into ``warnings``, its error raised."""
        job = self._jobs.pop(key, None)
        if job is None:
            return None
        t, box = job
        t.join()
        warnings.replay(box["log"])
        if "err" in box:
            raise box["err"]
        return box["out"]

    def busy(self) -> bool:
        return bool(self._jobs)


__all__ = ["Ahead"]
