"""The advice ``msprof-py export`` runs after an export, alone: CPU time, peak RSS and md5 of
what it writes and prints.

    python benchmarks/bench_advice.py PROF_DIR [--format text|json|html] [--rules]

``PROF_DIR`` must have been exported (or parsed) once: the advice reads each device from the
parse cache, as it does after an export (``pipeline.export_with_advice`` -> ``advise_source``).
Run it on a copy: it writes ``prof_rule_{device}.json`` (and ``aoe_tune_ops.json`` /
``advice.json``) into the dir's ``mindstudio_profiler_output/``.  ``--rules`` also prints each
rule's CPU time per device (the views the rules share are charged to the first rule that
derives them) and its traced allocation peak above the loaded device.
"""
from __future__ import annotations

import argparse
import hashlib
import resource
import sys
import time
import tracemalloc
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("prof", type=Path)
    ap.add_argument("--format", default="text", choices=["text", "json", "html"])
    ap.add_argument("--rules", action="store_true", help="per-rule CPU and allocation peak")
    args = ap.parse_args()

    from msprof_py.analyse.advise.run import AdviseResult, advise_source
    from msprof_py.parse.source import ProfSource

    t0, w0 = time.process_time(), time.perf_counter()
    source = ProfSource(args.prof)
    if not source.cached:
        sys.exit(f"{args.prof}: no parse cache; export it (or run msprof-py query) first")
    source.finish()  # as after an export: every device built
    res = AdviseResult()
    text = advise_source(args.prof, source, res, fmt=args.format, summary_only=args.format == "text")
    cpu, wall = time.process_time() - t0, time.perf_counter() - w0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"advice: {cpu:.2f} s CPU, {wall:.2f} s wall, peak RSS {peak:.0f} MB (process)")
    for f in sorted(set(res.files)):
        print(f"  {hashlib.md5(f.read_bytes()).hexdigest()}  {f.name}")
    print(f"  {hashlib.md5(text.encode()).hexdigest()}  (printed text)")
    if args.rules:
        per_rule(source)


def per_rule(source) -> None:  # type: ignore[no-untyped-def]
    from msprof_py.analyse.advise import RULES
    from msprof_py.analyse.advise.base import shared_views

    for dev in source.devices:
        session = source.device(dev)
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        print(f"device {dev}: {len(session.tasks):,} tasks")
        with shared_views(session):
            for name, fn in RULES.items():
                tracemalloc.reset_peak()
                t0 = time.process_time()
                fn(session)
                peak = tracemalloc.get_traced_memory()[1]
                print(f"  {name:24s} {time.process_time() - t0:6.3f} s  peak +{(peak - base) / 1e6:5.0f} MB")
        tracemalloc.stop()
        del session


if __name__ == "__main__":
    main()
