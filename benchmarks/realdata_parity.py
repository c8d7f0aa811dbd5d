"""Real-data parity: export every PROF dir under DIR with msprof_py (on a temporary copy, DIR is
never written) and compare with the files the real msprof exported there.

    python benchmarks/realdata_parity.py /work/shared/realdata            # one line per dir + total
    python benchmarks/realdata_parity.py DIR --dir add_pypto_b1           # details for matching dirs
    python benchmarks/realdata_parity.py DIR --verbose                    # details for every dir

Compared (benchmarks/parity/): op_summary rows keyed by (device, stream, task, context) and every
column msprof wrote (the PMU counter columns apart, as ``pmu``), op_statistic, api_statistic,
task_time, step_trace, the msprof_*.json timeline (process / thread names, events per track,
every Ascend Hardware event's name, Task Type, ts and dur, flows per category) and the tables both
msprof_*.db have.  A line reads ``ok N/N`` or ``DIFF k/N | check: first differences``.
Exit status 0 when every dir agrees (PMU columns apart), 1 otherwise.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.parity.run import ORDER, PMU, ProfResult, compare_prof, find_profs  # noqa: E402


def _name(root: Path, prof: Path) -> str:
    """The path below ``root``, the PROF dir cut to its date stamp (``PROF_000001_20240418053240914``)."""
    rel = prof.relative_to(root) if prof != root else Path(prof.name)
    return "/".join(rel.parts[:-1] + (rel.parts[-1][:29],))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path, help="a PROF dir or a folder holding PROF dirs (any depth)")
    ap.add_argument("-v", "--verbose", action="store_true", help="details and examples for every dir")
    ap.add_argument("--dir", action="append", default=[], help="details for dirs whose path contains this")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    t0 = time.perf_counter()
    profs = find_profs(root)
    if not profs:
        print(f"no PROF dir with msprof's exports under {root}", file=sys.stderr)
        return 2
    results: list[ProfResult] = []
    for prof in profs:
        r = compare_prof(prof, _name(root, prof))
        results.append(r)
        show = args.verbose or any(s in str(prof) for s in args.dir)
        print(r.details() if show else r.line(), flush=True)
    print(total(results, time.perf_counter() - t0))
    return 0 if all(r.agrees for r in results) else 1


def total(results: list[ProfResult], seconds: float) -> str:
    agree = sum(r.agrees for r in results)
    per_ok: Counter = Counter()
    per_n: Counter = Counter()
    for r in results:
        for n, c in r.checks.items():
            if not c.skipped:
                per_n[n] += 1
                per_ok[n] += c.ok
    errors = sum(r.error is not None for r in results)
    checks = " ".join(f"{n} {per_ok[n]}/{per_n[n]}" for n in ORDER if per_n[n] and n != PMU)
    pmu = f"; PMU columns agree in {per_ok[PMU]}/{per_n[PMU]}" if per_n[PMU] else ""
    err = f"; {errors} export error(s)" if errors else ""
    return (f"TOTAL {agree}/{len(results)} dirs agree (PMU columns apart){pmu}{err}; per check: {checks}; "
            f"{seconds:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
