"""Parsed session -> msprof's timelines, summaries and unified DB.

Exporters only format the session tables of :mod:`msprof_py.parse.schema`; each registers itself
in :data:`msprof_py.export.base.REGISTRY` (``"{kind}:{name}"`` -> exporter).  The entry point is
:func:`msprof_py.export.runner.export`.
"""
from __future__ import annotations

from msprof_py.export import timeline as _timeline  # noqa: F401  (registration order = README order)
from msprof_py.export import tx_timeline as _tx_timeline  # noqa: F401
from msprof_py.export import component_timelines as _components  # noqa: F401
from msprof_py.export import summaries as _summaries  # noqa: F401
from msprof_py.export import counter_export as _counters  # noqa: F401
from msprof_py.export import unified_db as _db  # noqa: F401
from msprof_py.export import perfetto_trace as _pftrace  # noqa: F401
from msprof_py.export.base import REGISTRY, ExportContext, Naming
from msprof_py.export.runner import ExportOptions, ExportResult, export

__all__ = ["REGISTRY", "ExportContext", "ExportOptions", "ExportResult", "Naming", "export"]
