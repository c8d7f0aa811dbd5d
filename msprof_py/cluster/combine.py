"""The coordinator's side: every rank's small tables in one place, ranks inside communicators
mapped to global ranks.

:class:`ClusterData` holds the concatenated per-rank tables (``steps``, ``ops``, ``links``,
``sizes``; each with ``rank_id`` and ``host`` columns) and ``groups``: communicator name -> its
sorted global ranks.  A communicator's members are the ranks that ran its ops; its rank ``k``
(hccl_info's local/remote rank) is the ``k``-th of them, as msprof-analyze maps them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from msprof_py.cluster.rank import RankTables
from msprof_py.errors import DataError


@dataclass
class ClusterData:
    ranks: pd.DataFrame  # rank_id, host, device_id, pid, prof (one row per rank, sorted by rank)
    steps: pd.DataFrame
    ops: pd.DataFrame
    links: pd.DataFrame  # + src_rank, dst_rank (global)
    sizes: pd.DataFrame
    groups: dict[str, tuple[int, ...]]
    warnings: list[str] = field(default_factory=list)

    def select_steps(self, first: int | None, last: int | None) -> "ClusterData":
        """Only iterations ``first..last`` (inclusive; None = open end)."""
        def keep(df: pd.DataFrame) -> pd.DataFrame:
            if df.empty:
                return df
            m = np.ones(len(df), bool)
            if first is not None:
                m &= df["step"].to_numpy() >= first
            if last is not None:
                m &= df["step"].to_numpy() <= last
            return df[m].reset_index(drop=True)

        return ClusterData(self.ranks, keep(self.steps), keep(self.ops), keep(self.links), keep(self.sizes),
                           self.groups, list(self.warnings))


def combine(results: list[RankTables]) -> ClusterData:
    """Concatenate the ranks' tables; ranks that failed become warnings (an error if none is left)."""
    warnings: list[str] = []
    good: list[RankTables] = []
    for r in results:
        warnings.extend(r.warnings)
        if r.error:
            warnings.append(f"rank skipped: {r.error}")
        else:
            good.append(r)
    if not good:
        raise DataError("no rank could be read: " + "; ".join(r.error or "" for r in results[:3]))
    _assign_missing_rank_ids(good, warnings)
    seen: dict[int, str] = {}
    unique: list[RankTables] = []
    for r in good:
        if r.rank_id in seen:
            warnings.append(f"rank {r.rank_id} appears twice ({seen[r.rank_id]} and {r.prof}); the second is skipped")
            continue
        seen[r.rank_id] = r.prof
        unique.append(r)
    unique.sort(key=lambda r: r.rank_id)
    ranks = pd.DataFrame({"rank_id": [r.rank_id for r in unique], "host": [r.host for r in unique],
                          "device_id": [r.device_id for r in unique], "pid": [r.pid for r in unique],
                          "prof": [r.prof for r in unique]})

    def cat(name: str) -> pd.DataFrame:
        parts = []
        for r in unique:
            df = getattr(r, name)
            if df.empty:
                continue
            df = df.copy()
            df.insert(0, "host", r.host)
            df.insert(0, "rank_id", r.rank_id)
            parts.append(df)
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()

    ops = cat("ops")
    groups = {}
    if not ops.empty:
        for g, members in ops.groupby("group_name")["rank_id"]:
            groups[str(g)] = tuple(sorted(set(int(x) for x in members)))
        sizes = ops.groupby("group_name")["rank_size"].max()
        for g, n in sizes.items():
            if len(groups[str(g)]) != int(n):
                warnings.append(f"communicator {g}: {len(groups[str(g)])} of its {int(n)} ranks have data; "
                                "links inside it cannot all be mapped to global ranks")
    links = cat("links")
    if not links.empty:
        links["src_rank"] = _to_global(links, "src", groups)
        links["dst_rank"] = _to_global(links, "dst", groups)
        bad = (links["src_rank"] < 0) | (links["dst_rank"] < 0)
        if bad.any():
            warnings.append(f"{int(bad.sum())} link rows name a rank outside their communicator; left out")
            links = links[~bad].reset_index(drop=True)
    return ClusterData(ranks, cat("steps"), ops, links, cat("sizes"), groups, warnings)


def _assign_missing_rank_ids(good: list[RankTables], warnings: list[str]) -> None:
    """PROF dirs without a rank id (info.json rank_id -1) get one by (host, device), msprof-analyze's fallback."""
    missing = [r for r in good if r.rank_id < 0]
    if not missing:
        return
    used = {r.rank_id for r in good if r.rank_id >= 0}
    nxt = 0
    for r in sorted(missing, key=lambda r: (r.host, r.device_id, r.prof)):
        while nxt in used:
            nxt += 1
        r.rank_id = nxt
        used.add(nxt)
    warnings.append(f"{len(missing)} PROF dirs have no rank id in info.json; numbered by host and device")


def _to_global(links: pd.DataFrame, col: str, groups: dict[str, tuple[int, ...]]) -> np.ndarray:
    out = np.full(len(links), -1, np.int64)
    g = links["group_name"].to_numpy()
    local = links[col].to_numpy(np.int64)
    for name, members in groups.items():
        m = g == name
        arr = np.array(members, np.int64)
        ok = m & (local >= 0) & (local < len(arr))
        out[ok] = arr[local[ok]]
    return out
