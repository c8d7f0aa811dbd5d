"""Inline SVG charts for the html reports (no JavaScript, no external files, no matplotlib)."""
from __future__ import annotations

from html import escape

W, ROW, LABEL_W = 760, 22, 300
PAGE_CSS = ("body{font-family:sans-serif;margin:24px;max-width:1000px;color:#222}"
            "h2{margin-top:32px;border-bottom:1px solid #ccc}table{border-collapse:collapse;font-size:13px}"
            "td,th{border:1px solid #ccc;padding:3px 6px;text-align:left}td.n{text-align:right}"
            ".meta{color:#555;font-size:13px}pre{background:#f6f6f6;padding:8px;overflow:auto;font-size:12px}")


def _label(s: str, n: int = 44) -> str:
    return escape(s if len(s) <= n else "…" + s[-(n - 1):])


def bars(title: str, labels: list[str], values: list[float], unit: str = "us") -> str:
    """Horizontal bar chart, one row per label."""
    vmax = max([abs(v) for v in values] + [1e-9])
    h = ROW * len(values) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" role="img">',
           f'<title>{escape(title)}</title>',
           f'<text x="0" y="14" font-size="13" font-weight="bold">{escape(title)}</text>']
    span = W - LABEL_W - 90
    for i, (lab, v) in enumerate(zip(labels, values)):
        y = 24 + i * ROW
        w = max(1.0, span * abs(v) / vmax)
        out.append(f'<text x="{LABEL_W - 6}" y="{y + 14}" font-size="12" text-anchor="end">{_label(lab)}</text>')
        out.append(f'<rect x="{LABEL_W}" y="{y + 3}" width="{w:.1f}" height="{ROW - 6}" '
                   f'fill="{"#c0504d" if v < 0 else "#4f81bd"}"/>')
        out.append(f'<text x="{LABEL_W + w + 4:.1f}" y="{y + 14}" font-size="11">{v:,.3f} {escape(unit)}</text>')
    out.append("</svg>")
    return "".join(out)


def waterfall(title: str, base_label: str, base: float, steps: list[tuple[str, float]], new_label: str,
              unit: str = "us") -> str:
    """Waterfall: the base total, one bar per change (up red, down green), the new total."""
    rows: list[tuple[str, float, float, str]] = [(base_label, 0.0, base, "#7f7f7f")]
    acc = base
    for lab, d in steps:
        rows.append((lab, acc, acc + d, "#c0504d" if d > 0 else "#9bbb59"))
        acc += d
    rows.append((new_label, 0.0, acc, "#7f7f7f"))
    vmax = max([max(a, b) for _, a, b, _ in rows] + [1e-9])
    vmin = min([min(a, b) for _, a, b, _ in rows] + [0.0])
    span = W - LABEL_W - 110
    x = lambda v: LABEL_W + span * (v - vmin) / (vmax - vmin)  # noqa: E731
    h = ROW * len(rows) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" role="img">',
           f'<title>{escape(title)}</title>',
           f'<text x="0" y="14" font-size="13" font-weight="bold">{escape(title)}</text>']
    for i, (lab, a, b, col) in enumerate(rows):
        y = 24 + i * ROW
        x0, x1 = sorted((x(a), x(b)))
        val = b - a if 0 < i < len(rows) - 1 else b
        out.append(f'<text x="{LABEL_W - 6}" y="{y + 14}" font-size="12" text-anchor="end">{_label(lab)}</text>')
        out.append(f'<rect x="{x0:.1f}" y="{y + 3}" width="{max(1.0, x1 - x0):.1f}" height="{ROW - 6}" fill="{col}"/>')
        sign = "+" if 0 < i < len(rows) - 1 and val > 0 else ""
        out.append(f'<text x="{max(x0, x1) + 4:.1f}" y="{y + 14}" font-size="11">{sign}{val:,.3f} {escape(unit)}</text>')
    out.append("</svg>")
    return "".join(out)


def page(title: str, body: str) -> str:
    """One self-contained html page."""
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{PAGE_CSS}</style></head><body><h1>{escape(title)}</h1>{body}</body></html>\n")
