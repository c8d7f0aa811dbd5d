"""Text dictionaries: ``hash_dic`` (``<u64 hash>:<string>``) and ``type_info_dic``
(``<level>_<type>:<name>``), in ``(un)aging.additional.{hash_dic,type_info_dic}.slice_N``.

Lines are split at the first ``:``; a hash key must be all digits.  Unknown hashes are shown
as their decimal number, as msprof does.
"""
from __future__ import annotations

import hashlib
from typing import Iterable, Mapping

HASH_FILE_TAG = "additional.hash_dic"
TYPE_FILE_TAG = "additional.type_info_dic"


def stable_hash(text: str) -> int:
    """A deterministic 64-bit hash for a name (the runtime's ``MsprofGetHashId``), never 0."""
    h = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
    return h or 1


def encode_hash_dic(mapping: Mapping[int, str]) -> bytes:
    """``{hash: name}`` -> file bytes (one ``hash:name`` line each, in the given order)."""
    return "".join(f"{h}:{_one_line(s)}\n" for h, s in mapping.items()).encode("utf-8")


def encode_type_dic(entries: Iterable[tuple[int, int, str]]) -> bytes:
    """``(level, type, name)`` triples -> file bytes (``level_type:name`` lines)."""
    return "".join(f"{lv}_{ty}:{_one_line(s)}\n" for lv, ty, s in entries).encode("utf-8")


def parse_hash_dic(text: str) -> tuple[dict[int, str], list[int]]:
    """Parse hash_dic text.  Returns the mapping and the 1-based numbers of malformed lines."""
    out: dict[int, str] = {}
    bad: list[int] = []
    for no, line in enumerate(text.splitlines(), 1):
        if not line:
            continue
        key, sep, value = line.partition(":")
        if not sep or not key.isdigit():
            bad.append(no)
            continue
        out[int(key)] = value
    return out, bad


def parse_type_dic(text: str) -> tuple[dict[tuple[int, int], str], list[int]]:
    """Parse type_info_dic text into ``{(level, type): name}`` plus malformed line numbers."""
    out: dict[tuple[int, int], str] = {}
    bad: list[int] = []
    for no, line in enumerate(text.splitlines(), 1):
        if not line:
            continue
        key, sep, value = line.partition(":")
        lv, us, ty = key.partition("_")
        if not sep or not us or not lv.isdigit() or not ty.isdigit():
            bad.append(no)
            continue
        out[(int(lv), int(ty))] = value
    return out, bad


def _one_line(s: str) -> str:
    return s.replace("\n", " ").replace("\r", " ")
