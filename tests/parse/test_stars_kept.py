"""STARS logs: the decode takes the columns as they are when every log is kept (issue 12 phase 13)
and gathers the kept rows otherwise; both give what the kept logs alone give."""
from __future__ import annotations

import numpy as np
import pytest

from msprof_py.errors import WarningLog
from msprof_py.parse.reader import Decoded, Stream
from msprof_py.parse.records import stars_soc
from msprof_py.parse.records.parts import DecodeContext, Parts
from msprof_py.raw import stars_soc as raw

FUNCS = [raw.FUNC_ACSQ_START, raw.FUNC_ACSQ_END, raw.FUNC_FFTS_START, raw.FUNC_FFTS_END]


def _logs(rng: np.random.Generator, n: int, ffts: bool) -> np.ndarray:
    """Start / end logs of ``n`` tasks on a few streams, in time order with some interleaving."""
    a = np.zeros(2 * n, raw.DTYPE)
    task = np.repeat(np.arange(n) % 7, 2)
    kind = np.tile([0, 1], n) + (2 if ffts else 0)
    if ffts:
        kind[rng.random(2 * n) < 0.5] -= 2  # a mix of ACSQ and FFTS logs
        kind = np.where(np.arange(2 * n) % 2 == 0, kind & ~1, kind | 1)
    a["word0"] = np.array(FUNCS, np.uint16)[kind] | (rng.integers(0, 5, 2 * n).astype(np.uint16) << 10)
    a["resv0"] = raw.MAGIC
    a["stream_id"] = rng.integers(0, 3, 2 * n)
    a["task_id"] = task
    a["timestamp"] = np.arange(2 * n, dtype=np.uint64) * 10 + rng.integers(0, 5, 2 * n).astype(np.uint64)
    return a


def _decode(a: np.ndarray, path) -> tuple[dict, WarningLog]:
    w = WarningLog()
    path.write_bytes(a.tobytes())  # (a dropped log's warning names its file and offset)
    parts = Parts([Decoded([a], Stream("stars_soc.data", None, [path]), 0, raw.DTYPE)], raw.DTYPE, "stars")
    return stars_soc.decode(parts, DecodeContext(warnings=w)), w


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("ffts", [False, True])
def test_every_log_kept_or_some_dropped_as_the_kept_logs_alone(seed: int, ffts: bool, tmp_path) -> None:
    rng = np.random.default_rng(seed)
    a = _logs(rng, int(rng.integers(1, 300)), ffts)
    drop = rng.random(len(a)) < (0.0 if seed % 4 == 0 else 0.1)
    if drop.any():
        bad = np.flatnonzero(drop)
        a["resv0"][bad[::2]] = 0x1234  # no magic
        a["word0"][bad[1::2]] = (a["word0"][bad[1::2]] & ~np.uint16(0x3F)) | np.uint16(5)  # another log type
    got, w = _decode(a.copy(), tmp_path / "all")
    want, _ = _decode(a[~drop].copy(), tmp_path / "kept")
    assert list(got) == list(want)
    for k in got:
        assert np.array_equal(np.asarray(got[k]), np.asarray(want[k])), k
        assert np.asarray(got[k]).dtype == np.asarray(want[k]).dtype, k
    assert bool((a["resv0"] != raw.MAGIC).any()) == any("magic" in m for m in w.messages)
