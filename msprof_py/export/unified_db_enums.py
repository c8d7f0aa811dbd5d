"""The fixed rows of msprof's unified DB: enum tables, META_DATA, chip names.

msprof's C++ analysis writes them from constants (``analysis/csrc/application/database/
db_constant.h``: ``ENUM_TABLE``, ``META_DATA``, ``CHIP_TABLE``; ``db_assembler.cpp``:
``SaveEnumData``, ``SaveMetaData``, ``SaveNpuData``), whatever the capture holds.  The rows here
are those of the msprof in CANN 9.0.0 (schema 1.2.0), as its exports of the 910B captures in
shared/realdata hold them.  msprof's development head of 2026-07 (same schema number) adds the
link types ``UB`` (7) and ``UBoE`` (8), the transport type ``ROCE`` (4) and an
``ENUM_OVERLAP_ANALYSIS_TYPE`` table; we follow the released msprof (README, deliberate
differences).
"""
from __future__ import annotations

NA = "N/A"
_HCCL_TAIL = [(255, "RESERVED"), (65534, NA), (65535, "INVALID_TYPE")]

ENUM_TABLES: dict[str, list[tuple[int, str]]] = {
    # MSPROF_REPORT_*_LEVEL
    "ENUM_API_TYPE": [(5000, "runtime"), (5500, "communication"), (10000, "node"), (15000, "model"), (20000, "acl")],
    "ENUM_MODULE": [(i, n) for i, n in [
        (0, "SLOG"), (1, "IDEDD"), (2, "SCC"), (3, "HCCL"), (4, "FMK"), (5, "CCU"), (6, "DVPP"), (7, "RUNTIME"),
        (8, "CCE"), (9, "HDC"), (10, "DRV"), (11, "NET"), (22, "DEVMM"), (23, "KERNEL"), (24, "LIBMEDIA"),
        (25, "CCECPU"), (27, "ROS"), (28, "HCCP"), (29, "ROCE"), (30, "TEFUSION"), (31, "PROFILING"), (32, "DP"),
        (33, "APP"), (34, "TS"), (35, "TSDUMP"), (36, "AICPU"), (37, "LP"), (38, "TDT"), (39, "FE"), (40, "MD"),
        (41, "MB"), (42, "ME"), (43, "IMU"), (44, "IMP"), (45, "GE"), (47, "CAMERA"), (48, "ASCENDCL"),
        (49, "TEEOS"), (50, "ISP"), (51, "SIS"), (52, "HSM"), (53, "DSS"), (54, "PROCMGR"), (55, "BBOX"),
        (56, "AIVECTOR"), (57, "TBE"), (58, "FV"), (60, "TUNE"), (61, "HSS"), (62, "FFTS"), (63, "OP"), (64, "UDF"),
        (65, "HICAID"), (66, "TSYNC"), (67, "AUDIO"), (68, "TPRT"), (69, "ASCENDCKERNEL"), (70, "ASYS"),
        (71, "ATRACE"), (72, "RTC"), (73, "SYSMONITOR"), (74, "AMP"), (75, "ADETECT"), (76, "MBUFF"),
        (77, "CUSTOM")]],
    "ENUM_HCCL_DATA_TYPE": [(0, "INT8"), (1, "INT16"), (2, "INT32"), (3, "FP16"), (4, "FP32"), (5, "INT64"),
                            (6, "UINT64"), (7, "UINT8"), (8, "UINT16"), (9, "UINT32"), (10, "FP64"), (11, "BFP16"),
                            (12, "INT128"), (14, "HIF8"), (15, "FP8E4M3"), (16, "FP8E5M2"), (17, "FP8E8M0"),
                            *_HCCL_TAIL],
    "ENUM_HCCL_LINK_TYPE": [(0, "ON_CHIP"), (1, "HCCS"), (2, "PCIE"), (3, "ROCE"), (4, "SIO"), (5, "HCCS_SW"),
                            (6, "STANDARD_ROCE"), *_HCCL_TAIL],
    "ENUM_HCCL_TRANSPORT_TYPE": [(0, "SDMA"), (1, "RDMA"), (2, "LOCAL"), (3, "UB"), *_HCCL_TAIL],
    "ENUM_HCCL_RDMA_TYPE": [(0, "RDMA_SEND_NOTIFY"), (1, "RDMA_SEND_PAYLOAD"), *_HCCL_TAIL],
    "ENUM_MSTX_EVENT_TYPE": [(0, "marker"), (1, "push/pop"), (2, "start/end"), (3, "marker_ex")],
    "ENUM_MEMCPY_OPERATION": [(0, "host to host"), (1, "host to device"), (2, "device to host"),
                              (3, "device to device"), (4, "managed memory"), (5, "addr device to device"),
                              (6, "host to device ex"), (7, "device to host ex"), (65535, "other")],
}
# API level names -> ENUM_API_TYPE ids (CANN_API.type); our session's level names
API_TYPES = {name: i for i, name in ENUM_TABLES["ENUM_API_TYPE"]} | {"hccl": 5500}

SCHEMA_VERSION = ("1", "2", "0")
META_DATA = [("SCHEMA_VERSION_MICRO", SCHEMA_VERSION[2]), ("SCHEMA_VERSION_MINOR", SCHEMA_VERSION[1]),
             ("SCHEMA_VERSION_MAJOR", SCHEMA_VERSION[0]), ("SCHEMA_VERSION", ".".join(SCHEMA_VERSION))]

# info.json platform_version -> NPU_INFO.name (CHIP_TABLE); any other number is "UNKNOWN"
CHIP_NAMES = {0: "Ascend310", 1: "Ascend910A", 4: "Ascend310P", 5: "Ascend910B", 7: "Ascend310B", 15: "Ascend950"}
UNKNOWN_CHIP = "UNKNOWN"
DEFAULT_HOST_UID = "0"  # context.cpp: host info.json without "hostUid"
