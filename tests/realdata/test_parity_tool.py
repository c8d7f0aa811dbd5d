"""The comparison itself finds differences (so a passing parity test means agreement)."""
from __future__ import annotations

import shutil
from pathlib import Path

from benchmarks.parity.cells import Check, compare_keyed, same_value
from benchmarks.parity.run import compare_prof

FIXTURE = next((Path(__file__).resolve().parents[2] / "fixtures" / "real" / "910b_ascendc_add_b1").glob("PROF_*"))


def test_same_value_to_the_printed_digit() -> None:
    assert same_value("1784177144514943.513\t", "1784177144514943.513")
    assert not same_value("10.063", "10.062")  # equal to the printed digit, no tolerance
    assert same_value("0.02", "0.020")
    assert not same_value("1784177144514943.513", "1784177144514943.511")
    assert same_value("0", "0.000") and same_value("100", "100.0")
    assert not same_value("1", "2") and not same_value("N/A", "")
    assert not same_value("FORMAT_ND", "ND")


def test_keyed_rows_missing_extra_and_cells() -> None:
    h = ["k", "v"]
    c = Check("t")
    compare_keyed(c, h, [["1", "a"], ["2", "b"], ["2", "b2"]], h, [["1", "x"], ["2", "b"], ["3", "c"]], ["k"])
    assert (c.missing, c.extra, c.cells["v"]) == (1, 1, 1) and not c.ok


def test_a_changed_expected_file_is_reported(tmp_path: Path) -> None:
    prof = tmp_path / FIXTURE.name
    shutil.copytree(FIXTURE, prof)
    api = next((prof / "mindstudio_profiler_output").glob("api_statistic_*.csv"))
    lines = api.read_text().splitlines()
    cells = lines[1].split(",")
    cells[4] = str(int(cells[4]) + 1)  # Count of the first API
    api.write_text("\n".join([lines[0], ",".join(cells)] + lines[2:]) + "\n")
    r = compare_prof(prof)
    assert r.checks["api_statistic"].cells["Count"] == 1
    assert not any(p.name == "msprof_py_cache" for p in prof.rglob("*")), "the compared dir was written"


def test_parse_warnings_reach_the_export_log(tmp_path: Path) -> None:
    """A real capture's parse warning (an unused raw kind) is in msprof_py_export.log too."""
    from msprof_py.export import ExportOptions, export

    prof = tmp_path / FIXTURE.name
    shutil.copytree(FIXTURE, prof)
    (prof / "device_0" / "data" / "made_up_kind.data.0.slice_0").write_bytes(b"\0" * 64)
    result = export(prof, ExportOptions())
    log = (prof / "mindstudio_profiler_log" / "msprof_py_export.log").read_text()
    parse_msgs = [m for m in result.warnings if "made_up_kind" in m]
    assert parse_msgs and all(m in log for m in parse_msgs)


def _msprof_timeline() -> list[dict]:
    from benchmarks.parity.timeline import load_events

    return load_events(list((FIXTURE / "mindstudio_profiler_output").glob("msprof_*.json")))


def test_a_changed_sort_index_is_reported() -> None:
    import copy

    from benchmarks.parity.timeline import Layout, compare_layouts

    ev = _msprof_timeline()
    changed = copy.deepcopy(ev)
    for e in changed:
        if e.get("name") == "process_sort_index" and e["args"]["sort_index"] == 13:  # Ascend Hardware
            e["args"]["sort_index"] = 14
    same = {c.name: c for c in compare_layouts(Layout(ev), Layout(ev))}
    assert all(c.ok for c in same.values())
    diff = {c.name: c for c in compare_layouts(Layout(ev), Layout(changed))}
    assert diff["timeline"].cells["sort index"] == 1


def _with(ev: list[dict], change) -> list[dict]:
    import copy

    out = copy.deepcopy(ev)
    for e in out:
        change(e)
    return out


def _flows_check(ours: list[dict]):
    from benchmarks.parity.timeline import Layout, compare_layouts

    return {c.name: c for c in compare_layouts(Layout(_msprof_timeline()), Layout(ours))}["timeline.flows"]


def test_connection_ids_and_flow_ids_are_compared() -> None:
    """The ids themselves are compared, not only what they link: a hardware event's id, a flow's id
    and the CANN calls' ids; a constant shift of every id (msprof's counter shared with its other
    parser threads) is the allowance connection-id-race, a reordering is not."""
    ev = _msprof_timeline()
    same = _flows_check(ev)
    assert same.ok and "connection-id-race" not in same.deliberate

    def hw_id(e: dict) -> None:
        a = e.get("args") or {}
        if e.get("ph") == "X" and a.get("Task Id") == 7 and a.get("Physic Stream Id") == 46:
            a["connection_id"] += 1
    assert _flows_check(_with(ev, hw_id)).cells["hardware connection_id"] == 1

    flow = next(e["id"] for e in ev if e.get("ph") == "s")

    def flow_id(e: dict) -> None:
        if e.get("ph") in ("s", "f") and e.get("id") == flow:
            e["id"] = str(int(flow) + (1 << 32))
            e["name"] = "HostToDevice" + e["id"]
    assert _flows_check(_with(ev, flow_id)).cells["flow id"] == 1

    calls = sorted({e["args"]["connection_id"] for e in ev if e.get("ph") == "X" and "Thread Id" in e["args"]})

    def shift(e: dict) -> None:  # ours numbered from 1 where msprof's would start past other events
        a = e.get("args") or {}
        if isinstance(a.get("connection_id"), int) and 0 < a["connection_id"] <= calls[-1]:
            a["connection_id"] -= 5
        if e.get("ph") in ("s", "f"):
            e["id"] = str(int(e["id"]) - (5 << 32))
    shifted = _flows_check(_with(ev, shift))
    assert shifted.ok and "connection-id-race" in shifted.deliberate

    def swap(e: dict) -> None:
        a = e.get("args") or {}
        if e.get("ph") == "X" and "Thread Id" in a and a["connection_id"] in calls[:2]:
            a["connection_id"] = calls[1] if a["connection_id"] == calls[0] else calls[0]
    assert _flows_check(_with(ev, swap)).cells["CANN connection_id"] > 0
