"""Slow ranks, slow links and straggler hosts, each with its evidence.

- **Slow rank**: a rank whose compute (sum of its compute tasks' durations per iteration) is more
  than :data:`SLOW_RANK_RATIO` times the median rank's of its pipeline stage (stages run
  different layers; without pipeline parallelism all ranks are one stage).  Evidence: the ratio, and the time the
  other members of its communicators spend waiting (Notify_Wait) against ranks outside them.
- **Slow link**: a rank pair whose transfers (transit tasks: size / duration, both directions)
  reach less than :data:`SLOW_LINK_RATIO` of the median pair of the same kind (RDMA, HCCS, ...);
  with fewer than three pairs of a kind, of the kind's nominal bandwidth (:data:`NOMINAL_GBPS`).
- **Straggler host**: a host whose ranks are idle (Free: no compute and no communication, e.g.
  host work between iterations) more than :data:`STRAGGLER_RATIO` times the median host's.

Figures are ratios, so a finding can be checked against what was injected or measured elsewhere.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from msprof_py.cluster.combine import ClusterData
from msprof_py.cluster.outputs import stage_groups

SLOW_RANK_RATIO = 1.10
SLOW_LINK_RATIO = 0.80
STRAGGLER_RATIO = 1.50
STRAGGLER_MIN_SHARE = 0.05  # and the extra idle time is at least 5% of the step
# nominal bandwidth (GB/s) of an Atlas A2 (910B) node: 56 GB/s per HCCS link, one 200 Gbit/s RoCE port per NPU
NOMINAL_GBPS = {"HCCS": 56.0, "RDMA": 25.0, "PCIE": 25.0, "SIO": 224.0, "SDMA": 56.0}


@dataclass(frozen=True)
class Finding:
    kind: str  # "slow_rank" | "slow_link" | "straggler_host"
    subject: str  # "rank 5", "link 3-11", "host node001"
    figure: float  # the ratio the finding rests on (compute x, bandwidth x, idle x)
    evidence: str  # one line with the numbers

    @property
    def severity(self) -> float:
        """How far from normal (for ordering): a 0.5x link and a 2.0x rank weigh the same."""
        return abs(float(np.log(self.figure))) if self.figure > 0 else float("inf")


def find_all(data: ClusterData) -> list[Finding]:
    out = slow_ranks(data) + slow_links(data) + straggler_hosts(data)
    return sorted(out, key=lambda f: (-f.severity, f.kind, f.subject))


def slow_ranks(data: ClusterData) -> list[Finding]:
    s = data.steps
    if s.empty or s["rank_id"].nunique() < 2:
        return []
    per_rank = s.groupby("rank_id")["compute_busy_ns"].mean()
    stage = {r: i for i, members in enumerate(stage_groups(data)) for r in members}
    medians = per_rank.groupby(per_rank.index.map(lambda r: stage.get(int(r), -1))).transform("median")
    out = []
    for rank, v in per_rank.items():
        med = float(medians[rank])
        ratio = float(v) / med if med > 0 else 1.0
        if ratio <= SLOW_RANK_RATIO:
            continue
        out.append(Finding("slow_rank", f"rank {int(rank)}", ratio,
                           f"compute {v / 1e6:.3f} ms per iteration = {ratio:.2f}x the median rank"
                           f"{' of its pipeline stage' if len(set(stage.values())) > 1 else ''} "
                           f"({med / 1e6:.3f} ms){_wait_evidence(data, int(rank))}"))
    return out


def _wait_evidence(data: ClusterData, rank: int) -> str:
    """How long the rank's peers wait for it: per iteration, the notify waits of the other members
    of its largest communicator, against the members of the other communicators of that size."""
    ops = data.ops
    mine = [(len(m), g) for g, m in data.groups.items() if rank in m and len(m) > 2]
    if ops.empty or not mine:
        return ""
    size, group = max(mine)
    steps = max(1, int(ops["step"].nunique()))
    o = ops[ops["rank_size"] == size]
    peers = o[(o["group_name"] == group) & (o["rank_id"] != rank)]
    others = o[o["group_name"] != group]
    wp = peers["wait_ns"].sum() / steps / max(1, peers["rank_id"].nunique())
    txt = f"; in {group} its {peers['rank_id'].nunique()} peers wait {wp / 1e6:.3f} ms per iteration for it"
    if not others.empty:
        wo = others["wait_ns"].sum() / steps / max(1, others["rank_id"].nunique())
        txt += f" vs {wo / 1e6:.3f} ms in the other groups of {size}"
    return txt


def link_table(data: ClusterData) -> pd.DataFrame:
    """One row per undirected rank pair and bandwidth kind: size, time, GB/s, reference, ratio."""
    links = data.links
    if links.empty:
        return pd.DataFrame(columns=["a", "b", "key", "size_bytes", "time_ns", "gbps", "reference_gbps", "ratio"])
    l = links[(links["src_rank"] >= 0) & (links["dst_rank"] >= 0)]
    a = np.minimum(l["src_rank"].to_numpy(), l["dst_rank"].to_numpy())
    b = np.maximum(l["src_rank"].to_numpy(), l["dst_rank"].to_numpy())
    t = (pd.DataFrame({"a": a, "b": b, "key": l["key"].to_numpy(), "size_bytes": l["size_bytes"].to_numpy(),
                       "time_ns": l["time_ns"].to_numpy()})
         .groupby(["key", "a", "b"], sort=True)[["size_bytes", "time_ns"]].sum().reset_index())
    t["gbps"] = t["size_bytes"] / t["time_ns"].clip(lower=1)  # bytes per ns = GB/s
    ref = t.groupby("key")["gbps"].transform("median")
    count = t.groupby("key")["gbps"].transform("size")
    nominal = t["key"].map(NOMINAL_GBPS).astype(float)
    t["reference_gbps"] = np.where(count >= 3, ref, nominal.fillna(ref))
    t["nominal_gbps"] = nominal
    t["ratio"] = t["gbps"] / t["reference_gbps"]
    return t


def slow_links(data: ClusterData) -> list[Finding]:
    t = link_table(data)
    out = []
    for rec in t[t["ratio"] < SLOW_LINK_RATIO].itertuples(index=False):
        nominal = f", nominal {rec.nominal_gbps:g} GB/s" if np.isfinite(rec.nominal_gbps) else ""
        out.append(Finding("slow_link", f"link {rec.a}-{rec.b}", float(rec.ratio),
                           f"{rec.key}: {rec.gbps:.2f} GB/s over {rec.size_bytes / 2**20:.1f} MB = {rec.ratio:.2f}x "
                           f"the median {rec.key} link ({rec.reference_gbps:.2f} GB/s{nominal})"))
    return out


def straggler_hosts(data: ClusterData) -> list[Finding]:
    s = data.steps
    if s.empty or s["host"].nunique() < 2:
        return []
    step_len = float((s["end_ns"] - s["start_ns"]).mean())
    per_host = s.groupby("host")["free_ns"].mean()
    med = float(per_host.median())
    out = []
    for host, v in per_host.items():
        if med <= 0 or float(v) <= STRAGGLER_RATIO * med or float(v) - med < STRAGGLER_MIN_SHARE * step_len:
            continue
        ratio = float(v) / med
        out.append(Finding("straggler_host", f"host {host}", ratio,
                           f"its ranks are idle {v / 1e6:.3f} ms per iteration = {ratio:.2f}x the median host "
                           f"({med / 1e6:.3f} ms): host-side work between iterations holds every collective back"))
    return out
