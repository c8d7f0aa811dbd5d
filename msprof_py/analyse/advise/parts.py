"""Advice one device at a time: every rule run on one device's session, the small results kept
(:class:`DeviceAdvice`), then combined into exactly the findings of the whole session.

Why: the whole session of a large run does not fit in memory (8 devices x 1.25 M tasks: ~7 GB)
while one device's does (:class:`msprof_py.parse.source.ProfSource` gives one at a time, host
tables included).  Every rule already works device by device (it groups the device tables by
``device_id``; the host's API table is in every device's session), so a device's findings do
not depend on the other devices, with one exception and two conditions:

- ``comm_not_overlapped`` measures communication by the collectives' spans when the PROF dir has
  any, else by the HCCL tasks (:func:`comm.has_spans`): a device measured by its tasks is
  dropped when another device has spans (the whole session measures it by spans: none).
- The devices' tables must join as they are (no device id in two devices' tables, the same
  columns and dtypes per table, so concatenation changes no value): :func:`combine` returns None
  otherwise and the caller runs the advice on the whole session.
- A rule that fails on one device fails on the whole session: its findings are dropped on every
  device and the first device's message is reported, as the whole session's run would.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from msprof_py.analyse.advise import comm, in_order, pmu, run_rules
from msprof_py.analyse.advise.base import RULES, Finding, device_ids, shared_views
from msprof_py.analyse.advise.prof_rule import op_parallel

# the device tables the rules read, whose device ids and dtypes must agree between devices
TABLES = ("tasks", "steps", "communication", "comm_tasks", "pmu")
EXPOSED = "comm_not_overlapped"


@dataclass
class DeviceAdvice:
    """What the advice keeps of one device's session (small: findings and a few facts)."""

    found: dict[str, list[Finding]]  # per rule
    failed: dict[str, str]  # per rule that failed: its message
    parallel: dict[int, dict[str, float] | None]  # per device that ran tasks: prof_rule's Op Parallel data
    pmu_columns: list[str]  # the PMU ratio columns the device has
    comm_spans: bool  # :func:`comm.has_spans`
    ids: set[int] = field(default_factory=set)  # device ids in its device tables
    shapes: dict[str, tuple[Any, ...]] = field(default_factory=dict)  # per non-empty table: columns, dtypes


def device_advice(session: Any) -> DeviceAdvice:
    """Every rule on one device's session (host tables + that device's)."""
    with shared_views(session):  # the rules' views, also for op_parallel below
        return _device_advice(session)


def _device_advice(session: Any) -> DeviceAdvice:
    found, failed = run_rules(session)
    ids: set[int] = set()
    shapes = {}
    for name in TABLES:
        df = getattr(session, name, None)
        if df is None or not len(df):
            continue
        shapes[name] = (tuple(df.columns), tuple("category" if isinstance(t, pd.CategoricalDtype) else str(t)
                                                 for t in df.dtypes))
        if "device_id" in df.columns:
            ids.update(int(d) for d in pd.unique(df["device_id"]))
    executed = device_ids(session)
    return DeviceAdvice(found, failed, {d: op_parallel(session, d) for d in executed}, pmu.pmu_columns(session),
                        comm.has_spans(session), ids, shapes)


@dataclass
class Combined:
    found: list[Finding]  # in report order
    errors: list[str]  # one per failed rule
    parallel: dict[int, dict[str, float] | None]  # per device that ran tasks
    has_pmu: bool


def combine(parts: list[DeviceAdvice]) -> Combined | None:
    """The whole session's advice from its devices' (in device order); None when the devices'
    tables would not join as they are (see the module doc)."""
    seen: set[int] = set()
    shapes: dict[str, tuple[Any, ...]] = {}
    for p in parts:
        if p.ids & seen or any(shapes.setdefault(k, v) != v for k, v in p.shapes.items()):
            return None
        seen |= p.ids
    failed: dict[str, str] = {}
    for p in parts:
        for name, msg in p.failed.items():
            failed.setdefault(name, msg)
    spans = any(p.comm_spans for p in parts)
    found = [f for p in parts for name, fs in p.found.items() if name not in failed
             and not (name == EXPOSED and spans and not p.comm_spans) for f in fs]
    errors = [failed[name] for name in RULES if name in failed]
    return Combined(in_order(found), errors, {d: v for p in parts for d, v in p.parallel.items()},
                    any(p.pmu_columns for p in parts))


__all__ = ["DeviceAdvice", "Combined", "device_advice", "combine"]
