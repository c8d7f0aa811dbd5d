"""Reading AOE result files: every seed example (verbatim and cleaned), repairs, strict mode."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from msprof_py.aoe.reader import read_results
from msprof_py.aoe.repair import load_json
from msprof_py.errors import DataError, InvalidPathError

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "aoe"


def kinds(res):
    return sorted(r.kind for _, r in res.repairs)


def test_list_layout_opat():
    res = read_results([FIX / "seed000_opat_list_clean.json"])
    assert res.repairs == [] and not res.warnings
    t = res.tasks.iloc[0]
    assert (t.layout, t["mode"], t.status, t.tuning_name, t.tuning_time_s) == ("list", "OPAT", "complete", "Tuning task name", 1494)
    assert (t.baseline_ms, t.result_ms, t.improvement_pct) == (113.588725, 113.236731, 0.31)
    assert t.improvement_pct_recomputed == pytest.approx(0.310848, abs=1e-6)
    assert (t.repo_add_num, t.repo_unsatisfied_num, t.total_num) == (19, 2, 21)
    ops = res.operators.set_index("op_name")
    assert ops.loc["softmax", "tune_dim"] == "Format"
    assert ops.loc["softmax", "improvement_pct_recomputed"] == pytest.approx(35.353535, abs=1e-6)
    assert ops.loc["softmax", "pct_formula"] == "before/after-1"
    assert ops.loc["Conv_125", ["before_us", "after_us", "repo_change"]].tolist() == [72.055, 72.046, "add"]


def test_placeholder_line_is_repaired_and_reported():
    verbatim = read_results([FIX / "seed000_opat_list_verbatim.json"])
    clean = read_results([FIX / "seed000_opat_list_clean.json"])
    assert kinds(verbatim) == ["placeholder"]
    assert verbatim.repairs[0][1].line == 27
    # same tables apart from the file name and the repair count
    cols = [c for c in clean.operators.columns if c != "file"]
    pd.testing.assert_frame_equal(verbatim.operators[cols], clean.operators[cols])
    assert verbatim.tasks.loc[0, "repairs"] == 1
    assert any("removed placeholder" in w for w in verbatim.warnings)


def test_missing_comma_sgat():
    bad = read_results([FIX / "seed000_sgat_list_missing_comma.json"])
    clean = read_results([FIX / "seed000_sgat_list_clean.json"])
    assert kinds(bad) == ["missing_comma"] and bad.repairs[0][1].line == 21
    cols = [c for c in clean.subgraphs.columns if c != "file"]
    pd.testing.assert_frame_equal(bad.subgraphs[cols], clean.subgraphs[cols])
    sg = clean.subgraphs.set_index("repo_key")
    assert sg.loc["1024942313106047484", "repo_change"] == "add"
    assert sg.loc["1024942313106057586", ["repo_change", "before_ms", "after_ms", "improvement_pct"]].tolist() == \
        ["update", 4.58434, 2.573203, 78.15]
    assert (clean.subgraphs["pct_formula"] == "before/after-1").all()


def test_failed_operators():
    res = read_results([FIX / "seed000_opat_failed.json"])
    assert res.failed["op_name"].tolist() == ["res4a_branch1"]
    assert res.tasks.loc[0, "status"] == "failed" and res.tasks.loc[0, "n_failed"] == 1


def test_training_layout_two_tasks():
    res = read_results([FIX / "seed001_opat_report_clean.json"])
    t = res.tasks
    assert t["layout"].tolist() == ["report_dict"] * 2
    assert t["timestamp"].tolist() == ["20231230_015000123", "20231230_015512456"]
    assert t["tid"].tolist() == ["140231", "140232"]
    assert pd.isna(t.loc[0, "baseline_ms"]) and t.loc[1, "baseline_ms"] == 113.588725  # first lacks model fields
    assert res.operators.groupby("report_key").size().tolist() == [2, 2]
    big = res.operators.set_index("op_name").loc["bert/encoder/layer_10/attention/self/Softmax_OPAT_0"]
    assert big.improvement_pct == 118.71 and big.pct_formula == "before/after-1"


def test_training_layout_verbatim_doc_sample():
    res = read_results([FIX / "seed001_opat_report_verbatim.json"])
    assert kinds(res) == ["duplicate_key", "placeholder", "placeholder", "truncated"]
    assert res.tasks["report_key"].tolist() == ["report_${timestamp}_${tid}", "report_${timestamp}_${tid}#2"]
    assert res.tasks["status"].tolist() == ["complete", "incomplete"]
    assert len(res.operators) == 2


def test_sgat_fragment_verbatim_doc_sample():
    res = read_results([FIX / "seed001_sgat_report_verbatim.json"])
    assert kinds(res) == ["duplicate_key", "fragment", "missing_comma", "placeholder", "placeholder", "truncated"]
    assert len(res.subgraphs) == 2 and res.tasks.loc[0, "total_num"] == 121
    # the doc's own counters do not add up (1 + 1 + 120 != 121): a warning, not an error
    assert any("total_num=121" in w for w in res.warnings)


def test_dict_variant_of_repo_modified_operators():
    res = read_results([FIX / "seed002_opat_bare_clean.json"])
    assert res.repairs == []
    assert res.tasks.loc[0, "layout"] == "object"
    ops = res.operators.set_index("op_name")
    assert ops.loc["strided_slice_10", "repo_change"] == "add"
    assert ops.loc["Conv_125", ["repo_change", "op_type", "tune_dim"]].tolist() == ["update", "Conv2D;Relu", "Impl"]


def test_scraped_bare_fragment_verbatim():
    res = read_results([FIX / "seed002_opat_bare_verbatim.json"])
    assert kinds(res) == ["fragment", "missing_comma", "moved_key", "placeholder", "truncated"]
    t = res.tasks.iloc[0]
    assert (t.tuning_name, t.tuning_time_s, t.repo_hit_num, t.repo_reserved_num, t.total_num) == ("调优任务名", 1827, 17, 15, 19)
    assert res.operators["op_name"].tolist() == ["strided_slice_10"]


def test_file_cut_short_while_running():
    res = read_results([FIX / "opat_truncated_running.json"])
    assert kinds(res) == ["truncated"]
    assert res.tasks.loc[0, "status"] == "incomplete"
    assert res.operators["op_name"].tolist() == ["softmax", "Conv_125"]


REPAIRED = ["seed000_opat_list_verbatim.json", "seed000_sgat_list_missing_comma.json", "seed001_opat_report_verbatim.json",
            "seed001_sgat_report_verbatim.json", "seed002_opat_bare_verbatim.json", "opat_truncated_running.json"]
CLEAN = ["seed000_opat_list_clean.json", "seed000_sgat_list_clean.json", "seed000_opat_failed.json",
         "seed001_opat_report_clean.json", "seed002_opat_bare_clean.json"]


@pytest.mark.parametrize("name", REPAIRED)
def test_strict_refuses_what_lenient_repairs(name):
    assert read_results([FIX / name]).repairs
    with pytest.raises(DataError, match="strict mode refuses"):
        read_results([FIX / name], strict=True)


@pytest.mark.parametrize("name", CLEAN)
def test_strict_accepts_clean_files(name):
    assert read_results([FIX / name], strict=True).repairs == []


@pytest.mark.parametrize("name, match", [
    ("bad_empty.json", "empty file"),
    ("bad_not_json.json", "not JSON"),
    ("bad_wrong_schema.json", "not an AOE result file"),
    ("bad_wrong_types.json", "not an AOE result file"),
])
def test_bad_input(name, match):
    with pytest.raises(DataError, match=match) as err:
        read_results([FIX / name])
    assert name in str(err.value)


def test_binary_file(tmp_path):
    p = tmp_path / "aoe_result_opat_20240101_000000000_pid1.json"
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(DataError, match="not a text file"):
        read_results([p])


def test_directory_discovery(tmp_path):
    shutil.copy(FIX / "seed000_opat_list_clean.json", tmp_path / "aoe_result_opat_20231230_015000123_pid4242.json")
    shutil.copy(FIX / "seed000_sgat_list_clean.json", tmp_path / "aoe_result_sgat_20231230_015000124_4243.json")
    (tmp_path / "notes.json").write_text("not read")
    res = read_results([tmp_path])
    assert res.tasks["mode"].tolist() == ["OPAT", "SGAT"]
    assert res.tasks["pid"].tolist() == ["4242", "4243"]
    assert res.tasks["timestamp"].tolist() == ["20231230_015000123", "20231230_015000124"]


def test_directory_without_results(tmp_path):
    (tmp_path / "x.json").write_text("[]")
    with pytest.raises(InvalidPathError, match="no AOE result files"):
        read_results([tmp_path])
    with pytest.raises(InvalidPathError, match="no such file"):
        read_results([tmp_path / "missing"])


def test_trailing_comma_repair():
    doc, reps = load_json('[{"basic": {"tuning_name": "x",}},]', "f")
    assert doc == [{"basic": {"tuning_name": "x"}}]
    assert [r.kind for r in reps] == ["trailing_comma", "trailing_comma"]


_CLEAN_TEXT = (FIX / "seed000_opat_list_clean.json").read_text()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, len(_CLEAN_TEXT) - 2))
def test_any_truncation_is_repaired_or_refused_cleanly(cut):
    """A file cut anywhere either reads as a truncated file or is a clear DataError, never a crash."""
    text = _CLEAN_TEXT[:cut]
    try:
        doc, reps = load_json(text, "f")
    except DataError:
        return
    assert reps and reps[-1].kind in ("truncated",) or json.loads(text) == doc


def test_task_without_section_takes_its_mode_from_the_file_name(tmp_path):
    # documented: no OPAT section when no operator could be tuned
    p = tmp_path / "aoe_result_opat_20240101_000000000_pid1.json"
    p.write_text('[{"basic": {"tuning_name": "t", "tuning_time(s)": 0}}]')
    res = read_results([p], strict=True)
    assert res.tasks.loc[0, ["mode", "status", "n_entries"]].tolist() == ["OPAT", "no_ops", 0]
    p2 = tmp_path / "aoe_result_sgat_20240101_000000000_pid1.json"
    p2.write_text('[{"basic": {"tuning_name": "t", "tuning_time(s)": 0}}]')
    assert read_results([p2]).tasks.loc[0, "status"] == "failed"  # documented: no SGAT section on failure
