"""Tolerant JSON loading for AOE result files, with every repair reported.

Real result files are not always valid JSON: AOE writes them while tuning runs (a file can be cut
short), the documented examples carry placeholder lines (``.......``), a missing comma between
``add_repo_subgraphs`` and ``update_repo_subgraphs``, bare ``"key": value`` fragments without
the enclosing braces, and duplicate ``report_${timestamp}_${tid}`` keys.  :func:`load_json`
first tries strict JSON; only if that fails (or finds duplicate keys) does it repair, one
targeted fix at a time, recording a :class:`Repair` for each.  With ``strict=True`` any needed
repair is an error that names the first one.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from msprof_py.errors import DataError

_MAX_FIXES = 500  # a file needing more targeted fixes than this is not a damaged AOE file


@dataclass(frozen=True)
class Repair:
    """One change the lenient reader made to a file's text or structure.

    ``line`` is 1-based in the text as it was when the repair was made (0 = not line-specific).
    """

    kind: str  # placeholder | fragment | missing_comma | trailing_comma | truncated | duplicate_key | moved_key
    line: int
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}{self.message}"


class _Dups:
    """object_pairs_hook that keeps duplicate keys (renamed ``key#2``) and records them."""

    def __init__(self) -> None:
        self.renamed: list[tuple[str, str]] = []

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            name, n = key, 1
            while name in out:
                n += 1
                name = f"{key}#{n}"
            if name != key:
                self.renamed.append((key, name))
            out[name] = value
        return out


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _outside_strings(text: str) -> list[tuple[int, int]]:
    """Spans ``[start, end)`` of ``text`` that are not inside JSON string literals."""
    spans, start, i, n = [], 0, 0, len(text)
    while i < n:
        if text[i] == '"':
            spans.append((start, i))
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            start = i
        else:
            i += 1
    spans.append((start, min(i, n)))
    return spans


_PLACEHOLDER = re.compile(r"(?:\.{2,}|…+)[.…]*")


def _strip_placeholders(text: str, repairs: list[Repair]) -> str:
    """Remove ``.......`` / ``……`` runs that sit outside strings and are not part of a number."""
    pieces, last = [], 0
    for start, end in _outside_strings(text):
        for m in _PLACEHOLDER.finditer(text, start, end):
            if m.start() > 0 and text[m.start() - 1].isdigit():
                continue
            pieces.append(text[last:m.start()])
            last = m.end()
            repairs.append(Repair("placeholder", _line_of(text, m.start()),
                                  f"removed placeholder {m.group()!r} (documentation elision)"))
    pieces.append(text[last:])
    out = "".join(pieces)
    # a removed placeholder line leaves an empty line behind; drop those to keep the text tidy
    return re.sub(r"\n[ \t]*\n", "\n", out) if last else out


def _close_truncated(text: str) -> tuple[str, int] | None:
    """Cut ``text`` back to its last complete element and close every open container.

    Returns the new text and the 1-based line where the cut happened, or None if no cut gives
    valid JSON.  Candidate cuts: after a closing ``}``/``]``, after an opening ``{``/``[``, and
    before a ``,`` (i.e. after a complete member).  The last candidate that parses wins.
    """
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []  # (cut position, closers to append)
    spans = _outside_strings(text)
    for start, end in spans:
        for i in range(start, end):
            c = text[i]
            if c in "{[":
                stack.append("}" if c == "{" else "]")
                cuts.append((i + 1, "".join(reversed(stack))))
            elif c in "}]":
                if stack:
                    stack.pop()
                cuts.append((i + 1, "".join(reversed(stack))))
            elif c == ",":
                cuts.append((i, "".join(reversed(stack))))
    for pos, closers in reversed(cuts[-64:]):
        candidate = text[:pos].rstrip().rstrip(",") + "\n" + closers + "\n"
        try:
            json.loads(candidate)
        except json.JSONDecodeError:
            continue
        return candidate, _line_of(text, pos)
    return None


def _prev_nonspace(text: str, pos: int) -> int:
    i = pos - 1
    while i >= 0 and text[i].isspace():
        i -= 1
    return i


def load_json(text: str, name: str, *, strict: bool = False) -> tuple[Any, list[Repair]]:
    """Parse ``text`` (the content of file ``name``); return the value and the repairs made.

    Raises:
        DataError: the text is empty, is not JSON even after repairs, or (``strict``) needed a repair.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise DataError(f"{name}: empty file (no AOE result)")
    dups = _Dups()
    try:
        value = json.loads(text, object_pairs_hook=dups)
        repairs = [Repair("duplicate_key", 0, f"duplicate key {k!r} kept as {r!r}") for k, r in dups.renamed]
    except json.JSONDecodeError as first_error:
        value, repairs = _repair(text, name, first_error)
    if strict and repairs:
        raise DataError(f"{name}: strict mode refuses a file that needs repair: {repairs[0]}"
                        f" ({len(repairs)} repair(s) in total; lenient mode would make them)")
    return value, repairs


def _repair(text: str, name: str, first_error: json.JSONDecodeError) -> tuple[Any, list[Repair]]:
    repairs: list[Repair] = []
    text = _strip_placeholders(text, repairs)
    head = text.lstrip()
    if head.startswith('"'):
        # a bare '"key": value, ...' fragment (copied out of a dict layout): put the braces back
        # only the opening brace now: the closing one goes on when the end is reached intact,
        # so that a fragment that was also cut short is still seen as truncated
        text = "{\n" + head.rstrip().rstrip(",")
        repairs.append(Repair("fragment", 1, "wrapped a bare '\"key\": value' fragment in { }"))
    truncated = False
    for _ in range(_MAX_FIXES):
        dups = _Dups()
        try:
            value = json.loads(text, object_pairs_hook=dups)
        except json.JSONDecodeError as err:
            if not text[err.pos:].strip() and repairs and repairs[0].kind == "fragment":
                try:
                    json.loads(text + "\n}\n")
                    text += "\n}\n"
                    continue
                except json.JSONDecodeError:
                    pass
            fixed = _fix_one(text, err, repairs, allow_truncation=not truncated)
            if fixed is None:
                raise DataError(f"{name}: not JSON and not a repairable AOE result file "
                                f"(line {first_error.lineno} column {first_error.colno}: {first_error.msg})") from None
            truncated = truncated or repairs[-1].kind == "truncated"
            text = fixed
            continue
        repairs += [Repair("duplicate_key", 0, f"duplicate key {k!r} kept as {r!r}") for k, r in dups.renamed]
        return value, repairs
    raise DataError(f"{name}: not JSON (gave up after {_MAX_FIXES} repairs)")


def _fix_one(text: str, err: json.JSONDecodeError, repairs: list[Repair], *, allow_truncation: bool) -> str | None:
    """One targeted fix for ``err``, or None when the error is not one we know how to repair."""
    pos = err.pos
    at_end = not text[pos:].strip()
    if at_end or err.msg.startswith("Unterminated string"):
        if not allow_truncation:
            return None
        closed = _close_truncated(text)
        if closed is None:
            return None
        repairs.append(Repair("truncated", closed[1],
                              "file ends early (cut short while tuning was running?): "
                              "dropped the unfinished tail and closed the open brackets"))
        return closed[0]
    prev = _prev_nonspace(text, pos)
    if err.msg.startswith("Expecting ',' delimiter") and prev >= 0 and text[pos] in '"{[':
        repairs.append(Repair("missing_comma", _line_of(text, prev),
                              f"inserted a missing ',' after {text[prev]!r}"))
        return text[:prev + 1] + "," + text[prev + 1:]
    if (err.msg.startswith(("Expecting property name", "Expecting value", "Illegal trailing comma"))
            and prev >= 0 and text[prev] == "," and text[pos] in "}]"):
        repairs.append(Repair("trailing_comma", _line_of(text, prev), f"removed a trailing ',' before {text[pos]!r}"))
        return text[:prev] + text[prev + 1:]
    return None
