"""What we write next to the raw data matches a real capture, so msprof's analyses accept our PROF dirs.

The reference is the real Ascend 910B / CANN 9.0 capture in ``fixtures/real/910b_ascendc_add_b1``
(origin in fixtures/real/README.md): the same keys with the same JSON types in sample.json and
info.json, the same start-log lines, a ``.done`` marker next to every file.  msprof's C++ analysis
refuses a PROF dir whose sample.json lacks a key it reads ("JSON parameter loading failed").
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from msprof_py.collect import CollectResult

REAL = next((Path(__file__).resolve().parents[2] / "fixtures" / "real" / "910b_ascendc_add_b1").glob("PROF_*"))


def _json(path: Path) -> Any:
    return orjson.loads(path.read_bytes())


def _types(obj: dict[str, Any]) -> dict[str, str]:
    return {k: type(v).__name__ for k, v in obj.items()}


@pytest.mark.parametrize("side", ["host", "device_0", "device_1"])
def test_sample_json_has_the_keys_types_and_order_of_a_real_capture(collected: CollectResult, side: str) -> None:
    real = _json(REAL / ("host" if side == "host" else "device_0") / "sample.json")
    ours = _json(collected.prof_dir / side / "sample.json")
    assert list(ours) == list(real)  # 131 keys, in the capture's order
    assert _types(ours) == _types(real)
    # the keys msprof's C++ loader reads, by name (it refused our dirs without them)
    for key in ("llc_profiling", "ai_core_profiling_events", "aicore_sampling_interval", "aiv_profiling_events",
                "aiv_sampling_interval", "aiv_metrics", "ai_core_profiling_mode", "aiv_profiling_mode"):
        assert key in ours and ours[key] != "", key
    dev = "64" if side == "host" else side.removeprefix("device_")
    assert (ours["devices"], ours["job_id"], ours["hostProfiling"]) == (dev, dev, side == "host")
    assert ours["result_dir"] == f"{collected.prof_dir.name}/{side}/"  # fixed clock: no machine path


def test_sample_json_pmu_events_follow_the_metrics(collected: CollectResult) -> None:
    ours = _json(collected.prof_dir / "device_0" / "sample.json")
    real = _json(REAL / "device_0" / "sample.json")
    # default PipeUtilization on a 910B: AI Core collects PipeUtilizationExct, AI Vector PipeUtilization
    for key in ("ai_core_metrics", "ai_core_profiling_events", "aiv_metrics", "aiv_profiling_events"):
        assert ours[key] == real[key], key
    assert ours["prof_level"] == "level1" and ours["taskTime"] == "l1"  # task_time "on" (real: l0 capture)


@pytest.mark.parametrize("side, name", [("host", "info.json"), ("device_1", "info.json.1")])
def test_info_json_has_the_keys_and_types_of_a_real_capture(collected: CollectResult, side: str, name: str) -> None:
    real = _json(REAL / ("host/info.json" if side == "host" else "device_0/info.json.0"))
    ours = _json(collected.prof_dir / side / name)
    assert list(ours) == list(real) and _types(ours) == _types(real)
    assert _types(ours["CPU"][0]) == _types(real["CPU"][0])
    if side == "host":
        assert ours["DeviceInfo"] == [] and ours["devices"] == ""
    else:
        assert len(ours["DeviceInfo"]) == 1 and ours["devices"] == "1"
        assert list(ours["DeviceInfo"][0]) == list(real["DeviceInfo"][0])
        assert _types(ours["DeviceInfo"][0]) == _types(real["DeviceInfo"][0])


def test_start_logs_and_infos_have_the_lines_and_keys_of_a_real_capture(collected: CollectResult) -> None:
    def keys(path: Path) -> list[str]:
        return [ln.split(":")[0] for ln in path.read_text().splitlines()]

    ours, real = collected.prof_dir, REAL
    assert keys(ours / "host" / "host_start.log") == keys(real / "host" / "host_start.log")
    assert keys(ours / "device_0" / "host_start.log.0") == keys(real / "device_0" / "host_start.log.0")
    assert keys(ours / "device_0" / "dev_start.log.0") == keys(real / "device_0" / "dev_start.log.0")
    for name in ("start_info", "end_info"):
        assert set(_json(ours / "host" / name)) == set(_json(real / "host" / name))
        assert _types(_json(ours / "device_0" / f"{name}.0")) == _types(_json(real / "device_0" / f"{name}.0"))


def test_every_file_has_its_done_marker_as_in_a_real_capture(collected: CollectResult) -> None:
    real_meta = {p.name for p in (REAL / "device_0").iterdir() if p.name.endswith(".done")}
    ours_meta = {p.name for p in (collected.prof_dir / "device_0").iterdir() if p.name.endswith(".done")}
    assert ours_meta == real_meta  # the six metadata files of a device dir
    for p in collected.prof_dir.rglob("*"):
        if p.is_file() and not p.name.endswith(".done"):
            done = p.with_name(p.name + ".done").read_text()
            size = f"filesize:{p.stat().st_size}\n"
            assert done == (size + "starttime:0\nendtime  :0\n" if p.parent.name == "data" else size), p


def test_communication_ops_are_named_and_typed_as_msprof_names_them(collected: CollectResult,
                                                                       tmp_path: Path) -> None:
    """msprof's Python and C++ analyses, run on a resnet50 x2 collection, named the all-reduce runs
    ``hcom_allReduce__673_{segment}_1_107_{call index}_{iteration}``, type HcomAllReduce (107: the last
    digits of the group's hash number 5620865283657120107)."""
    import msprof_py

    prof = tmp_path / collected.prof_dir.name
    shutil.copytree(collected.prof_dir, prof)  # the session-wide collection stays untouched
    comm = msprof_py.load(prof).communication
    assert set(comm["op_type"].astype(str)) == {"HcomAllReduce"}
    for dev in (0, 1):
        names = sorted(comm.loc[comm["device_id"] == dev, "op_name"].astype(str))
        assert names == sorted(f"hcom_allReduce__673_{seg}_1_107_{seg}_{it}" for seg in (0, 1) for it in (1, 2, 3))


def test_every_hccl_sub_task_has_its_own_hccl_api(collected: CollectResult, tmp_path: Path) -> None:
    """HCCL reports one HCCL-level API per sub-task around its hccl_info and launch: msprof (both
    analyses) gives each task under an HCCL API all of that API's hccl_info records keyed by context
    id, so with one API per op every plane event took one record's name (all ``Notify_Wait``).
    The sub-tasks of one Node launch are still one communication op."""
    import msprof_py

    prof = tmp_path / collected.prof_dir.name
    shutil.copytree(collected.prof_dir, prof)
    s = msprof_py.load(prof)
    api = s.api[s.api["level"].astype(str) == "communication"]
    tasks = s.comm_tasks
    # each sub-task is launched once (at model load) under its own API and replayed every iteration
    assert len(api) == len(tasks[["device_id", "stream_id", "task_id"]].drop_duplicates()) > 0
    assert set(tasks["task_type"].astype(str)) == {"Memcpy", "Notify_Record", "Notify_Wait", "Reduce_Inline"}
    per_op = tasks.groupby(["device_id", "op_name"]).size()
    assert len(per_op) == len(s.communication) and per_op.nunique() == 1


def test_reduce_slices_are_numbered_over_all_devices_as_msprof_cpp_does(collected: CollectResult,
                                                                         tmp_path: Path) -> None:
    """msprof's C++ timeline names the Step Trace all-reduce slices ``Reduce_{iteration}_{k}`` with
    one running ``k`` over every device (device 0's first, then device 1's), seen on a resnet50 x2."""
    from msprof_py.export.runner import ExportOptions, export

    prof = tmp_path / collected.prof_dir.name
    shutil.copytree(collected.prof_dir, prof)
    export(prof, ExportOptions())
    out = prof / "mindstudio_profiler_output"
    names = [[e["name"] for e in _json(out / f"msprof_{d}.json") if e.get("cat") == "Reduce"] for d in (0, 1)]
    assert names[0] and len(names[0]) == len(names[1])
    ks = [int(n.rsplit("_", 1)[1]) for n in names[0] + names[1]]
    assert sorted(ks) == list(range(len(ks)))
