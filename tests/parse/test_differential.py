"""Vectorised parser == deliberately naive pure-Python reader/joiner (tests/parse/naive.py),
on the hand-made fixture and on random small PROF dirs."""
from __future__ import annotations

from pathlib import Path

from msprof_py.parse.session import load
from tests.parse.naive import naive_tasks


def fast_rows(prof: Path) -> list[tuple]:
    t = load(prof, use_cache=False).tasks
    rows = []
    for r in t.itertuples(index=False):
        op = "?" if r.match == "device_only" else str(r.op_name)
        rows.append((int(r.stream_id), int(r.task_id), int(r.context_id), int(r.batch_id), int(r.start_ns),
                     int(r.dur_ns), op, int(r.model_id), int(r.index_id), int(r.connection_id), str(r.match)))
    return sorted(rows)


def test_fixture_matches_naive(small_prof: Path) -> None:
    assert fast_rows(small_prof) == naive_tasks(small_prof)


def test_late_task_zero_is_moved_to_the_new_batch(tmp_path: Path) -> None:
    """msprof's flip calibration: id 0 taken by another thread before the flip record (flip
    task id 1) belongs to the new batch, on both sides, so it still joins its launch."""
    prof = random_prof(tmp_path, 3, 0, 1, 16, 65533, 0.0, 0, late_zero=True)
    rows = fast_rows(prof)
    assert rows == naive_tasks(prof)
    # msprof reaches a flip only when a later task of the stream exists: then task 0 moves
    later = [r for r in rows if r[1] == 0 and any(o[0] == r[0] and o[4] > r[4] for o in rows)]
    assert later and all(r[3] == 1 and r[10] == "matched" for r in later)


from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from tests.parse.gen import random_prof  # noqa: E402


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 31), n_static=st.integers(0, 4), replays=st.integers(1, 3),
       n_dyn=st.integers(0, 14), start_id=st.sampled_from([0, 65530, 65533, 65535]),
       p_drop=st.sampled_from([0.0, 0.2]), n_extra=st.integers(0, 2), late_zero=st.booleans())
def test_random_prof_matches_naive(tmp_path_factory, seed, n_static, replays, n_dyn, start_id, p_drop, n_extra,
                                   late_zero) -> None:
    if n_static + n_dyn + n_extra == 0:
        n_dyn = 1
    out = tmp_path_factory.mktemp("rand")
    prof = random_prof(out, seed, n_static, replays, n_dyn, start_id, p_drop, n_extra, late_zero)
    assert fast_rows(prof) == naive_tasks(prof)
