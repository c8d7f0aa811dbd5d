"""The CANN call tree per host thread by time containment (msprof §3.2), vectorised.

Levels rank ACL 1 < MODEL 2 < NODE 3 < HCCL 4 < RUNTIME 5.  An API's parent is the innermost
API of a smaller rank on the same thread whose [start, end] contains it (ACL APIs therefore
sit at the root).  A point record (task_track, node_basic_info, ...) attaches to the latest API
of its *own* level on the same thread whose interval contains its timestamp; if there is none
it still gets ancestors through the innermost containing API of a smaller rank (msprof's
placeholder node).
"""
from __future__ import annotations

import numpy as np

from msprof_py.parse.keys import last_le
from msprof_py.raw.common import LEVEL_ACL, LEVEL_HCCL, LEVEL_MODEL, LEVEL_NODE, LEVEL_RUNTIME

RANKS = {LEVEL_ACL: 1, LEVEL_MODEL: 2, LEVEL_NODE: 3, LEVEL_HCCL: 4, LEVEL_RUNTIME: 5}
TREE_LEVELS = tuple(RANKS)


_RANK_OF = np.zeros(65536, np.int64)
for _lv, _r in RANKS.items():
    _RANK_OF[_lv] = _r
# query rows per pass (``_containers``, ``point_ancestors``): each pass's temporaries stay small
# and are reused, not a dozen arrays of every row (the single-op million: 4.2 M API rows, 34 MB
# each, fresh pages every time)
CHUNK = 1 << 16


def level_rank(levels: np.ndarray) -> np.ndarray:
    """Rank per level; 0 for levels outside the tree (PTA, msproftx, aicpu, ...)."""
    levels = np.asarray(levels)
    if levels.dtype in (np.uint8, np.uint16):  # (the decoded level: one lookup)
        return _RANK_OF[levels]
    out = np.zeros(len(levels), np.int64)
    for lv, r in RANKS.items():
        out[levels == lv] = r
    return out


class CallTree:
    """API intervals of one host (times in one clock) with parents and per-level ancestors.

    Args:
        thread: thread code per API (dense ints), start/end: int64 times, levels: report level.
    """

    def __init__(self, thread: np.ndarray, start: np.ndarray, end: np.ndarray, levels: np.ndarray) -> None:
        self.thread = np.asarray(thread, np.int64)
        self.start = np.asarray(start, np.int64)
        self.end = np.asarray(end, np.int64)
        self.rank = level_rank(levels)
        # one sortable int64 key per (thread, time): thread * span + (time - origin); query
        # times are clipped into [origin, origin + span) which keeps every <= relation intact
        n = len(self.start)
        self._origin = int(self.start.min()) - 1 if n else 0
        self._span = (int(self.start.max()) - self._origin + 2) if n else 1
        self._fits = (int(self.thread.max()) + 3) * self._span < 2 ** 62 if n else True
        self._by_rank = {}
        self._keys = {}
        skey = self._key(self.thread, self.start) if self._fits else None
        for r in range(1, 6):
            idx = np.flatnonzero(self.rank == r)
            if self._fits:  # (thread, start) packed in one key: one stable argsort, as the lexsort orders
                o = np.argsort(skey[idx], kind="stable")
                self._by_rank[r] = idx[o]
                self._keys[r] = skey[idx[o]]
            else:
                self._by_rank[r] = idx[np.lexsort((self.start[idx], self.thread[idx]))]
        self.parent = self._containers(self.thread, self.start, self.end, self.rank)
        self._anc: dict[int, np.ndarray] | None = None

    @property
    def ancestors(self) -> dict[int, np.ndarray]:
        """``{level: index of the ancestor-or-self API at that level, -1 if none}`` of every API
        (made on first use: the host tables read them at a few rows, :meth:`ancestors_at`)."""
        if self._anc is None:
            self._anc = self._ancestors()
        return self._anc

    def ancestors_at(self, rows: np.ndarray) -> dict[int, np.ndarray]:
        """``ancestors[level][rows]`` for every level (``rows`` -1: -1), by walking up the parents:
        ranks fall strictly along a chain, so each level is met at most once and before any
        smaller rank, and five steps reach the root (no per-level array of every API: the single-op
        million's 4.2 M, 34 MB each)."""
        rows = np.asarray(rows, np.int64)
        out = {lv: np.full(len(rows), -1, np.int64) for lv in TREE_LEVELS}
        cur = rows
        for _ in range(len(RANKS)):
            ok = cur >= 0
            if not ok.any():
                break
            at = np.maximum(cur, 0)
            r = np.where(ok, self.rank[at], 0)
            for lv, rl in RANKS.items():
                hit = r == rl
                out[lv][hit] = cur[hit]
            cur = np.where(ok, self.parent[at], -1)
        return out

    def _key(self, thread: np.ndarray, t: np.ndarray) -> np.ndarray:
        tt = np.clip(np.asarray(t, np.int64), self._origin, self._origin + self._span - 1) - self._origin
        return np.asarray(thread, np.int64) * self._span + tt

    def _containers(self, thread, start, end, rank) -> np.ndarray:
        """Innermost API of rank < ``rank`` containing each [start, end] on the same thread."""
        n = len(thread)
        if n <= CHUNK:
            return self._containers_of(thread, start, end, rank)
        out = np.empty(n, np.int64)
        for lo in range(0, n, CHUNK):
            hi = lo + CHUNK
            out[lo:hi] = self._containers_of(thread[lo:hi], start[lo:hi], end[lo:hi], rank[lo:hi])
        return out

    def _containers_of(self, thread, start, end, rank) -> np.ndarray:
        out = np.full(len(thread), -1, np.int64)
        qkey = self._key(thread, start) if self._fits else None
        for r in range(1, 5):  # shallow to deep: deeper containers overwrite
            cand = self._by_rank[r]
            q = np.flatnonzero(rank > r)
            if len(cand) == 0 or len(q) == 0:
                continue
            hit = self._containing(r, thread[q], start[q], end[q], qkey[q] if qkey is not None else None)
            ok = hit >= 0
            out[q[ok]] = hit[ok]
        return out

    def _containing(self, r: int, qthread, qstart, qend, qkey=None) -> np.ndarray:
        """Among APIs of rank ``r``: the last one starting <= qstart on the same thread, if it
        also ends >= qend; else -1.  Returns API indices."""
        cand = self._by_rank[r]
        if self._fits:
            if qkey is None:
                qkey = self._key(qthread, qstart)
            pos = np.searchsorted(self._keys[r], qkey, side="right") - 1
            ok = pos >= 0
            pos0 = np.maximum(pos, 0)
            hit = cand[pos0]
            ok &= self.thread[hit] == qthread
        else:
            pos = last_le(self.thread[cand], self.start[cand], qthread, qstart)
            ok = pos >= 0
            hit = cand[np.maximum(pos, 0)]
        ok &= self.end[hit] >= qend
        return np.where(ok, hit, -1)

    def _ancestors(self) -> dict[int, np.ndarray]:
        """``{level: index of the ancestor-or-self API at that level, -1 if none}``.

        Filled rank by rank: a parent always has a smaller rank, so its row is done first."""
        n = len(self.rank)
        anc = {lv: np.full(n, -1, np.int64) for lv in TREE_LEVELS}
        for r in range(1, 6):
            rows = np.flatnonzero(self.rank == r)
            if not len(rows):
                continue
            p = self.parent[rows]
            has = p >= 0
            rows_p, p = rows[has], p[has]
            for lv, rl in RANKS.items():
                if rl == r:
                    anc[lv][rows] = rows
                elif rl < r and len(p):
                    anc[lv][rows_p] = anc[lv][p]
        return anc

    def attach(self, level: int, thread: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """Same-level API containing each point record, or -1."""
        r = RANKS[level]
        if len(self._by_rank[r]) == 0 or len(thread) == 0:
            return np.full(len(thread), -1, np.int64)
        t = np.asarray(ts, np.int64)
        return self._containing(r, np.asarray(thread, np.int64), t, t)

    def point_ancestors(self, level: int, thread: np.ndarray, ts: np.ndarray) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """(same-level API or -1, ``{level: ancestor API or -1}``) for point records of ``level``."""
        thread, t = np.asarray(thread, np.int64), np.asarray(ts, np.int64)
        n = len(thread)
        if n <= CHUNK:
            return self._point_ancestors(level, thread, t)
        own = np.empty(n, np.int64)
        anc = {lv: np.empty(n, np.int64) for lv in TREE_LEVELS}
        for lo in range(0, n, CHUNK):
            hi = lo + CHUNK
            o, a = self._point_ancestors(level, thread[lo:hi], t[lo:hi])
            own[lo:hi] = o
            for lv in TREE_LEVELS:
                anc[lv][lo:hi] = a[lv]
        return own, anc

    def _point_ancestors(self, level: int, thread: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        own = self.attach(level, thread, t)
        n = len(own)
        container = self._containers_of(thread, t, t, np.full(n, RANKS[level], np.int64))
        return own, self.ancestors_at(np.where(own >= 0, own, container))
