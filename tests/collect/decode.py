"""Test-side decoding of a PROF directory with the shared raw/ layouts (slices concatenated)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from msprof_py.raw import api_event, files, stars_soc, task_track, ts_track
from msprof_py.raw.common import check_host_records, decode


def stream_bytes(data_dir: Path, prefix: str) -> bytes:
    """All slices ``{prefix}.slice_N`` of one stream, in numeric order; asserts no gaps."""
    pat = re.compile(re.escape(prefix) + r"\.slice_(\d+)$")
    found = sorted((int(m.group(1)), p) for p in data_dir.iterdir() if (m := pat.match(p.name)))
    assert [n for n, _ in found] == list(range(len(found))), f"slice numbers of {prefix} have gaps"
    return b"".join(p.read_bytes() for _, p in found)


def host_records(prof: Path, tag: str, dtype: np.dtype, aging: bool | None = None) -> np.ndarray:
    """Records of a host stream (both aging and unaging unless one is given), validated."""
    parts = []
    for age in ([aging] if aging is not None else [True, False]):
        buf = stream_bytes(prof / "host" / "data", f"{'aging' if age else 'unaging'}.{tag}")
        assert len(buf) % dtype.itemsize == 0, f"{tag}: ragged stream"
        rec = decode(buf, dtype)
        check_host_records(rec, f"{tag}")
        parts.append(rec)
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def device_records(prof: Path, device_id: int, tag: str, dtype: np.dtype) -> np.ndarray:
    buf = stream_bytes(prof / files.device_dir_name(device_id) / "data", f"{tag}.{device_id}")
    assert len(buf) % dtype.itemsize == 0, f"{tag}: ragged stream"
    return decode(buf, dtype)


def acsq(prof: Path, device_id: int) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) ACSQ logs of one device, each with physical stream/task ids decoded."""
    rec = device_records(prof, device_id, stars_soc.FILE_TAG, stars_soc.DTYPE)
    func = stars_soc.func_type(rec["word0"])
    assert np.isin(func, [stars_soc.FUNC_ACSQ_START, stars_soc.FUNC_ACSQ_END,
                          stars_soc.FUNC_FFTS_START, stars_soc.FUNC_FFTS_END]).all()
    return rec[func == stars_soc.FUNC_ACSQ_START], rec[func == stars_soc.FUNC_ACSQ_END]


def ts_records(prof: Path, device_id: int) -> dict[int, np.ndarray]:
    """ts_track records of one device split by func_type, each viewed with its dtype."""
    rec = device_records(prof, device_id, ts_track.FILE_TAG, ts_track.PREFIX_DTYPE)
    views = {ts_track.FUNC_STEP_TRACE: ts_track.STEP_TRACE_DTYPE, ts_track.FUNC_TASK_FLIP: ts_track.TASK_FLIP_DTYPE,
             ts_track.FUNC_TASK_TYPE: ts_track.TASK_TYPE_DTYPE}
    out = {}
    # view the whole array first: fancy-indexing a dtype with gaps may not copy the gap bytes
    for func in np.unique(rec["func_type"]):
        out[int(func)] = rec.view(views.get(int(func), ts_track.PREFIX_DTYPE))[rec["func_type"] == func]
    return out


def task_tracks(prof: Path) -> np.ndarray:
    return host_records(prof, task_track.FILE_TAG, task_track.DTYPE)


def api_records(prof: Path) -> np.ndarray:
    return host_records(prof, api_event.FILE_TAG, api_event.DTYPE)
