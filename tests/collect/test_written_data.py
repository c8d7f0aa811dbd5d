"""Decode every file the collector wrote and check it against the simulator's own truth."""
from __future__ import annotations

import re

import numpy as np
import orjson
import pandas as pd
import pytest

from msprof_py.collect import CollectResult
from msprof_py.raw import files, stars_soc, task_track, ts_track
from msprof_py.raw.hash_dic import parse_hash_dic, parse_type_dic
from msprof_py.raw.metadata import parse_start_log
from tests.collect.decode import acsq, api_records, host_records, stream_bytes, task_tracks, ts_records

HOST_META = {"info.json", "sample.json", "start_info", "end_info", "host_start.log"}


def test_prof_tree_has_msprof_names(collected: CollectResult) -> None:
    prof = collected.prof_dir
    assert files.PROF_DIR_RE.match(prof.name)
    assert not [p for p in prof.parent.iterdir() if p.name.startswith(".msprof_py_tmp_")]
    assert {p.name for p in prof.iterdir()} == {"host", "device_0", "device_1"}
    host = prof / "host"
    # every file has its .done marker, as in a real capture
    assert {p.name for p in host.iterdir() if p.is_file()} == HOST_META | {f"{n}.done" for n in HOST_META}
    for dev in (0, 1):
        d = prof / f"device_{dev}"
        meta = {f"info.json.{dev}", "sample.json", f"start_info.{dev}", f"end_info.{dev}", f"host_start.log.{dev}",
                f"dev_start.log.{dev}"}
        assert {p.name for p in d.iterdir() if p.is_file()} == meta | {f"{n}.done" for n in meta}
        for p in (d / "data").iterdir():
            m = files.DEVICE_DATA_RE.match(p.name.removesuffix(".done"))
            assert m and int(m.group("dev")) == dev, p.name
    for p in (host / "data").iterdir():
        assert files.HOST_DATA_RE.match(p.name.removesuffix(".done")), p.name
    for name, regex in files.META_RE.items():
        assert any(regex.match(p.name) for p in (prof / "device_0").iterdir()), name


def test_slices_roll_at_the_limit_and_records_straddle(collected: CollectResult) -> None:
    data = collected.prof_dir / "device_0" / "data"
    slices = sorted(data.glob("stars_soc.data.0.slice_*[0-9]"), key=lambda p: int(p.name.rsplit("_", 1)[1]))
    sizes = [p.stat().st_size for p in slices]
    assert len(sizes) > 2 and all(s == 300 for s in sizes[:-1]) and 0 < sizes[-1] <= 300
    assert 300 % stars_soc.RECORD_SIZE != 0  # so some record really is split across two files
    assert sum(sizes) % stars_soc.RECORD_SIZE == 0


def test_every_device_task_has_its_acsq_start_end_pair(collected: CollectResult) -> None:
    truth = collected.sim.truth
    for dev in collected.device_ids:
        starts, ends = acsq(collected.prof_dir, dev)
        t = truth[truth["device_id"] == dev]
        assert len(starts) == len(ends) == len(t)
        assert (starts["resv0"] == stars_soc.MAGIC).all() and (ends["resv0"] == stars_soc.MAGIC).all()
        for logs, col in ((starts, "start_syscnt"), (ends, "end_syscnt")):
            stream, task = stars_soc.physical_ids(logs["stream_id"], logs["task_id"])
            got = pd.DataFrame({"s": stream, "t": task, "ts": logs["timestamp"]}).sort_values(["s", "t", "ts"])
            want = pd.DataFrame({"s": t["stream_id"].to_numpy(np.uint16), "t": t["task_id"].to_numpy(np.uint16),
                                 "ts": t[col].to_numpy(np.uint64)}).sort_values(["s", "t", "ts"])
            np.testing.assert_array_equal(got.to_numpy(), want.to_numpy())


def test_every_launched_task_has_its_task_track(collected: CollectResult) -> None:
    tt = task_tracks(collected.prof_dir)
    launched = tt[tt["task_type"] != task_track.FLIP_TASK]
    have = set(zip(launched["device_id"] & 0x0FFF, launched["stream_id"], launched["task_id"], launched["batch_id"]))
    truth = collected.sim.truth
    want = set(zip(truth["device_id"], truth["stream_id"], truth["task_id"], truth["batch_id"]))
    assert want <= {tuple(int(v) for v in k) for k in have}


def test_step_trace_tags_bracket_every_iteration(collected: CollectResult) -> None:
    truth = collected.sim.truth
    for dev in collected.device_ids:
        steps = ts_records(collected.prof_dir, dev)[ts_track.FUNC_STEP_TRACE]
        t = truth[(truth["device_id"] == dev) & (truth["index_id"] > 0)]
        for (model, index), it in t.groupby(["model_id", "index_id"]):
            tags = steps[(steps["model_id"] == model) & (steps["index_id"] == index)]
            ends = tags[tags["tag_id"] == ts_track.TAG_ITER_END]
            assert len(ends) == 1, (dev, model, index)
            on_stream = it[it["stream_id"] == int(ends["stream_id"][0])]
            assert int(ends["timestamp"][0]) >= int(on_stream["end_syscnt"].max())
            assert int(tags["timestamp"].min()) <= int(on_stream["start_syscnt"].min())


def test_flips_appear_exactly_where_task_ids_wrap(collected: CollectResult) -> None:
    truth = collected.sim.truth
    tt = task_tracks(collected.prof_dir)
    host_flips = tt[tt["task_type"] == task_track.FLIP_TASK]
    total = 0
    for dev in collected.device_ids:
        dev_flips = ts_records(collected.prof_dir, dev).get(ts_track.FUNC_TASK_FLIP, np.zeros(0, ts_track.TASK_FLIP_DTYPE))
        t = truth[truth["device_id"] == dev]
        for stream, st in t.groupby("stream_id"):
            want = sorted(set(st["batch_id"].astype(int)) - {0})
            got = sorted(int(b) for b in dev_flips[(dev_flips["stream_id"] & ts_track.STREAM_ID_MASK) == stream]["flip_num"])
            assert got == want, (dev, stream)
            hf = host_flips[((host_flips["device_id"] & 0x0FFF) == dev) & (host_flips["stream_id"] == stream)]
            assert sorted(int(b) for b in hf["batch_id"]) == want
            total += len(want)
    assert total > 0, "the workload should wrap a task id at least once"


def test_host_records_are_valid_and_names_resolve(collected: CollectResult) -> None:
    prof = collected.prof_dir
    api = api_records(prof)
    assert len(api) > 0
    names, bad = parse_hash_dic(stream_bytes(prof / "host" / "data", "unaging.additional.hash_dic").decode())
    assert not bad
    tt = task_tracks(prof)
    launched = tt[tt["task_type"] != task_track.FLIP_TASK]
    assert set(int(h) for h in np.unique(launched["kernel_name"])) <= set(names)
    op_names = {names[int(h)] for h in np.unique(launched["kernel_name"])}
    assert set(collected.sim.truth["op_name"]) <= op_names
    types, bad = parse_type_dic(stream_bytes(prof / "host" / "data", "unaging.additional.type_info_dic").decode())
    assert not bad and types[(5000, task_track.FLIP_TASK)] == "FLIP_TASK"


def _msprof_monotonic_from_syscnt(syscnt: np.ndarray, dev_dir) -> np.ndarray:
    """msprof-format.md §2.8 (2): device syscnt -> monotonic ns using only the written metadata."""
    dev = int(dev_dir.name.split("_")[1])
    info = orjson.loads((dev_dir / f"info.json.{dev}").read_bytes())
    hwts_mhz = float(info["DeviceInfo"][0]["hwts_frequency"])
    host_mhz = float(info["CPU"][0]["Frequency"])
    host = parse_start_log((dev_dir / f"host_start.log.{dev}").read_text())
    devlog = parse_start_log((dev_dir / f"dev_start.log.{dev}").read_text())
    host_mono = host.clock_monotonic_raw_ns + host.cntvct_diff * 1000 / host_mhz
    return (syscnt.astype(np.float64) - devlog.cntvct) / hwts_mhz * 1000 + host_mono


def test_metadata_maps_device_records_back_to_simulator_time(collected: CollectResult) -> None:
    prof, clock = collected.prof_dir, collected.sim.clock
    truth = collected.sim.truth
    tick_ns = 1000 / clock.hwts_freq_mhz
    for dev in collected.device_ids:
        d = prof / f"device_{dev}"
        start = orjson.loads((d / f"start_info.{dev}").read_bytes())
        offset = int(start["collectionTimeBegin"]) * 1000 - int(start["clockMonotonicRaw"])  # §2.8 (4)
        assert offset == clock.wall_start_us * 1000 - clock.monotonic_start_ns
        starts, _ = acsq(prof, dev)
        # compare on the monotonic clock: local wall-clock ns (~1.8e18) are beyond float64's ns precision
        mono = np.sort(_msprof_monotonic_from_syscnt(starts["timestamp"], d))
        want = np.sort(clock.monotonic_ns(truth[truth["device_id"] == dev]["start_sim_ns"].to_numpy()).astype(np.float64))
        assert np.abs(mono - want).max() < tick_ns  # syscnt is a floor to one hwts tick


def test_metadata_maps_host_records_back_to_simulator_time(collected: CollectResult) -> None:
    prof, clock = collected.prof_dir, collected.sim.clock
    info = orjson.loads((prof / "host" / "info.json").read_bytes())
    host_mhz = float(info["CPU"][0]["Frequency"])
    log = parse_start_log((prof / "host" / "host_start.log").read_text())
    start = orjson.loads((prof / "host" / "start_info").read_bytes())
    tt = task_tracks(prof)
    mono = (tt["timestamp"].astype(np.float64) - log.cntvct) / host_mhz * 1000 + log.clock_monotonic_raw_ns
    sim_ns = mono - int(start["clockMonotonicRaw"])
    # every host record lies inside the run, and converts back to the counter it came from
    assert sim_ns.min() >= 0 and sim_ns.max() <= collected.sim.end_sim_ns
    np.testing.assert_array_equal(clock.host_cnt(np.round(sim_ns).astype(np.int64)), tt["timestamp"])


def test_metadata_formats(collected: CollectResult) -> None:
    prof = collected.prof_dir
    host_info = orjson.loads((prof / "host" / "info.json").read_bytes())
    assert host_info["DeviceInfo"] == [] and host_info["devices"] == ""
    assert (prof / "host" / "info.json").read_bytes().count(b"\n") == 0  # one line
    info = orjson.loads((prof / "device_1" / "info.json.1").read_bytes())
    assert info["devices"] == "1" and info["drvVersion"] >= 467473
    dinfo = info["DeviceInfo"][0]
    assert {"hwts_frequency", "aic_frequency", "ai_core_num", "aiv_num"} <= set(dinfo)
    assert re.fullmatch(r"\d+\.\d{6}", info["CPU"][0]["Frequency"])
    assert float(dinfo["hwts_frequency"]) == collected.sim.spec.hwts_frequency_mhz
    assert info["pid"] == str(collected.sim.pid) and info["platform_version"] == collected.sim.spec.platform_version
    sample = orjson.loads((prof / "device_1" / "sample.json").read_bytes())
    # PipeUtilization on a chip V4 (910B) is collected as PipeUtilizationExct for AI Core, as CANN does
    assert sample["devices"] == "1" and sample["ai_core_metrics"] == "PipeUtilizationExct"
    assert sample["aiv_metrics"] == "PipeUtilization"
    host_log = (prof / "host" / "host_start.log").read_text().splitlines()
    assert host_log[0] == "[Host]" and [ln.split(":")[0] for ln in host_log[1:]] == [
        "clock_monotonic_raw", "cntvct", "cntvct_diff"]
    # msprof's older time-sync parser wants a [Device{N}] section in device_N/host_start.log.N
    assert (prof / "device_1" / "host_start.log.1").read_text().startswith("[Device1]\n")
    dev_log = (prof / "device_0" / "dev_start.log.0").read_text().splitlines()
    assert [ln.split(":")[0] for ln in dev_log] == ["clock_monotonic_raw", "cntvct"]
    assert orjson.loads((prof / "host" / "sample.json").read_bytes())["devices"] == "64"
    start = orjson.loads((prof / "device_0" / "start_info.0").read_bytes())
    end = orjson.loads((prof / "device_0" / "end_info.0").read_bytes())
    assert int(end["collectionTimeEnd"]) > int(start["collectionTimeBegin"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}", start["collectionDateBegin"])


@pytest.mark.parametrize("tag", ["compact.task_track", "api_event.data"])
def test_host_streams_decode_whole(collected: CollectResult, tag: str) -> None:
    from msprof_py.raw import api_event
    dtype = task_track.DTYPE if tag == "compact.task_track" else api_event.DTYPE
    assert len(host_records(collected.prof_dir, tag, dtype)) > 0
