"""The shared record layouts are byte-exact with msprof's struct formats.

Each dtype is checked against the ``struct`` format string msprof's own parser uses
(``=`` prefix: native order... little-endian here, no padding): same size, and a record packed
with ``struct`` decodes to the same field values through the numpy dtype.
"""
from __future__ import annotations

import struct

import numpy as np
import pytest

from msprof_py.raw import (api_event, context_id_info, fusion_op_info, graph_id_map, hccl_info,
                           node_basic_info, stars_soc, task_track, tensor_info, ts_track)
from msprof_py.raw.common import MAGIC, check_host_records, new_records
from msprof_py.errors import CorruptRecordError


@pytest.mark.parametrize("dtype, fmt", [
    (api_event.DTYPE, "<HHIIIQQQ"),
    (task_track.DTYPE, "<HHIIIQHHHHQQ16B"),
    (node_basic_info.DTYPE, "<HHIIIQQIQIIQI"),
    (tensor_info.DTYPE, "<HHIIIQQI55I"),
    (context_id_info.DTYPE, "<HHIIIQQI55I"),
    (graph_id_map.DTYPE, "<HHIIIQQ56I"),
    (fusion_op_info.DTYPE, "<HHIIIQQI13Q29I"),
    (hccl_info.DTYPE, "<HHIII4Q6IQ2Id3Q6I112B"),
    (stars_soc.DTYPE, "<4HQHH11L"),
    (ts_track.STEP_TRACE_DTYPE, "<BBHLQQQHHHH"),
    (ts_track.TASK_FLIP_DTYPE, "<BBHLQHHHH16B"),
    (ts_track.TASK_TYPE_DTYPE, "<BBHLQHHHBBQQ"),
])
def test_sizes_match_msprof_struct_formats(dtype: np.dtype, fmt: str) -> None:
    assert dtype.itemsize == struct.calcsize(fmt)


def test_task_track_fields_at_msprof_offsets() -> None:
    raw = struct.pack("<HHIIIQHHHHQQ16B", MAGIC, 5000, 7, 1234, 40, 99, 3, 17, 65535, 2, 111, 222,
                      *([0] * 16))
    rec = np.frombuffer(raw, task_track.DTYPE)[0]
    assert (rec["level"], rec["type"], rec["thread_id"], rec["timestamp"]) == (5000, 7, 1234, 99)
    assert (rec["device_id"], rec["stream_id"], rec["task_id"], rec["batch_id"]) == (3, 17, 65535, 2)
    assert (rec["task_type"], rec["kernel_name"]) == (111, 222)


def test_node_basic_info_op_state_is_byte_52() -> None:
    raw = struct.pack("<HHIIIQQIQIIQI", MAGIC, 10000, 0, 1, 40, 5, 0xAB, 2, 0xCD, (3 << 16) | 8, 1, 1, 0)
    rec = np.frombuffer(raw, node_basic_info.DTYPE)[0]
    assert (rec["op_name"], rec["task_type"], rec["op_type"]) == (0xAB, 2, 0xCD)
    assert (rec["block_num"] & 0xFFFF, rec["block_num"] >> 16, rec["op_flag"], rec["op_state"]) == (8, 3, 1, 1)


def test_step_trace_and_flip_fields() -> None:
    raw = struct.pack("<BBHLQQQHHHH", 0, 10, 0, 0, 123456, 7, 1, 5, 9, 4, 0)
    rec = np.frombuffer(raw, ts_track.STEP_TRACE_DTYPE)[0]
    assert (rec["func_type"], rec["timestamp"], rec["index_id"], rec["model_id"]) == (10, 123456, 7, 1)
    assert (rec["stream_id"], rec["task_id"], rec["tag_id"]) == (5, 9, 4)
    raw = struct.pack("<BBHLQHHHH16B", 0, 14, 0, 0, 55, 3, 2, 0, 1, *([0] * 16))
    rec = np.frombuffer(raw, ts_track.TASK_FLIP_DTYPE)[0]
    assert (rec["stream_id"], rec["flip_num"], rec["task_id"]) == (3, 2, 1)


def test_acsq_word0_and_physical_ids() -> None:
    w = stars_soc.pack_word0(np.array([0, 1]), np.array([3, 4]), np.array([0, 2]))
    assert list(stars_soc.func_type(w)) == [0, 1]
    assert list(stars_soc.sqe_type(w)) == [0, 2]
    stream, task = stars_soc.physical_ids(np.array([5, 0x1005, 0x2003]), np.array([77, 0x2001, 0x1009]))
    assert list(stream) == [5, 5, 9]
    assert list(task) == [77, 0x0001, 0x1003]


def test_tensor_info_tensors_are_packed_after_tensor_num() -> None:
    rec = new_records(tensor_info.DTYPE, 1)
    rec["tensor_num"] = 2
    rec["tensors"][0, 1]["shape"][:2] = [3, 4]
    raw = rec.tobytes()
    vals = struct.unpack("<HHIIIQQI55I", raw)
    # tensor 1 starts at field 8 + 11; its shape at +3
    assert vals[7] == 2 and vals[8 + 11 + 3] == 3 and vals[8 + 11 + 4] == 4


def test_check_host_records_names_offset() -> None:
    recs = new_records(task_track.DTYPE, 3)
    recs["level"] = 5000
    recs["magic"][2] = 0x1234
    with pytest.raises(CorruptRecordError, match=r"f\.bin: byte 128: bad magic"):
        check_host_records(recs, "f.bin")
    recs["magic"][2] = MAGIC
    recs["level"][1] = 4242
    with pytest.raises(CorruptRecordError, match=r"byte 1064: unknown report level 4242"):
        check_host_records(recs, "f.bin", base_offset=1000)
