"""The record-kind registry: every kind of the real captures is decoded or reported once as not
used, unknown kinds are named in one warning, a registered kind's table reaches DeviceData."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, strategies as st

from msprof_py.errors import WarningLog
from msprof_py.parse import registry
from msprof_py.parse.device import load_device
from msprof_py.parse.meta import load_result_dir
from msprof_py.parse.records.parts import DecodeContext
from msprof_py.parse.session import load
from msprof_py.raw import stars_soc

REAL_HOST = ["api_event.data", "compact.task_track", "compact.node_basic_info", "additional.tensor_info",
             "additional.context_id_info", "additional.type_info_dic", "additional.hash_dic",
             "compact.expand_stream_spec"]
REAL_DEVICE = ["stars_soc.data", "ffts_profile.data", "ts_track.data", "lpmInfoConv.data"]


def test_every_real_kind_is_registered() -> None:
    for tag in REAL_HOST:
        k = registry.lookup(registry.HOST, tag)
        assert k is not None and (k.decode is not None or k.text is not None), tag
    for tag in REAL_DEVICE:
        assert registry.lookup(registry.DEVICE, tag) is not None, tag


def test_unused_and_unknown_kinds_warn_once(small_prof: Path) -> None:
    data = small_prof / "device_0" / "data"
    (data / "aicore.data.0.slice_0").write_bytes(b"\0" * 128)
    (data / "aiVectorCore.data.0.slice_0").write_bytes(b"\0" * 64)
    (data / "mystery.data.0.slice_0").write_bytes(b"x")
    (small_prof / "host" / "data" / "unaging.compact.brand_new.slice_0").write_bytes(b"\0" * 64)
    s = load(small_prof, use_cache=False)
    unused = [m for m in s.warnings if "not used by msprof_py" in m]
    unknown = [m for m in s.warnings if "unknown raw file kinds" in m]
    assert len(unused) == 1 and "aicore.data" in unused[0] and "aiVectorCore.data" in unused[0]
    assert len(unknown) == 1 and "mystery.data" in unknown[0] and "compact.brand_new" in unknown[0]
    assert len(s.tasks)  # the known kinds were still parsed


def test_clean_fixture_reports_no_kind(small_prof: Path) -> None:
    s = load(small_prof, use_cache=False)
    assert not [m for m in s.warnings if "raw kinds" in m or "raw file kinds" in m]


def test_registered_kind_reaches_device_tables(small_prof: Path) -> None:
    data = small_prof / "device_0" / "data"
    (data / "lpmInfoConv.data.0.slice_0").write_bytes(np.arange(16, dtype="<u4").tobytes())
    dtype = np.dtype([("word", "<u4")])
    kind = registry.Kind(registry.DEVICE, "lpmInfoConv.data", dtype,
                         lambda parts, ctx: {"word": parts.col("word")}, "freq", "test")
    old = registry.lookup(registry.DEVICE, "lpmInfoConv.data")
    registry.register(kind)
    try:
        w = WarningLog()
        dd = load_device(load_result_dir(small_prof / "device_0", w), w)
        assert list(dd.tables["freq"]["word"]) == list(range(16))
        assert not dd.kinds.unused
    finally:
        registry.register(old)


def test_absent_kind_decodes_to_typed_empty_columns(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    r = registry.KindReader(registry.DEVICE, tmp_path / "data", DecodeContext(), device_id=0)
    t = r.get("stars_soc.data")
    assert len(t["start"]) == 0 and t["start"].dtype == np.uint64


@given(st.integers(0, 0x7FFF), st.integers(0, 0xFFFF), st.sampled_from([0, 1, 2, 3, 4, 5, 11]))
def test_expanded_stream_ids_roundtrip(stream: int, task: int, sqe: int) -> None:
    """expand_status 1: a swapped log (bit 15 of the raw stream) decodes back to (stream, task),
    except PLACE_HOLDER / EVENT_RECORD SQEs, which keep the raw ids (low 15 bits of the stream)."""
    raw_stream = np.array([0x8000 | (task & 0x7FFF)])
    raw_task = np.array([stream | (task & 0x8000)])
    s, t = stars_soc.physical_ids(raw_stream, raw_task, 1, np.array([sqe]))
    if sqe in (stars_soc.PLACE_HOLDER_SQE, stars_soc.EVENT_RECORD_SQE):
        assert (int(s[0]), int(t[0])) == (task & 0x7FFF, int(raw_task[0]))
    else:
        assert (int(s[0]), int(t[0])) == (stream, task)
    plain_s, plain_t = stars_soc.physical_ids(np.array([stream]), np.array([task]), 1, np.array([sqe]))
    assert (int(plain_s[0]), int(plain_t[0])) == (stream, task)


def test_mix_log_of_the_real_capture() -> None:
    """PyPTO MIX log on the 910B: raw stream 32769, raw task 46 is stream 46, task 1."""
    s, t = stars_soc.physical_ids(np.array([32769]), np.array([46]), 1, np.array([0]))
    assert (int(s[0]), int(t[0])) == (46, 1)
