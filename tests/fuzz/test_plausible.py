"""Each plausibility check (msprof_py/parse/plausible.py) on a PROF dir that has the problem,
and the clean seeds that must not trigger any: one warning per kind, naming the first place."""
from __future__ import annotations

import re
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from msprof_py.errors import WarningLog
from msprof_py.parse import plausible, reader
from msprof_py.parse.session import load
from msprof_py.raw import api_event, context_id_info, node_basic_info, stars_soc, task_track

ROOT = Path(__file__).parents[2]
FIXTURE = next((ROOT / "fixtures" / "prof_small").glob("PROF_*"))
REAL = next(p for p in (ROOT / "fixtures" / "real" / "910b_ascendc_add_b1").glob("PROF_*"))
SEEDS = [FIXTURE, *sorted(p for p in (ROOT / "fixtures" / "real").rglob("PROF_*") if p.is_dir())]
TALLY = " found, the first at "


@pytest.fixture
def prof(tmp_path: Path) -> Path:
    return shutil.copytree(FIXTURE, tmp_path / FIXTURE.name)


def _tallies(prof: Path) -> list[str]:
    return [m for m in load(prof, use_cache=False).warnings if TALLY in m]


def _record(prof: Path, side: str, tag: str, dtype: np.dtype, index: int) -> tuple[Path, int]:
    """(slice file, byte offset) of record ``index`` of a stream, as the reader sees it."""
    if side == "host":
        streams = [s for (t, _), s in reader.discover_host(prof / "host" / "data").items() if t == tag]
    else:
        streams = [s for (t, _), s in reader.discover_device(prof / "device_0" / "data").items() if t == tag]
    return reader.read_records(streams[0], dtype, WarningLog(), host=side == "host").where(index)


def _patch(path: Path, offset: int, fmt: str, value: int) -> None:
    data = bytearray(path.read_bytes())
    struct.pack_into(fmt, data, offset, value)
    path.write_bytes(bytes(data))


# a real capture whose host data has no type_info_dic (msprof itself logged "no such table:
# TypeHashInfo" for it): the missing-dictionary warning is right there
EXPECTED = {"310b_addcmul_nodict": ["API records whose type is not in type_info_dic"]}


@pytest.mark.parametrize("seed", SEEDS, ids=lambda p: p.parent.name)
def test_clean_seeds_raise_no_plausibility_warning(seed: Path) -> None:
    got = _tallies(seed)
    want = EXPECTED.get(seed.parent.name, [])
    assert len(got) == len(want) and all(str(g).startswith(w) for g, w in zip(got, want)), got


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Our collector's output (with msprof's .done files), one small run per workload shape."""
    from msprof_py.collect import collect

    out = tmp_path_factory.mktemp("collected")
    return {name: Path(collect(name, output=out / name, seed=1, fixed_clock=True, **kw).prof_dir)
            for name, kw in (("single_op", {"iterations": 1}), ("resnet50", {"iterations": 1, "devices": 2}),
                             ("bert", {"iterations": 1}))}


def test_collected_runs_raise_no_plausibility_warning(collected: dict[str, Path]) -> None:
    for name, prof in collected.items():
        assert _tallies(prof) == [], name


def _api_slice(prof: Path) -> Path:
    return next(p for p in sorted((prof / "host/data").iterdir())
                if p.name.startswith("aging.api_event.data.slice_") and not p.name.endswith(".done"))


def test_copied_slice(tmp_path: Path) -> None:
    # issue #16: a copy of aging.api_event.data.slice_0 saved as slice_500 doubled every api_statistic count
    prof = shutil.copytree(REAL, tmp_path / REAL.name)  # real slices hold whole records
    first = _api_slice(prof)
    shutil.copyfile(first, first.with_name("aging.api_event.data.slice_500"))
    (msg,) = [m for m in _tallies(prof) if "same bytes" in m]
    assert "same bytes as an earlier slice" in msg and "1 found" in msg
    assert f"aging.api_event.data.slice_500 byte 0 (same as {first.name})" in msg


def test_partial_record_between_whole_record_slices(prof: Path) -> None:
    dev = prof / "device_0/data"
    # make the slices hold whole 64-byte STARS logs, then cut 8 bytes from the middle one
    raw = b"".join((dev / f"stars_soc.data.0.slice_{i}").read_bytes() for i in range(4))
    chunks = [raw[:1024], raw[1024:2048], raw[2048:]]
    for i in range(4):
        (dev / f"stars_soc.data.0.slice_{i}").unlink()
    for i, c in enumerate(chunks):
        (dev / f"stars_soc.data.0.slice_{i}").write_bytes(c if i != 1 else c[:-8])
    msgs = [m for m in _tallies(prof) if "partial record" in m]
    assert len(msgs) == 1 and "stars_soc.data.0.slice_1 byte 960" in msgs[0]


def test_slice_size_differs_from_its_done_file(tmp_path: Path) -> None:
    prof = shutil.copytree(REAL, tmp_path / REAL.name)
    data = prof / "host/data"
    slice0 = next(p for p in sorted(data.iterdir()) if p.name.startswith("aging.api_event.data.slice_")
                  and not p.name.endswith(".done"))
    size = slice0.stat().st_size
    slice0.write_bytes(slice0.read_bytes()[: size - api_event.DTYPE.itemsize])  # one whole record less
    (msg,) = [m for m in _tallies(prof) if ".done" in m]
    assert f"{slice0.name} byte {size - 40} ({size - 40} bytes, .done says {size})" in msg


def test_record_declaring_more_ids_than_it_holds(prof: Path) -> None:
    path, off = _record(prof, "host", context_id_info.FILE_TAG, context_id_info.DTYPE, 0)
    _patch(path, off + context_id_info.DTYPE.fields["ctx_id_num"][1], "<I", 1000)
    (msg,) = _tallies(prof)
    assert "ctx_id_num > 55" in msg and f"{path} byte {off}" in msg


def test_api_ending_before_it_starts(prof: Path) -> None:
    path, off = _record(prof, "host", api_event.FILE_TAG, api_event.DTYPE, 3)
    _patch(path, off + api_event.DTYPE.fields["end"][1], "<Q", 1)
    msgs = [m for m in _tallies(prof) if "API calls ending before they start" in m]
    assert len(msgs) == 1 and f"{path} byte {off}" in msgs[0] and "1 found" in msgs[0]


def _stars_index(prof: Path, starts: bool) -> int:
    path, off = _record(prof, "device", stars_soc.FILE_TAG, stars_soc.DTYPE, 0)
    streams = list(reader.discover_device(prof / "device_0/data").values())
    recs = reader.read_records(streams[0], stars_soc.DTYPE, WarningLog(), host=False).records
    func = stars_soc.func_type(recs["word0"])
    want = stars_soc.FUNC_ACSQ_START if starts else stars_soc.FUNC_ACSQ_END
    return int(np.flatnonzero(func == want)[0])


def test_device_task_ending_before_it_starts(prof: Path) -> None:
    # STARS pairing only pairs an end with an earlier start: an end log moved before its start
    # is reported by the pairing (not silent), and check_order guards the int64 durations.
    path, off = _record(prof, "device", stars_soc.FILE_TAG, stars_soc.DTYPE, _stars_index(prof, starts=False))
    _patch(path, off + stars_soc.DTYPE.fields["timestamp"][1], "<Q", 1)
    assert any("end log(s) without a start dropped" in m for m in load(prof, use_cache=False).warnings)
    log = WarningLog()
    plausible.check_order(log, "device tasks", "dev/data/stars_soc.data.0.slice_0", np.array([5, -3, 7, -1]),
                          lambda i: f"stream 2 task {i}")
    assert log.messages == ["device tasks ending before they start: 2 found, the first at "
                            "dev/data/stars_soc.data.0.slice_0 (stream 2 task 1)"]


def test_time_outside_the_collection_window(prof: Path) -> None:
    # a counter 2^50 ticks ahead (a flipped high bit in every log of the first slice: pairs stay pairs)
    streams = list(reader.discover_device(prof / "device_0/data").values())
    n = len(reader.read_records(streams[0], stars_soc.DTYPE, WarningLog(), host=False))
    field = stars_soc.DTYPE.fields["timestamp"][1]
    for i in range(n):
        path, off = _record(prof, "device", stars_soc.FILE_TAG, stars_soc.DTYPE, i)
        if path.name.endswith("slice_0") and off + stars_soc.DTYPE.itemsize <= path.stat().st_size:
            ts = struct.unpack_from("<Q", path.read_bytes(), off + field)[0]
            _patch(path, off + field, "<Q", ts + 2**50)
    msgs = [m for m in _tallies(prof) if "device task starts outside the collection window" in m]
    assert len(msgs) == 1 and "stars_soc.data.0.slice_0 (stream " in msgs[0]


def test_one_warning_per_kind_counts_all(tmp_path: Path) -> None:
    prof = shutil.copytree(REAL, tmp_path / REAL.name)
    first = _api_slice(prof)
    for n in (500, 501, 502):
        shutil.copyfile(first, first.with_name(f"aging.api_event.data.slice_{n}"))
    (msg,) = [m for m in _tallies(prof) if "same bytes" in m]
    assert "3 found" in msg and "slice_500 byte 0" in msg


@pytest.mark.parametrize("dictionary,problem", [
    ("unaging.additional.hash_dic.slice_0", "op records whose name is not in hash_dic"),
    ("unaging.additional.type_info_dic.slice_0", "API records whose type is not in type_info_dic")])
def test_missing_dictionary(prof: Path, dictionary: str, problem: str) -> None:
    # issue #16: deleting hash_dic or type_info_dic sometimes succeeded without a word
    (prof / "host/data" / dictionary).unlink()
    msgs = [m for m in _tallies(prof) if problem in m]
    assert len(msgs) == 1 and "host/data/" in msgs[0] and " byte " in msgs[0]


def test_gap_in_slice_numbers(tmp_path: Path) -> None:
    prof = shutil.copytree(REAL, tmp_path / REAL.name)
    first = _api_slice(prof)
    first.rename(first.with_name("aging.api_event.data.slice_5"))  # slices 1..4 "missing" before it
    shutil.copyfile(first.with_name("aging.api_event.data.slice_5"), first)  # ... and slice_0 back (a copy)
    msgs = [m for m in _tallies(prof) if "gaps in a stream's slice numbers" in m]
    assert len(msgs) == 1 and "4 found" in msgs[0] and "slice_5 byte 0 (slice_1 .. slice_4 missing)" in msgs[0]


def test_kernel_name_missing_from_hash_dic(tmp_path: Path) -> None:
    # an Ascend C kernel launched directly (no node_basic_info): without hash_dic its op name fell
    # back to the runtime type (KERNEL_AIVEC) with no word (fuzz campaign of 2026-11-24)
    prof = shutil.copytree(REAL, tmp_path / REAL.name)
    (prof / "host/data/unaging.additional.hash_dic.slice_0").unlink()
    msgs = [m for m in _tallies(prof) if "runtime task records whose kernel name is not in hash_dic" in m]
    assert len(msgs) == 1 and "aging.compact.task_track.slice_0 byte " in msgs[0]


def test_device_tasks_without_any_host_task(tmp_path: Path) -> None:
    # the host task_track removed: every op name silently became the device task type
    prof = shutil.copytree(REAL, tmp_path / REAL.name)
    (prof / "host/data/aging.compact.task_track.slice_0").unlink()
    msgs = [m for m in load(prof, use_cache=False).warnings if "no host task record for this device" in m]
    assert len(msgs) == 1 and "device_0: " in msgs[0]


@pytest.mark.parametrize("dictionary", ["unaging.additional.hash_dic.slice_0",
                                        "unaging.additional.type_info_dic.slice_0"])
def test_dictionary_cut_short(tmp_path: Path, dictionary: str) -> None:
    # a hash_dic cut inside a name still parsed ("add_kernel" became "add_k"): its .done file says so
    prof = shutil.copytree(REAL, tmp_path / REAL.name)
    path = prof / "host/data" / dictionary
    size = path.stat().st_size
    path.write_bytes(path.read_bytes()[:size - 3])
    msgs = [m for m in _tallies(prof) if "size differs from their .done file" in m]
    assert len(msgs) == 1 and f"{dictionary} byte {size - 3} ({size - 3} bytes, .done says {size})" in msgs[0]


@pytest.mark.parametrize("kind", ["aging.compact.node_basic_info.slice_0", "aging.compact.memcpy_info.slice_0",
                                  "aging.api_event.data.slice_0"])
def test_slice_removed_but_its_done_file_left(collected: dict[str, Path], tmp_path: Path, kind: str) -> None:
    # a whole kind removed (optional kinds, or a run's only api_event slice) decoded as "absent"
    # with no word; msprof's .done marker written after the slice shows that it was there
    src = collected["bert"]
    prof = shutil.copytree(src, tmp_path / src.name)
    (prof / "host/data" / kind).unlink()
    (msg,) = [m for m in _tallies(prof) if "files missing although their .done / .complete marker" in m]
    assert f"1 found, the first at {prof / 'host/data' / kind} (only {kind}.done found)" in msg


def test_renamed_device_slice_leaves_its_done_file(tmp_path: Path) -> None:
    prof = shutil.copytree(REAL, tmp_path / REAL.name)
    dev = prof / "device_0/data"
    (dev / "stars_soc.data.0.slice_0").rename(dev / "stars_soc.data.0.slice_7")
    (msg,) = [m for m in _tallies(prof) if "files missing although their .done / .complete marker" in m]
    assert "1 found" in msg and "device_0/data/stars_soc.data.0.slice_0 (only stars_soc.data.0.slice_0.done" in msg


def _set_log(path: Path, key: str, value: str) -> None:
    path.write_text(re.sub(rf"^{key}:.*$", f"{key}: {value}", path.read_text(), flags=re.M))


@pytest.mark.parametrize("log,key", [("host/host_start.log", "cntvct"), ("device_0/dev_start.log.0", "cntvct"),
                                     ("device_0/host_start.log.0", "clock_monotonic_raw")])
def test_start_log_counter_and_monotonic_clock_disagree(prof: Path, log: str, key: str) -> None:
    # cntvct = 0 shifted every host (device) time by the uptime, an hour on the fixture: inside
    # the window's slack, so nothing else noticed
    _set_log(prof / log, key, "0")
    msgs = [m for m in _tallies(prof) if "counter and monotonic clock disagree" in m]
    assert len(msgs) == 1 and f"{prof / log}: cntvct " in msgs[0], msgs


def test_start_info_and_start_log_far_apart(prof: Path) -> None:
    path = prof / "device_0/start_info.0"
    path.write_text(path.read_text().replace('"clockMonotonicRaw": "3600000000000"', '"clockMonotonicRaw": "0"'))
    (msg,) = [m for m in _tallies(prof) if "start_info and host_start.log taken far apart" in m]
    assert f"{path}: clockMonotonicRaw 0.000 s, host_start.log.0 clock_monotonic_raw 3600.000 s" in msg


def test_real_start_log_with_zeroed_counter(tmp_path: Path) -> None:
    prof = shutil.copytree(REAL, tmp_path / REAL.name)
    _set_log(prof / "host/host_start.log", "cntvct", "0")
    assert any("counter and monotonic clock disagree" in m for m in _tallies(prof))


@pytest.mark.parametrize("name", ["host/sample.json", "device_0/sample.json", "device_0/end_info.0"])
def test_metadata_file_removed_but_its_done_file_left(tmp_path: Path, name: str) -> None:
    # sample.json removed from a real capture changed 400 task types (N/A -> AI_CPU) with no word
    prof = shutil.copytree(REAL, tmp_path / REAL.name)
    (prof / name).unlink()
    (msg,) = [m for m in _tallies(prof) if "files missing although their .done / .complete marker" in m]
    assert f"1 found, the first at {prof / name} (only {Path(name).name}.done found)" in msg


def test_tensor_info_without_node_basic_info(prof: Path) -> None:
    # node_basic_info removed from a dir without .done files (the fixture, old 310B captures):
    # op names and types of every task fell back to the task type with no word
    for p in (prof / "host/data").glob("*.node_basic_info.slice_*"):
        p.unlink()
    (msg,) = [m for m in _tallies(prof) if "raw kinds present without the kind they describe" in m]
    assert "1 found, the first at " in msg and "tensor_info.slice_0 byte 0 (compact.node_basic_info absent)" in msg


def test_op_type_missing_from_hash_dic(prof: Path) -> None:
    # a flipped bit in node_basic_info's op_type: "FastGelu" became a 19-digit number with no word
    path, off = _record(prof, "host", node_basic_info.FILE_TAG, node_basic_info.DTYPE, 0)
    _patch(path, off + node_basic_info.DTYPE.fields["op_type"][1], "<Q", 12345)
    (msg,) = [m for m in _tallies(prof) if "op type is not in hash_dic" in m]
    assert f"1 found, the first at {path} byte {off}" in msg


def test_task_type_missing_from_type_info_dic(tmp_path: Path) -> None:
    # a flipped bit in task_track's task_type: the task's type (and op name) became a number
    prof = shutil.copytree(REAL, tmp_path / REAL.name)
    path, off = _record(prof, "host", task_track.FILE_TAG, task_track.DTYPE, 1)
    _patch(path, off + task_track.DTYPE.fields["task_type"][1], "<I", 0x7FFF)
    (msg,) = [m for m in _tallies(prof) if "task type is not in type_info_dic" in m]
    assert f"1 found, the first at {path} byte {off}" in msg
