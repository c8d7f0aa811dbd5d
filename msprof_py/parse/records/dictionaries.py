"""hash_dic and type_info_dic: every slice of both streams merged into lookup tables, and
vectorised resolution of hash / type columns into pandas categoricals.

msprof shows an unknown hash as its decimal number (so a Model-level ``item_id`` that is the
model id itself resolves to e.g. ``"1"``); an unknown kernel name shows as "N/A".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from msprof_py.errors import WarningLog
from msprof_py.parse import plausible
from msprof_py.parse.reader import read_bytes
from msprof_py.raw import hash_dic


@dataclass
class Dictionaries:
    hashes: dict[int, str] = field(default_factory=dict)
    types: dict[tuple[int, int], str] = field(default_factory=dict)

    def add_hash_file(self, path, warnings: WarningLog) -> None:
        """Merge one hash_dic slice (``<u64 hash>:<string>`` lines)."""
        mapping, bad = hash_dic.parse_hash_dic(_text(path, warnings))
        self.hashes.update(mapping)
        if bad:
            warnings.warn(f"{path}: {len(bad)} malformed hash_dic line(s) ignored (first: line {bad[0]})")

    def add_type_file(self, path, warnings: WarningLog) -> None:
        """Merge one type_info_dic slice (``<level>_<type>:<name>`` lines)."""
        mapping, bad = hash_dic.parse_type_dic(_text(path, warnings))
        self.types.update(mapping)
        if bad:
            warnings.warn(f"{path}: {len(bad)} malformed type_info_dic line(s) ignored (first: line {bad[0]})")

    def resolve_hash(self, values: np.ndarray, unknown: str | None = None) -> pd.Categorical:
        """Hash column -> categorical of names; unknown -> decimal number (or ``unknown``)."""
        return _resolve(values, lambda v: self.hashes.get(v, str(v) if unknown is None else unknown))

    def resolve_type(self, levels: np.ndarray, types: np.ndarray) -> pd.Categorical:
        """(level, type) columns -> categorical of type names; unknown -> decimal type."""
        from msprof_py.parse.cpp_time import by_chunks

        # level (16 bits) << 32 | type (32 bits) fits an int64: made in chunks of 64 Ki rows (not three
        # 34 MB temporaries of the single-op million's 4.2 M calls); factorized as before
        key = by_chunks(_level_type_key, np.asarray(levels), np.asarray(types))
        return _resolve(key, lambda k: self.types.get(((k % 2**64) >> 32, k & 0xFFFFFFFF), str(k & 0xFFFFFFFF)))

    def has_level(self, level: int) -> bool:
        """True when type_info_dic names at least one type of ``level``."""
        return any(lv == level for lv, _ in self.types)

    def type_ids(self, level: int, name: str) -> list[int]:
        """All type ids registered under ``level`` with ``name`` (e.g. FLIP_TASK at 5000)."""
        return [t for (lv, t), n in self.types.items() if lv == level and n == name]


def _level_type_key(levels: np.ndarray, types: np.ndarray) -> np.ndarray:
    return (levels.astype(np.uint64) << np.uint64(32) | types.astype(np.uint64)).view(np.int64)


def _resolve(values: np.ndarray, lookup) -> pd.Categorical:
    """Hash-based factorize (O(n)), one Python lookup per distinct value, then codes remapped
    onto the distinct names (two hashes may name the same string)."""
    codes, uniq = pd.factorize(np.asarray(values), sort=False)
    names = [lookup(int(u)) for u in uniq]
    from msprof_py.parse.cats import from_codes

    return from_codes(codes, names)


def _text(path, warnings: WarningLog) -> str:
    data = read_bytes(path)
    # a cut or spliced dictionary still parses (a name cut short, a line repeated): its .done
    # file, as for the binary slices, is what says so
    plausible.check_done([Path(path)], [len(data)], warnings)
    return data.decode("utf-8", errors="replace")
