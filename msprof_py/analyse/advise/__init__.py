"""``advise(session) -> DataFrame``: every rule over a parsed session.

One row per finding (columns :data:`COLUMNS`; ``time_at_stake_us`` is the estimated time the
whole profiled span would save if fixed, ``evidence`` a dict, ``plot`` a :class:`Plot`), sorted
by device then time at stake.  Rules live one idea per module: ``ops`` (AI CPU, dynamic shape,
AOE candidates), ``schedule`` (host-bound launch, sync on the hot path, bubbles, unbalanced
iterations), ``comm`` (small all-reduces, exposed communication), ``pmu`` (utilisation,
memory-bound).
"""
from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pandas as pd

from msprof_py.analyse.advise import comm, ops, pmu, schedule  # noqa: F401  (registers the rules)
from msprof_py.analyse.advise.base import RULES, Finding, Plot, shared_views

COLUMNS = ["device_id", "rule", "category", "title", "suggestion", "time_at_stake_us", "ops", "iterations",
           "streams", "evidence", "plot"]

__all__ = ["advise", "findings", "COLUMNS", "Finding", "Plot", "RULES"]


def findings(session: Any, rules: list[str] | None = None, errors: list[str] | None = None) -> list[Finding]:
    """Run ``rules`` (default: all) over ``session``.  A rule that fails on odd data is reported
    in ``errors`` (``"rule: message"``) and skipped, so one rule never hides the others."""
    found, failed = run_rules(session, rules, raise_errors=errors is None)
    if errors is not None:
        errors += failed.values()
    return in_order([f for fs in found.values() for f in fs])


RULE_ERRORS = (KeyError, ValueError, TypeError, IndexError, ZeroDivisionError)


def run_rules(session: Any, rules: list[str] | None = None,
              raise_errors: bool = False) -> tuple[dict[str, list[Finding]], dict[str, str]]:
    """Each rule's findings on ``session`` (in rule order), and the message of each rule that
    failed on odd data (``"advice rule NAME skipped: ..."``; raised with ``raise_errors``)."""
    found: dict[str, list[Finding]] = {}
    failed: dict[str, str] = {}
    with shared_views(session):  # views several rules read are derived once
        for name in rules or list(RULES):
            try:
                found[name] = RULES[name](session)
            except RULE_ERRORS as err:
                if raise_errors:
                    raise
                failed[name] = f"advice rule {name} skipped: {type(err).__name__}: {err}"
    return found, failed


def in_order(found: list[Finding]) -> list[Finding]:
    """Findings by device, then largest time at stake first (the order of every report)."""
    return sorted(found, key=lambda f: (f.device_id, -f.time_at_stake_ns, f.rule))


def advise(session: Any, rules: list[str] | None = None) -> pd.DataFrame:
    """The findings of ``session`` as a DataFrame (columns :data:`COLUMNS`)."""
    rows = [{"device_id": f.device_id, "rule": f.rule, "category": f.category, "title": f.title,
             "suggestion": f.suggestion, "time_at_stake_us": f.time_at_stake_ns / 1000.0, "ops": f.ops,
             "iterations": f.iterations, "streams": f.streams, "evidence": f.evidence, "plot": f.plot}
            for f in findings(session, rules)]
    return pd.DataFrame(rows, columns=COLUMNS)


def finding_dict(f: Finding) -> dict[str, Any]:
    """JSON-able form of a finding."""
    d = asdict(f)
    d["time_at_stake_us"] = round(f.time_at_stake_ns / 1000.0, 3)
    return d
