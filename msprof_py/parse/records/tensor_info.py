"""``additional.tensor_info``: input/output tensors of an op (256 B, up to 5 tensors each;
ops with more tensors span several consecutive records with the same op and timestamp).

Strings are msprof's op_summary strings without CSV quoting: shapes ``"1,3,224,224;64"``
(dims joined by ",", tensors by ";", unused 0 dims dropped), data types ``"FLOAT16;FLOAT"``,
formats ``"NCHW;ND"``.  They are built once per distinct record body (workloads repeat the same
shapes every iteration), not once per record.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from msprof_py.parse.records.dictionaries import Dictionaries
from msprof_py.parse.records.host_common import HostParts
from msprof_py.raw.tensor_info import DATA_TYPES, FORMATS, INPUT, MAX_TENSORS, OUTPUT

FIELDS = ("input_shapes", "input_data_types", "input_formats", "output_shapes", "output_data_types",
          "output_formats")


def decode(parts: HostParts, dicts: Dictionaries) -> dict[str, np.ndarray]:
    """Columns: thread_id, timestamp, op_name + the six tensor string columns (object arrays).
    Multi-record ops are merged into their first record."""
    n = len(parts)
    ts = parts.col("timestamp", np.uint64)
    thread = parts.col("thread_id", np.uint32)
    op_hash = parts.col("op_name", np.uint64)
    num = np.minimum(parts.col("tensor_num", np.uint32), MAX_TENSORS)
    tensors = parts.col("tensors")
    # identify distinct bodies by a 64-bit digest of (tensor_num, tensors)
    body = np.ascontiguousarray(tensors).view(np.uint8).reshape(n, -1) if n else np.zeros((0, 220), np.uint8)
    words = np.ascontiguousarray(body[:, : (body.shape[1] // 8) * 8]).view(np.uint64)
    mult = (np.arange(words.shape[1], dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)
    digest = (words * mult).sum(axis=1, dtype=np.uint64) ^ (num.astype(np.uint64) * np.uint64(0xBF58476D1CE4E5B9))
    uniq, first, inverse = np.unique(digest, return_index=True, return_inverse=True)
    strings = [_strings(tensors[i], int(num[i])) for i in first]  # per distinct body
    cols = {f: np.array([s[k] for s in strings], dtype=object)[inverse] if n else np.zeros(0, object)
            for k, f in enumerate(FIELDS)}
    # merge consecutive records of one op (same thread, op, timestamp)
    cont = np.zeros(n, bool)
    if n > 1:
        cont[1:] = (ts[1:] == ts[:-1]) & (op_hash[1:] == op_hash[:-1]) & (thread[1:] == thread[:-1])
    if cont.any():
        group = np.cumsum(~cont) - 1
        df = pd.DataFrame({f: cols[f] for f in FIELDS})
        df["g"] = group
        merged = df.groupby("g", sort=True).agg(lambda s: ";".join(x for x in s if x))
        head = ~cont
        cols = {f: merged[f].to_numpy(dtype=object) for f in FIELDS}
        ts, thread, op_hash = ts[head], thread[head], op_hash[head]
    out = {"thread_id": thread, "timestamp": ts, "op_name": dicts.resolve_hash(op_hash)}
    out.update(cols)
    return out


def _strings(rec: np.ndarray, num: int) -> tuple[str, ...]:
    ins: list[tuple[str, str, str]] = []
    outs: list[tuple[str, str, str]] = []
    for t in rec[:num]:
        shape = ",".join(str(int(d)) for d in t["shape"] if d)
        fmt = int(t["format"]) & 0xFF
        item = (shape, DATA_TYPES.get(int(t["data_type"]), str(int(t["data_type"]))), FORMATS.get(fmt, str(fmt)))
        if int(t["tensor_type"]) == INPUT:
            ins.append(item)
        elif int(t["tensor_type"]) == OUTPUT:
            outs.append(item)
    return tuple(";".join(x[k] for x in side) for side in (ins, outs) for k in (0, 1, 2))
