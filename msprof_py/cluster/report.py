"""The terminal summary of a cluster analysis: findings first, then step time per rank and the
communicators.  Times are ms per iteration (the mean over the analysed iterations)."""
from __future__ import annotations

import pandas as pd

from msprof_py.cluster.combine import ClusterData
from msprof_py.cluster.findings import Finding

MAX_RANK_ROWS = 16  # more ranks: the slowest ones only


def rank_breakdown(data: ClusterData) -> pd.DataFrame:
    """ms per iteration per rank: computing, comm not overlapped, overlapped, free, bubble, step."""
    s = data.steps
    if s.empty:
        return pd.DataFrame()
    g = s.groupby(["rank_id", "host"])
    out = pd.DataFrame({
        "computing": g["computing_ns"].mean(), "comm_not_overlapped": g["comm_not_overlapped_ns"].mean(),
        "overlapped": g["overlapped_ns"].mean(), "free": g["free_ns"].mean(), "bubble": g["bubble_ns"].mean(),
        "step": (s["end_ns"] - s["start_ns"]).groupby([s["rank_id"], s["host"]]).mean(),
    }) / 1e6
    return out.reset_index()


def summary(data: ClusterData, findings: list[Finding], written: list, steps_used: int) -> str:
    lines = [f"cluster: {len(data.ranks)} ranks on {data.ranks['host'].nunique()} hosts, "
             f"{steps_used} iterations analysed"]
    lines.append("")
    if findings:
        lines.append("findings (most severe first):")
        for i, f in enumerate(findings, 1):
            lines.append(f"  {i}. {f.subject}: {f.evidence}")
    else:
        lines.append("findings: none (no slow rank, slow link or straggler host)")
    bd = rank_breakdown(data)
    if not bd.empty:
        lines.append("")
        shown = bd.sort_values(["computing", "rank_id"], ascending=[False, True]) if len(bd) > MAX_RANK_ROWS else bd
        head = "step time per rank, ms per iteration" + (
            f" (the {MAX_RANK_ROWS} ranks with the most compute of {len(bd)})" if len(bd) > MAX_RANK_ROWS else "")
        lines.append(head + ":")
        lines.append(f"  {'rank':>5} {'host':<10} {'computing':>10} {'comm(not ov)':>12} {'overlapped':>10} "
                     f"{'free':>8} {'bubble':>8} {'step':>9}")
        for r in shown.head(MAX_RANK_ROWS).itertuples(index=False):
            lines.append(f"  {r.rank_id:>5} {str(r.host)[:10]:<10} {r.computing:>10.3f} {r.comm_not_overlapped:>12.3f} "
                         f"{r.overlapped:>10.3f} {r.free:>8.3f} {r.bubble:>8.3f} {r.step:>9.3f}")
    if data.groups:
        lines.append("")
        lines.append("communication groups:")
        ops = data.ops
        for name, members in sorted(data.groups.items(), key=lambda kv: (len(kv[1]), kv[0])):
            o = ops[ops["group_name"] == name]
            per_step = len(o) / max(1, o["step"].nunique() * len(members))
            alg = ",".join(sorted(set(o["alg_type"].astype(str))))
            lines.append(f"  {name}: ranks {_ranks(members)} ({alg}), {per_step:.0f} ops per iteration, "
                         f"mean {o['elapse_ns'].mean() / 1e6:.3f} ms, wait {o['wait_ns'].sum() / max(1, o['elapse_ns'].sum()):.0%}")
    if written:
        lines.append("")
        lines.append(f"written: {written[0].parent}")
    return "\n".join(lines)


def _ranks(members: tuple[int, ...]) -> str:
    if len(members) > 2 and list(members) == list(range(members[0], members[-1] + 1)):
        return f"{members[0]}-{members[-1]}"
    return ",".join(str(m) for m in members)
