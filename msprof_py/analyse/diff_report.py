"""Writing a :class:`~msprof_py.analyse.diff.DiffResult`: CSVs, a terminal table and an html page
with a waterfall of the per-iteration change (base iteration -> one bar per op -> new)."""
from __future__ import annotations

from html import escape
from pathlib import Path

import pandas as pd

from msprof_py.analyse import svg
from msprof_py.analyse.diff import DiffResult, diff
from msprof_py.atomic import write_text
from msprof_py.errors import InvalidPathError

TABLES = ("ops", "op_types", "iterations", "phases")
WATERFALL_BARS = 15


def _write(path: Path, data: str) -> Path:
    return write_text(path, data, error="cannot write")


def terminal(r: DiffResult, top: int = 15) -> str:
    d = r.new_iteration_us - r.base_iteration_us
    lines = [f"iteration time: {r.base_iteration_us:,.3f} us -> {r.new_iteration_us:,.3f} us "
             f"({d:+,.3f} us, {100 * d / r.base_iteration_us if r.base_iteration_us else 0:+.1f}%)", ""]
    cols = ["status", "name", "base_count", "new_count", "base_mean_us", "new_mean_us", "delta_per_iter_us", "share"]
    for title, df in (("by op (change per iteration)", r.ops), ("by op type", r.op_types)):
        show = df[cols].head(top)
        if OTHER_ROW(df) is not None and OTHER_ROW(df).name not in show.index:
            show = pd.concat([show, df.loc[[OTHER_ROW(df).name], cols]])
        lines += [title, show.to_string(index=False, float_format=lambda x: f"{x:,.3f}"), ""]
    lines += ["by step-trace phase (mean per iteration)", r.phases.to_string(index=False, float_format=lambda x: f"{x:,.3f}")]
    return "\n".join(lines) + "\n"


def OTHER_ROW(df: pd.DataFrame) -> pd.Series | None:  # noqa: N802
    rows = df[df["status"] == "other"]
    return rows.iloc[0] if len(rows) else None


def html(r: DiffResult, base: str, new: str) -> str:
    ops = r.ops[r.ops["status"] != "other"]
    big = ops.head(WATERFALL_BARS)
    rest = float(r.ops["delta_per_iter_us"].sum() - big["delta_per_iter_us"].sum())
    steps = [(str(n), float(v)) for n, v in zip(big["name"], big["delta_per_iter_us"])]
    steps.append(("other ops, idle, overlap", rest))
    body = [f'<p class="meta">base: {escape(base)}<br>new: {escape(new)}</p>',
            svg.waterfall("Where the iteration time went (us per iteration)", "base iteration", r.base_iteration_us,
                          steps, "new iteration")]
    for name, df in (("By op", r.ops), ("By op type", r.op_types), ("By iteration", r.iterations),
                     ("By step-trace phase", r.phases)):
        body.append(f"<h2>{name}</h2>" + df.to_html(index=False, float_format=lambda x: f"{x:,.3f}", na_rep="",
                                                     border=0))
    return svg.page("msprof-py diff", "".join(body))


def diff_paths(base: str | Path, new: str | Path, out_dir: str | Path, fmt: str = "text",
               device: int | None = None) -> tuple[DiffResult, str, list[Path]]:
    """Diff two runs, write ``diff_{table}.csv`` (and ``diff.html``) into ``out_dir``; returns the
    result, the terminal text and the files written."""
    r = diff(base, new, device)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InvalidPathError(f'Cannot create "{out}" ({err.strerror or err}).') from None
    files = [_write(out / f"diff_{t}.csv", getattr(r, t).to_csv(index=False, float_format="%.3f")) for t in TABLES]
    if fmt == "html":
        files.append(_write(out / "diff.html", html(r, str(base), str(new))))
    return r, terminal(r), files
