"""The parse's counting / in-order shortcuts against the formulations they replaced (kept here
as references): start/end pairing (running maximum instead of a search per end, ranks by
counting), group_codes on a small key space, the categorical helpers of ``cats`` (take,
where, normalize in small code dtypes; concat_rows without a sort when in order) and the C++
HPFloat double (digits by floor division).  Same values, dtypes and warnings."""
from __future__ import annotations

import numpy as np
import pytest
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from msprof_py.errors import WarningLog
from msprof_py.parse import cats, cpp_time, keys
from msprof_py.parse.records import api_event, stars_soc
from msprof_py.raw import stars_soc as raw


def ref_group_codes(*columns):
    cols = [np.asarray(c).astype(np.int64) for c in columns]
    if not len(cols[0]):
        return np.zeros(0, np.int64)
    return pd.factorize(pd.MultiIndex.from_arrays(cols), sort=True)[0].astype(np.int64)


def ref_pair(stream, task, ctx, ts, is_start, tcode, warnings, where):
    key = ref_group_codes(stream, task, ctx)
    order = np.lexsort((~is_start, ts, key))
    k, t, s = key[order], ts[order], is_start[order]
    s_pos, e_pos = np.flatnonzero(s), np.flatnonzero(~s)
    cand = keys.last_le(k[s_pos], t[s_pos], k[e_pos], t[e_pos])
    ok = cand >= 0
    claimed = np.zeros(len(s_pos), bool)
    first_claim = np.zeros(len(e_pos), bool)
    if ok.any():
        uniq, first_idx = np.unique(cand[ok], return_index=True)
        first_claim[np.flatnonzero(ok)[first_idx]] = True
        claimed[uniq] = True
    if (~first_claim).sum() or (~claimed).sum():
        warnings.warn(f"{where}: {int((~claimed).sum())} task start log(s) without an end and "
                      f"{int((~first_claim).sum())} end log(s) without a start dropped (start/end pairing)")
    s_sel, e_sel = order[s_pos[cand[first_claim]]], order[e_pos[first_claim]]
    uniq, inv = np.unique(tcode[s_sel], return_inverse=True)
    names = [raw.FFTS_SUBTASK_TYPES.get(int(c) - 1000, str(int(c) - 1000)) if c >= 1000
             else raw.SQE_TYPES.get(int(c), str(int(c))) for c in uniq]
    o = np.argsort(ts[s_sel], kind="stable")
    return {"stream_id": stream[s_sel].astype(np.int64)[o], "task_id": task[s_sel].astype(np.int64)[o],
            "context_id": ctx[s_sel].astype(np.int64)[o], "start": ts[s_sel][o], "end": ts[e_sel][o],
            "device_task_type": np.array(names, dtype=object)[inv][o] if len(uniq) else np.zeros(0, object)}


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.sampled_from([4294967295, 0, 1]),
                          st.integers(0, 12), st.booleans(), st.sampled_from([0, 1, 5, 63, 1000, 1004, 1255])),
                max_size=40), st.booleans())
@settings(max_examples=400, deadline=None)
def test_pairing_as_before(logs: list, wide: bool) -> None:
    a = np.array(logs, dtype=np.int64).reshape(-1, 6)
    ts = a[:, 3].astype(np.uint64) * np.uint64(2**58 if wide else 1)  # wide: the lexsort path of _order
    args = (a[:, 0].astype(np.uint16), a[:, 1].astype(np.uint16), a[:, 2], ts, a[:, 4].astype(bool), a[:, 5])
    w1, w2 = WarningLog(), WarningLog()
    got = stars_soc.pair(*args, w1, "here")
    want = ref_pair(*args, w2, "here")
    assert w1.messages == w2.messages
    for name, v in want.items():
        g = got[name]
        if name == "device_task_type":
            assert np.asarray(g, dtype=object).tolist() == v.tolist()
            assert list(g.categories) == sorted(set(v.tolist()))
        else:
            assert g.dtype == v.dtype and g.tolist() == v.tolist(), name


@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(0, 70000), st.sampled_from([4294967295, 0, 7])),
                max_size=40))
@settings(max_examples=300, deadline=None)
def test_group_codes_as_a_sorted_factorize(rows: list) -> None:
    a = np.array(rows, dtype=np.int64).reshape(-1, 3)
    cols = [a[:, 0], a[:, 1] % 5, a[:, 2]]  # a small key space (counting) ...
    for c in (cols, [a[:, 0], a[:, 1], a[:, 2]]):  # ... and a wide one (hashing)
        got = keys.group_codes(*c)
        assert got.dtype == np.int64 and got.tolist() == ref_group_codes(*c).tolist()


def ref_take(cat, idx, default):
    c = list(cat.categories) + ([default] if default not in list(cat.categories) else [])
    d = c.index(default)
    src = np.asarray(cat.codes)
    codes = np.full(len(idx), d, np.int32)
    ok = idx >= 0
    if len(src):
        codes[ok] = np.where(src[idx[ok]] >= 0, src[idx[ok]], d)
    return pd.Categorical.from_codes(codes, categories=pd.Index(c, dtype=object))


def ref_where(mask, a, b):
    c = list(dict.fromkeys([*a.categories, *b.categories]))
    remap = np.array([c.index(x) for x in b.categories], dtype=np.int32)
    bc = np.asarray(b.codes)
    b_codes = np.where(bc >= 0, remap[np.maximum(bc, 0)] if len(remap) else -1, -1)
    return pd.Categorical.from_codes(np.where(mask, np.asarray(a.codes), b_codes).astype(np.int32),
                                     categories=pd.Index(c, dtype=object))


def ref_normalize_col(cat):
    labels = np.asarray(cat.categories, dtype=object)
    codes = np.asarray(cat.codes)
    used = np.flatnonzero(np.bincount(codes[codes >= 0], minlength=len(labels)))
    order = np.argsort(labels[used].astype(str), kind="stable")
    remap = np.full(len(labels), -1, np.int32)
    remap[used[order]] = np.arange(len(used), dtype=np.int32)
    new = np.where(codes >= 0, remap[np.maximum(codes, 0)], -1).astype(np.int32)
    return pd.Categorical.from_codes(new, categories=pd.Index(labels[used[order]].astype(str), dtype=object))


def same_cat(x: pd.Categorical, y: pd.Categorical) -> None:
    assert list(x.categories) == list(y.categories) and x.categories.dtype == y.categories.dtype
    assert x.codes.dtype == y.codes.dtype and x.codes.tolist() == y.codes.tolist()


WORDS = ["b", "a", "N/A", "UNKNOWN", "c", 1]


def a_cat(draw_codes: list, labels: list) -> pd.Categorical:
    codes = np.array([c if c < len(labels) else -1 for c in draw_codes], dtype=np.int64)
    return pd.Categorical.from_codes(codes, categories=pd.Index(labels, dtype=object))


labels_st = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5, unique=True)
codes_st = st.lists(st.integers(-1, 5), max_size=25)


@given(labels_st, codes_st, labels_st, st.data())
@settings(max_examples=300, deadline=None)
def test_categorical_helpers_as_before(la: list, ca: list, lb: list, data) -> None:
    a = a_cat(ca, la)
    b = a_cat(data.draw(st.lists(st.integers(-1, 5), min_size=len(ca), max_size=len(ca))), lb)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=len(ca), max_size=len(ca))), dtype=bool)
    same_cat(cats.where(mask, a, b), ref_where(mask, a, b))
    idx = np.array(data.draw(st.lists(st.integers(-1, len(ca) - 1), max_size=25)) if len(ca) else [], np.int64)
    default = data.draw(st.sampled_from(["N/A", "a", "zz"]))
    same_cat(cats.take(a, idx, default), ref_take(a, idx, default))
    df = pd.DataFrame({"x": a, "n": np.arange(len(a))})
    once = cats.normalize(df.copy())
    same_cat(once["x"].array, ref_normalize_col(a))
    same_cat(cats.normalize(once.copy())["x"].array, once["x"].array)  # canonical already: as is


@given(st.lists(st.tuples(st.integers(-1, 2), st.integers(0, 3), st.integers(0, 2)), max_size=30),
       st.integers(1, 3), st.booleans())
@settings(max_examples=300, deadline=None)
def test_concat_rows_sorted_or_in_order_as_before(rows: list, nparts: int, presort: bool) -> None:
    a = np.array(rows, dtype=np.int64).reshape(-1, 3)
    if presort and len(a):
        a = a[np.lexsort((a[:, 2], a[:, 1], a[:, 0]))]
    frames = [pd.DataFrame({"s": p[:, 0], "t": p[:, 1], "u": p[:, 2],
                            "c": pd.Categorical([str(v) for v in p[:, 2]])})
              for p in np.array_split(a, nparts)]
    got = cats.concat_rows(frames, ["s", "t"])
    whole = pd.concat(frames, ignore_index=True)
    want = whole.iloc[np.lexsort((whole["t"], whole["s"]))]
    assert got["u"].tolist() == want["u"].tolist() and got["s"].tolist() == want["s"].tolist()
    assert np.asarray(got["c"], dtype=object).tolist() == np.asarray(want["c"], dtype=object).tolist()


def ref_hp_double(whole, milli):
    ans = np.zeros(len(whole), dtype=np.float64)
    for k, d in ((-3, milli % 10), (-2, (milli // 10) % 10), (-1, milli // 100)):
        ans = ans + d.astype(np.float64) * (10.0 ** k)
    rest, k = whole, 0
    while len(rest) and rest.max() > 0:
        rest, d = np.divmod(rest, 10)
        ans += d * (10.0 ** k)
        k += 1
    return ans


@given(st.lists(st.tuples(st.integers(0, 2**62), st.integers(0, 999)), max_size=30))
@settings(max_examples=300, deadline=None)
def test_hp_double_as_before(vals: list) -> None:
    a = np.array(vals, dtype=np.int64).reshape(-1, 2)
    got, want = cpp_time._hp_double(a[:, 0], a[:, 1]), ref_hp_double(a[:, 0], a[:, 1])
    assert got.tobytes() == want.tobytes()


@given(st.lists(st.tuples(st.sampled_from([0, 1, 2, 2**40, 2**47 - 1, 2**50, 2**64 - 1]),
                          st.sampled_from([0, 5000, 5500, 10000, 15000, 20000, 65535])), max_size=30))
@settings(max_examples=300, deadline=None)
def test_api_time_level_order_as_the_lexsort(recs: list) -> None:
    from msprof_py.parse.records.api_event import _time_level_order

    a = np.array(recs, dtype=np.uint64).reshape(-1, 2)
    begin, level = a[:, 0], a[:, 1].astype(np.uint16)
    want = np.lexsort((np.arange(len(begin)), -level.astype(np.int64), begin))
    assert _time_level_order(begin, level).tolist() == want.tolist()


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 50), st.integers(0, 20), st.sampled_from(
    [20000, 15000, 10000, 5500, 5000, 7])), max_size=40), st.booleans())
@settings(max_examples=300, deadline=None)
def test_call_tree_order_as_the_lexsort(rows: list, wide: bool) -> None:
    from msprof_py.parse.calltree import CallTree

    a = np.array(rows, dtype=np.int64).reshape(-1, 4)
    start = a[:, 1] * (2**56 if wide else 1)  # wide: (thread, start) keys do not fit 62 bits, the lexsort path
    tree = CallTree(a[:, 0], start, start + a[:, 2], a[:, 3])
    for r, got in tree._by_rank.items():
        idx = np.flatnonzero(tree.rank == r)
        assert got.tolist() == idx[np.lexsort((start[idx], a[idx, 0]))].tolist()


@given(st.lists(st.integers(0, 2**40), max_size=30), st.integers(0, 2**40), st.integers(-2**40, 2**40))
@settings(max_examples=300, deadline=None)
def test_cnt_to_decimal_floor_parts(cnts: list, cnt0: int, mono0: int) -> None:
    from fractions import Fraction

    c = np.array(cnts, dtype=np.uint64)
    q, r = cpp_time._cnt_to_decimal(c, cnt0, mono0, Fraction(100))
    diff = c.astype(np.int64) - np.int64(cnt0)
    whole, frac = cpp_time._to_string_6(np.abs(diff).astype(np.float64) / 100.0)
    ps = whole * 1_000_000 + frac
    wq, wr = np.divmod(np.where(diff < 0, -ps, ps), 1000)
    assert q.tolist() == (np.int64(mono0) + wq).tolist() and r.tolist() == wr.tolist()


@given(st.lists(st.integers(0, 2**64 - 1), max_size=30), st.lists(st.integers(0, 2**64 - 1), max_size=10),
       st.sampled_from(["u64", "i64", "mixed"]))
@settings(max_examples=300, deadline=None)
def test_member_as_np_isin(values: list, known: list, kind: str) -> None:
    v = np.array(values, dtype=np.uint64)
    k = np.array(known + values[:2], dtype=np.uint64)  # some hits
    if kind == "i64":
        v, k = v.view(np.int64), k.view(np.int64)
    elif kind == "mixed":
        k = k.astype(np.float64)  # dtypes differ: np.isin itself
    assert keys.member(v, k).tolist() == np.isin(v, k).tolist()


@given(st.lists(st.integers(0, 70000), max_size=30), st.sampled_from([np.uint32, np.int64, np.uint16]))
@settings(max_examples=300, deadline=None)
def test_unique_inverse_as_np_unique(values: list, dtype) -> None:
    v = np.array([x % 65536 if dtype == np.uint16 else x for x in values], dtype=dtype)
    u, inv = keys.unique_inverse(v)
    wu, winv = np.unique(v, return_inverse=True)
    assert u.dtype == wu.dtype and u.tolist() == wu.tolist() and inv.tolist() == winv.tolist()


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5), st.sampled_from([0, 2**32 - 1]),
                          st.integers(-3, 3)), max_size=40),
       st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5), st.sampled_from([0, 2**32 - 1]),
                          st.integers(-3, 3)), max_size=40),
       st.sampled_from([0, 2**40, 2**62, -(2**63)]), st.sampled_from([np.int64, np.uint32]))
@settings(max_examples=300, deadline=None)
def test_first_match_as_the_merge(left: list, right: list, base: int, dtype) -> None:
    """The first right row per key, as ``left.merge(right.drop_duplicates(cols), how="left")``;
    None (the caller merges) where the packed keys would not fit in 63 bits or a column is not
    an integer one."""
    cols = ["s", "t", "c", "ns"]

    def frame(rows: list) -> pd.DataFrame:
        f = pd.DataFrame(rows, columns=cols, dtype=np.int64) if rows else pd.DataFrame({c: np.zeros(0, np.int64)
                                                                                        for c in cols})
        return f.astype({"s": dtype, "t": dtype}).assign(ns=f["ns"].to_numpy(np.int64) * 7 + base)
    a, b = frame(left), frame(right)
    got = keys.first_match([a[c].to_numpy() for c in cols], [b[c].to_numpy() for c in cols])
    want = a.merge(b.assign(_i=np.arange(len(b))).drop_duplicates(cols), on=cols, how="left")["_i"]
    if got is None:
        assert base == -(2**63) and len(a) and len(b)
        return
    assert got.dtype == np.int64 and got.tolist() == want.fillna(-1).astype(np.int64).tolist()


def test_first_match_falls_back_for_floats() -> None:
    assert keys.first_match([np.zeros(2)], [np.zeros(3)]) is None


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(1, 50), st.integers(0, 60),
                          st.sampled_from(["api", "event", "bad"])), max_size=25))
@settings(max_examples=200, deadline=None)
def test_api_event_rows_with_and_without_events(recs: list) -> None:
    """With no event record (and none dropped) the decoded columns are returned as they are,
    otherwise gathered: the same rows and values either way, each column an array of its own."""
    from msprof_py.parse.reader import Decoded, Stream
    from msprof_py.parse.records.parts import DecodeContext, Parts
    from msprof_py.raw import api_event as raw
    from msprof_py.raw.common import EVENT_FLAG

    a = np.zeros(len(recs), raw.DTYPE)
    for i, (lv, th, ty, b, kind) in enumerate(recs):
        end = EVENT_FLAG if kind == "event" else (b - 1 if kind == "bad" and b else b + 5)
        a[i] = (0, lv, ty, th, 7, b, end, 3)
    parts = Parts([Decoded([a], Stream("api_event.data", True), 0, raw.DTYPE)], raw.DTYPE)
    out = api_event.decode(parts, DecodeContext())
    keep = (a["end"] != EVENT_FLAG) & (a["end"] >= a["timestamp"])
    # the API rows, in file order, with their own values; the paired events' start rows among them
    api_pos = np.flatnonzero(keep)
    got_api = ~out["is_event"]
    assert out["start"][got_api].tolist() == a["timestamp"][api_pos].tolist()
    assert out["end"][got_api].tolist() == a["end"][api_pos].tolist()
    assert out["connection_id"][got_api].tolist() == api_pos.tolist()
    assert (out["request_id"][got_api] == -1).all() and (out["request_id"][~got_api] == 7).all()
    assert len({id(v) for v in out.values()}) == len(out)  # no two columns share an array
    assert all(v.base is None or not np.shares_memory(v, a) for v in out.values())


@pytest.mark.parametrize("chunk", [1, 7, 64, 199, 200, 201])
@pytest.mark.parametrize("seed", range(4))
def test_api_time_level_order_in_chunks_as_the_lexsort(chunk: int, seed: int, monkeypatch) -> None:
    """The packed key made in chunks (phase 13): the same order as the lexsort, chunk boundaries
    anywhere (one row, a chunk past the end, exactly the length), ties in begin and level."""
    from msprof_py.parse import cpp_time
    from msprof_py.parse.records.api_event import _time_level_order

    monkeypatch.setattr(cpp_time, "CHUNK", chunk)
    rng = np.random.default_rng(seed)
    n = 200
    begin = (rng.integers(0, 50, n) * (1 if seed % 2 else 10**9)).astype(np.uint64)
    level = rng.choice(np.array([5000, 5500, 10000, 15000, 20000], np.uint16), n)
    want = np.lexsort((np.arange(n), -level.astype(np.int64), begin))
    assert _time_level_order(begin, level).tolist() == want.tolist()
    assert _time_level_order(begin[:0], level[:0]).tolist() == []


@pytest.mark.parametrize("chunk", [1, 5, 99, 100, 101, 1 << 16])
def test_resolve_type_in_chunks_as_before(chunk: int, monkeypatch) -> None:
    """(level, type) names with the key made in chunks (phase 13): the same categorical (codes,
    categories in first-seen order, unknown types as their decimal) as the uint64 key made at once."""
    from msprof_py.parse import cpp_time
    from msprof_py.parse.records.dictionaries import Dictionaries, _resolve

    monkeypatch.setattr(cpp_time, "CHUNK", chunk)
    rng = np.random.default_rng(chunk)
    d = Dictionaries()
    d.types.update({(5000, 1): "launch", (10000, 7): "aclrtSync", (20000, 1): "launch", (5000, 2**32 - 1): "max"})
    n = 100
    levels = rng.choice(np.array([5000, 10000, 15000, 20000, 65535], np.uint16), n)
    types = rng.choice(np.array([1, 2, 7, 2**32 - 1, 12345], np.uint32), n)
    key = (np.asarray(levels, np.uint64) << np.uint64(32)) | np.asarray(types, np.uint64)
    want = _resolve(key, lambda k: d.types.get((k >> 32, k & 0xFFFFFFFF), str(k & 0xFFFFFFFF)))
    got = d.resolve_type(levels, types)
    assert list(got.categories) == list(want.categories)
    assert got.codes.tolist() == want.codes.tolist() and got.codes.dtype == want.codes.dtype
    assert len(d.resolve_type(levels[:0], types[:0])) == 0
