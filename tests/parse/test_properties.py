"""Hypothesis properties: decode(encode(records)) through real slice files for every host kind
and the device kinds, and the join invariants on random PROF dirs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from msprof_py.errors import WarningLog
from msprof_py.parse.reader import discover_device, discover_host, read_records
from msprof_py.parse.session import load
from msprof_py.raw import (api_event, context_id_info, fusion_op_info, graph_id_map, hccl_info, hccl_op_info,
                           memcpy_info, node_basic_info, stars_soc, task_track, tensor_info, ts_track)
from msprof_py.raw.common import KNOWN_LEVELS, MAGIC
from msprof_py.raw.files import device_data_name, host_data_name
from tests.parse.gen import random_prof

HOST_KINDS = [api_event, task_track, node_basic_info, memcpy_info, hccl_op_info, tensor_info, context_id_info,
              graph_id_map, fusion_op_info, hccl_info]
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _random_host_records(rng: np.random.Generator, dtype: np.dtype, n: int) -> bytes:
    raw = rng.integers(0, 256, (n, dtype.itemsize), dtype=np.uint8)
    rec = raw.reshape(-1).view(dtype)  # a view: setting fields keeps every other byte
    rec["magic"] = MAGIC
    rec["level"] = rng.choice(KNOWN_LEVELS, n)
    return raw.tobytes()


def _write_slices(folder: Path, name_of, blob: bytes, slice_bytes: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for k, off in enumerate(range(0, len(blob), slice_bytes)):
        (folder / name_of(k)).write_bytes(blob[off:off + slice_bytes])


@SETTINGS
@given(kind=st.sampled_from(HOST_KINDS), n=st.integers(1, 60), slice_bytes=st.integers(7, 5000),
       aging=st.booleans(), torn=st.integers(0, 63), seed=st.integers(0, 2 ** 32 - 1))
def test_host_decode_of_encode_is_identity(tmp_path_factory, kind, n, slice_bytes, aging, torn, seed) -> None:
    rng = np.random.default_rng(seed)
    blob = _random_host_records(rng, kind.DTYPE, n)
    torn = torn % kind.DTYPE.itemsize if aging else 0
    head = rng.integers(0, 256, torn, dtype=np.uint8).tobytes()
    data = tmp_path_factory.mktemp("d")
    _write_slices(data, lambda k: host_data_name(aging, kind.FILE_TAG, k), head + blob, slice_bytes)
    w = WarningLog()
    dec = read_records(discover_host(data)[(kind.FILE_TAG, aging)], kind.DTYPE, w)
    assert dec.records.tobytes() == blob
    assert bool(w) == bool(torn)


@SETTINGS
@given(kind=st.sampled_from(["stars", "ts"]), n=st.integers(1, 80), slice_bytes=st.integers(5, 3000),
       ragged=st.integers(0, 30), seed=st.integers(0, 2 ** 32 - 1))
def test_device_decode_of_encode_is_identity(tmp_path_factory, kind, n, slice_bytes, ragged, seed) -> None:
    rng = np.random.default_rng(seed)
    dtype, tag = (stars_soc.DTYPE, stars_soc.FILE_TAG) if kind == "stars" else (ts_track.PREFIX_DTYPE, ts_track.FILE_TAG)
    blob = rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8).tobytes()
    tail = rng.integers(0, 256, ragged % dtype.itemsize, dtype=np.uint8).tobytes()
    data = tmp_path_factory.mktemp("d")
    _write_slices(data, lambda k: device_data_name(tag, 3, k), blob + tail, slice_bytes)
    w = WarningLog()
    dec = read_records(discover_device(data)[(tag, 3)], dtype, w, host=False)
    assert dec.records.tobytes() == blob
    assert any("truncated record" in m for m in w) == bool(tail)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 31), n_static=st.integers(0, 4), replays=st.integers(1, 3),
       n_dyn=st.integers(1, 16), start_id=st.sampled_from([0, 65531, 65535]), p_drop=st.sampled_from([0.0, 0.25]),
       n_extra=st.integers(0, 2))
def test_join_invariants(tmp_path_factory, seed, n_static, replays, n_dyn, start_id, p_drop, n_extra) -> None:
    prof = random_prof(tmp_path_factory.mktemp("r"), seed, n_static, replays, n_dyn, start_id, p_drop, n_extra)
    s = load(prof, use_cache=False)
    t = s.tasks
    dev = t[t["match"] != "host_only"]
    # durations >= 0; host-only rows are the only ones without a time
    assert (dev["dur_ns"] >= 0).all() and (dev["start_ns"] > 0).all()
    assert (t.loc[t["match"] == "host_only", "start_ns"] == -1).all()
    # per stream, device tasks are ordered in time
    for _, g in dev.groupby("stream_id"):
        assert np.all(np.diff(g["start_ns"].to_numpy()) >= 0)
    # iteration windows of a model are disjoint and ordered
    for _, g in s.steps.groupby(["device_id", "model_id"]):
        g = g.sort_values("index_id")
        assert (g["step_end_ns"] > g["step_start_ns"]).all()
        assert np.all(g["step_start_ns"].to_numpy()[1:] >= g["step_end_ns"].to_numpy()[:-1])
        assert list(g["index_id"]) == list(range(1, len(g) + 1))
    # every device task with op info has exactly one host launch (and a connection id)
    with_op = dev[dev["op_type"] != "N/A"]
    assert (with_op["match"] == "matched").all() and (with_op["connection_id"] >= 0).all()
    # nothing dropped: device rows == paired device logs; host rows all accounted for
    stars = b"".join(p.read_bytes() for p in sorted((prof / "device_0" / "data").glob("stars_soc.*"),
                                                     key=lambda p: int(p.name.rsplit("_", 1)[1])))
    func = np.frombuffer(stars, stars_soc.DTYPE)["word0"] & 0x3F
    assert len(dev) == int(np.isin(func, [stars_soc.FUNC_ACSQ_START, stars_soc.FUNC_FFTS_START]).sum())
    assert len(dev[dev["match"] == "device_only"]) == n_extra
    # a static op replayed R times keeps one host launch for all its device rows
    static = dev[dev["model_id"] == 1]
    if len(static):
        assert static.groupby(["stream_id", "task_id", "context_id"])["connection_id"].nunique().max() == 1


@given(keys=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 2 ** 64 - 1), st.booleans()), max_size=40),
       narrow=st.booleans())
@settings(max_examples=60, deadline=None)
def test_stars_pairing_order_is_the_lexsort(keys, narrow) -> None:
    """The packed single-key sort of STARS logs gives lexsort's order (ties kept in file order),
    also when the time span forces the lexsort fallback."""
    from msprof_py.parse.records.stars_soc import _order

    key = np.array([k for k, _, _ in keys], np.int64)
    ts = np.array([t % 1000 if narrow else t for _, t, _ in keys], np.uint64)
    start = np.array([s for _, _, s in keys], bool)
    assert np.array_equal(_order(key, ts, start), np.lexsort((~start, ts, key)))
