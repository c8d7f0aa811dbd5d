"""Cluster analysis: many ranks' PROF dirs, reduced in parallel (local processes or Dask).

- :func:`load_cluster` - every rank's small tables in one :class:`~msprof_py.cluster.combine.ClusterData`
  (``ranks``, ``steps``, ``ops``, ``links``, ``sizes`` with ``rank_id`` / ``host`` columns, and
  the communicators); the per-rank work runs where :func:`msprof_py.cluster.parallel.map_ranks` puts it
- :func:`msprof_py.cluster.analyze.analyze_cluster` - ``msprof-py cluster``: outputs, findings, summary
- :mod:`.rank` (per-rank reduction), :mod:`.combine`, :mod:`.findings`, :mod:`.outputs`
  (msprof-analyze's files), :mod:`.timeline` (merged, clock-aligned trace), :mod:`.report`
"""
from __future__ import annotations

import os

__all__ = ["load_cluster"]


def load_cluster(path: str | os.PathLike[str], *, workers: int | None = None, scheduler: str | None = None):
    """Every rank under ``path`` reduced to its small tables (in parallel), combined.

    Returns a :class:`~msprof_py.cluster.combine.ClusterData`: ``steps`` (per rank and iteration:
    computing, communication not overlapped, overlapped, free, bubble in ns), ``ops`` (per rank and
    communication op execution: elapse, transit, wait, synchronisation), ``links`` (bytes and time per
    rank pair), ``groups`` (communicator -> ranks).  Ranks that cannot be read are in ``warnings``.
    """
    from msprof_py.cluster.combine import combine
    from msprof_py.cluster.parallel import find_rank_dirs, map_ranks, scheduler_address

    return combine(map_ranks(find_rank_dirs(path), workers, scheduler_address(scheduler)))
