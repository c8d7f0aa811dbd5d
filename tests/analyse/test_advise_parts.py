"""Advice one device at a time (analyse/advise/parts.py) gives the bytes of the whole session's
advice: the same prof_rule_{device}.json, tune-ops file, advice.json and text, on a 2-device run
with findings on both devices and on one without any; through ``msprof-py export`` (streamed
and ``MSPROF_PY_STREAM=0``) too; and the cross-device cases of the combination."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import msprof_py
from msprof_py.analyse.advise import findings
from msprof_py.analyse.advise.base import Finding
from msprof_py.analyse.advise.parts import DeviceAdvice, combine
from msprof_py.analyse.advise.run import OUTPUT_DIR, AdviseResult, advise_session, advise_source
from msprof_py.parse.source import ProfSource

from . import scenarios as sc


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("advise_parts")
    faulty = sc.with_op(sc.with_op(sc.graph_doc_small_grads(True), "l2/Add", task_type="AI_CPU"),
                        "l2/MatMulV2", attrs={"kernel_choice": {"impl": "naive"}})
    return {"faulty": sc.run_graph(faulty, root / "faulty", devices=2, iterations=3),
            "clean": sc.run_graph(sc.graph_doc(), root / "clean", devices=2, iterations=3)}


def _advice_files(prof: Path) -> dict[str, bytes]:
    out = prof / OUTPUT_DIR
    files = {p.name: p.read_bytes() for p in sorted(out.glob("*")) if p.name.startswith(("prof_rule_", "advice"))
             or p.name == "aoe_tune_ops.json"}
    for p in out.glob("*"):
        if p.name in files:
            p.unlink()
    return files


def _both(prof: Path, fmt: str) -> tuple[tuple[str, dict[str, bytes], list], tuple[str, dict[str, bytes], list]]:
    whole_res, part_res = AdviseResult(), AdviseResult()
    whole = advise_session(prof, msprof_py.load(prof), whole_res, fmt)
    whole_files = _advice_files(prof)
    part = advise_source(prof, ProfSource(prof), part_res, fmt)
    return (whole, whole_files, whole_res.findings), (part, _advice_files(prof), part_res.findings)


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_per_device_advice_equals_whole_session_advice_with_findings(runs, fmt) -> None:
    whole, part = _both(runs["faulty"], fmt)
    rules = {(f.rule, f.device_id) for f in whole[2]}
    # findings on both devices, among them the rules that read the host's API table and the
    # collectives (small all-reduces, exposed communication)
    assert {d for _, d in rules} == {0, 1}
    assert {"aicpu", "small_allreduce", "comm_not_overlapped", "aoe_candidates"} <= {r for r, _ in rules}
    assert part[0] == whole[0]
    assert part[1] == whole[1]
    assert {"prof_rule_0.json", "prof_rule_1.json", "aoe_tune_ops.json"} <= set(whole[1])


def test_per_device_advice_equals_whole_session_advice_without_findings(runs) -> None:
    whole, part = _both(runs["clean"], "json")
    assert whole[2] == [] and part[2] == []
    assert "No problem found" in whole[0]
    assert part[:2] == whole[:2]
    assert {"prof_rule_0.json", "prof_rule_1.json", "advice.json"} == set(whole[1])


def test_export_prints_the_same_advice_streamed_or_whole(runs, tmp_path, monkeypatch) -> None:
    from msprof_py.export.runner import ExportOptions
    from msprof_py.pipeline import export_with_advice

    got = {}
    for stream in ("1", "0"):
        prof = tmp_path / stream / runs["faulty"].name
        shutil.copytree(runs["faulty"], prof)
        monkeypatch.setenv("MSPROF_PY_STREAM", stream)
        _, advice = export_with_advice(prof, ExportOptions(clear=stream == "1"))
        assert advice is not None
        got[stream] = (advice.text, _advice_files(prof))
    assert "Performance Summary Report" in got["0"][0] and "operator(s)" in got["0"][0]
    assert got["1"] == got["0"]


def test_export_advice_reads_no_device_again(runs, tmp_path, monkeypatch) -> None:
    """The streamed export hands each device's session to the advice (pipeline's per_device):
    the advice reads no device back from the cache, and prints what it printed reading them."""
    import msprof_py.pipeline as pipeline
    from msprof_py.export.runner import ExportOptions
    from msprof_py.parse.source import ProfSource

    got, reads, handed = {}, [], []
    real, real_advice = ProfSource.device, pipeline.device_advice

    def device(self, device_id, categories=None):  # type: ignore[no-untyped-def]
        reads.append(device_id)
        return real(self, device_id, categories)

    def advice_of(session):  # type: ignore[no-untyped-def]
        handed.append(session)
        return real_advice(session)

    monkeypatch.setattr(ProfSource, "device", device)
    monkeypatch.setattr(pipeline, "device_advice", advice_of)
    prof = tmp_path / "plain" / runs["faulty"].name
    shutil.copytree(runs["faulty"], prof)
    pipeline.export(prof, ExportOptions())  # the export alone: its own reads
    alone = list(reads)
    for workers in ("1", "2"):  # 2: the devices' files in worker processes, the advice reads them again
        prof = tmp_path / workers / runs["faulty"].name
        shutil.copytree(runs["faulty"], prof)
        monkeypatch.setenv("MSPROF_PY_WORKERS", workers)
        reads.clear()
        handed.clear()
        _, advice = pipeline.export_with_advice(prof, ExportOptions())
        assert advice is not None
        got[workers] = (advice.text, _advice_files(prof), list(reads), len(handed))
    assert got["1"][2:] == (alone, 2)  # no read more than the export's, each session handed to the advice
    assert len(got["2"][2]) > 0 and got["2"][3] == 0  # the advice's own reads (the export's were in its workers)
    assert got["1"][:2] == got["2"][:2] and "operator(s)" in got["1"][0]


def _part(dev: int, found: dict, failed: dict | None = None, spans: bool = False, **shapes) -> DeviceAdvice:
    return DeviceAdvice(found, failed or {}, {dev: None}, [], spans, {dev}, shapes)


def _finding(rule: str, dev: int, ns: int = 1000) -> Finding:
    return Finding(rule, "Operator Schedule", dev, rule, "", ns)


def test_a_rule_failing_on_one_device_is_dropped_on_every_device() -> None:
    parts = [_part(0, {"bubbles": [_finding("bubbles", 0)], "aicpu": [_finding("aicpu", 0)]}),
             _part(1, {"aicpu": []}, {"bubbles": "advice rule bubbles skipped: KeyError: 'x'"}),
             _part(2, {"aicpu": []}, {"bubbles": "advice rule bubbles skipped: KeyError: 'y'"})]
    c = combine(parts)
    assert c is not None
    assert [f.rule for f in c.found] == ["aicpu"]
    assert c.errors == ["advice rule bubbles skipped: KeyError: 'x'"]


def test_exposed_communication_by_tasks_only_when_no_device_has_collective_spans() -> None:
    def parts(spans0: bool) -> list[DeviceAdvice]:
        return [_part(0, {"comm_not_overlapped": [_finding("comm_not_overlapped", 0)]}, spans=spans0),
                _part(1, {"comm_not_overlapped": [_finding("comm_not_overlapped", 1)]}, spans=False)]

    assert [f.device_id for f in combine(parts(False)).found] == [0, 1]
    assert [f.device_id for f in combine(parts(True)).found] == [0]


def test_devices_whose_tables_would_not_join_as_they_are_fall_back_to_the_whole_session(runs, tmp_path,
                                                                                      monkeypatch) -> None:
    assert combine([_part(0, {}, pmu=(("a",), ("float32",))), _part(1, {}, pmu=(("a",), ("float64",)))]) is None
    assert combine([_part(0, {}), _part(0, {})]) is None  # one device id in two devices' tables
    # advise_source then gives the whole session's advice
    prof = tmp_path / "p"
    shutil.copytree(runs["faulty"], prof)
    import msprof_py.analyse.advise.run as run

    monkeypatch.setattr(run, "device_advice", lambda s: DeviceAdvice({}, {}, {}, [], False, {0}, {}))
    res = AdviseResult()
    advise_source(prof, ProfSource(prof), res, "json")
    assert res.findings and res.findings == findings(msprof_py.load(prof), errors=[])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 100)), max_size=30),
       st.lists(st.tuples(st.integers(-50, 1100), st.integers(-30, 400)), max_size=8))
def test_busy_time_per_window_is_the_clipped_sum_of_the_busy_intervals(tasks, wins) -> None:
    import numpy as np

    from msprof_py.analyse.advise.base import merge_intervals
    from msprof_py.analyse.advise.schedule import busy_until

    s0, s1 = merge_intervals(np.array([a for a, _ in tasks], np.int64), np.array([a + d for a, d in tasks], np.int64))
    w0 = np.array([a for a, _ in wins], np.int64)
    w1 = np.array([a + d for a, d in wins], np.int64)
    want = [int((np.clip(s1, a, b) - np.clip(s0, a, b)).sum()) for a, b in zip(w0, w1)]
    assert list(np.maximum(busy_until(s0, s1, w1) - busy_until(s0, s1, w0), 0)) == want
