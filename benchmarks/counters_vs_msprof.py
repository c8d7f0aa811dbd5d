"""msprof's own analysis against ``msprof-py export`` on device-counter data the collector wrote.

Two checks, each on a fresh ``--fixed-clock`` collect copied before msprof runs on it:

* **counters**: a script run (the ``mlp_train`` graph, 2 iterations, an ``aclnnNonZero``,
  ``acl.prof`` marks / ranges / push-pop) with ``aicpu``, ``l2`` and ``msproftx`` on: msprof's
  ``aicpu``, ``dp``, ``l2_cache`` and ``msprof_tx`` CSVs against ours, cell by cell, and the
  events of its ``msprof_tx`` timeline against ours.
* **pmu**: one ``resnet50`` collect (1 device, 1 iteration) per ``aic_metrics`` set: the PMU
  columns of msprof's op_summary (from ``aicore_time(us)`` / the first PMU column on) against
  ours, rows keyed by stream, task and start.

msprof's analysis is Ascend/msprof's ``analysis/msprof/msprof.py`` (``--msprof PATH``); with
``analysis/lib64/msprof_analysis.so`` next to it msprof runs its C++ analysis (its libraries on
``LD_LIBRARY_PATH``), otherwise its pure-Python path.  A real 910B capture is exported with the
C++ analysis, and only it computes every set on the simulated 910B: the Python path writes other
columns for the sets besides PipeUtilization (so they "differ") and rounds the PipeUtilization
times to 2 decimals first (README, "Collecting").  The counters files are the same on both paths.
This script only runs msprof; it neither builds nor ships it.

Measured 2026-11-24 (C++ analysis built from Ascend/msprof 9ba1ac7be913): the four counters CSVs
equal on every cell (3 + 2 + 20 + 5 rows), msprof_tx.json 9 of 10 events equal (the tenth
shortened for viewer nesting), all 8 sets x 673 rows equal on every PMU cell; 1 min 39 s on the
shared 2-core machine.

    python benchmarks/counters_vs_msprof.py --msprof /path/to/analysis/msprof/msprof.py [--sets L2Cache,Memory]

Prints one line per file / set: rows, cells, differing cells (with the first few).  Exit 1 when
msprof failed on a dir or a cell differs.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETS = ("PipeUtilization", "ArithmeticUtilization", "Memory", "MemoryL0", "MemoryUB", "ResourceConflictRatio",
        "MemoryAccess", "L2Cache")
COUNTER_FILES = {"aicpu": "aicpu_0.csv", "dp": "dp_0.csv", "l2_cache": "l2_cache_0.csv", "msprof_tx": "msprof_tx.csv"}
# the script run of the counters check (shared with tests/export/test_counters.py)
SCRIPT = ROOT / "fixtures" / "scripts" / "counters_train.py"


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, **kw)


def collect(out: Path, options: dict, target: list[str]) -> Path:
    r = run([sys.executable, "-m", "msprof_py", "collect", "--fixed-clock", "--output", str(out),
             "--options", json.dumps(options), *target])
    if r.returncode:
        raise SystemExit(f"collect failed: {r.stderr.strip()}")
    (prof,) = [p for p in out.iterdir() if p.name.startswith("PROF_")]
    return prof


def both(prof: Path, msprof: Path) -> tuple[Path, Path]:
    """(our output dir, msprof's output dir) of ``prof`` (msprof runs on a copy)."""
    copy = prof.parent / "msprof_copy" / prof.name
    shutil.copytree(prof, copy)
    for kind in ("summary", "timeline"):
        r = run([sys.executable, str(msprof), "export", kind, "-dir", str(copy)], cwd=str(msprof.parents[1]))
        if r.returncode or "[ERROR]" in r.stdout + r.stderr:
            raise SystemExit(f"msprof export {kind} failed on {copy}:\n{(r.stdout + r.stderr)[-2000:]}")
    r = run([sys.executable, "-m", "msprof_py", "export", "--output", str(prof)])
    if r.returncode:
        raise SystemExit(f"msprof-py export failed: {r.stderr.strip()}")
    return prof / "mindstudio_profiler_output", copy / "mindstudio_profiler_output"


def rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f))


def newest(folder: Path, stem: str, ext: str) -> Path | None:
    found = sorted(p for p in folder.glob(f"{stem}_2*.{ext}"))
    return found[-1] if found else None


def cells(ours: list[list[str]], theirs: list[list[str]]) -> tuple[int, list[tuple]]:
    n = 0
    diff = []
    for i, (a, b) in enumerate(zip(ours[1:], theirs[1:]), start=1):
        for j, y in enumerate(b):
            n += 1
            x = a[j] if j < len(a) else "<missing>"
            if x != y:
                diff.append((i, theirs[0][j] if theirs else j, x, y))
    return n, diff


def check_counters(tmp: Path, msprof: Path) -> bool:
    prof = collect(tmp / "counters", {"aicpu": "on", "l2": "on", "msproftx": "on"},
                   ["--", "python", str(SCRIPT)])
    ours, theirs = both(prof, msprof)
    ok = True
    for stem, name in COUNTER_FILES.items():
        ref = newest(theirs, stem, "csv")
        if ref is None or not (ours / name).is_file():
            print(f"{name:16s} missing ({'msprof' if ref is None else 'ours'})")
            ok = False
            continue
        a, b = rows(ours / name), rows(ref)
        n, diff = cells(a, b)
        ok &= not diff and len(a) == len(b) and a[0] == b[0]
        print(f"{name:16s} headers {'equal' if a[0] == b[0] else 'DIFFER'}  rows ours {len(a) - 1} msprof "
              f"{len(b) - 1}  cells {n}  differing {len(diff)} {diff[:3]}")
    ref = newest(theirs, "msprof_tx", "json")
    if ref is not None and (ours / "msprof_tx.json").is_file():
        key = lambda e: json.dumps(e, sort_keys=True)  # noqa: E731
        a = sorted(map(key, json.loads((ours / "msprof_tx.json").read_text())))
        b = sorted(map(key, json.loads(ref.read_text())))
        same = sum(x == y for x, y in zip(a, b))
        print(f"{'msprof_tx.json':16s} events ours {len(a)} msprof {len(b)}  equal {same} (a range ending < 1 us "
              "before the next one starts is written shorter: allowance viewer-nesting)")
    return ok


def check_set(tmp: Path, msprof: Path, metric: str) -> bool:
    prof = collect(tmp / metric, {"aic_metrics": metric}, ["--workload", "resnet50", "--iterations", "1"])
    ours, theirs = both(prof, msprof)
    ref = newest(theirs, "op_summary", "csv")
    a, b = rows(ours / "op_summary_0.csv"), rows(ref)
    ka, kb = a[0].index("Context ID") + 1, b[0].index("Context ID") + 1

    def keyed(t: list[list[str]], k: int) -> dict:
        h = t[0]
        return {(r[h.index("Stream ID")], r[h.index("Task ID")], r[h.index("Task Start Time(us)")].strip()): r[k:]
                for r in t[1:]}

    A, B = keyed(a, ka), keyed(b, kb)
    common = sorted(set(A) & set(B))
    n = len(common) * len(b[0][kb:])
    diff = [(k, b[0][kb + j], x, y) for k in common for j, (x, y) in enumerate(zip(A[k], B[k])) if x != y]
    same_head = a[0][ka:] == b[0][kb:]
    print(f"{metric:22s} headers {'equal' if same_head else 'DIFFER'}  rows ours {len(A)} msprof {len(B)} "
          f"common {len(common)}  cells {n}  differing {len(diff)} {diff[:2]}")
    return same_head and not diff and len(A) == len(B) == len(common)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--msprof", type=Path, required=True, help="Ascend/msprof analysis/msprof/msprof.py")
    ap.add_argument("--sets", default=",".join(SETS), help="aic_metrics sets to check (comma-separated)")
    ap.add_argument("--skip-counters", action="store_true")
    args = ap.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="cvm") as tmp:
        if not args.skip_counters:
            ok &= check_counters(Path(tmp), args.msprof.resolve())
        for metric in [s for s in args.sets.split(",") if s]:
            ok &= check_set(Path(tmp), args.msprof.resolve(), metric)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
