"""Simulated clocks.  Everything inside the simulator runs on one integer nanosecond timeline
(``sim_ns``, 0 = the moment collection starts); the clocks turn it into the counters the raw
data carries, exactly inverting msprof's conversion (msprof-format.md §2.8):

- host records carry the host counter ``cntvct`` at ``host_cpu_frequency_mhz``;
- device records carry the syscnt at ``hwts_frequency_mhz``;
- host_start.log / dev_start.log hold the sync point (monotonic ns <-> counter);
- start_info maps monotonic ns to wall-clock us (collectionTimeBegin).

``fixed=True`` pins the wall clock and the counter origins so the same seed gives the same
bytes; otherwise the wall clock is the real time of the run.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

# a fixed, plausible origin for tests and reproducible runs: 2026-01-01 00:00:00 UTC
FIXED_WALL_START_US = 1_767_225_600_000_000
FIXED_MONOTONIC_START_NS = 3_600_000_000_000  # the host has been up for an hour
FIXED_HOST_CNTVCT_START = 360_000_000_000
FIXED_DEVICE_SYSCNT_START = 180_000_000_000


@dataclass(frozen=True)
class SimClock:
    wall_start_us: int  # start_info.collectionTimeBegin (us since epoch)
    monotonic_start_ns: int  # CLOCK_MONOTONIC_RAW at sim_ns == 0
    host_cntvct_start: int  # host counter at sim_ns == 0
    device_syscnt_start: int  # every device's syscnt at sim_ns == 0
    host_freq_mhz: float
    hwts_freq_mhz: float
    # a node's oscillator running fast/slow against true time (cluster runs): every counter and the
    # monotonic clock advance by (1 + drift_ppm / 1e6) ns per simulator ns
    drift_ppm: float = 0.0

    def _drifted(self, sim_ns: np.ndarray | int) -> np.ndarray:
        ns = np.asarray(sim_ns, dtype=np.int64)
        if not self.drift_ppm:
            return ns
        return np.rint(ns * (1.0 + self.drift_ppm * 1e-6)).astype(np.int64)

    @classmethod
    def create(cls, host_freq_mhz: float, hwts_freq_mhz: float, fixed: bool) -> "SimClock":
        if fixed:
            return cls(FIXED_WALL_START_US, FIXED_MONOTONIC_START_NS, FIXED_HOST_CNTVCT_START,
                       FIXED_DEVICE_SYSCNT_START, host_freq_mhz, hwts_freq_mhz)
        mono = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW) if hasattr(time, "CLOCK_MONOTONIC_RAW") \
            else time.monotonic_ns()
        return cls(time.time_ns() // 1000, mono, int(mono * host_freq_mhz / 1000),
                   int(mono * hwts_freq_mhz / 1000), host_freq_mhz, hwts_freq_mhz)

    def host_cnt(self, sim_ns: np.ndarray | int) -> np.ndarray:
        """Host counter values (uint64) for simulator times in ns."""
        ns = self._drifted(sim_ns)
        return (self.host_cntvct_start + (ns * self.host_freq_mhz) // 1000).astype(np.uint64)

    def syscnt(self, sim_ns: np.ndarray | int) -> np.ndarray:
        """Device syscnt values (uint64) for simulator times in ns (floor to a tick)."""
        ns = self._drifted(sim_ns)
        return (self.device_syscnt_start + (ns * self.hwts_freq_mhz) // 1000).astype(np.uint64)

    def monotonic_ns(self, sim_ns: np.ndarray | int) -> np.ndarray:
        return self._drifted(sim_ns) + self.monotonic_start_ns

    def local_ns(self, sim_ns: np.ndarray | int) -> np.ndarray:
        """Wall-clock ns, what msprof shows after its conversion."""
        return self._drifted(sim_ns) + self.wall_start_us * 1000
