"""Decoded.release: the raw records' pages leave the process's resident memory, and every field
reads the same afterwards (the pages come back from the page cache)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from msprof_py.errors import WarningLog
from msprof_py.parse.reader import Stream, read_records


def _resident_kb(path: Path) -> int:
    """Resident kB of this process's maps of ``path`` (/proc/self/smaps)."""
    kb, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5:
            inside = line.endswith(str(path))
        elif inside and line.startswith("Rss:"):
            kb += int(head[1])
    return kb


def test_release_drops_the_pages_and_keeps_the_values(tmp_path: Path) -> None:
    dtype = np.dtype([("a", "<u4"), ("b", "<u8"), ("c", "<u2"), ("pad", "V2")])
    rng = np.random.default_rng(7)
    paths = []
    for k, n in enumerate((40_000, 25_001)):  # the second slice starts inside a record
        rec = np.zeros(n, dtype)
        rec["a"], rec["b"], rec["c"] = rng.integers(0, 2**32, n), rng.integers(0, 2**63, n), rng.integers(0, 2**16, n)
        raw = rec.tobytes()
        p = tmp_path / f"stars_soc.data.0.slice_{k}"
        p.write_bytes(raw[3:] if k else raw + raw[:3])
        paths.append(p)
    d = read_records(Stream("stars_soc.data", None, paths), dtype, WarningLog(), host=False)
    before = {f: d.field(f).copy() for f in ("a", "b", "c")}
    resident = _resident_kb(paths[0])
    d.release()
    assert resident > 0 and _resident_kb(paths[0]) < resident
    for f, v in before.items():
        assert np.array_equal(d.field(f), v), f
    d.release()  # twice, and on chunks that are not maps (the straddling record): no error
