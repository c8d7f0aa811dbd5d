"""Cell and keyed-row comparison shared by the CSV, timeline and DB checks.

A value agrees "to the printed digit": strings must be equal after stripping whitespace (msprof
ends time cells with a tab); two numbers agree when they are equal as decimals (``0`` and
``0.000``, ``0.02`` and ``0.020`` agree; ``10.063`` and ``10.062`` do not), and integers printed
without decimals must be equal after rounding.  Looser comparisons exist only as the named
allowances of :mod:`benchmarks.parity.allow`.
Numbers are compared as :class:`decimal.Decimal` because epoch-µs start times have 19 significant
digits, more than a float holds.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

NUM_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
MAX_EXAMPLES = 5


@dataclass
class Check:
    """One comparison (a file, a table or a timeline aspect) of one PROF dir.

    ``rows_expected`` / ``rows_ours``: rows (events) on each side; ``missing`` / ``extra``: keys only
    msprof / only we have; ``cells``: column -> number of disagreeing cells among matched rows;
    ``notes``: whole-file findings (missing file, missing columns, ...); ``examples``: a few concrete
    differences for ``--verbose``.  ``skipped`` when msprof wrote nothing to compare with.
    """

    name: str
    rows_expected: int = 0
    rows_ours: int = 0
    missing: int = 0
    extra: int = 0
    cells: Counter = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)
    skipped: bool = False
    deliberate: set[str] = field(default_factory=set)  # allowances (parity.allow) this check relied on

    @property
    def ok(self) -> bool:
        return self.skipped or (not self.missing and not self.extra and not self.cells and not self.notes)

    def example(self, text: str) -> None:
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(text)

    def summary(self, max_items: int = 3) -> str:
        """``name ok(N)`` or ``name: note; rows -a +b /N; Col n≠ ...`` (the first few differences)."""
        if self.skipped:
            return f"{self.name} -"
        if self.ok:
            why = f" deliberate: {','.join(sorted(self.deliberate))}" if self.deliberate else ""
            return f"{self.name} ok({self.rows_expected}{why})"
        parts = list(self.notes[:max_items])
        if self.missing or self.extra:
            parts.append(f"rows -{self.missing} +{self.extra} of {self.rows_expected}")
        cols = self.cells.most_common()
        parts += [f"{c} {n}≠" for c, n in cols[:max_items]]
        if len(cols) > max_items:
            parts.append(f"+{len(cols) - max_items} cols")
        return f"{self.name}: " + ", ".join(parts)


def dec(text: str) -> Decimal | None:
    """The number in a cell, or None when it is not a number."""
    s = text.strip()
    if not NUM_RE.match(s):
        return None
    try:
        return Decimal(s)
    except InvalidOperation:
        return None


def _decimals(text: str) -> int:
    s = text.strip()
    if "e" in s or "E" in s:
        return 6
    return len(s) - s.index(".") - 1 if "." in s else 0


def same_value(expected: str, ours: str) -> bool:
    """True when ``ours`` equals msprof's ``expected`` cell to the digit msprof printed."""
    e, o = expected.strip(), ours.strip()
    if e == o:
        return True
    de, do = dec(e), dec(o)
    if de is None or do is None:
        return False
    if _decimals(e) == 0:
        return round(do) == de
    return de == do


def keyed(rows: Iterable[Sequence[str]], key_idx: Sequence[int], order_idx: int | None) -> dict[tuple, Sequence[str]]:
    """Rows by key; repeated keys get an occurrence number in ``order_idx`` (time) order."""
    groups: dict[tuple, list[Sequence[str]]] = {}
    for r in rows:
        groups.setdefault(tuple(r[i].strip() for i in key_idx), []).append(r)
    out: dict[tuple, Sequence[str]] = {}
    for k, rs in groups.items():
        if len(rs) > 1 and order_idx is not None:
            rs = sorted(rs, key=lambda r: dec(r[order_idx]) or Decimal(0))
        for n, r in enumerate(rs):
            out[k + (n,)] = r
    return out


def compare_keyed(check: Check, header_e: Sequence[str], rows_e: list[Sequence[str]],
                  header_o: Sequence[str], rows_o: list[Sequence[str]], key: Sequence[str],
                  order: str | None = None, columns: Sequence[str] | None = None,
                  loose: dict[str, tuple[Callable[[str, str], bool], str]] | None = None) -> None:
    """Match rows on ``key`` (+ occurrence) and compare ``columns`` (default: every column msprof
    wrote that is not a key).  Columns msprof wrote and we did not are one note each.  ``loose``:
    column -> (comparison, allowance name) tried when a cell differs (see parity.allow)."""
    loose = loose or {}
    check.rows_expected, check.rows_ours = len(rows_e), len(rows_o)
    missing_key = [k for k in key if k not in header_e or k not in header_o]
    if missing_key:
        check.notes.append(f"key column(s) {', '.join(missing_key)} absent")
        return
    cols = [c for c in (columns if columns is not None else header_e) if c not in key]
    absent = [c for c in cols if c not in header_o]
    if absent:
        check.notes.append(f"no column{'s' if len(absent) > 1 else ''} {', '.join(absent[:4])}"
                           + (f" +{len(absent) - 4}" if len(absent) > 4 else ""))
    ie = {c: i for i, c in enumerate(header_e)}
    io = {c: i for i, c in enumerate(header_o)}
    ke = keyed(rows_e, [ie[k] for k in key], ie.get(order) if order else None)
    ko = keyed(rows_o, [io[k] for k in key], io.get(order) if order else None)
    only_e = [k for k in ke if k not in ko]
    only_o = [k for k in ko if k not in ke]
    check.missing, check.extra = len(only_e), len(only_o)
    for k in only_e[:2]:
        check.example(f"only msprof has row {_fmt_key(key, k)}")
    for k in only_o[:2]:
        check.example(f"only msprof_py has row {_fmt_key(key, k)}")
    both = [c for c in cols if c in io]
    for k, re_ in ke.items():
        ro = ko.get(k)
        if ro is None:
            continue
        for c in both:
            ve = re_[ie[c]] if ie[c] < len(re_) else ""
            vo = ro[io[c]] if io[c] < len(ro) else ""
            if not same_value(ve, vo):
                if c in loose and loose[c][0](ve, vo):
                    check.deliberate.add(loose[c][1])
                    continue
                check.cells[c] += 1
                if check.cells[c] == 1:
                    check.example(f"{c} at {_fmt_key(key, k)}: msprof {ve.strip()!r}, msprof_py {vo.strip()!r}")


def _fmt_key(names: Sequence[str], k: tuple) -> str:
    parts = [f"{n}={v}" for n, v in zip(names, k)]
    if k[-1]:
        parts.append(f"#{k[-1]}")
    return " ".join(parts)
