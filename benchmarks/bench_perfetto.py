"""Benchmark: the native trace (msprof.pftrace) against msprof_*.json, and --slice-size.

    PYTHONPATH=. nice python benchmarks/bench_perfetto.py --workload resnet50 --iterations 716 --devices 2
    PYTHONPATH=. nice python benchmarks/bench_perfetto.py --workload single_op --iterations 111112 --slice-size 50

Collects the workload on the simulated NPU (seed 1) into a temporary dir, parses it (not timed),
then times (wall and CPU) writing every device's msprof_{d}.json with the timeline exporter and
writing the one msprof.pftrace of all devices (each including building its events from the
session).  With ``--slice-size MB`` it instead times the sliced JSON export and reports the
largest file.  Target (issue 15): pftrace <= 1/3 of the JSON bytes and no slower to write;
every slice under the limit.  Prints Markdown rows for benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import platform
import resource
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import msprof_py.export  # noqa: E402,F401
from msprof_py.export.base import REGISTRY, ExportContext, Naming  # noqa: E402
from msprof_py.export.session_access import device_ids  # noqa: E402


def timed(fn):  # type: ignore[no-untyped-def]
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def verify(session, files, ctx, browser: bool) -> None:  # type: ignore[no-untyped-def]
    """Every X/C event once, each flow's s and f in one file, every file with all metadata."""
    import orjson

    from msprof_py.export.timeline import build_timeline

    want_x = want_flows = 0
    for d in device_ids(session):
        tl = build_timeline(session, d, ExportContext())
        want_x += tl.slice_count() + sum(len(c) for c in tl.counters)
        want_flows += sum(len(f) for f in tl.flows)
    got_x = got_flows = 0
    metas = set()
    for p in files:
        ev = orjson.loads(p.read_bytes())
        metas.add(sum(e["ph"] == "M" for e in ev))
        got_x += sum(e["ph"] in ("X", "C") for e in ev)
        s = {e["id"] for e in ev if e["ph"] == "s"}
        assert s == {e["id"] for e in ev if e["ph"] == "f"}, p
        got_flows += len(s)
        del ev
    assert (got_x, got_flows) == (want_x, want_flows), ((got_x, got_flows), (want_x, want_flows))
    print(f"verified: {got_x:,} X/C events and {got_flows:,} flows once each; {len(files)} files; "
          f"metadata events per file: {sorted(metas)}")
    if browser:
        from tests.export.perfetto_ui import load_and_query

        sql = {"errors": "select name, value from stats where value > 0 and severity in ('error', 'data_loss')",
               "slices": "select count(*) as n from slice", "flows": "select count(*) as n from flow"}
        n_s = n_f = 0
        for p in files:
            r = load_and_query(p, sql)
            assert r["state"] == "ready" and r["queries"]["errors"] == [], (p, r)
            n_s += r["queries"]["slices"][0]["n"]
            n_f += r["queries"]["flows"][0]["n"]
        print(f"Perfetto UI: all {len(files)} files open with zero import errors; {n_s:,} slices, {n_f:,} flows")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="resnet50")
    ap.add_argument("--iterations", type=int, default=716)
    ap.add_argument("--devices", type=int, default=2)
    ap.add_argument("--slice-size", type=float, default=None)
    ap.add_argument("--repeat", type=int, default=3, help="alternating JSON / pftrace runs (median reported)")
    ap.add_argument("--tmp", default="/tmp")
    ap.add_argument("--verify", action="store_true",
                    help="with --slice-size: read every slice back (every event once, flows whole, metadata in "
                         "each) and, with --browser, open each in the Perfetto UI (tests/export/perfetto_ui.py)")
    ap.add_argument("--browser", action="store_true")
    a = ap.parse_args()
    from msprof_py.collect import collect
    from msprof_py.parse.session import load

    work = Path(tempfile.mkdtemp(prefix="bench_perfetto_", dir=a.tmp))
    try:
        res = collect(a.workload, output=work, iterations=a.iterations, devices=a.devices, seed=1)
        session = load(res.prof_dir)
        tasks = len(session.tasks)
        out = work / "out"
        out.mkdir()
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        machine = f"{platform.machine()}, 2 CPUs (shared with other engineers' jobs), Python {platform.python_version()}"
        what = f"collected {a.workload} x{a.iterations} it, {a.devices} dev, {tasks:,} tasks"
        json_ex = REGISTRY["timeline:msprof"]
        if a.slice_size:
            ctx = ExportContext(slice_bytes=int(a.slice_size * 1_000_000))
            files, wall, cpu = timed(lambda: [p for d in device_ids(session)
                                              for p in json_ex.write(session, out, Naming(d), ctx)])
            sizes = [p.stat().st_size for p in files]
            if a.verify:
                verify(session, files, ctx, a.browser)
            print(f"| {date} | {what} | msprof_*.json --slice-size {a.slice_size:g} | {len(files)} files, "
                  f"largest {max(sizes):,} B, total {sum(sizes) / 1e6:.1f} MB | {wall:.2f} s | {cpu:.2f} s "
                  f"| {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB | {machine} |")
            return
        runs = []
        for _ in range(a.repeat):  # alternate the two writers so machine load hits both alike
            files, jw, jc = timed(lambda: [p for d in device_ids(session)
                                           for p in json_ex.write(session, out, Naming(d), ExportContext())])
            jbytes = sum(p.stat().st_size for p in files)
            for p in files:
                p.unlink()
            trace, pw, pc = timed(lambda: REGISTRY["trace:msprof"].write(session, out, Naming(), ExportContext()))
            pbytes = trace[0].stat().st_size
            trace[0].unlink()
            runs.append((jw, jc, pw, pc))
        med = [statistics.median(r[i] for r in runs) for i in range(4)]
        each = "; ".join(f"{r[0]:.2f}/{r[2]:.2f}" for r in runs)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"| {date} | {what} | msprof_*.json ({len(files)} files) | {jbytes / 1e6:.1f} MB | {med[0]:.2f} s "
              f"| {med[1]:.2f} s | | {machine} |")
        print(f"| {date} | {what} | msprof.pftrace | {pbytes / 1e6:.1f} MB ({pbytes / jbytes:.3f} of the JSON) "
              f"| {med[2]:.2f} s | {med[3]:.2f} s | {rss:.0f} MB | {machine} |")
        print(f"median of {a.repeat} alternating runs; wall JSON/pftrace per run: {each}; "
              f"load average before: {load}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
