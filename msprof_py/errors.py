"""One exception root for everything msprof_py reports to a user.

The CLI maps :class:`MsprofError` to a one-line message and a non-zero exit code; it never
shows a traceback for these.  Recoverable problems are *not* exceptions: they go into a
:class:`WarningLog` and are printed once at the end of a command.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field


class MsprofError(Exception):
    """Base class: a problem the user can act on.  ``str(err)`` is the whole message."""

    exit_code: int = 1


class InvalidParamError(MsprofError):
    """A bad option value or combination (msprof's ProfException code 1)."""

    exit_code = 1


class InvalidPathError(MsprofError):
    """A path that does not exist, is not a PROF directory, or cannot be written (code 2)."""

    exit_code = 2


class DataError(MsprofError):
    """Raw data that cannot be used at all (code 8)."""

    exit_code = 8


class CorruptRecordError(DataError):
    """A binary record that fails validation.

    Args:
        path: the raw file (for records that straddle slices: the slice holding the record start).
        offset: byte offset of the record inside ``path``.
        reason: what is wrong, e.g. ``"bad magic 0x1234"``.
    """

    def __init__(self, path: str | os.PathLike[str], offset: int, reason: str) -> None:
        self.path = os.fspath(path)
        self.offset = offset
        self.reason = reason
        super().__init__(f"{self.path}: byte {offset}: {reason}")


class NotEnoughMemoryError(MsprofError):
    """Loading would need more memory than the machine has available (said before loading)."""

    exit_code = 1


class StepTraceError(MsprofError):
    """Iteration selection that does not exist in the data (code 9)."""

    exit_code = 9


class WorkloadError(MsprofError):
    """An unknown workload, a malformed graph file, or a user script that failed."""

    exit_code = 1


@dataclass
class WarningLog:
    """Warnings collected while working, printed once at the end (deduplicated, in order)."""

    messages: list[str] = field(default_factory=list)
    _tallies: dict[str, tuple[int, int, str]] = field(default_factory=dict, repr=False, compare=False)

    def warn(self, message: str) -> None:
        if message not in self.messages:
            self.messages.append(message)

    def tally(self, problem: str, count: int, first: str) -> None:
        """One warning per kind of ``problem``, however often it is met: ``"{problem}: N
        found, the first at {first}"`` (``first``: file and byte offset, or file and record).
        Later calls add to N and keep the first place."""
        if count <= 0:
            return
        if problem in self._tallies:
            index, total, first = self._tallies[problem]
            total += count
        else:
            index, total = len(self.messages), count
            self.messages.append("")
        self._tallies[problem] = (index, total, first)
        self.messages[index] = f"{problem}: {total} found, the first at {first}"

    def extend(self, other: "WarningLog") -> None:
        for m in other.messages:
            self.warn(m)

    def replay(self, log: "WarningLog") -> None:
        """Add ``log``'s messages as if they had been given here (tallies add up): the log of
        work done elsewhere (a worker process, a thread) at the point it would have run."""
        tallied = {index: (problem, total, first) for problem, (index, total, first) in log._tallies.items()}
        for i, m in enumerate(log.messages):
            if i in tallied:
                problem, total, first = tallied[i]
                self.tally(problem, total, first)
            else:
                self.warn(m)

    def __bool__(self) -> bool:
        return bool(self.messages)

    def __iter__(self):
        return iter(self.messages)
