"""Cluster analysis benchmark (issue 13, acceptance 4): 128 ranks x 20 iterations.

Collects a 128-rank llm_decoder job (16 nodes of 8, TP 8 x DP 16; small shapes, so the size is
in the task count, not the tensors), then runs ``msprof-py cluster`` three ways, each in a fresh
process with the ranks' parse caches removed first (every run parses every rank from raw):
1 local worker, 2 local workers, and a 2-worker Dask LocalCluster on loopback.  Reported: wall
time, the per-rank work's CPU time summed over the workers, and the coordinator's peak RSS
(ru_maxrss of the process that runs ``analyze_cluster``; with 1 local worker it parses in-process).

Usage: python benchmarks/bench_cluster.py [--ranks 128] [--iterations 20] [--dir /tmp/bench_cluster] [--append-results]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def collect(root: Path, ranks: int, iterations: int) -> float:
    from msprof_py.collect.cluster import collect_cluster
    from msprof_py.runtime.workloads import get_workload

    shutil.rmtree(root, ignore_errors=True)
    t = time.perf_counter()
    collect_cluster(get_workload("llm_decoder", batch=1, seq_len=128, layers=2, hidden=1024, vocab=32000),
                    output=root, ranks=ranks, ranks_per_node=8, iterations=iterations, seed=1, fixed_clock=True,
                    slow_ranks={5: 1.3}, slow_links={(3, 11): 0.5})
    return time.perf_counter() - t


def one_run(root: Path, mode: str) -> dict:
    """Runs in a fresh process: the analysis, its wall time and the coordinator's peak RSS."""
    from msprof_py.cluster.analyze import analyze_cluster

    for c in root.glob("PROF_*/msprof_py_cache"):
        shutil.rmtree(c)
    out = root.parent / f"{root.name}_out_{mode}"
    t = time.perf_counter()
    if mode == "dask2":
        from distributed import LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None) as lc:
            t = time.perf_counter()  # cluster start-up is not the analysis
            rep = analyze_cluster(root, out, scheduler=lc.scheduler_address)
            wall = time.perf_counter() - t
    else:
        rep = analyze_cluster(root, out, workers=int(mode[-1]))
        wall = time.perf_counter() - t
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    me = resource.getrusage(resource.RUSAGE_SELF)
    return {"mode": mode, "wall_s": round(wall, 2), "coordinator_peak_rss_mb": round(me.ru_maxrss / 1024, 1),
            "cpu_s_self": round(me.ru_utime + me.ru_stime, 2),
            "cpu_s_children": round(children.ru_utime + children.ru_stime, 2),
            "findings": [f.subject for f in rep.findings[:3]]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=128)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/bench_cluster"))
    ap.add_argument("--modes", default="local1,local2,dask2")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--append-results", action="store_true")
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one_run(args.dir, args.one)))
        return
    t_collect = collect(args.dir, args.ranks, args.iterations)
    raw = sum(f.stat().st_size for f in args.dir.rglob("*") if f.is_file())
    print(f"collected {args.ranks} ranks x {args.iterations} iterations in {t_collect:.1f} s, {raw / 1e6:.0f} MB raw")
    rows = []
    for mode in args.modes.split(","):
        out = subprocess.run([sys.executable, __file__, "--dir", str(args.dir), "--one", mode],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(r)
        print(r)
    if args.append_results:
        cpu = os.cpu_count()
        load = os.getloadavg()[0]
        lines = [f"\n### bench_cluster.py ({args.ranks} ranks x {args.iterations} iterations, llm_decoder TP 8 x DP "
                 f"{args.ranks // 8}, {raw / 1e6:.0f} MB raw) - "
                 f"{datetime.now(timezone.utc):%Y-%m-%d} - {platform.machine()}, {cpu} CPUs, Python "
                 f"{platform.python_version()}",
                 "",
                 f"`python benchmarks/bench_cluster.py --append-results` (collect: {t_collect:.1f} s). Each run in a fresh "
                 "process, parse caches removed first. The machine is shared with the other engineers' jobs "
                 f"(load average {load:.1f} at the end), so wall times carry that noise.",
                 "",
                 "| engine | wall | coordinator peak RSS | CPU coordinator / children | top findings |",
                 "|---|---|---|---|---|"]
        names = {"local1": "1 local worker (in-process)", "local2": "2 local workers (process pool)",
                 "dask2": "Dask LocalCluster, 2 workers (loopback)"}
        for r in rows:
            lines.append(f"| {names.get(r['mode'], r['mode'])} | {r['wall_s']} s | {r['coordinator_peak_rss_mb']} MB | "
                         f"{r['cpu_s_self']} s / {r['cpu_s_children']} s | {', '.join(r['findings'])} |")
        with open(ROOT / "benchmarks" / "RESULTS.md", "a") as fp:
            fp.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
