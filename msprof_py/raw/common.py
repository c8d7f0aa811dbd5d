"""Things every host record shares: the 24-byte header, report levels, and byte-level checks.

All layouts are little-endian and packed (msprof uses ``struct`` with ``=`` and C++
``#pragma pack(1)``), so every dtype here is built with explicit offsets and ``align=False``.
"""
from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from msprof_py.errors import CorruptRecordError

MAGIC = 0x5A5A
# requestId/reserve of an Event record: all ones marks "event", anything else is an API record
EVENT_FLAG = 0xFFFFFFFFFFFFFFFF
# msprof's "no value" for 32-bit ids (context id, model id of device-only tasks, ...)
INVALID_U32 = 4294967295

# report levels (uint16) -> the lower-case name msprof shows in DB/CSV
LEVEL_PYTORCH_TX = 30000
LEVEL_PTA = 25000
LEVEL_MSPROFTX = 20500
LEVEL_ACL = 20000
LEVEL_MODEL = 15000
LEVEL_NODE = 10000
LEVEL_AICPU = 6000
LEVEL_HCCL = 5500
LEVEL_RUNTIME = 5000

LEVEL_NAMES: dict[int, str] = {
    LEVEL_PYTORCH_TX: "pytorch_tx",
    LEVEL_PTA: "pta",
    LEVEL_MSPROFTX: "msproftx",
    LEVEL_ACL: "acl",
    LEVEL_MODEL: "model",
    LEVEL_NODE: "node",
    LEVEL_AICPU: "aicpu",
    LEVEL_HCCL: "communication",
    LEVEL_RUNTIME: "runtime",
}
KNOWN_LEVELS = np.array(sorted(LEVEL_NAMES), dtype=np.uint16)

# ACL type = API family << 16 | API id (AclApiTag)
ACL_OP = 1
ACL_MODEL = 2
ACL_RTS = 3
ACL_OTHERS = 4
ACL_NN = 5
ACL_ASCENDC = 6
ACL_HOST_HCCL = 7

# model-level types
MODEL_GRAPH_ID_MAP = 0
MODEL_EXECUTE = 1
MODEL_LOAD = 2
MODEL_INPUT_COPY = 3
MODEL_OUTPUT_COPY = 4

# node-level types
NODE_BASIC_INFO = 0
NODE_TENSOR_INFO = 1
NODE_FUSION_OP_INFO = 2
NODE_CONTEXT_ID_INFO = 4
NODE_LAUNCH = 5
NODE_HCCL_OP_INFO = 10

# HCCL level
HCCL_MASTER = 0x010001

HEADER_FIELDS: list[tuple[str, str, int]] = [
    ("magic", "<u2", 0),
    ("level", "<u2", 2),
    ("type", "<u4", 4),
    ("thread_id", "<u4", 8),
    ("data_len", "<u4", 12),  # API: reserve; Event: requestId; compact/additional: dataLen
    ("timestamp", "<u8", 16),  # API: beginTime; others: timeStamp (host counter)
]
HEADER_SIZE = 24
COMPACT_SIZE = 64
ADDITIONAL_SIZE = 256


def packed_dtype(fields: Sequence[tuple[str, str, int]], itemsize: int) -> np.dtype:
    """A packed little-endian structured dtype from ``(name, format, byte offset)`` triples."""
    names = [f[0] for f in fields]
    formats = [f[1] for f in fields]
    offsets = [f[2] for f in fields]
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": itemsize})


def host_dtype(body: Sequence[tuple[str, str, int]], itemsize: int) -> np.dtype:
    """The 24-byte header followed by ``body`` (offsets are absolute, i.e. start at 24)."""
    return packed_dtype(list(HEADER_FIELDS) + list(body), itemsize)


def new_records(dtype: np.dtype, n: int) -> np.ndarray:
    """``n`` zeroed records of a host dtype with magic and data_len already filled in."""
    arr = np.zeros(n, dtype=dtype)
    if "magic" in dtype.names:
        arr["magic"] = MAGIC
    if "data_len" in dtype.names and dtype.itemsize in (COMPACT_SIZE, ADDITIONAL_SIZE):
        arr["data_len"] = dtype.itemsize - HEADER_SIZE
    return arr


def decode(buf: bytes | memoryview | np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Zero-copy view of whole records in ``buf``; a ragged tail is the caller's business."""
    n = len(buf) // dtype.itemsize
    return np.frombuffer(buf, dtype=dtype, count=n)


def check_host_records(records: np.ndarray, path: str | os.PathLike[str], base_offset: int = 0) -> None:
    """Raise :class:`CorruptRecordError` at the first record with a bad magic or unknown level.

    Args:
        records: decoded host records (any dtype built by :func:`host_dtype`).
        path: file the records came from, for the message.
        base_offset: byte offset of ``records[0]`` inside ``path``.
    """
    if records.size == 0:
        return
    bad_magic = records["magic"] != MAGIC
    if bad_magic.any():
        i = int(np.argmax(bad_magic))
        raise CorruptRecordError(path, base_offset + i * records.dtype.itemsize,
                                 f"bad magic number 0x{int(records['magic'][i]):04X} (expected 0x5A5A)")
    bad_level = ~np.isin(records["level"], KNOWN_LEVELS)
    if bad_level.any():
        i = int(np.argmax(bad_level))
        raise CorruptRecordError(path, base_offset + i * records.dtype.itemsize,
                                 f"unknown report level {int(records['level'][i])}")


def concat_records(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Concatenate record arrays of one padded dtype byte for byte.

    ``np.concatenate`` on structured dtypes with gaps (e.g. task_track: 52 bytes of fields in a
    64-byte record) silently returns a *packed* dtype and drops the gaps; this keeps the layout.
    """
    if not parts:
        raise ValueError("no record arrays to concatenate")
    dtype = parts[0].dtype
    raw = [np.ascontiguousarray(p).view(np.uint8).reshape(-1, dtype.itemsize) for p in parts]
    return np.ascontiguousarray(np.concatenate(raw)).view(dtype).ravel()


def _opaque(records: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(records).view(np.dtype((np.void, records.dtype.itemsize)))


def take_records(records: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``records[index]`` keeping every byte (numpy does not copy a padded dtype's gap bytes)."""
    return _opaque(records)[index].view(records.dtype)


def tile_records(records: np.ndarray, reps: int) -> np.ndarray:
    """``np.tile(records, reps)`` keeping every byte."""
    return np.tile(_opaque(records), reps).view(records.dtype)
