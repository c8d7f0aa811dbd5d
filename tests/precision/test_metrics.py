"""Metric definitions against hand-computed values (acceptance 2)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from msprof_py.precision.metrics import CSV_COLUMNS, compare_tensors, detail_rows, pearson, sanitize


def test_hand_computed_small_tensor():
    ref = np.array([1.0, 2.0, 0.0, -4.0, 0.001])
    npu = np.array([1.001, 2.5, 0.01, -4.0, 0.0])
    c = compare_tensors(npu, ref, atol=0.005, rtol=0.2)
    # |d| = .001 .5 .01 0 .001 ; |d|>atol: F T T F F ; |d|>.2|r|: F T T F T  -> errors at 1, 2
    assert (c.errors, c.total, c.first_index) == (2, 5, 1)
    assert (c.ref_value, c.npu_value) == (2.0, 2.5)
    assert c.max_abs_err == pytest.approx(0.5)
    assert c.mean_abs_err == pytest.approx(0.255)
    # relative error over |r| > eps: .001, .25, 0, 1.0
    assert c.max_rel_total == pytest.approx(1.0)
    assert c.mean_rel_total == pytest.approx(1.251 / 4)
    assert c.rel_excluded == 1
    assert c.ref_mean == pytest.approx(-0.999 / 5)
    assert c.ref_rms == pytest.approx(math.sqrt(21.000001 / 5))
    assert c.ref_std == pytest.approx(np.std(ref))
    # mre floors |ref| at atol: .001/1 + .5/2 + .01/.005 + 0 + .001/.005
    assert c.mre == pytest.approx((0.001 + 0.25 + 2.0 + 0 + 0.2) / 5)
    row = c.csv_row("x(atol:0.005,rtol:0.2)")
    assert list(row) == list(CSV_COLUMNS)
    assert row["errors/total"] == "2/5"
    assert row["1st_diff_offset/offset_dim/data_shape"] == "1/(1)/(5)"
    assert row["ref_value"] == "2.000000" and row["npu_value"] == "2.500000"
    assert row["nan/inf"] == "False"
    det = detail_rows(c)
    assert det["index"].tolist() == [1, 2]
    assert det["abs_diff"].tolist() == pytest.approx([0.5, 0.01])
    assert det["relative_diff"][0] == pytest.approx(0.25) and np.isinf(det["relative_diff"][1])


def test_nan_inf_are_sanitised_as_the_seed_says():
    npu = np.array([np.nan, np.inf, 1.0, -np.inf], dtype=np.float16)
    ref = np.array([0.0, 70000.0, 1.0, -1.0], dtype=np.float32)
    c = compare_tensors(npu, ref)
    # npu -> [0, 65504, 1, -65504]: idx1 |d|=4496 < 0.2*70000 -> fine; idx3 is an error
    assert (c.npu_nan, c.npu_inf) == (1, 2)
    assert c.errors == 1 and c.first_index == 3
    assert c.npu_value == -65504.0
    assert c.csv_row("n")["nan/inf"] == "True(nan:1,inf:2)"
    s, k_nan, k_inf = sanitize(np.array([np.nan, -np.inf], dtype=np.float32))
    assert (k_nan, k_inf) == (1, 1) and s[0] == 0 and s[1] == -np.finfo(np.float32).max


def test_nan_at_the_same_positions_is_no_error():
    c = compare_tensors(np.array([np.nan, 1.0, 2.0]), np.array([np.nan, 1.0, 2.0]))
    assert c.errors == 0 and c.npu_nan == 1 and c.ref_nan == 1


def test_all_zero_reference_is_judged_by_atol():
    c = compare_tensors(np.array([0.0, 0.004, 0.006, -0.01]), np.zeros(4))
    assert c.errors == 2 and c.first_index == 2
    assert c.max_rel_total == 0.0 and c.rel_excluded == 4
    assert (c.ref_mean, c.ref_std, c.ref_rms) == (0.0, 0.0, 0.0)
    assert math.isnan(c.pearson)
    assert c.mre == pytest.approx((0 + 0.8 + 1.2 + 2.0) / 4)
    assert c.rel_l2 == float("inf")


def test_no_error_reports_first_element_and_dashes():
    c = compare_tensors(np.array([[1.0, 2.0]]), np.array([[1.0, 2.0]]))
    row = c.csv_row("n")
    assert row["1st_diff_offset/offset_dim/data_shape"] == "-/-/(1,2)"
    assert row["ref_value"] == "1.000000" and row["max_abs_err"] == "0"


def test_diff_cnt_caps_the_detail_rows():
    c = compare_tensors(np.ones(10), np.zeros(10), diff_cnt=3)
    assert c.errors == 10 and c.err_index.tolist() == [0, 1, 2]


def test_pearson_edge_cases():
    assert pearson(np.array([1, 2, 3]), np.array([2, 4, 6])) == pytest.approx(1.0)
    assert pearson(np.array([1, 2, 3]), np.array([3, 2, 1])) == pytest.approx(-1.0)
    assert pearson(np.ones(3), np.ones(3)) == 1.0
    assert math.isnan(pearson(np.ones(3), np.arange(3)))


def test_size_mismatch_and_empty_raise():
    with pytest.raises(ValueError, match="size mismatch"):
        compare_tensors(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="empty"):
        compare_tensors(np.ones(0), np.ones(0))


def test_vectorised_metrics_match_a_naive_loop():
    rng = np.random.default_rng(0)
    ref = rng.standard_normal(500)
    ref[::17] = 0.0
    npu = (ref + rng.standard_normal(500) * 0.01).astype(np.float16)
    c = compare_tensors(npu, ref, atol=0.005, rtol=0.2)
    n = npu.astype(np.float64)
    errs = [i for i in range(500) if abs(n[i] - ref[i]) > 0.005 and abs(n[i] - ref[i]) > 0.2 * abs(ref[i])]
    rels = [abs(n[i] - ref[i]) / abs(ref[i]) for i in range(500) if abs(ref[i]) > 1e-7]
    assert c.errors == len(errs) and c.first_index == errs[0]
    assert c.max_abs_err == pytest.approx(max(abs(n[i] - ref[i]) for i in errs))
    assert c.mean_rel_total == pytest.approx(sum(rels) / len(rels))
    assert c.pearson == pytest.approx(float(np.corrcoef(n, ref)[0, 1]))


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra.numpy import arrays  # noqa: E402

_special = st.sampled_from([0.0, np.nan, np.inf, -np.inf])
_f16 = st.one_of(st.floats(-6e4, 6e4, width=16), _special)
_f32 = st.one_of(st.floats(-1e5, 1e5, width=32), _special)


@settings(max_examples=60, deadline=None)
@given(arrays(np.float16, st.integers(1, 40), elements=_f16), st.data())
def test_property_matches_a_naive_element_loop(npu, data):
    ref = data.draw(arrays(np.float32, npu.shape, elements=_f32))
    atol = data.draw(st.sampled_from([0.0, 0.005, 1.0]))
    rtol = data.draw(st.sampled_from([0.0, 0.2, 1.0]))
    c = compare_tensors(npu, ref, atol, rtol, diff_cnt=5)

    def clean(x, dt):
        mx = float(np.finfo(dt).max)
        return [0.0 if math.isnan(v) else (mx if v == math.inf else -mx if v == -math.inf else float(v)) for v in x]

    n, r = clean(npu.tolist(), np.float16), clean(ref.tolist(), np.float32)
    errs = [i for i in range(len(n)) if abs(n[i] - r[i]) > atol and abs(n[i] - r[i]) > rtol * abs(r[i])]
    assert c.errors == len(errs) and c.err_index.tolist() == errs[:5]
    assert c.first_index == (errs[0] if errs else -1)
    assert c.npu_nan == sum(math.isnan(v) for v in npu.tolist())
    assert c.npu_inf == sum(math.isinf(v) for v in npu.tolist())
    if errs:
        assert c.max_abs_err == max(abs(n[i] - r[i]) for i in errs)
    assert 0 <= c.errors <= c.total == len(n)
