"""Property tests: what the writer serialises, the reader gives back; a dropped comma or a cut
file anywhere is repaired (lenient) or refused (strict), never misread."""
from __future__ import annotations

import json
import re

from hypothesis import HealthCheck, given, settings, strategies as st

from msprof_py.aoe import schema as S
from msprof_py.aoe.reader import read_result_doc, read_results
from msprof_py.aoe.repair import load_json
from msprof_py.aoe.writer import dumps
from msprof_py.errors import DataError

_times = st.floats(0.5, 5000.0).map(lambda x: round(x, 3))
_name = st.text("abcdefgh/_0123456789", min_size=1, max_size=20)


@st.composite
def _leaf(draw):
    after = draw(_times)
    before = round(after * draw(st.floats(1.0001, 3.0)), 3)
    return {"performance_after_tune(us)": after, "performance_before_tune(us)": before,
            "performance_improvement": S.format_pct(S.improvement(before, after), S.OPAT),
            "update_mode": draw(st.sampled_from(S.UPDATE_MODES))}


@st.composite
def _opat_doc(draw):
    ops = []
    for i in range(draw(st.integers(0, 6))):
        dims = draw(st.lists(st.sampled_from(S.TUNE_DIMS), min_size=1, max_size=3, unique=True))
        ops.append({"op_name": f"{draw(_name)}_{i}", "op_type": draw(st.sampled_from(["Conv2D", "Relu", "MatMulV2"])),
                    "tune_performance": {d: draw(_leaf()) for d in dims}})
    add, unsat, hit = len(ops), draw(st.integers(0, 5)), draw(st.integers(0, 5))
    upd = draw(st.integers(0, hit))
    base = draw(_times)
    result = round(base / draw(st.floats(1.0, 1.5)), 6)
    opat = {"model_baseline_performance(ms)": base, "model_result_performance(ms)": result,
            "model_performance_improvement": S.format_pct(S.improvement(base, result), S.OPAT),
            "opat_tuning_result": "tuning successful", "repo_modified_operators": ops,
            "repo_summary": {"repo_add_num": add, "repo_hit_num": hit, "repo_reserved_num": hit - upd,
                             "repo_unsatisfied_num": unsat, "repo_update_num": upd, "total_num": hit + add + unsat}}
    return [{"basic": {"tuning_name": draw(_name), "tuning_time(s)": draw(st.integers(0, 10_000))}}, {"OPAT": opat}]


@settings(max_examples=40, deadline=None)
@given(_opat_doc())
def test_written_documents_read_back(doc):
    assert S.validate(doc) == []
    text = dumps(doc)
    parsed, repairs = load_json(text, "f", strict=True)
    assert parsed == doc and repairs == []
    res = read_result_doc(parsed)
    assert not res.warnings  # counters consistent, percentages follow before/after-1
    ops = doc[1]["OPAT"]["repo_modified_operators"]
    assert len(res.operators) == sum(len(o["tune_performance"]) for o in ops)
    for row in res.operators.itertuples(index=False):
        leaf = next(o for o in ops if o["op_name"] == row.op_name)["tune_performance"][row.tune_dim]
        assert (row.before_us, row.after_us, row.update_mode) == (
            leaf["performance_before_tune(us)"], leaf["performance_after_tune(us)"], leaf["update_mode"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_opat_doc(), st.data())
def test_a_dropped_comma_is_repaired_exactly(doc, data):
    text = dumps(doc)
    # commas that end a line after a closing bracket or a value: drop one of them
    spots = [m.start() for m in re.finditer(r"[}\]\d\"],\n", text)]
    if not spots:
        return
    i = data.draw(st.sampled_from(spots)) + 1
    broken = text[:i] + text[i + 1:]
    parsed, repairs = load_json(broken, "f")
    assert parsed == doc
    assert [r.kind for r in repairs] == ["missing_comma"]
    assert repairs[0].line == text.count("\n", 0, i) + 1
    try:
        load_json(broken, "f", strict=True)
    except DataError as err:
        assert "strict mode refuses" in str(err)
    else:
        raise AssertionError("strict mode accepted a file with a missing comma")


def test_round_trip_through_files(tmp_path):
    src = [{"basic": {"tuning_name": "t", "tuning_time(s)": 3}},
           {"SGAT": {"model_baseline_performance(ms)": 5.600486, "model_performance_improvement": "55.11%",
                     "model_result_performance(ms)": 3.610442,
                     "repo_modified_subgraphs": {"add_repo_subgraphs": [], "update_repo_subgraphs": [
                         {"performance_after_tune(ms)": 2.573203, "performance_before_tune(ms)": 4.58434,
                          "performance_improvement": "78.15%", "repo_key": "1024942313106057586"}]},
                     "repo_summary": {"repo_add_num": 0, "repo_hit_num": 1, "repo_reserved_num": 0,
                                      "repo_unsatisfied_num": 0, "repo_update_num": 1, "total_num": 1}}}]
    p = tmp_path / "aoe_result_sgat_20240101_000000000_pid9.json"
    p.write_text(dumps(src))
    res = read_results([p], strict=True)
    assert res.subgraphs[["repo_key", "repo_change", "before_ms", "after_ms", "improvement_pct"]].values.tolist() == \
        [["1024942313106057586", "update", 4.58434, 2.573203, 78.15]]
