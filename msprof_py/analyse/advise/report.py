"""Readable forms of the findings: the terminal report, JSON, and one self-contained html page
(a bar chart per finding as inline SVG)."""
from __future__ import annotations

import json
from html import escape
from typing import Any

from msprof_py.analyse import svg
from msprof_py.analyse.advise.base import Finding


def _list(xs: list[Any], n: int = 8) -> str:
    s = ", ".join(map(str, xs[:n]))
    return s + (f", ... ({len(xs)} in all)" if len(xs) > n else "")


def text(found: list[Finding], where: str = "", notes: list[str] | None = None) -> str:
    """The terminal report: one block per finding, largest time at stake first."""
    head = f"Advice for {where}" if where else "Advice"
    lines = [head, "=" * len(head)]
    if not found:
        lines.append("No problem found by the advice rules.")
    for i, f in enumerate(found, 1):
        lines.append(f"{i}. [device {f.device_id}] {f.title}")
        lines.append(f"   time at stake: {f.time_at_stake_ns / 1000.0:,.1f} us  (rule {f.rule}; "
                     f"{f.evidence.get('estimate', '')})")
        if f.ops:
            lines.append(f"   ops: {_list(f.ops)}")
        if f.iterations:
            lines.append(f"   iterations: {_list(f.iterations, 12)}")
        if f.streams:
            lines.append(f"   streams: {_list(f.streams)}")
        lines.append(f"   suggestion: {f.suggestion}")
    for n in notes or []:
        lines.append(f"note: {n}")
    return "\n".join(lines) + "\n"


def to_json(found: list[Finding], notes: list[str] | None = None) -> str:
    from msprof_py.analyse.advise import finding_dict

    return json.dumps({"findings": [finding_dict(f) for f in found], "notes": notes or []}, indent=1,
                      default=str) + "\n"


def html(found: list[Finding], where: str = "", notes: list[str] | None = None) -> str:
    """One html page: a summary table, then per finding its text, evidence and plot."""
    rows = "".join(f'<tr><td>{i}</td><td>{f.device_id}</td><td><a href="#f{i}">{escape(f.title)}</a></td>'
                   f'<td class="n">{f.time_at_stake_ns / 1000.0:,.1f}</td></tr>' for i, f in enumerate(found, 1))
    body = [f'<p class="meta">{escape(where)}</p>',
            "<table><tr><th>#</th><th>device</th><th>finding</th><th>time at stake (us)</th></tr>"
            f"{rows}</table>" if found else "<p>No problem found by the advice rules.</p>"]
    for i, f in enumerate(found, 1):
        body.append(f'<h2 id="f{i}">{i}. {escape(f.title)}</h2>')
        body.append(f'<p class="meta">device {f.device_id} · rule {escape(f.rule)} · {escape(f.category)} · '
                    f"time at stake {f.time_at_stake_ns / 1000.0:,.1f} us</p>")
        body.append(f"<p><b>Suggestion:</b> {escape(f.suggestion)}</p>")
        for name, xs in (("ops", f.ops), ("iterations", f.iterations), ("streams", f.streams)):
            if xs:
                body.append(f"<p><b>{name}:</b> {escape(_list(xs, 30))}</p>")
        if f.plot is not None and f.plot.values:
            body.append(svg.bars(f.plot.title, f.plot.labels, f.plot.values, f.plot.unit))
        body.append(f"<pre>{escape(json.dumps(f.evidence, indent=1, default=str))}</pre>")
    for n in notes or []:
        body.append(f'<p class="meta">note: {escape(n)}</p>')
    return svg.page("msprof-py advice", "".join(body))
