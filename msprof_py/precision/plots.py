"""The seed's three analysis plots per failing node (``--show_graph``), drawn with matplotlib's
non-interactive Agg backend:

- ``{op}_diff.png``: absolute and relative error of the error elements, against their index;
- ``{op}_diff_hist.png``: histograms of the absolute and relative error of all elements;
- ``{op}_hist.png``: histograms of the CPU and NPU data on one shared bin range.

Bin count: ``sqrt(N)`` clamped to ``[min_bins, max_bins]``.

matplotlib is an optional extra (``pip install 'msprof_py[plots]'``): only these plots use it,
and it is most of an install's size.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from msprof_py import atomic
from msprof_py.errors import InvalidParamError
from msprof_py.precision.metrics import REL_EPS, TensorCompare, sanitize


MISSING = ("--show_graph needs matplotlib, which is not installed: pip install 'msprof_py[plots]' "
           "(or pip install matplotlib)")


def require_matplotlib() -> None:
    """Raise a one-line InvalidParamError when matplotlib cannot be imported."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise InvalidParamError(MISSING)


def _bins(n: int, lo: int, hi: int) -> int:
    return int(min(hi, max(lo, round(math.sqrt(max(n, 1))))))


def _save(fig, path: Path) -> Path:
    with atomic.temp_path(path) as tmp:
        fig.savefig(tmp, dpi=100, format="png")
    return path


def plot_node(out_dir: Path, stem: str, npu: np.ndarray, ref: np.ndarray, cmp: TensorCompare, opts) -> list[Path]:
    """Write the three PNGs for one node; returns their paths."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    n, _, _ = sanitize(npu)
    r, _, _ = sanitize(ref)
    ad = np.abs(n - r)
    ar = np.abs(r)
    nz = ar > REL_EPS
    rel = ad[nz] / ar[nz]
    paths = []

    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    ei = cmp.err_index
    a1.scatter(ei, np.abs(cmp.err_npu - cmp.err_ref), s=6, c="tab:red")
    a1.set_ylabel("abs error")
    a1.set_title(f"{stem}: {cmp.errors}/{cmp.total} errors (first {ei.size} shown)")
    with np.errstate(divide="ignore", invalid="ignore"):
        er = np.abs(cmp.err_npu - cmp.err_ref) / np.where(np.abs(cmp.err_ref) > REL_EPS, np.abs(cmp.err_ref), np.nan)
    a2.scatter(ei, er, s=6, c="tab:blue")
    a2.set_ylabel("relative error")
    a2.set_xlabel("element index")
    fig.subplots_adjust(left=0.12, right=0.97, top=0.93, bottom=0.1, hspace=0.15)
    paths.append(_save(fig, out_dir / f"{stem}_diff.png"))
    plt.close(fig)

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    b = _bins(ad.size, opts.min_bins, opts.max_bins)
    a1.hist(ad, bins=b, color="tab:red")
    a1.set_title("absolute error")
    a1.set_yscale("log")
    a2.hist(rel if rel.size else np.zeros(1), bins=b, color="tab:blue")
    a2.set_title("relative error (|ref| > 1e-7)")
    a2.set_yscale("log")
    fig.suptitle(stem)
    fig.subplots_adjust(left=0.08, right=0.97, top=0.85, bottom=0.12, wspace=0.25)
    paths.append(_save(fig, out_dir / f"{stem}_diff_hist.png"))
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 4))
    lo, hi = float(min(n.min(), r.min())), float(max(n.max(), r.max()))
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.linspace(lo, hi, _bins(r.size, opts.min_bins, opts.max_bins) + 1)
    ax.hist(r, bins=edges, alpha=0.6, label="CPU (reference)", color="tab:green")
    ax.hist(n, bins=edges, alpha=0.6, label="NPU", color="tab:orange")
    ax.legend()
    ax.set_title(f"{stem}: data distribution")
    fig.subplots_adjust(left=0.1, right=0.97, top=0.9, bottom=0.12)
    paths.append(_save(fig, out_dir / f"{stem}_hist.png"))
    plt.close(fig)
    return paths
