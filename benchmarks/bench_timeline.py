"""Benchmark: the timeline exporters alone (msprof_*.json and the per-component timeline files)
on one PROF dir, session loaded once (parse not timed).

    nice python benchmarks/bench_timeline.py COPY_OF_PROF_DIR [--out DIR] [--only msprof,task_time]

Run it on a copy (``cp -r``): the first load writes the parse cache into the PROF dir.  Prints,
per exporter (all devices), wall and CPU seconds (process time: every thread) and the peak RSS
reached while it ran (VmHWM, reset before each exporter through /proc/self/clear_refs), then the
md5 of every file written, so two versions of the code can be compared byte for byte.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import msprof_py.export  # noqa: E402,F401  (registers every exporter)
from msprof_py.atomic import scratch_dir  # noqa: E402
from msprof_py.export.base import REGISTRY, ExportContext, Naming  # noqa: E402
from msprof_py.export.runner import collection_stamp  # noqa: E402
from msprof_py.export.session_access import device_ids  # noqa: E402
from msprof_py.memory import trim  # noqa: E402
from msprof_py.parse.session import load  # noqa: E402


def print_md5s(paths: list[Path]) -> None:
    """One line per file, by name: md5, name, size (for before / after comparisons)."""
    for p in sorted(paths):
        h = hashlib.md5()
        with open(p, "rb") as fp:
            while block := fp.read(1 << 22):
                h.update(block)
        print(f"{h.hexdigest()}  {p.name}  {p.stat().st_size}")


def _status(key: str) -> float:
    """A VmRSS / VmHWM figure of this process in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    except OSError:
        pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("prof", help="a COPY of a PROF dir (the parse cache is written into it)")
    ap.add_argument("--out", default=None, help="output dir (default: a temporary dir next to the PROF dir)")
    ap.add_argument("--only", default=None, help="comma-separated exporter names (default: every timeline)")
    a = ap.parse_args()
    session = load(a.prof)
    trim()
    only = set(a.only.split(",")) if a.only else None
    exporters = [ex for ex in REGISTRY.values() if ex.kind == "timeline" and (only is None or ex.name in only)]
    out = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="tlbench-", dir=Path(a.prof).parent))
    out.mkdir(parents=True, exist_ok=True)
    ctx = ExportContext()
    ctx.scratch = scratch_dir(out)
    naming = Naming(None, None, None, "csv", collection_stamp(session))
    print(f"# {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node()}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}, session RSS {_status('VmRSS'):.0f} MB")
    print("| exporter | wall s | CPU s | peak RSS MB | files |")
    print("|---|---|---|---|---|")
    written: list[Path] = []
    tw = tc = 0.0
    try:
        for ex in exporters:
            _reset_peak()
            w0, c0 = time.perf_counter(), time.process_time()
            paths = [p for d in device_ids(session) if ex.per_device
                     for p in ex.write(session, out, naming.for_device(d), ctx)]
            if not ex.per_device:
                paths = ex.write(session, out, naming, ctx)
            w, c = time.perf_counter() - w0, time.process_time() - c0
            tw, tc = tw + w, tc + c
            print(f"| {ex.name} | {w:.2f} | {c:.2f} | {_status('VmHWM'):.0f} | {len(paths)} |", flush=True)
            written += paths
            trim()
    finally:
        shutil.rmtree(ctx.scratch, ignore_errors=True)
    print(f"| all | {tw:.2f} | {tc:.2f} | | {len(written)} |")
    for m in ctx.notes:
        print("note:", m)
    for m in ctx.warnings:
        print("warning:", m)
    print_md5s(written)


if __name__ == "__main__":
    main()
