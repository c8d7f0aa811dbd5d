"""Host-only tables of one PROF dir: ``memcpy`` (schema.MEMCPY_COLUMNS), ``fusion_ops``
(schema.FUSION_OP_COLUMNS, memory in KB) and ``devices`` (schema.DEVICE_INFO_FIELDS: one row per
result dir, from info.json / sample.json / start_info)."""
from __future__ import annotations

import pandas as pd

from msprof_py.parse import schema
from msprof_py.parse.empty_tables import object_frame
from msprof_py.parse.host import HostData

def memcpy_table(host: HostData | None) -> pd.DataFrame:
    if host is None or host.memcpy.empty:
        return object_frame(schema.MEMCPY_COLUMNS)
    ht = host.host_tasks.drop_duplicates("host_row")
    ht = ht[ht["runtime_api"] >= 0][["runtime_api", "device_id", "stream_id", "task_id", "batch_id"]]
    m = host.memcpy[host.memcpy["runtime_api"] >= 0].merge(ht.drop_duplicates("runtime_api"), on="runtime_api")
    return m[schema.MEMCPY_COLUMNS].reset_index(drop=True)


def fusion_table(host: HostData | None) -> pd.DataFrame:
    if host is None or host.fusion.empty:
        return object_frame(schema.FUSION_OP_COLUMNS)
    names = host.graph_ids.drop_duplicates("model_id", keep="last").set_index("model_id")["model_name"]
    f = host.fusion.copy()
    f["model_name"] = f["model_id"].map(names).astype(object).fillna("N/A")  # object first: no float fillna
    return f[schema.FUSION_OP_COLUMNS]


def devices_table(host_rd, dev_rds) -> pd.DataFrame:
    rows = []
    for rd in ([host_rd] if host_rd is not None else []) + list(dev_rds):
        dinfo = (rd.info.get("DeviceInfo") or [{}])[0] if isinstance(rd.info.get("DeviceInfo"), list) else {}
        hw = rd.hwts_mhz
        rows.append({
            "device_id": rd.device_id, "pid": _int(rd.info.get("pid")), "pid_name": str(rd.info.get("pid_name", "")),
            "hostname": str(rd.info.get("hostname", "")), "rank_id": _int(rd.info.get("rank_id"), -1),
            "platform_version": str(rd.info.get("platform_version", "")),
            "ai_core_num": _int(dinfo.get("ai_core_num") if dinfo else None, 0),
            "aiv_num": _int(dinfo.get("aiv_num") if dinfo else None, 0),
            "hwts_frequency_mhz": float(hw) if hw is not None else float("nan"),
            "host_cpu_frequency_mhz": float(rd.host_mhz),
            "collection_date_begin": str(rd.start_info.get("collectionDateBegin", "")),
            "collection_start_ns": rd.collection_start_ns, "collection_end_ns": rd.collection_end_ns,
            "job_info": str(rd.info.get("jobInfo", "N/A")) if rd.info.get("jobInfo") not in (None, "") else "N/A",
            "drv_version": _int(rd.info.get("drvVersion"), -1),
            "prof_level": _prof_level(rd.sample),
            "dir_name": rd.name,
            "host_uid": str(rd.info.get("hostUid", "")),
        })
    return pd.DataFrame(rows, columns=schema.DEVICE_INFO_FIELDS)


def _prof_level(sample: dict | None) -> str:
    """sample.json's profiling level (msprof's Context::IsLevel0 reads profLevel, else prof_level)."""
    sample = sample if isinstance(sample, dict) else {}
    v = sample.get("profLevel", sample.get("prof_level", ""))
    return str(v) if v is not None else ""


def _int(v, default: int = -1) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return default
