"""Sessions: switches, determinism, failure leaves nothing, bad output directories."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from msprof_py.collect import collect, profile
from msprof_py.collect.hooks import CollectorHooks, as_layout
from msprof_py.collect.options import load_options
from msprof_py.errors import InvalidParamError, InvalidPathError, WarningLog
from msprof_py.raw import api_event, common, files, stars_soc, task_track, ts_track
from tests.collect.conftest import Sim, tree_digest
from tests.collect.decode import acsq, api_records, task_tracks, ts_records


def _run(sim: Sim, out: Path, **kw) -> Path:
    kw.setdefault("seed", 3)
    kw.setdefault("fixed_clock", True)
    return collect(sim.target, output=out, devices=kw.pop("devices", 1), iterations=2, runner=sim.run,
                   **kw).prof_dir


def test_same_seed_and_fixed_clock_give_identical_bytes(sim: Sim, tmp_path: Path) -> None:
    a = _run(sim, tmp_path / "a", devices=2)
    b = _run(sim, tmp_path / "b", devices=2)
    assert a.name == b.name
    assert tree_digest(a) == tree_digest(b)
    c = _run(sim, tmp_path / "c", devices=2, seed=4)
    assert tree_digest(a) != tree_digest(c)


def test_task_time_off_drops_task_records(sim: Sim, tmp_path: Path) -> None:
    prof = _run(sim, tmp_path, options={"task_trace": "off"})
    assert not list((prof / "device_0" / "data").glob("stars_soc.*"))
    assert not list((prof / "host" / "data").glob("*task_track*"))
    assert set(ts_records(prof, 0)) == {ts_track.FUNC_STEP_TRACE}
    assert common.LEVEL_RUNTIME in set(api_records(prof)["level"].tolist())


def test_training_trace_off_keeps_flips_drops_step_trace(sim: Sim, tmp_path: Path) -> None:
    prof = _run(sim, tmp_path, options='{"training_trace": "off"}')
    ts = ts_records(prof, 0)
    assert ts_track.FUNC_STEP_TRACE not in ts and ts_track.FUNC_TASK_FLIP in ts
    # the kept flip records are whole (not just their 16-byte prefix)
    assert (ts[ts_track.FUNC_TASK_FLIP]["flip_num"] > 0).all()
    assert len(acsq(prof, 0)[0]) > 0


@pytest.mark.parametrize("switch, level", [("runtime_api", common.LEVEL_RUNTIME), ("ascendcl", common.LEVEL_ACL)])
def test_api_switches_drop_their_level(sim: Sim, tmp_path: Path, switch: str, level: int) -> None:
    prof = _run(sim, tmp_path, options={switch: "off"})
    levels = set(api_records(prof)["level"].tolist())
    assert level not in levels and levels
    assert len(task_tracks(prof)) > 0


def test_sample_json_records_the_switches(sim: Sim, tmp_path: Path) -> None:
    import orjson

    prof = _run(sim, tmp_path, options={"aic_metrics": "Memory", "runtime_api": "off", "task_time": "l0"})
    sample = orjson.loads((prof / "device_0" / "sample.json").read_bytes())
    assert sample["ai_core_metrics"] == sample["aiv_metrics"] == "Memory"
    assert sample["ai_core_profiling_events"] == "0x15,0x16,0x31,0x32,0xf,0x10,0x12,0x13"
    assert sample["runtimeApi"] == "off" and sample["acl"] == "on"
    assert (sample["prof_level"], sample["taskTime"], sample["taskTrace"]) == ("level0", "l0", "l0")


def test_options_output_is_used_when_no_output_given(sim: Sim, tmp_path: Path) -> None:
    res = collect(sim.target, options={"output": str(tmp_path / "via_options")}, runner=sim.run, fixed_clock=True)
    assert res.prof_dir.parent == tmp_path / "via_options"


def test_unknown_fp_point_warns(sim: Sim, tmp_path: Path) -> None:
    warnings = WarningLog()
    collect(sim.target, output=tmp_path, options={"bp_point": "no_such_op"}, runner=sim.run, warnings=warnings)
    assert any("bp_point 'no_such_op'" in w for w in warnings)


def test_second_run_gets_the_next_sequence_number(sim: Sim, tmp_path: Path) -> None:
    a = _run(sim, tmp_path)
    b = _run(sim, tmp_path)
    assert a != b and a.name.startswith("PROF_000001_") and b.name.startswith("PROF_000002_")


class Boom(RuntimeError):
    pass


@pytest.mark.parametrize("exc", [Boom, KeyboardInterrupt])
def test_failure_mid_run_leaves_nothing(sim: Sim, tmp_path: Path, exc: type[BaseException]) -> None:
    def failing(target, **kw):
        sim.run(target, **kw)  # data files are already written when the failure comes
        raise exc("stop")

    with pytest.raises(exc):
        collect(sim.target, output=tmp_path, runner=failing, slice_bytes=100)
    assert list(tmp_path.iterdir()) == []


def test_profile_without_a_run_is_an_error_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(InvalidParamError, match="nothing was profiled"):
        with profile(output=tmp_path):
            pass
    assert list(tmp_path.iterdir()) == []


def test_output_that_is_a_file_is_an_error(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(InvalidPathError, match="file"):
        with profile(output=f):
            pass


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_read_only_output_is_an_error(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(InvalidPathError, match="not writable"):
            with profile(output=ro):
                pass
    finally:
        ro.chmod(0o755)


def test_output_under_a_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(InvalidPathError, match="cannot create output directory"):
        with profile(output=tmp_path / "f" / "sub"):
            pass


def test_no_output_anywhere_is_an_error() -> None:
    with pytest.raises(InvalidParamError, match="no output directory"):
        with profile({"task_trace": "on"}):
            pass


def test_as_layout_restores_offsets_lost_by_concatenate() -> None:
    a = common.new_records(task_track.DTYPE, 2)
    a["task_id"] = [7, 8]
    a["kernel_name"] = [11, 12]
    packed = np.concatenate([a[:1], a[1:]])  # numpy repacks: gaps gone, itemsize shrinks
    assert packed.dtype.itemsize < task_track.DTYPE.itemsize
    fixed = as_layout(task_track.FILE_TAG, packed)
    assert fixed.dtype == task_track.DTYPE and fixed.tobytes() == a.tobytes()
    with pytest.raises(ValueError, match="match no"):
        as_layout(task_track.FILE_TAG, np.zeros(1, dtype=[("bogus", "<u4")]))


def test_hooks_stream_records_into_slices(tmp_path: Path) -> None:
    hooks = CollectorHooks(tmp_path, load_options(None), slice_bytes=50)
    st = np.zeros(3, stars_soc.DTYPE)
    st["timestamp"] = [1, 2, 3]
    hooks.report_device(4, stars_soc.FILE_TAG, st[:2])
    hooks.report_device(4, stars_soc.FILE_TAG, st[2:])
    api = common.new_records(api_event.DTYPE, 1)
    api["level"] = common.LEVEL_ACL
    hooks.report_host(api_event.FILE_TAG, False, api)
    assert hooks.hash_id("Conv2D") == hooks.hash_id("Conv2D")
    hooks.close()
    data = tmp_path / "device_4" / "data"
    names = sorted(p.name for p in data.iterdir() if not p.name.endswith(".done"))
    assert names == [files.device_data_name(stars_soc.FILE_TAG, 4, n) for n in range(4)]
    # every slice has its .done marker with the slice's size, as CANN's collector writes it
    for n in names:
        done = (data / f"{n}.done").read_text()
        assert done == f"filesize:{(data / n).stat().st_size}\nstarttime:0\nendtime  :0\n"
    joined = b"".join((data / n).read_bytes() for n in names)
    st["resv0"] = stars_soc.MAGIC  # the collector stamps the STARS magic the device writes
    assert joined == st.tobytes()
    assert (tmp_path / "host" / "data" / "unaging.api_event.data.slice_0").read_bytes() == api.tobytes()
    assert b":Conv2D\n" in (tmp_path / "host" / "data" / "unaging.additional.hash_dic.slice_0").read_bytes()
