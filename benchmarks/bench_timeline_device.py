"""Benchmark: one device's timeline files as the streamed export writes them (that device's
session read from the parse cache, the other devices not in memory), per exporter: wall and CPU
seconds (process time: every thread) and the peak RSS above the session (VmHWM reset before each
exporter through /proc/self/clear_refs, malloc settings as ``msprof-py export`` pins them);
``--trace``: the tracemalloc peak above the session too (live allocations, no allocator slack;
slower), with the main thread's stack at the sampled maximum.  Prints the md5 of every file, so
two versions of the code can be compared byte for byte (run the other version through
``PYTHONPATH``).

    nice python benchmarks/bench_timeline_device.py COPY_OF_PROF_DIR DEVICE [--only msprof,hccl] [--trace] [--kinds timeline,summary]

Run it on a copy (``cp -r``): a dir without a parse cache is decoded and cached first.
"""
from __future__ import annotations

import argparse
import collections
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path and "PYTHONPATH" not in os.environ:
    sys.path.insert(0, str(ROOT))

import msprof_py.export  # noqa: E402,F401  (registers every exporter)
from msprof_py.atomic import scratch_dir  # noqa: E402
from msprof_py.export.base import REGISTRY, ExportContext, Naming  # noqa: E402
from msprof_py.export.runner import collection_stamp  # noqa: E402
from msprof_py.export.stream import build_device  # noqa: E402
from msprof_py.export.views import cpp_export  # noqa: E402
from msprof_py.memory import release_freed_memory, trim  # noqa: E402
from msprof_py.parse.source import ProfSource  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_timeline import _status, print_md5s  # noqa: E402  (VmRSS / VmHWM in MB; md5 lines)


def _traced(run, main_id: int) -> tuple[object, float, str]:
    """``run()`` under tracemalloc: its result, the peak above the start (MB), the stack at the
    highest sample (every 2 ms)."""
    import tracemalloc

    samples: list[tuple[int, tuple[str, ...]]] = []
    stop = threading.Event()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]

    def sampler() -> None:
        while not stop.is_set():
            fr, st = sys._current_frames().get(main_id), []
            while fr is not None:
                if "msprof_py" in fr.f_code.co_filename:
                    st.append(f"{os.path.basename(fr.f_code.co_filename)}:{fr.f_code.co_name}")
                fr = fr.f_back
            samples.append((tracemalloc.get_traced_memory()[0] - base, tuple(reversed(st))))
            stop.wait(0.002)

    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    try:
        out = run()
    finally:
        stop.set()
        th.join()
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
    top = max(samples, default=(0, ()), key=lambda s: s[0])
    return out, peak / 2**20, " > ".join(top[1][-4:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("prof", help="a COPY of a PROF dir (the parse cache is written into it)")
    ap.add_argument("device", type=int)
    ap.add_argument("--only", default=None, help="comma-separated timeline exporter names (default: all)")
    ap.add_argument("--trace", action="store_true", help="tracemalloc peaks too (slower)")
    ap.add_argument("--kinds", default="timeline", help="exporter kinds, comma-separated (timeline,summary: "
                    "the device's summaries too, in registry order, before its timelines)")
    a = ap.parse_args()
    release_freed_memory()
    prof = Path(a.prof)
    source = ProfSource(prof)
    if not source.cached:
        facts = cpp_export(source.host)
        for d in source.devices:
            source.add(build_device(source, d, facts))
        source.finish()
        source = ProfSource(prof)
    session = source.device(a.device)
    trim()
    only = set(a.only.split(",")) if a.only else None
    exporters = [ex for ex in REGISTRY.values()
                 if ex.kind in a.kinds.split(",") and ex.per_device and (only is None or ex.name in only)]
    exporters.sort(key=lambda ex: ex.kind != "summary")  # the export's order: summaries, then timelines
    out = Path(tempfile.mkdtemp(prefix="tlbench-", dir=prof.parent))
    ctx = ExportContext()
    ctx.scratch = scratch_dir(out)
    naming = Naming(a.device, None, None, "csv", collection_stamp(session))
    print(f"# load {os.getloadavg()[0]:.1f}, session RSS {_status('VmRSS'):.0f} MB")
    print("| exporter | wall s | CPU s (user + sys) | MB written | peak RSS above the session MB |"
          + (" traced peak MB | where |" if a.trace else ""))
    print("|---|---|---|---|---|" + ("---|---|" if a.trace else ""))
    written: list[Path] = []
    try:
        for ex in exporters:
            trim()
            Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
            r0 = _status("VmRSS")
            w0, c0, t0 = time.perf_counter(), time.process_time(), os.times()
            run = (lambda ex=ex: ex.write(session, out, naming, ctx))
            extra = ""
            if a.trace:
                paths, peak, where = _traced(run, threading.get_ident())
                extra = f" {peak:.0f} | {where} |"
            else:
                paths = run()
            w, c, t1 = time.perf_counter() - w0, time.process_time() - c0, os.times()
            mb = sum(p.stat().st_size for p in paths) / 1e6
            print(f"| {ex.kind}:{ex.name} | {w:.2f} | {c:.2f} ({t1.user - t0.user:.2f} + {t1.system - t0.system:.2f}) "
                  f"| {mb:.1f} | {_status('VmHWM') - r0:.0f} |{extra}", flush=True)
            written += paths
        print_md5s(written)
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
