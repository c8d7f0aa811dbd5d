"""Issue #16's table of tracebacks, one test per row, with the exact mutation that triggered it.

Each case copies the small fixture PROF dir, applies the mutation, loads and exports it in-process
(tests/fuzz/harness.py) and checks the outcome is a one-line error or a warning naming the file
(and the key), never a traceback.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fuzz.harness import fresh_copy, run_case
from tests.fuzz.mutate import Mutation, apply

FIXTURE = next((Path(__file__).parents[2] / "fixtures" / "prof_small").glob("PROF_*"))


@pytest.fixture
def prof(tmp_path: Path) -> Path:
    return fresh_copy(FIXTURE, tmp_path / FIXTURE.name)


def _outcome(prof: Path, *mutations: Mutation):
    for m in mutations:
        apply(m, prof)
    out = run_case(prof)
    assert out.kind != "crash", f"{out.where}\n{out.message}"
    return out


@pytest.mark.parametrize("key", ["cntvct", "cntvct_diff"])
def test_host_start_log_counter_too_big(prof: Path, key: str) -> None:
    # was OverflowError @ parse/meta.py to_local_ns
    out = _outcome(prof, Mutation("start_log_value", "host/host_start.log",
                                  {"key": key, "value": "99999999999999999999999999"}))
    assert out.kind == "warning"
    assert any("host_start.log" in m and key in m and "64-bit" in m for m in _warnings(prof))


def test_device_dir_with_huge_id(prof: Path) -> None:
    # was OverflowError @ parse/join.py join_device
    _outcome(prof, Mutation("rename_dir", "device_0", {"name": "device_99999999999999999999"}))
    assert any("device_99999999999999999999" in m and "out of range" in m for m in _warnings(prof))


def test_collection_end_minus_1e308_with_device_64(prof: Path) -> None:
    # was OverflowError @ export/unified_db.py _i64 (now unified_db_insert.i64)
    out = _outcome(prof, Mutation("rename_dir", "device_0", {"name": "device_64"}),
                   Mutation("meta_value", "host/end_info", {"pick": _key_index(prof / "host/end_info",
                                                                              "collectionTimeEnd"),
                                                           "value": -1e308}))
    assert out.kind == "warning"
    assert any("host/end_info" in m and "collectionTimeEnd" in m for m in _warnings(prof))


def test_device_pid_beyond_u32(prof: Path) -> None:
    # was OverflowError @ export/timeline.py hardware_layer
    info = "device_0/info.json.0"
    _outcome(prof, Mutation("meta_value", info, {"pick": _key_index(prof / info, "pid"),
                                                 "value": "18446744073709551615"}))
    assert any(info in m and "pid" in m for m in _warnings(prof))


def test_api_slice_renamed_to_minus_zero(prof: Path) -> None:
    # was IndexError @ parse/host.py load_host (no api_event records left, task tracks still there)
    for name in sorted(os.listdir(prof / "host/data")):
        if name.startswith("aging.api_event.data.slice_"):
            (prof / "host/data" / name).rename(prof / "host/data" / name.replace("slice_", "slice_-"))
    _outcome(prof)


@pytest.mark.parametrize("file,key,value", [("host/info.json", "CPU", 1e308),
                                            ("device_0/info.json.0", "DeviceInfo", -1e308)])
def test_frequency_lists_replaced_by_huge_numbers(prof: Path, file: str, key: str, value: float) -> None:
    # was TypeError @ parse/meta.py host_mhz / hwts_mhz
    out = _outcome(prof, Mutation("meta_value", file, {"pick": _key_index(prof / file, key), "value": value}))
    if out.kind == "error":  # the device cannot be placed in time without hwts_frequency
        assert file in out.message and "hwts_frequency" in out.message
    else:
        assert any(file in m and key in m and "not a list of objects" in m for m in _warnings(prof))


def test_duplicated_device_info_key(prof: Path) -> None:
    # was AttributeError @ parse/build.py _devices
    info = prof / "host/info.json"
    text = info.read_text().rstrip()
    info.write_text(text[:-1] + ', "DeviceInfo": [1, 2]}')
    out = _outcome(prof)
    assert out.kind == "warning"
    msgs = _warnings(prof)
    assert any("host/info.json" in m and "duplicated key" in m and "DeviceInfo" in m for m in msgs)
    assert any("host/info.json" in m and "DeviceInfo" in m and "not a list of objects" in m for m in msgs)


@pytest.mark.parametrize("replacement", ["directory", "dangling_symlink", "symlink_loop"])
@pytest.mark.parametrize("target", ["host/data/aging.api_event.data.slice_0",
                                    "device_0/data/stars_soc.data.0.slice_1",
                                    "host/data/unaging.additional.hash_dic.slice_0",
                                    "host/host_start.log", "device_0/info.json.0"])
def test_file_replaced_by_something_unreadable(prof: Path, target: str, replacement: str) -> None:
    # was IsADirectoryError / FileNotFoundError / OSError @ parse/reader.py, records/dictionaries.py
    out = _outcome(prof, Mutation("replace", target, {"with": replacement}))
    assert out.kind == "error"
    assert str(prof / target) in out.message
    assert "\n" not in out.message


def _key_index(path: Path, key: str) -> int:
    """The ``pick`` of mutate's meta_value that selects top-level ``key`` of a JSON file."""
    import json

    from tests.fuzz.mutate import _paths

    return _paths(json.loads(path.read_text())).index((key,))


def _warnings(prof: Path) -> list[str]:
    from msprof_py.parse.session import load

    return list(load(prof, use_cache=False).warnings)


def test_empty_collection_end_is_unknown(prof: Path) -> None:
    # found by the campaign: ValueError @ meta.py collection_end_ns (an empty string kept as a value)
    end = prof / "host/end_info"
    text = end.read_text().rstrip()
    end.write_text(text[:-1] + ', "collectionTimeEnd": ""}')
    out = _outcome(prof)
    assert out.kind == "warning"


def test_platform_version_past_64_bits(prof: Path) -> None:
    # found by the campaign: RuntimeWarning (invalid cast) @ export/unified_db.py _i64 (now unified_db_insert.i64)
    info = "device_0/info.json.0"
    out = _outcome(prof, Mutation("meta_value", info, {"pick": _key_index(prof / info, "platform_version"),
                                                       "value": 2**64}))
    assert out.kind == "warning"
    assert any(info in m and "platform_version" in m for m in _warnings(prof))


def test_hash_dic_key_past_64_bits(prof: Path) -> None:
    # found by the campaign: OverflowError @ parse/plausible.py (a dictionary key of 20+ digits)
    dic = prof / "host/data/unaging.additional.hash_dic.slice_0"
    dic.write_bytes(dic.read_bytes() + b"\n99999999999999999999999:Conv2D\n")
    _outcome(prof)


def test_pmu_rows_on_one_device_only() -> None:
    # was IndexError @ export/pmu_export.py db_tables (fuzz campaign on main dd5ab27: the
    # resnet50 2-device collector run with device_1's lpmInfoConv .done emptied and
    # device_0/sample.json renamed): a device with tasks but no PMU rows
    import sqlite3

    import pandas as pd

    from msprof_py.export import pmu_db
    from msprof_py.parse.session import Session

    key = {"stream_id": [1], "task_id": [7], "context_id": [0], "start_ns": [1000]}
    session = Session.from_tables(pmu=pd.DataFrame({"device_id": [0], **key, "aic_mac_ratio": [0.5]}))
    tasks = pd.DataFrame({"device_id": [0, 1], **{k: v * 2 for k, v in key.items()}})
    con = sqlite3.connect(":memory:")
    pmu_db.db_tables(con, session, tasks, [10, 11], lambda name: 5)
    assert con.execute("SELECT globalTaskId, name, value FROM TASK_PMU_INFO").fetchall() == [(10, 5, 0.5)]


def test_aic_frequency_past_64_bits(tmp_path: Path) -> None:
    # was OverflowError @ parse/pmu/freq.py freq_db_rows (100k campaign, case with DeviceInfo
    # aic_frequency = 2**64 on a collected dir that has lpmInfoConv frequency records)
    import json

    from msprof_py.collect import collect

    res = collect("single_op", output=tmp_path / "c", seed=2, fixed_clock=True, iterations=1)
    prof = Path(res.prof_dir)
    assert list((prof / "device_0" / "data").glob("lpmInfoConv.data.*")), "the run must have frequency records"
    info = next((prof / "device_0").glob("info.json*"))
    data = json.loads(info.read_text())
    data["DeviceInfo"][0]["aic_frequency"] = 2**64
    info.write_text(json.dumps(data))
    out = _outcome(prof)
    assert out.kind == "warning"
    assert any(info.name in m and "aic_frequency" in m for m in _warnings(prof))


def test_iteration_spans_near_int64_in_the_advice(tmp_path: Path) -> None:
    # was RuntimeWarning (overflow in scalar multiply) @ analyse/advise/schedule.py bubbles
    # (campaign 8, case 4675 of --seed 20, the first campaign running the advice): 109 bytes
    # inserted into a real 310B capture's stars_soc slice give a task a time near 2**63, so the
    # iteration spans summed near int64's end and 100 * their sum overflowed
    seed = next((FIXTURE.parents[1] / "real" / "310b_fastgelu").glob("PROF_*"))
    prof = fresh_copy(seed, tmp_path / seed.name)
    _outcome(prof, Mutation("insert_chunk", "device_0/data/stars_soc.data.0.slice_0",
                            {"at": 75, "length": 109, "byte": 33}))


def test_pmu_cycle_count_past_int64(tmp_path: Path) -> None:
    # was RuntimeWarning (invalid value in cast) @ parse/pmu/table.py _side (campaign 9, case
    # 17913 of --seed 21, on e36dad5): four bit flips in a real 910B capture's ffts_profile slice
    # give a context PMU record a total cycle count of 2**63 or more, which the int64 cast of
    # total_cycles could not hold
    seed = next((FIXTURE.parents[1] / "real" / "910b_ascendc_add_b1").glob("PROF_*"))
    prof = fresh_copy(seed, tmp_path / seed.name)
    out = _outcome(prof, Mutation("bitflip", "device_0/data/ffts_profile.data.0.slice_0",
                                  {"flips": [[27938, 2], [20519, 7], [28317, 3], [10381, 7]]}))
    assert out.kind in ("warning", "error"), out.kind
    assert any("PMU cycle count(s) of 2**63 or more" in m for m in _warnings(prof))
