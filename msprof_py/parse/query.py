"""msprof's ``--query`` table (msprof-format.md §4.3) from parsed sessions.

One row per (result dir x model): Job Info, Device ID, Dir Name, Collection Time, Model ID,
Iteration Number (max index id), Top Time Iteration (index ids whose step time ranks <= 5,
longest first, ties share a rank), Rank ID.  Models are those with GE op tasks on that device
that also have iterations (without any GE op data: models whose iterations ran device tasks).  Dirs without iterations show N/A.  Rows sorted by (Job Info,
Collection Time); each column left-justified to its widest cell and followed by a tab, each
line followed by a blank line (msprof prints with ``print(..., end="\\t")`` then ``print("\\n")``).
"""
from __future__ import annotations

import os

import pandas as pd

from msprof_py.raw.common import INVALID_U32

HEADERS = ["Job Info", "Device ID", "Dir Name", "Collection Time", "Model ID", "Iteration Number",
           "Top Time Iteration", "Rank ID"]
TOP_N = 5


def query_rows(session) -> list[list[str]]:
    """Rows for every PROF dir of ``session`` (unsorted, as msprof collects them)."""
    rows: list[list[str]] = []
    for prof in (session.profs or [session]):
        dev = prof.devices
        for rec in dev.itertuples(index=False):
            is_host = rec.dir_name == "host"
            base = [rec.job_info, "" if is_host else str(rec.device_id), rec.dir_name, rec.collection_date_begin]
            models = [] if is_host else _models(prof, int(rec.device_id))
            if not models:
                rows.append(base + ["N/A", "N/A", "N/A", str(rec.rank_id)])
            for model_id, n_iter, top in models:
                rows.append(base + [str(model_id), str(n_iter), top, str(rec.rank_id)])
    return rows


def _models(prof, device_id: int) -> list[tuple[int, int, str]]:
    steps = prof.steps[prof.steps["device_id"] == device_id]
    t = prof.tasks
    mine = t[t["device_id"] == device_id]
    ge = set(mine.loc[mine["op_type"] != "N/A", "model_id"].unique().tolist())
    if not ge:  # no GE op data (msprof then keeps models whose iterations ran device tasks)
        ran = set(mine.loc[mine["iter_id"] > 0, "iter_id"].unique().tolist())
        ge = set(steps.loc[steps["iter_id"].isin(ran), "model_id"].unique().tolist())
    out = []
    for model_id, grp in steps.groupby("model_id", sort=True):
        if model_id not in ge or model_id == INVALID_U32:
            continue
        dur = (grp["step_end_ns"] - grp["step_start_ns"]).to_numpy()
        rank = pd.Series(dur).rank(method="min", ascending=False).to_numpy()
        g = grp.assign(_rank=rank).sort_values(["_rank", "index_id"], kind="stable")
        top = g[g["_rank"] <= TOP_N]["index_id"].astype(str)
        out.append((int(model_id), int(grp["index_id"].max()), ",".join(top) if len(top) else "N/A"))
    return out


def format_table(rows: list[list[str]]) -> str:
    """msprof's layout: header + rows sorted by (Job Info, Collection Time), ljust + tab."""
    rows = sorted(rows, key=lambda r: (r[0], r[3]))
    widths = [max([len(h)] + [len(str(r[i])) for r in rows]) for i, h in enumerate(HEADERS)]
    lines = []
    for r in [HEADERS] + rows:
        lines.append("".join(str(c).ljust(w) + "\t" for c, w in zip(r, widths)) + "\n\n")
    return "".join(lines)


def query(path: str | os.PathLike[str]):
    """(table text, warnings) for the PROF dir(s) at ``path``."""
    from msprof_py.parse.session import load

    s = load(path)
    return format_table(query_rows(s)), s.warnings
