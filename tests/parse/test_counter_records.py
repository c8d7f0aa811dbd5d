"""aicpu.data, l2_cache.data and additional.msproftx decoders on arbitrary bytes (hypothesis):
never raise, one row per whole record, node / dp split by type, unknown types warned once."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings, strategies as st

from msprof_py.errors import WarningLog
from msprof_py.parse.reader import Stream, read_records
from msprof_py.parse.records import aicpu, l2_cache, msproftx
from msprof_py.parse.records.parts import DecodeContext, Parts
from msprof_py.raw import aicpu as raw_aicpu, l2_cache as raw_l2, msproftx as raw_tx


def _parts(tmp: Path, name: str, data: bytes, dtype: np.dtype, host: bool = False):
    p = tmp / name
    p.write_bytes(data)
    w = WarningLog()
    tag = name.rsplit(".", 1)[0] if host else name.rsplit(".", 2)[0]
    dec = read_records(Stream(tag, None, [p]), dtype, w, host=host)
    return Parts([dec], dtype, str(p)), DecodeContext(warnings=w)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.binary(min_size=256, max_size=256)), max_size=6),
       st.binary(max_size=255))
def test_aicpu_any_bytes(tmp_path_factory, records, tail) -> None:
    data = b"".join(bytes([0x5A, 0x5A, 0x70, 0x17]) + t.to_bytes(4, "little") + body[8:] for t, body in records)
    parts, ctx = _parts(tmp_path_factory.mktemp("a"), "aicpu.data.0.slice_0", data + tail, raw_aicpu.NODE_DTYPE)
    out = aicpu.decode(parts, ctx)
    types = [t for t, _ in records]
    assert len(out["node"]["stream_id"]) == types.count(0) and len(out["dp"]["action"]) == types.count(1)
    assert all(len(v) == types.count(0) for v in out["node"].values())
    assert all(isinstance(a, str) for a in out["dp"]["action"]) and all(isinstance(s, str) for s in out["dp"]["source"])
    other = sum(t > 1 for t in types)
    assert (sum("of other types" in m for m in ctx.warnings.messages) == 1) == (other > 0)


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=72 * 5 + 71))
def test_l2_any_bytes(tmp_path_factory, data) -> None:
    parts, ctx = _parts(tmp_path_factory.mktemp("l"), "l2_cache.data.0.slice_0", data, raw_l2.DTYPE)
    out = l2_cache.decode(parts, ctx)
    assert out["events"].shape == (len(data) // 72, 8) and len(out["task_id"]) == len(data) // 72


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.binary(min_size=156, max_size=156)), max_size=5))
def test_msproftx_any_message(tmp_path_factory, rows) -> None:
    a = np.zeros(len(rows), raw_tx.DTYPE)
    a["magic"], a["level"], a["data_len"] = 0x5A5A, raw_tx.LEVEL, 232
    for i, (ev, msg) in enumerate(rows):
        a[i]["event_type"], a[i]["message"] = ev, msg
    parts, ctx = _parts(tmp_path_factory.mktemp("t"), "aging.additional.msproftx.slice_0", a.tobytes(), raw_tx.DTYPE,
                        host=True)
    out = msproftx.decode(parts, ctx)
    assert list(out["event_type"]) == [raw_tx.EVENT_NAMES.get(ev, "") for ev, _ in rows]
    assert list(out["message"]) == [m.split(b"\0", 1)[0].decode("utf-8", "ignore") for _, m in rows]
    assert list(out["domain"]) == ["invalid"] * len(rows)
