"""Long fuzz campaign: mutate PROF dirs, load + export each in-process, classify the outcome.

    python benchmarks/fuzz.py --cases 100000 [--seed 0] [--out benchmarks/fuzz_out] [--max-seconds S]

Seeds: ``fixtures/prof_small``, every PROF dir under ``fixtures/real/`` (real msprof captures,
when present) and three collector runs made at start (single_op; resnet50 on 2 devices; bert),
all with ``--fixed-clock`` so a campaign is reproducible from ``--seed``.  Each case: copy one
seed to a tmpfs scratch dir, apply one to three mutations (tests/fuzz/mutate.py), run
tests/fuzz/harness.py:run_case (numpy/pandas warnings raised from msprof_py count as crashes).

Writes ``OUT/summary.json`` (updated every 200 cases, so a killed campaign still reports) and,
per distinct crash site, ``OUT/crashes/NNN/`` with ``mutation.json``, ``seed.txt`` and
``traceback.txt``: reproduce with ``python benchmarks/fuzz.py --replay OUT/crashes/NNN``.
A case over ``--case-timeout`` seconds counts as a crash ("hang").
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fuzz import harness, mutate  # noqa: E402


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang("case took longer than --case-timeout")


def make_seeds(work: Path) -> list[Path]:
    from msprof_py.collect import collect

    seeds = sorted((ROOT / "fixtures" / "prof_small").glob("PROF_*"))
    real = ROOT / "fixtures" / "real"
    if real.is_dir():
        seeds += sorted(p for p in real.rglob("PROF_*") if p.is_dir())
    for i, (target, kw) in enumerate((("single_op", {"iterations": 2}),
                                      ("resnet50", {"iterations": 2, "devices": 2}),
                                      ("bert", {"iterations": 1}))):
        out = work / f"collected_{i}"
        res = collect(target, output=out, seed=i, fixed_clock=True, **kw)
        seeds.append(Path(res.prof_dir))
    return seeds


def load_mutations(text: str) -> list[mutate.Mutation]:
    return [mutate.Mutation(**d) for d in json.loads(text)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "fuzz_out")
    ap.add_argument("--max-seconds", type=float, default=None, help="stop after this long (report what ran)")
    ap.add_argument("--case-timeout", type=int, default=60)
    ap.add_argument("--memory-gb", type=float, default=4.0, help="address-space limit of this process")
    ap.add_argument("--no-export", action="store_true", help="load only (faster, fewer exporter paths)")
    ap.add_argument("--replay", type=Path, default=None, help="re-run one crash reproducer dir")
    args = ap.parse_args()
    if args.replay:
        case = args.replay
        muts = load_mutations((case / "mutation.json").read_text())
        seed = Path((case / "seed.txt").read_text().strip())
        with tempfile.TemporaryDirectory() as tmp:
            prof = harness.fresh_copy(seed, Path(tmp) / seed.name)
            for m in muts:
                mutate.apply(m, prof)
            out = harness.run_case(prof)
        print(out.kind, out.where)
        print(out.message)
        return 1 if out.kind == "crash" else 0

    lim = int(args.memory_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    signal.signal(signal.SIGALRM, _alarm)
    args.out.mkdir(parents=True, exist_ok=True)
    crashes_dir = args.out / "crashes"
    crashes_dir.mkdir(exist_ok=True)
    scratch_root = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else None
    work = Path(tempfile.mkdtemp(prefix="msprof_fuzz_", dir=scratch_root))
    seed_store = args.out / "seeds"
    try:
        t_seed = time.time()
        seeds = make_seeds(work)
        # keep seeds outside the scratch dir so reproducers stay valid after the run
        kept = []
        for s in seeds:
            if str(s).startswith(str(work)):
                dest = seed_store / s.name
                if not dest.exists():
                    seed_store.mkdir(parents=True, exist_ok=True)
                    shutil.copytree(s, dest, symlinks=True)
                kept.append(dest)
            else:
                kept.append(s)
        seeds = kept
        base = {}
        for s in seeds:
            o = harness.run_case(harness.fresh_copy(s, work / "case" / s.name), export=not args.no_export)
            if o.kind not in ("warning", "silent"):
                print(f"seed {s} does not load cleanly: {o.kind} {o.where} {o.message[:300]}", file=sys.stderr)
            base[s] = o.digest
        print(f"{len(seeds)} seeds ready in {time.time() - t_seed:.1f} s", file=sys.stderr)
        rng = random.Random(args.seed)
        chooser = mutate.RandomChooser(rng)
        invs = {}
        for s in seeds:
            inv = mutate.inventory(s)
            invs[s] = (inv, mutate.file_sizes(s, inv))
        counts: Counter[str] = Counter()
        by_kind: dict[str, Counter[str]] = {}
        sites: Counter[str] = Counter()
        silent_changed = 0
        t0 = time.time()
        done = 0
        for i in range(args.cases):
            if args.max_seconds is not None and time.time() - t0 > args.max_seconds:
                break
            s = seeds[rng.randrange(len(seeds))]
            inv, sizes = invs[s]
            muts = [mutate.generate(chooser, inv, sizes) for _ in range(rng.choice((1, 1, 1, 2, 3)))]
            prof = work / "case" / s.name
            harness.fresh_copy(s, prof)
            try:
                for m in muts:
                    try:
                        mutate.apply(m, prof)
                    except (OSError, ValueError):
                        pass  # an earlier mutation removed/replaced the target: keep the rest
                signal.alarm(args.case_timeout)
                try:
                    out = harness.run_case(prof, export=not args.no_export)
                finally:
                    signal.alarm(0)
            except Hang:
                out = harness.Outcome("crash", "hang", "hang")
            except MemoryError:
                out = harness.Outcome("crash", "MemoryError", "MemoryError")
            counts[out.kind] += 1
            by_kind.setdefault(muts[0].kind, Counter())[out.kind] += 1
            if out.kind == "silent" and out.changed(base[s]):
                silent_changed += 1
                by_kind[muts[0].kind]["silent_changed"] += 1
            if out.kind == "crash":
                sites[out.where] += 1
                if sites[out.where] == 1:
                    d = crashes_dir / f"{len(sites):03d}"
                    d.mkdir(exist_ok=True)
                    (d / "mutation.json").write_text(json.dumps([vars(m) for m in muts], indent=1))
                    (d / "seed.txt").write_text(str(s) + "\n")
                    (d / "traceback.txt").write_text(f"{out.where}\n\n{out.message}")
            done = i + 1
            if done % 200 == 0:
                _summary(args, done, t0, counts, silent_changed, sites, by_kind, seeds)
        _summary(args, done, t0, counts, silent_changed, sites, by_kind, seeds)
        print(json.dumps(json.loads((args.out / "summary.json").read_text()), indent=1))
        return 1 if counts["crash"] else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _summary(args, done, t0, counts, silent_changed, sites, by_kind, seeds) -> None:
    elapsed = time.time() - t0
    data = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": f"{platform.node()} {platform.machine()} "
            f"{os.cpu_count()} cpus, python {platform.python_version()}",
            "cases": done, "seconds": round(elapsed, 1), "cases_per_s": round(done / elapsed, 2) if elapsed else 0,
            "outcomes": dict(counts), "silent_changed_values": silent_changed, "crash_sites": dict(sites),
            "by_first_mutation": {k: dict(v) for k, v in sorted(by_kind.items())},
            "export": not args.no_export, "rng_seed": args.seed, "seeds": [str(s) for s in seeds]}
    tmp = args.out / "summary.json.tmp"
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, args.out / "summary.json")


if __name__ == "__main__":
    sys.exit(main())
