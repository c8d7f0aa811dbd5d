"""PMU decoding, msprof's task matching and metric formulas, AI Core frequency.

Expected strings come from msprof's own op_summary of the real captures in shared/realdata
(BobbyWeng/cannbot-ascendc-vs-pypto@2da58fc add_pypto_b1 / add_ascendc_b1 and
hansheng1001/AscendCContest@4904517 01Addcmul): the counters below are the first context PMU
record of each capture, copied by hand.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
from hypothesis import given, settings, strategies as st

from msprof_py.errors import WarningLog
from msprof_py.export import pmu_export
from msprof_py.export.table_writer import Col, csv_texts
from msprof_py.parse.pmu import assoc, freq as freq_table, metrics as M
from msprof_py.parse.reader import Stream, read_records
from msprof_py.parse.records.parts import DecodeContext, Parts
from msprof_py.parse.records import ffts_profile, lpm_info
from msprof_py.raw import ffts_profile as raw, lpm_info as raw_lpm

INVALID = 4294967295


def records(rows: list[dict]) -> np.ndarray:
    a = np.zeros(len(rows), raw.DTYPE)
    for i, r in enumerate(rows):
        a[i]["word0"] = raw.pack_word0(r.get("func", raw.FUNC_CONTEXT_PMU), i)
        a[i]["stream_id"], a[i]["task_id"] = r["stream"], r["task"]
        a[i]["word5"] = r.get("sub", 0) | (r.get("ov", 0) << 10)
        a[i]["sub_task_id"] = r.get("ctx", 0)
        a[i]["word7"] = (r.get("ffts", 0) << 13) | r.get("core", 0)
        a[i]["total_cycle"] = r.get("cyc", 100)
        a[i]["pmu"] = r.get("pmu", [1] * 8)
        a[i]["start"], a[i]["end"] = r.get("start", 0), r["end"]
    return a


def decoded(tmp_path: Path, arr: np.ndarray, name: str = "ffts_profile.data.0.slice_0", extra: bytes = b""):
    p = tmp_path / name
    p.write_bytes(arr.tobytes() + extra)
    w = WarningLog()
    dec = read_records(Stream(name.rsplit(".", 2)[0], None, [p]), arr.dtype, w, host=False)
    return Parts([dec], arr.dtype, str(p)), DecodeContext(warnings=w)


def test_decode_kinds_and_bad_records(tmp_path: Path) -> None:
    arr = records([
        {"stream": 46, "task": 0, "ffts": 1, "end": 10},  # plain AIV task
        {"stream": 46, "task": 1, "ffts": 4, "sub": 6, "ctx": 3, "end": 20},  # MIX_AIC context 3
        {"stream": 46, "task": 1, "ffts": 4, "sub": 6, "ctx": 3, "func": raw.FUNC_BLOCK_PMU, "core": 1, "end": 21},
        {"stream": 46, "task": 2, "ffts": 0, "ov": 1, "end": 30},  # overflow: dropped
        {"stream": 46, "task": 3, "func": 12, "end": 40},  # unknown func type: dropped
    ])
    dec, ctx = decoded(tmp_path, arr, extra=b"\x01" * 7)
    rec = ffts_profile.decode(dec, ctx)
    w = ctx.warnings
    assert rec["is_block"].tolist() == [False, False, True]
    assert rec["accel"].tolist() == [ffts_profile.AIV, ffts_profile.MIX_AIC, ffts_profile.MIX_AIC]
    assert rec["context_id"].tolist() == [INVALID, 3, 3]
    assert rec["core_type"].tolist()[2] == 1
    text = "\n".join(w.messages)
    assert "truncated record (7 of 128 bytes)" in text
    assert "overflow" in text and "unknown func type 12" in text


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2047), st.integers(0, 65535), st.integers(0, 2 ** 40),
                          st.lists(st.integers(0, 2 ** 48), min_size=8, max_size=8)), min_size=1, max_size=20))
def test_decode_roundtrip(tmp_path_factory, rows) -> None:
    arr = records([{"stream": s, "task": t, "cyc": c, "pmu": p, "end": 5} for s, t, c, p in rows])
    dec, ctx = decoded(tmp_path_factory.mktemp("r"), arr)
    rec = ffts_profile.decode(dec, ctx)
    assert rec["stream_id"].tolist() == [s for s, *_ in rows]
    assert rec["task_id"].tolist() == [t for _, t, *_ in rows]
    assert rec["total_cycle"].tolist() == [c for *_, c, _ in rows]
    assert rec["pmu"].tolist() == [p for *_, p in rows]


def test_association_follows_msprof_walk() -> None:
    tasks = {"stream_id": np.array([1, 1, 1, 2]), "task_id": np.array([5, 5, 5, 5]),
             "context_id": np.full(4, INVALID), "start": np.array([100, 200, 300, 100], np.uint64),
             "end": np.array([150, 250, 350, 150], np.uint64)}
    rec = {"is_block": np.zeros(5, bool), "stream_id": np.array([1, 1, 1, 1, 2]), "task_id": np.full(5, 5),
           "context_id": np.full(5, INVALID), "accel": np.zeros(5, np.int8), "core_type": np.zeros(5, np.int8),
           "total_cycle": np.arange(5, dtype=np.uint64), "pmu": np.zeros((5, 8), np.uint64),
           "start": np.zeros(5, np.uint64),
           # 140 -> task 0; 160 in no window; 240 and 245 both in task 1 (first wins); 120 -> stream 2's task
           "end": np.array([140, 160, 240, 245, 120], np.uint64)}
    w = WarningLog()
    ctx, block = assoc.associate(rec, tasks, w, "x")
    assert dict(zip(ctx["task"], ctx["total_cycle"])) == {0: 0, 1: 2, 3: 4}
    assert "2 context PMU record(s) match no task" not in " ".join(w.messages)
    assert "1 context PMU record(s) match no task" in " ".join(w.messages)
    assert block.empty


def _fmt(vals: dict, names: list[str]) -> list[str]:
    out = []
    for n in names:
        v = np.asarray([vals[n][0]])
        out.append(str(int(v[0])) if "cycle" in n else str(pmu_export.sqlite_real_text(v)[0]))
    return out


def test_pipe_utilization_exct_real_910b_record() -> None:
    """add_pypto_b1, stream 46 task 1 (MIX_AIC, block num 0): msprof's op_summary row."""
    ev = M.parse_events("0x416,0x417,0x9,0x302,0xc,0x303,0x54,0x55")
    cnt = np.array([[0, 0, 3771020, 40, 40, 20, 274271, 1319]], np.float64)
    cyc = np.array([4009343.0])
    t = M.total_time_us(cyc, np.array([1650e6]), np.array([0]), 20)
    vals = M.compute("PipeUtilizationExct", cnt, ev, cyc, t, 1650e6)
    names = list(vals)
    assert [M.summary_header(n) for n in names] == [
        "mac_time(us)", "mac_ratio", "scalar_time(us)", "scalar_ratio", "mte1_time(us)", "mte1_ratio",
        "mte2_time(us)", "mte2_ratio", "fixpipe_time(us)", "fixpipe_ratio", "icache_miss_rate"]
    assert _fmt(vals, names) == ["0.0", "0.0", "0.0", "0.941", "0.0", "0.0", "0.0", "0.0", "0.0", "0.0", "0.005"]
    # cube_utilization: cycles / (1650 MHz * 20 cores) * 100 / 132.123 us
    base = np.array([4009343 / (1650 * 20) * 100])
    col = pmu_export._cube_usage(base, np.array([True]), 1, np.array([0]), np.array([132123]))
    assert csv_texts(col) == ["91.956"]


def test_pipe_utilization_aiv_real_910b_record() -> None:
    """add_ascendc_b1, stream 46 task 0 (AIV): aiv_ columns of msprof's op_summary."""
    ev = M.parse_events("0x8,0xa,0x9,0xb,0xc,0xd,0x54,0x55")
    cnt = np.array([[6012, 0, 51516, 0, 110258, 19716, 3513, 480]], np.float64)
    cyc = np.array([229458.0])
    vals = M.compute("PipeUtilization", cnt, ev, cyc, np.zeros(1), 1650e6)
    got = dict(zip(vals, _fmt(vals, list(vals))))
    assert (got["vec_ratio"], got["scalar_ratio"], got["mte2_ratio"], got["mte3_ratio"], got["icache_miss_rate"]) \
        == ("0.026", "0.225", "0.481", "0.086", "0.137")
    assert got["vec_time"] == "0.0"  # block num 0 -> total time 0, as in msprof


def test_total_time_and_bandwidth_formulas() -> None:
    # 1650 cycles at 1650 MHz = 1 us; 40 blocks on 20 cores = 2 waves -> 1 / 40 * 2
    assert M.total_time_us(np.array([1650.0]), np.array([1650e6]), np.array([40]), 20)[0] == 1 / 40 * 2
    ev = M.DEFAULT_EVENTS["Memory"]
    cnt = np.zeros((1, 8))
    cnt[0, ev.index(0x12)] = 1000  # main_mem_read_bw: 1000 * 8 * 8 / (cyc / f) / 2^33
    v = M.compute("Memory", cnt, ev, np.array([1650.0]), np.ones(1), 1650e6)
    assert np.isclose(v["main_mem_read_bw"][0], 1000 * 64 / (1650 / 1650e6) / 2 ** 33)
    assert list(M.compute("MemoryAccess", np.ones((1, 8)), M.DEFAULT_EVENTS["MemoryAccess"], np.ones(1),
                          np.ones(1), 1.0)) == ["read_main_memory_datas", "write_main_memory_datas", "GM_to_L1_datas",
                                                "L0C_to_L1_datas", "L0C_to_GM_datas", "GM_to_UB_datas",
                                                "UB_to_GM_datas"]
    for name in M.METRIC_SETS:  # every set computes from its default events without error
        out = M.compute(name, np.ones((2, 8)), M.DEFAULT_EVENTS[name], np.array([10.0, 0.0]), np.ones(2), 1e9)
        no_cyc = {m.name for m in M.CALCULATORS[name] if m.kind in ("sum", "add", "sub")}  # msprof: no cycles used
        assert all(np.isfinite(v).all() and (k in no_cyc or v[1] == 0) for k, v in out.items())


def test_legacy_path_real_310b_record(tmp_path: Path) -> None:
    """01Addcmul (310B, PipelineExecuteUtilization, 1250 MHz, block 1, 1 core): msprof's row
    ``6.84,8556,0.724,0.106,0.0,0.0,2.936,0.429,0.003,0.0,3.409,0.498,0.978,0.143,0.001,0.0,4.698``."""
    from msprof_py.parse.pmu import table

    rd = SimpleNamespace(sample={"ai_core_metrics": "PipelineExecuteUtilization",
                                 "ai_core_profiling_events": "0x12c,0x49,0x4a,0x9,0x302,0xc,0xd,0x303"},
                         info={"platform_version": "7", "DeviceInfo": [{"ai_core_num": 1, "aic_frequency": "1250"}]},
                         path=tmp_path)
    ctx = pd.DataFrame({"task": [0], "accel": [0], "total_cycle": np.array([8556], np.uint64),
                        "end": np.array([5], np.uint64), "stream_id": [1], "task_id": [0], "context_id": [INVALID],
                        "start_ns": [10], **{f"pmu{i}": [v] for i, v in enumerate([906, 0, 0, 3672, 4, 4264, 1223, 1])}})
    tasks = pd.DataFrame({"stream_id": [1], "task_id": [0], "context_id": [INVALID], "start_ns": [10],
                          "block_num": [1], "mix_block_num": [0]})
    p = table.build(0, rd, table.DevicePmu(ctx, ctx.iloc[:0]), tasks, WarningLog())
    session = SimpleNamespace(pmu=p)
    h, cols = pmu_export.op_summary_columns(session, 0, tasks, 1, np.array([0, 1]), np.array([18542, 5]))
    assert h == ["aicore_time(us)", "total_cycles", "vec_exe_time(us)", "vec_exe_ratio", "mac_exe_time(us)",
                 "mac_exe_ratio", "scalar_exe_time(us)", "scalar_exe_ratio", "mte1_exe_time(us)", "mte1_exe_ratio",
                 "mte2_exe_time(us)", "mte2_exe_ratio", "mte3_exe_time(us)", "mte3_exe_ratio",
                 "fixpipe_exe_time(us)", "fixpipe_exe_ratio", "memory_bound"]
    texts = [csv_texts(c) for c in cols]
    row0 = [t[0] for t in texts]
    assert ",".join(row0) == "6.84,8556,0.724,0.106,0.0,0.0,2.936,0.429,0.003,0.0,3.409,0.498,0.978,0.143,0.001,0.0,4.698"
    assert {t[1] for t in texts} == {"N/A"}  # a row without PMU (communication)


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=0, max_value=1e9, allow_nan=False))
def test_real_text_is_sqlite_round(x: float) -> None:
    con = sqlite3.connect(":memory:")
    want = con.execute("SELECT CAST(ROUND(?, 3) AS TEXT)", (x,)).fetchone()[0]
    assert pmu_export.sqlite_real_text(np.array([x]))[0] == want


def test_freq_table_as_msprof(tmp_path: Path) -> None:
    """freq.db rows and AICORE_FREQ rows: start/end frame, pre-start samples only set the start."""
    sc, f = freq_table.freq_db_rows(1000, 1650, np.array([10, 900, 1200, 1500]), np.array([800, 1650, 800, 1650]))
    assert sc.tolist() == [1000, 1200, 1500] and f.tolist() == [1650, 800, 1650]
    rd = SimpleNamespace(info={"platform_version": "5", "DeviceInfo": [{"aic_frequency": "1650"}]},
                         dev_start=SimpleNamespace(cntvct=1000), collection_start_ns=1_000_000,
                         collection_end_ns=9_000_000,
                         device_ticks=lambda: SimpleNamespace(point_ns=lambda c: np.asarray(c, np.int64) * 1000))
    df = freq_table.build(0, rd, np.array([1200, 1500], np.uint64), np.array([800, 1650]))
    assert df[["timestamp_ns", "freq_mhz"]].values.tolist() == [
        [1_000_000, 1650], [1_000_000, 1650], [1_200_000, 800], [1_500_000, 1650], [9_000_000, 1650]]
    rd.info["platform_version"] = "2"
    assert freq_table.build(0, rd, np.zeros(0), np.zeros(0)).empty


def test_lpm_decode_clamps_count(tmp_path: Path) -> None:
    a = np.zeros(2, raw_lpm.DTYPE)
    a[0]["count"], a[0]["type"] = 2, raw_lpm.TYPE_AIC_FREQ
    a[0]["entries"]["syscnt"][:2] = [5, 6]
    a[0]["entries"]["value"][:2] = [800, 1650]
    a[1]["count"], a[1]["type"] = 99, raw_lpm.TYPE_AIC_VOLTAGE
    dec, ctx = decoded(tmp_path, a, "lpmInfoConv.data.0.slice_0")
    f = lpm_info.decode_info(dec, ctx)
    assert f["syscnt"].tolist() == [5, 6] and f["freq_mhz"].tolist() == [800, 1650]
    assert "more than 55 entries" in " ".join(ctx.warnings.messages)


def test_freq_start_row_at_msprofs_float_cntvct() -> None:
    """msprof's FreqParser holds dev_start.log's cntvct as float seconds: the start row of a real
    910B capture (div_torch_b1) is at cntvct - 1; a cntvct that survives the round trip stays."""
    ticks = SimpleNamespace(point_ns=lambda c: np.asarray(c, np.int64))
    for cntvct, want in ((4126315234180, 4126315234179), (4126315234100, 4126315234100)):
        rd = SimpleNamespace(info={"platform_version": "5", "DeviceInfo": [{"aic_frequency": "1650"}]},
                             dev_start=SimpleNamespace(cntvct=cntvct), collection_start_ns=0,
                             collection_end_ns=-1, device_ticks=lambda: ticks)
        df = freq_table.build(0, rd, np.array([cntvct - 50], np.uint64), np.array([800]))
        assert df["timestamp_ns"].tolist() == [0, want] and df["freq_mhz"].tolist() == [1650, 800]


# doubles next to a rounding tie of the 3rd / 6th decimal, and plain ones
NEAR_TIES = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                      st.builds(lambda k, d, e: (k + 0.5) / 10.0**d + e * 1e-18, st.integers(-10**7, 10**7),
                                st.sampled_from([3, 6]), st.integers(-3, 3)))


@settings(max_examples=300, deadline=None)
@given(st.lists(NEAR_TIES, min_size=1, max_size=8))
def test_cube_usage_formatting_is_printf(xs: list[float]) -> None:
    # the vectorised std::to_string round trip and "%.3f" against Python's own formatting
    x = np.array(xs, np.float64)
    got6 = pmu_export.to_string_6(x)
    for v, g in zip(xs, got6.tolist()):
        assert (np.isnan(v) and np.isnan(g)) or g == float("%.6f" % v) and str(g) == str(float("%.6f" % v))
    codes, texts = pmu_export.fixed3_texts(x)
    assert [texts[c] for c in codes] == ["%.3f" % v for v in xs]
    k, fast = pmu_export._fixed3_thousandths(x)  # the in-place rendering where it applies
    assert [t for t, f in zip(csv_texts(Col.fixed3(k)), fast) if f] == ["%.3f" % v for v, f in zip(xs, fast) if f]


def _compute_as_before(metric_set, counters, events, total_cycle, total_time, bw_freq_hz):  # type: ignore[no-untyped-def]
    """``M.compute`` as it was written before its ratio columns were shared with the time columns
    (every ratio computed again, not in place): the reference the test below holds it to."""
    n = len(total_cycle)
    cyc = np.asarray(total_cycle, np.float64)
    has_cyc = cyc != 0
    safe = np.where(has_cyc, cyc, 1.0)
    counters = np.asarray(counters, np.float64).reshape(n, -1) if n else np.zeros((0, 8))

    def reg(r):  # type: ignore[no-untyped-def]
        if r in events:
            i = events.index(r)
            if i < counters.shape[1]:
                return counters[:, i]
        return np.zeros(n)

    def ratio(m):  # type: ignore[no-untyped-def]
        acc = np.zeros(n)
        for r in m.regs:
            acc = acc + m.scale * reg(r) / safe
        return np.where(has_cyc, acc, 0.0)

    out = {}
    for m in M.CALCULATORS[metric_set]:
        if m.kind == "ratio":
            out[m.name] = ratio(m)
        elif m.kind == "time":
            out[m.name] = np.asarray(total_time, np.float64) * ratio(m)
    return out


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(M.CALCULATORS)), st.integers(0, 40), st.integers(0, 2**32), st.booleans())
def test_compute_ratio_and_time_columns_as_before(metric_set: str, n: int, seed: int, huge: bool) -> None:
    """Every ratio / time column of every calculator set: the same bits as before, and each output
    column an array of its own (the PMU table zeroes columns in place); zero cycles, NaN / inf
    times and counters near 2**64 included."""
    rng = np.random.default_rng(seed)
    counters = rng.integers(0, 2**63 if huge else 10**6, size=(n, 8), dtype=np.uint64).astype(np.float64)
    cyc = rng.integers(0, 10**7, size=n).astype(np.float64)
    cyc[rng.random(n) < 0.3] = 0
    t = rng.random(n) * 100
    t[rng.random(n) < 0.1] = np.nan
    t[rng.random(n) < 0.05] = np.inf
    events = tuple(int(e) for e in rng.permutation(sorted({r for m in M.CALCULATORS[metric_set] for r in m.regs}
                                                          | {1, 2, 3}))[:8])
    with np.errstate(invalid="ignore", over="ignore"):  # (inf x 0 -> NaN, as before)
        got = M.compute(metric_set, counters, events, cyc, t, 1.8e9)
        want = _compute_as_before(metric_set, counters, events, cyc, t, 1.8e9)
    for name, v in want.items():
        assert got[name].tobytes() == v.tobytes(), name
    arrays = list(got.values())
    assert len({id(a) for a in arrays}) == len(arrays)
    assert not any(np.shares_memory(a, b) for i, a in enumerate(arrays) for b in arrays[i + 1:])


def test_pmu_signature_columns_with_a_value_as_dropna() -> None:
    """``pmu_signature``'s third part is the columns ``dropna(axis=1, how="all")`` keeps (a
    column with at least one value), found column by column instead of from a copy of the table."""
    from msprof_py.parse.source import pmu_signature

    def before(p: pd.DataFrame) -> tuple:  # type: ignore[type-arg]
        return (tuple(p.columns), tuple(str(t) for t in p.dtypes), tuple(p.dropna(axis=1, how="all").columns))

    nan = float("nan")
    frames = [
        pd.DataFrame({"device_id": [0, 0, 0], "a": [nan, nan, nan], "b": [nan, 1.0, nan], "c": [1.0, 2.0, 3.0]}),
        pd.DataFrame({"x": [None, None], "y": [None, "s"], "z": pd.array([pd.NA, 1], dtype="Int64"),
                      "w": pd.array([pd.NA, pd.NA], dtype="Int64")}),
        pd.DataFrame([[nan, 1.0, nan], [nan, 2.0, nan]], columns=["d", "d", "e"]),  # a repeated name
        pd.DataFrame({"t": pd.to_datetime([None, None]), "u": pd.Categorical([None, "k"])}),
    ]
    for p in frames:
        assert pmu_signature(p) == before(p)
    assert pmu_signature(frames[0])[2] == ("device_id", "b", "c")
    assert pmu_signature(pd.DataFrame(columns=["a"])) is None
