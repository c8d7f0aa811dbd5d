"""Benchmark: ``compare`` on a large dump, and a numeric run of a small ResNet-50 (issue 6).

    PYTHONPATH=. python benchmarks/bench_compare.py [--nodes 64] [--elements 1000000] [--append]

1. A synthetic dump of ``--nodes`` nodes, each an fp16 NPU tensor of ``--elements`` elements
   against its fp32 reference (1% of the elements perturbed past the tolerances): wall time of
   ``compare_dump`` with 1 and 2 threads (``--max_cores``), in elements per second.
2. If the runtime's workloads are present: ``resnet50`` at batch 1, 32x32 images: wall time of
   the numeric run + dump, and of compare + locate.

``--append`` adds the figures to benchmarks/RESULTS.md with the machine and date.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from msprof_py.precision import dumpdir
from msprof_py.precision.compare import CompareOptions, compare_dump
from msprof_py.precision.locate import locate

RESULTS = Path(__file__).with_name("RESULTS.md")


def machine() -> str:
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    return f"{os.cpu_count()} CPUs ({cpu}), {mem_kb / 1024 / 1024:.1f} GiB RAM, Python {platform.python_version()}"


def synthetic(root: Path, nodes: int, elements: int) -> None:
    rng = np.random.default_rng(0)
    for sub in ("npu", "cpu", "result"):
        (root / sub).mkdir(parents=True)
    for i in range(nodes):
        ref = rng.standard_normal(elements).astype(np.float32)
        npu = ref.astype(np.float16)
        bad = rng.integers(0, elements, elements // 100)
        npu[bad] = (ref[bad] * 1.5 + 0.1).astype(np.float16)
        dumpdir.save_tensor(root / "cpu", f"layer{i}/out", ref)
        dumpdir.save_tensor(root / "npu", f"layer{i}/out", npu)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=64)
    ap.add_argument("--elements", type=int, default=1_000_000)
    ap.add_argument("--append", action="store_true")
    a = ap.parse_args()
    lines = []
    tmp = Path(tempfile.mkdtemp(prefix="pb", dir="/tmp"))
    try:
        synthetic(tmp / "s", a.nodes, a.elements)
        total = a.nodes * a.elements
        for cores in (1, 2):
            t = time.perf_counter()
            res = compare_dump(str(tmp / "s"), CompareOptions(max_cores=cores))
            dt = time.perf_counter() - t
            assert len(res.failed) == a.nodes
            lines.append(f"compare, {a.nodes} nodes x {a.elements:,} fp16 elements, --max_cores {cores}: "
                         f"{dt:.2f} s ({total / dt / 1e6:.0f} M elements/s)")
            print(lines[-1])
        try:
            from msprof_py.precision.dump import run_and_dump
            from msprof_py.precision.workloads import load_workload

            wl = load_workload("resnet50", {"batch": 1, "image": 32})
        except Exception as err:  # noqa: BLE001 - the runtime may not be there
            print(f"resnet50 numeric run skipped: {err}")
        else:
            t = time.perf_counter()
            run = run_and_dump(wl.cpu_graph, str(tmp / "r"), npu_graph=wl.npu_graph, seed=0)
            t1 = time.perf_counter()
            loc = locate(compare_dump(str(tmp / "r"), CompareOptions()))
            t2 = time.perf_counter()
            lines.append(f"resnet50 batch 1 32x32: numeric run + dump of {len(run.npu.executed)} NPU / "
                         f"{len(run.cpu.executed)} CPU ops {t1 - t:.2f} s; compare + locate {t2 - t1:.2f} s "
                         f"(verdict: {loc.verdict})")
            print(lines[-1])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if a.append:
        with RESULTS.open("a") as fh:
            if RESULTS.stat().st_size == 0:
                fh.write("# Benchmark results\n")
            fh.write(f"\n## bench_compare.py, {datetime.date.today()}, {machine()}\n\n")
            fh.writelines(f"- {ln}\n" for ln in lines)


if __name__ == "__main__":
    main()
