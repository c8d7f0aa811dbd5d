"""The device table: every number the cost model and the clocks use, in one place.

Units are in the field names.  ``ATLAS_A2`` is the default (an Ascend 910B-like chip,
``platform_version`` "5" = chip V4 in msprof's chip map).
"""
from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class DeviceSpec:
    name: str
    platform_version: str  # msprof chip id as a string: "5" = V4 (Atlas A2/A3)
    ai_core_num: int  # cube cores
    aiv_num: int  # vector cores
    ai_cpu_core_num: int
    cube_tflops_fp16: float  # peak dense fp16 matmul throughput, whole chip
    vector_tflops_fp16: float  # peak vector throughput, whole chip
    hbm_bandwidth_gbps: float  # GB/s
    l2_bandwidth_gbps: float  # GB/s
    pcie_bandwidth_gbps: float  # GB/s host <-> device, per direction
    hccs_bandwidth_gbps: float  # GB/s per link, device <-> device
    hccs_latency_us: float  # per ring step
    hwts_frequency_mhz: float  # device syscnt rate (info.json DeviceInfo.hwts_frequency)
    aic_frequency_mhz: float
    host_cpu_frequency_mhz: float  # host counter rate (info.json CPU[0].Frequency)
    kernel_launch_overhead_us: float  # device-side fixed cost of starting a kernel
    task_schedule_gap_us: float  # device gap between consecutive tasks on one stream
    host_launch_us: float  # host CPU time of one rtKernelLaunch
    memory_gb: int
    # inter-node links of a cluster (msprof_py.runtime.cluster): one 200 Gbit/s RoCE port per NPU
    roce_bandwidth_gbps: float = 25.0  # GB/s per port, each direction
    roce_latency_us: float = 15.0  # per ring step over the network


ATLAS_A2 = DeviceSpec(
    name="Ascend910B3",
    platform_version="5",
    ai_core_num=20,
    aiv_num=40,
    ai_cpu_core_num=6,
    cube_tflops_fp16=313.0,
    vector_tflops_fp16=19.6,
    hbm_bandwidth_gbps=1600.0,
    l2_bandwidth_gbps=5000.0,
    pcie_bandwidth_gbps=25.0,
    hccs_bandwidth_gbps=56.0,
    hccs_latency_us=8.0,
    hwts_frequency_mhz=50.0,
    aic_frequency_mhz=1800.0,
    host_cpu_frequency_mhz=100.0,
    kernel_launch_overhead_us=1.5,
    task_schedule_gap_us=0.8,
    host_launch_us=6.0,
    memory_gb=64,
)

DEVICES: dict[str, DeviceSpec] = {"atlas_a2": ATLAS_A2}


def with_overrides(spec: DeviceSpec, **changes: float) -> DeviceSpec:
    """A copy of ``spec`` with some numbers changed (tests, what-if studies)."""
    return replace(spec, **changes)
