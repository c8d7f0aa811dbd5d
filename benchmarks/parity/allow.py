"""The deliberate differences (README, "Deliberate differences from msprof"): the only ways a cell
may differ from msprof's and still count as agreeing.  Each has a name the report shows, so an
agreeing dir says which ones it relied on.

- ``wait-time``: op_summary ``Task Wait Time(us)``.  We follow msprof's C++ rule (gaps between
  the doubles of the printed starts) but from integer-ns times where msprof keeps sub-ns ones, so
  a value can differ in the last digit; on the Python path we compute it exactly in ns.  Allowed:
  within 0.5 µs.
- ``block-dim``: msprof before 2026-01 (Ascend/msprof 14417d4 "rename block Dim to block Num")
  headed op_summary ``Block Dim`` / ``Mix Block Dim``; we write today's ``Block Num`` /
  ``Mix Block Num``.  Allowed: those two header names as aliases.
- ``format-prefix``: the msprof of 2024 printed GE formats as ``FORMAT_ND``; today's msprof
  (Python and C++ analysis) prints ``ND`` for the same raw data, as we do.  Allowed: the
  ``FORMAT_`` prefix in the format columns.
- ``flow-halves``: msprof's C++ timeline writes a flow start for every event call / Node launch
  and a flow end for every device task with a TaskInfo, also when the other half does not exist
  (a kernel whose launch API is not in the timeline); a viewer draws nothing for a half.  We write
  complete flows only; the check compares complete flows (parity.timeline).
- ``connection-id-race``, ``root-connection``, ``flow-id-python``: connection ids and flow ids,
  checked in benchmarks/parity/links.py (its docstring and the README say why).
- ``viewer-nesting``: a timeline slice ending within 1 µs of its parent's end or its next
  sibling's start is written up to 1 µs shorter so viewers reading ``ts`` as doubles keep it
  nested (README; the CSVs keep the exact value).  Allowed: timeline ``dur`` up to 1 µs shorter.
"""
from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from benchmarks.parity.cells import dec, same_value

HEADER_ALIASES = {"Block Dim": ("Block Num", "block-dim"), "Mix Block Dim": ("Mix Block Num", "block-dim")}
FORMAT_COLUMNS = ("Input Formats", "Output Formats")
WAIT_SLACK = Decimal("0.5")

Comparator = Callable[[str, str], bool]


def _wait(expected: str, ours: str) -> bool:
    e, o = dec(expected), dec(ours)
    return e is not None and o is not None and abs(e - o) <= WAIT_SLACK


def _formats(expected: str, ours: str) -> bool:
    items = expected.strip().split(";")
    return ";".join(i[len("FORMAT_"):] if i.startswith("FORMAT_") else i for i in items) == ours.strip()


def _viewer_dur(expected: str, ours: str) -> bool:
    e, o = dec(expected), dec(ours)
    return e is not None and o is not None and Decimal(0) <= e - o <= Decimal(1)


def comparators(kind: str) -> dict[str, tuple[Comparator, str]]:
    """column -> (a looser comparison, its name) for a CSV kind, tried when the strict one fails."""
    out: dict[str, tuple[Comparator, str]] = {}
    if kind == "op_summary":
        out["Task Wait Time(us)"] = (_wait, "wait-time")
        for c in FORMAT_COLUMNS:
            out[c] = (_formats, "format-prefix")
    if kind == "timeline.hw":
        out["dur"] = (_viewer_dur, "viewer-nesting")
    return out


def alias_header(header: list[str]) -> tuple[list[str], set[str]]:
    """msprof's header with older names replaced by today's, and the allowances used."""
    used: set[str] = set()
    out = []
    for h in header:
        if h in HEADER_ALIASES:
            new, why = HEADER_ALIASES[h]
            out.append(new)
            used.add(why)
        else:
            out.append(h)
    return out, used


__all__ = ["alias_header", "comparators", "same_value"]
