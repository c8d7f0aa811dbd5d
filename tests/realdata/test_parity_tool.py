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
