"""Benchmark: the summary exporters alone (op_summary, task_time, step_trace, ...) on a loaded session.

    PYTHONPATH=. python benchmarks/bench_summaries.py PROF_DIR OUT_DIR [--device 0] [--format csv json]
                                                       [--only op_summary task_time] [--profile]

Loads ``PROF_DIR`` once (``load_prof``: from its parse cache when there is one; the PROF dir
itself is only read), then runs every registered ``summary`` exporter for one device (and the
host-side ones) into ``OUT_DIR`` in each format asked for.  Per exporter: CPU time (user + sys
of the process, all threads), wall time and the peak RSS while it ran (VmRSS sampled every
5 ms); then the md5 of every file written, so two code versions can be compared byte for byte.
``--profile`` wraps the exporters in pyinstrument (if installed) and prints its text report.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


class RssPeak:
    """Highest VmRSS (MB) seen by a 5 ms sampling thread between start() and stop()."""

    def __init__(self) -> None:
        self.peak = 0
        self._on = False

    @staticmethod
    def now() -> int:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) // 1024
        return 0

    def _run(self) -> None:
        while self._on:
            self.peak = max(self.peak, self.now())
            time.sleep(0.005)

    def start(self) -> None:
        self.peak, self._on = self.now(), True
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def stop(self) -> int:
        self._on = False
        self._t.join()
        return max(self.peak, self.now())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("prof", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--format", nargs="+", default=["csv"], choices=["csv", "json"])
    ap.add_argument("--only", nargs="*", default=None, help="exporter names (default: every summary)")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()

    import msprof_py.export  # noqa: F401  (registers the exporters)
    from msprof_py.export.base import REGISTRY, ExportContext, Naming
    from msprof_py.memory import release_freed_memory, trim
    from msprof_py.parse.session import load_prof

    release_freed_memory()
    t0 = time.perf_counter()
    session = load_prof(args.prof)
    print(f"loaded {args.prof.name} in {time.perf_counter() - t0:.1f} s, RSS {RssPeak.now()} MB")
    args.out.mkdir(parents=True, exist_ok=True)
    exporters = [ex for ex in REGISTRY.values() if ex.kind == "summary"
                 and (args.only is None or ex.name in args.only)]
    prof = None
    if args.profile:
        from pyinstrument import Profiler
        prof = Profiler(interval=0.002)
        prof.start()
    written: list[Path] = []
    total_cpu = 0.0
    for fmt in args.format:
        naming = Naming(None, None, None, fmt, "")
        for ex in exporters:
            nm = naming.for_device(args.device if ex.per_device else None)
            trim()
            rss = RssPeak()
            rss.start()
            c0, w0 = os.times(), time.perf_counter()
            paths = ex.write(session, args.out, nm, ExportContext())
            c1, w1 = os.times(), time.perf_counter()
            peak = rss.stop()
            cpu = (c1.user - c0.user) + (c1.system - c0.system)
            sys_s = c1.system - c0.system
            total_cpu += cpu
            size = sum(p.stat().st_size for p in paths)
            print(f"{fmt:4s} {ex.name:24s} cpu {cpu:6.2f} s (sys {sys_s:4.2f})  wall {w1 - w0:6.2f} s  peak RSS {peak:5d} MB  "
                  f"{size / 1e6:8.1f} MB written")
            written += paths
    if prof is not None:
        prof.stop()
        print(prof.output_text(unicode=False, color=False, show_all=False))
    print(f"total exporter CPU {total_cpu:.2f} s")
    for p in sorted(set(written)):
        h = hashlib.md5()
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
        print(f"md5 {h.hexdigest()}  {p.name}")


if __name__ == "__main__":
    main()
