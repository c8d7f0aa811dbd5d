"""AOE's improvement formula, its two-decimal formatting, and the result-file validator."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from msprof_py.aoe import schema as S

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "aoe"


# every (before, after, reported) triple printed in the seed documents
@pytest.mark.parametrize("before, after, mode, text", [
    (134, 99, S.OPAT, "35.35%"),
    (58.781, 26.876, S.OPAT, "118.71%"),
    (16.71, 15.71, S.OPAT, "6.37%"),  # 6.365.. -> rounds up: OPAT rounds
    (72.055, 72.046, S.OPAT, "0.01%"),
    (113.588725, 113.236731, S.OPAT, "0.31%"),
    (5.58434, 3.573203, S.SGAT, "56.28%"),
    (4.58434, 2.573203, S.SGAT, "78.15%"),  # 78.157 -> 78.15: SGAT truncates
    (5.600486, 3.610442, S.SGAT, "55.11%"),  # 55.119 -> 55.11
])
def test_documented_percentages(before, after, mode, text):
    assert S.format_pct(S.improvement(before, after), mode) == text
    assert S.pct_formula(S.parse_pct(text), before, after) == "before/after-1"


def test_other_formula_is_detected():
    # 1 - after/before for 134 -> 99 is 26.12%
    assert S.pct_formula(26.12, 134, 99) == "1-after/before"
    assert S.pct_formula(50.0, 134, 99) == "unknown"
    assert S.pct_formula(math.nan, 134, 99) == "unknown"


def test_parse_pct_variants():
    assert S.parse_pct("35.35%") == 35.35
    assert S.parse_pct(" 35.35 % ") == 35.35
    assert S.parse_pct(35) == 35.0
    assert math.isnan(S.parse_pct("n/a"))
    assert math.isnan(S.parse_pct(None))
    assert math.isnan(S.parse_pct(True))


@given(st.floats(0.001, 1e6), st.floats(0.001, 1e6), st.sampled_from([S.OPAT, S.SGAT]))
def test_formatted_pct_is_recognised(before, after, mode):
    text = S.format_pct(S.improvement(before, after), mode)
    assert text.endswith("%") and len(text.split(".")[1]) == 3
    assert S.pct_formula(S.parse_pct(text), before, after) == "before/after-1"


@pytest.mark.parametrize("name", ["seed000_opat_list_clean.json", "seed000_sgat_list_clean.json",
                                  "seed000_opat_failed.json", "seed001_opat_report_clean.json"])
def test_clean_seed_examples_validate(name):
    assert S.validate(json.loads((FIX / name).read_text())) == []


def test_validator_names_the_path():
    doc = json.loads((FIX / "seed000_opat_list_clean.json").read_text())
    doc[1]["OPAT"]["repo_modified_operators"][0]["tune_performance"]["Format"]["update_mode"] = "replace"
    doc[1]["OPAT"]["repo_summary"]["total_num"] = -1
    del doc[0]["basic"]["tuning_name"]
    errs = S.validate(doc)
    assert "$[0].basic: missing key 'tuning_name'" in errs
    assert any(e.startswith("$[1].OPAT.repo_modified_operators[0].tune_performance.Format.update_mode") for e in errs)
    assert any(e.startswith("$[1].OPAT.repo_summary.total_num") for e in errs)


def test_validator_rejects_extra_keys_and_bad_report_keys():
    doc = json.loads((FIX / "seed000_sgat_list_clean.json").read_text())
    doc[1]["SGAT"]["simulated"] = True
    assert S.validate(doc) == ["$[1].SGAT: unexpected key 'simulated'"]
    assert any("does not match" in e for e in S.validate({"report_x": doc}))
    assert S.validate({"report_20231230_015000123_7": json.loads((FIX / "seed000_sgat_list_clean.json").read_text())}) == []
