"""Work the text writers share or skip (issue 12, phase 8): each shortcut against the plain
formulation it replaced, on sessions that take both branches."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from msprof_py.export import legacy_summaries as ls
from msprof_py.export.session_access import api_of_device, thread_device
from msprof_py.export.summary_format import _stats, i64, text
from msprof_py.export.views import is_in
from tests.export.synth import make_session


def _launches_reference(session, device_id: int) -> pd.DataFrame:
    """dynamic_launches as it was written before the row positions were kept (a merge)."""
    api = api_of_device(session, device_id)
    t = session.tasks[session.tasks["device_id"].to_numpy(np.int64) == device_id]
    dyn = t[is_in(t["op_state"], ["dynamic"])]
    if len(api) == 0 or len(dyn) == 0:
        return api.iloc[:0]
    conn = pd.unique(i64(dyn["connection_id"]))
    node = api[is_in(api["level"], ["node"]) & np.isin(i64(api["connection_id"]), conn)]
    if len(node) == 0:
        return node
    first = dyn.sort_values("start_ns", kind="stable").drop_duplicates("connection_id")
    info = pd.DataFrame({"connection_id": i64(first["connection_id"]),
                         "op_name": text(first["op_name"]).astype(str).to_numpy(),
                         "op_type": text(first["op_type"]).astype(str).to_numpy()})
    out = node.assign(connection_id=i64(node["connection_id"])).merge(info, on="connection_id", how="left")
    return out.sort_values("start_ns", kind="stable")


def _shuffled(session, seed: int):
    """The same tables with the task rows in another order and some starts made equal (ties
    decide which task of a connection id names the op)."""
    rng = np.random.default_rng(seed)
    t = session.tasks.iloc[rng.permutation(len(session.tasks))].reset_index(drop=True)
    start = t["start_ns"].to_numpy(np.int64).copy()
    tie = rng.random(len(t)) < 0.3
    start[tie] = start[tie] // 100_000 * 100_000
    t["start_ns"] = start
    api = session.api.iloc[rng.permutation(len(session.api))].reset_index(drop=True)
    return dataclasses.replace(session, tasks=t.astype(session.tasks.dtypes.to_dict()), api=api)


@pytest.mark.parametrize("every,static,devices,seed", [(0, False, 1, 0), (3, False, 2, 1), (1, True, 2, 2),
                                                        (2, True, 1, 3), (5, False, 2, 4)])
def test_dynamic_launches_equal_the_merge(every: int, static: bool, devices: int, seed: int) -> None:
    """The launch rows found once (positions) give the table the merge gave, rows, columns and
    dtypes; has_dynamic_launches agrees; a second call reuses the rows (same arrays)."""
    for s in (make_session(ops=7, iterations=3, devices=devices, dynamic_every=every, static=static),
              _shuffled(make_session(ops=7, iterations=3, devices=devices, dynamic_every=every, static=static), seed)):
        for dev in range(devices):
            got, want = ls.dynamic_launches(s, dev), _launches_reference(s, dev)
            assert list(got.columns) == list(want.columns)
            pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))
            assert ls.has_dynamic_launches(s, dev) == (len(want) > 0) == bool(every)
            assert ls._launch_rows(s, dev)[0] is ls._launch_rows(s, dev)[0]


def _thread_device_reference(api: pd.DataFrame, devices: list[int]) -> np.ndarray:
    """Per thread the device most of its known calls target (ties: the lower id), else the first."""
    out = np.full(len(api), devices[0] if devices else 0, np.int64)
    key = list(zip(api["pid"].tolist(), api["thread_id"].tolist()))
    dev = api["device_id"].astype("int64").tolist()
    best: dict = {}
    for k, d in zip(key, dev):
        if d >= 0:
            best.setdefault(k, {}).setdefault(d, 0)
            best[k][d] += 1
    for i, k in enumerate(key):
        if k in best:
            out[i] = min(best[k].items(), key=lambda kv: (-kv[1], kv[0]))[0]
    return out


@pytest.mark.parametrize("seed", range(6))
def test_thread_device_fast_path_and_counting_agree(seed: int) -> None:
    """Calls that all target the first device (or none) skip the counting; either way each
    thread gets the device most of its calls target."""
    rng = np.random.default_rng(seed)
    n = 300
    api = pd.DataFrame({"pid": rng.integers(1, 3, n), "thread_id": rng.integers(1, 6, n)})
    devices = [0, 64] if seed % 2 else [1, 3, 64]
    if seed < 3:  # only the first device or none: the fast path
        api["device_id"] = np.where(rng.random(n) < 0.5, devices[0], -1)
    else:
        api["device_id"] = rng.choice(devices + [-1], n)
    got = thread_device(api, devices)
    assert list(got.index) == list(api.index)
    assert got.to_numpy().tolist() == _thread_device_reference(api, devices).tolist()


@pytest.mark.parametrize("seed", range(6))
def test_api_of_device_one_owner_without_a_row_array(seed: int) -> None:
    """api_of_device keeps no per-row owner array when one device owns every row: the same rows
    (the table itself, or none) as the per-row mask of thread_device gives, on every device."""
    from msprof_py.export import session_access as sa
    rng = np.random.default_rng(seed)
    session = make_session(ops=7, iterations=3, devices=1)
    api = session.api.copy()
    n = len(api)
    api["pid"], api["thread_id"] = rng.integers(1, 3, n), rng.integers(1, 6, n)
    all_devices = [[0], [0, 64], [1, 3, 64], [2, 5]][seed % 4]
    if seed < 4:  # one owner: every call targets the first device or none
        api["device_id"] = np.where(rng.random(n) < 0.5, all_devices[0], -1)
    else:
        api["device_id"] = rng.choice(all_devices + [-1], n)
    session.api, session.all_devices = api, tuple(all_devices)
    sa._OWNER.clear()
    for dev in [*all_devices, 7]:
        mask = thread_device(api, all_devices).to_numpy() == dev
        got = api_of_device(session, dev)
        if mask.all():
            assert got is api
        else:
            pd.testing.assert_frame_equal(got, api[mask])
    assert isinstance(sa._owners(api, all_devices), int) == (seed < 4 or len(all_devices) == 1)


def test_runtime_api_stats_by_category_codes_equal_the_strings() -> None:
    """Grouping by a code per category text gives the groups, order and numbers the grouping by
    each call's string gave, missing names ("nan") and a category spelled "nan" included."""
    rng = np.random.default_rng(7)
    n = 500
    names = pd.Categorical(rng.choice(["rtKernelLaunch", "rtMemcpy", "nan", None, "rtSync"], n),
                           categories=["rtSync", "nan", "rtKernelLaunch", "rtMemcpy", "unused"])
    start = rng.integers(0, 10**9, n)
    api = pd.DataFrame({"name": names, "pid": rng.integers(1, 3, n), "thread_id": rng.integers(1, 4, n),
                        "start_ns": start, "end_ns": start + rng.integers(0, 10**6, n)})
    want = _stats(pd.DataFrame({"name": text(api["name"]).astype(str).to_numpy(), "pid": api["pid"].to_numpy(),
                                "tid": api["thread_id"].to_numpy(),
                                "dur_ns": (api["end_ns"] - api["start_ns"]).to_numpy()}), ["name", "pid", "tid"])
    got = ls._name_stats(api)
    pd.testing.assert_frame_equal(got, want)


@pytest.mark.parametrize("values", [["a", None, "b", "a"], ["nan", None, "x"], [None, None], ["a", "b"]])
@pytest.mark.parametrize("categorical", [True, False])
def test_op_texts_as_astype_str(values: list, categorical: bool) -> None:
    """ge_op_execute's op names: each distinct category converted once, the same texts (missing
    values as ``astype(str)`` makes them) as the expression it replaced, row by row."""
    col = pd.Series(values * 3, dtype="category" if categorical else object)
    rows = np.array([5, 0, 1, 1, 2, len(col) - 1], np.int64)
    want = text(col.take(rows)).astype(str).to_numpy()
    got = ls._op_texts(col, rows).to_numpy()
    assert got.dtype == want.dtype and len(got) == len(want)
    assert [("<NA>" if x is None or x != x else x) for x in got] == [("<NA>" if x is None or x != x else x)
                                                                    for x in want]
