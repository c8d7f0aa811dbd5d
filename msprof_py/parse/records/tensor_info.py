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

from msprof_py.parse import cats
from msprof_py.parse.keys import group_codes

from msprof_py.parse.records.parts import DecodeContext, Parts
from msprof_py.raw.tensor_info import DATA_TYPES, FORMATS, INPUT, MAX_TENSORS, OUTPUT

FIELDS = ("input_shapes", "input_data_types", "input_formats", "output_shapes", "output_data_types",
          "output_formats")


def decode(parts: Parts, ctx: DecodeContext) -> dict[str, np.ndarray]:
    """Columns: thread_id, timestamp, op_name + the six tensor string columns (object arrays).
    Multi-record ops are merged into their first record."""
    n = len(parts)
    ts = parts.col("timestamp", np.uint64)
    thread = parts.col("thread_id", np.uint32)
    op_hash = parts.col("op_name", np.uint64)
    num = np.minimum(parts.col("tensor_num", np.uint32), MAX_TENSORS)
    # identify distinct record bodies (tensor_num + tensors, bytes 32..256) by a 64-bit digest
    # computed straight from the mapped slices, one 8-byte column at a time (no big temporaries)
    digests, where = [], []
    for p_i, part in enumerate(parts.parts):
        for first_index, rows in part.byte_rows():
            # bytes 32..256 of each record as 28 little-endian u64 columns (a strided view)
            words = np.ndarray((len(rows), 28), dtype="<u8", buffer=rows, offset=32, strides=(rows.strides[0], 8))
            h = np.full(len(rows), 0x84222325CBF29CE4, np.uint64)
            for j in range(28):
                h ^= words[:, j]
                h *= np.uint64(0x100000001B3)
                h ^= h >> np.uint64(29)
            digests.append(h)
            where.append((p_i, first_index, len(rows)))
    digest = np.concatenate(digests) if digests else np.zeros(0, np.uint64)
    inverse, uniq = pd.factorize(digest, sort=False)
    first = np.full(len(uniq), -1, np.int64)
    first[inverse[::-1]] = np.arange(n)[::-1]  # first row of each distinct body
    strings = [_strings(parts.take(int(i))["tensors"], int(num[i])) for i in first]  # per distinct body
    cols = {f: cats.from_codes(inverse, [s[k] for s in strings]) for k, f in enumerate(FIELDS)}
    # merge consecutive records of one op (same thread, op, timestamp)
    cont = np.zeros(n, bool)
    if n > 1:
        cont[1:] = (ts[1:] == ts[:-1]) & (op_hash[1:] == op_hash[:-1]) & (thread[1:] == thread[:-1])
    if cont.any():
        head = ~cont
        cols = _merge_runs(head, inverse, strings)
        ts, thread, op_hash = ts[head], thread[head], op_hash[head]
    out = {"thread_id": thread, "timestamp": ts, "op_name": ctx.dicts.resolve_hash(op_hash)}
    out.update(cols)
    return out


def _merge_runs(head: np.ndarray, body: np.ndarray, strings: list[tuple[str, ...]]) -> dict[str, pd.Categorical]:
    """One row per run of records (``head`` marks each run's first record): each field the
    non-empty strings of the run's bodies joined by ";".  Runs are told apart by their
    sequence of body codes, so the strings are joined once per distinct sequence."""
    start = np.flatnonzero(head)
    length = np.diff(np.append(start, len(head)))
    seq = []  # column k: code of the run's k-th body (-1 past its end)
    for k in range(int(length.max())):
        has = length > k
        seq.append(np.where(has, body[np.minimum(start + k, len(head) - 1)], -1))
    run_code = group_codes(*seq)
    first = np.full(int(run_code.max()) + 1, -1, np.int64)
    first[run_code[::-1]] = np.arange(len(run_code))[::-1]  # first run of each distinct sequence
    joined = [tuple(";".join(x for x in (strings[body[start[r] + k]][i] for k in range(int(length[r]))) if x)
                    for i in range(len(FIELDS))) for r in first]
    return {f: cats.from_codes(run_code, [j[i] for j in joined]) for i, f in enumerate(FIELDS)}


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
