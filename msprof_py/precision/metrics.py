"""Per-tensor comparison metrics: one NPU tensor against its CPU reference.

Everything is vectorised numpy on the flattened tensors, cast to float64.  Definitions (the seed
document's cpu_vs_npu.csv columns; choices the seed leaves open are stated here once):

- Before comparing, NaN becomes 0 and +-Inf becomes the largest finite value of the tensor's own
  dtype (the seed: "nan is turned into 0, inf into the maximum before the comparison").  The
  ``nan/inf`` column reports whether the *NPU* tensor held any (with counts).
- ``d = npu - ref``.  An element is an *error* when ``|d| > atol`` AND ``|d| > rtol * |ref|``
  (both thresholds exceeded; with ``ref == 0`` the element is judged by ``atol`` alone).
- relative error ``|d| / |ref|``: reported over elements with ``|ref| > REL_EPS`` only, so a zero
  reference never produces a 1e16 outlier; the count of excluded elements is kept.
- ``max_abs_err`` / ``mean_abs_err``: over the *error* elements (0 when there are none);
  ``max_abs_total`` / ``mean_abs_total``: max / mean relative error over all elements (the
  seed's names; it describes them as the node's max / mean relative error).
- ``mean`` / ``std`` / ``rms``: of the reference data.  ``std`` is the standard deviation (the
  column's name; the seed's prose says "variance").
- For locating where error starts (not seed columns): the mean relative error
  ``mean(|d| / max(|ref|, atol))`` (the floor keeps elements near zero, which atol judges,
  from dominating), the Pearson correlation, and the relative L2 error ``||d|| / ||ref||``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

REL_EPS = 1e-7  # |ref| at or below this is "zero" for relative-error statistics
CSV_COLUMNS = ("op_name", "nan/inf", "errors/total", "1st_diff_offset/offset_dim/data_shape",
               "ref_value", "npu_value", "max_abs_err", "mean_abs_err", "max_abs_total",
               "mean_abs_total", "mean", "std", "rms")
DETAIL_COLUMNS = ("index", "std_value", "npu_value", "abs_diff", "relative_diff")


@dataclass(frozen=True)
class TensorCompare:
    """The comparison of one node's output.  Error arrays hold at most ``diff_cnt`` elements."""

    shape: tuple[int, ...]
    total: int
    errors: int
    npu_nan: int
    npu_inf: int
    ref_nan: int
    ref_inf: int
    first_index: int  # flat index of the first error element, -1 if none
    ref_value: float  # at first_index, or the first element when there is no error
    npu_value: float
    max_abs_err: float
    mean_abs_err: float
    max_rel_total: float
    mean_rel_total: float
    rel_excluded: int  # elements with |ref| <= REL_EPS, left out of the relative statistics
    ref_mean: float
    ref_std: float
    ref_rms: float
    mre: float  # mean of |d| / max(|ref|, atol): the mean relative error used to locate errors
    pearson: float  # nan when a side is constant
    rel_l2: float  # ||d|| / ||ref||; 0 when both are zero, inf when only ref is zero
    err_index: np.ndarray  # int64 flat indices of the first diff_cnt errors
    err_ref: np.ndarray
    err_npu: np.ndarray

    @property
    def passed(self) -> bool:
        return self.errors == 0

    def csv_row(self, op_label: str) -> dict[str, str]:
        """One cpu_vs_npu.csv row (strings, the seed's columns)."""
        if self.npu_nan or self.npu_inf:
            naninf = f"True(nan:{self.npu_nan},inf:{self.npu_inf})"
        else:
            naninf = "False"
        shape = "(" + ",".join(str(s) for s in self.shape) + ")"
        if self.first_index >= 0:
            dim = np.unravel_index(self.first_index, self.shape) if self.shape else ()
            offset = f"{self.first_index}/(" + ",".join(str(int(i)) for i in dim) + f")/{shape}"
        else:
            offset = f"-/-/{shape}"
        return {
            "op_name": op_label,
            "nan/inf": naninf,
            "errors/total": f"{self.errors}/{self.total}",
            "1st_diff_offset/offset_dim/data_shape": offset,
            "ref_value": _f6(self.ref_value),
            "npu_value": _f6(self.npu_value),
            "max_abs_err": _g(self.max_abs_err),
            "mean_abs_err": _g(self.mean_abs_err),
            "max_abs_total": _g(self.max_rel_total),
            "mean_abs_total": _g(self.mean_rel_total),
            "mean": _g(self.ref_mean),
            "std": _g(self.ref_std),
            "rms": _g(self.ref_rms),
        }


def _f6(x: float) -> str:
    return f"{x:.6f}"


def _g(x: float) -> str:
    return f"{x:.6g}"


def sanitize(a: np.ndarray) -> tuple[np.ndarray, int, int]:
    """float64 copy with NaN -> 0 and +-Inf -> +-max finite of ``a``'s dtype; (data, n_nan, n_inf)."""
    a = np.asarray(a)
    if a.dtype.kind in "biu":
        return a.astype(np.float64).ravel(), 0, 0
    finfo = np.finfo(a.dtype if a.dtype.kind == "f" else np.float64)
    flat = a.ravel()
    out = flat.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        finite = bool(np.isfinite(out.sum()))
    if finite:  # one pass in the common case: nothing to count or replace
        return out, 0, 0
    n_nan = int(np.count_nonzero(np.isnan(flat)))
    n_inf = int(np.count_nonzero(np.isinf(flat)))
    if n_nan or n_inf:
        out = np.nan_to_num(out, nan=0.0, posinf=float(finfo.max), neginf=-float(finfo.max))
    return out, n_nan, n_inf


def compare_tensors(npu: np.ndarray, ref: np.ndarray, atol: float = 0.005, rtol: float = 0.2,
                    diff_cnt: int = 128) -> TensorCompare:
    """Compare ``npu`` with ``ref`` (same number of elements; the caller checks shapes).

    ``ref``'s shape is the reported data_shape.  Raises ValueError on a size mismatch or an
    empty tensor (the caller turns those into skip reasons).
    """
    if npu.size != ref.size:
        raise ValueError(f"size mismatch: npu {npu.size} vs ref {ref.size}")
    if ref.size == 0:
        raise ValueError("empty data, can not compare")
    n, npu_nan, npu_inf = sanitize(npu)
    r, ref_nan, ref_inf = sanitize(ref)
    d = n - r
    ad = np.abs(d)
    ar = np.abs(r)
    # error: both thresholds exceeded (ar == 0 -> rtol*ar == 0, so atol decides)
    err_mask = (ad > atol) & (ad > rtol * ar)
    err_idx = np.flatnonzero(err_mask)
    errors = int(err_idx.size)
    nz = ar > REL_EPS
    n_nz = int(np.count_nonzero(nz))
    rel = np.divide(ad, ar, out=np.zeros_like(ad), where=nz)  # 0 where |ref| is "zero" (excluded)
    first = int(err_idx[0]) if errors else -1
    pick = first if errors else 0
    keep = err_idx[:diff_cnt]
    ref_norm = float(np.sqrt(np.dot(r, r)))
    d_norm = float(np.sqrt(np.dot(d, d)))
    if ref_norm > 0:
        rel_l2 = d_norm / ref_norm
    else:
        rel_l2 = 0.0 if d_norm == 0 else float("inf")
    return TensorCompare(
        shape=tuple(int(s) for s in ref.shape),
        total=int(r.size),
        errors=errors,
        npu_nan=npu_nan, npu_inf=npu_inf, ref_nan=ref_nan, ref_inf=ref_inf,
        first_index=first,
        ref_value=float(r[pick]),
        npu_value=float(n[pick]),
        max_abs_err=float(ad[err_idx].max()) if errors else 0.0,
        mean_abs_err=float(ad[err_idx].mean()) if errors else 0.0,
        max_rel_total=float(rel.max()) if n_nz else 0.0,
        mean_rel_total=float(rel.sum() / n_nz) if n_nz else 0.0,
        rel_excluded=int(r.size - n_nz),
        ref_mean=float(r.mean()),
        ref_std=float(r.std()),
        ref_rms=float(np.sqrt(np.mean(r * r))),
        mre=float(np.mean(ad / np.maximum(ar, max(atol, REL_EPS)))),
        pearson=pearson(n, r),
        rel_l2=rel_l2,
        err_index=keep.astype(np.int64),
        err_ref=r[keep],
        err_npu=n[keep],
    )


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation of two flat float arrays; 1.0 if both are constant and equal, nan if
    exactly one side is constant (correlation undefined)."""
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.size < 2:
        return float("nan")
    da = a - a.mean()
    db = b - b.mean()
    sa = float(np.sqrt(np.dot(da, da)))  # centred first: no cancellation on large offsets
    sb = float(np.sqrt(np.dot(db, db)))
    if sa == 0 and sb == 0:
        return 1.0 if np.array_equal(a, b) else float("nan")
    if sa == 0 or sb == 0:
        return float("nan")
    return float(np.clip(np.dot(da, db) / (sa * sb), -1.0, 1.0))


def detail_rows(cmp: TensorCompare) -> dict[str, np.ndarray]:
    """Columns of the {op_name}.csv detail table (error elements, at most diff_cnt)."""
    ad = np.abs(cmp.err_npu - cmp.err_ref)
    ar = np.abs(cmp.err_ref)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(ar > 0, ad / np.where(ar > 0, ar, 1.0), np.inf)
    return {"index": cmp.err_index, "std_value": cmp.err_ref, "npu_value": cmp.err_npu,
            "abs_diff": ad, "relative_diff": rel}
