"""Long fuzz campaign: mutate PROF dirs, load + export each in-process, classify the outcome.

    python benchmarks/fuzz.py --cases 100000 [--seed 0] [--out benchmarks/fuzz_out] [--workers N]
                              [--max-seconds S] [--resume]
    python benchmarks/fuzz.py --replay OUT/crashes/NNN          # a crash reproducer
    python benchmarks/fuzz.py --replay-case I [--seed S --out OUT]  # any case, by index

Seeds: ``fixtures/prof_small``, every PROF dir under ``fixtures/real/`` (real msprof captures,
when present) and three collector runs made at start (single_op; resnet50 on 2 devices; bert),
all with ``--fixed-clock``; they are kept in ``OUT/seeds`` and a resumed campaign uses the same
ones.  Case ``i`` draws its seed and one to three mutations (tests/fuzz/mutate.py) from an RNG
derived from ``(--seed, i)`` only (tests/fuzz/campaign.py), so the outcomes do not depend on
``--workers`` and any case can be replayed by index.  Each case copies its seed to a tmpfs
scratch dir of its worker and runs tests/fuzz/harness.py:run_case (load + export of timelines,
summaries and db; numpy/pandas warnings raised from msprof_py count as crashes; a warning counts
only when the unmutated seed does not give it too).

Writes ``OUT/summary.json`` (every 200 cases and every minute, so a killed campaign still
reports; one entry per leg in ``legs``: commit, workers, cases, seconds) and, per distinct crash
site, ``OUT/crashes/NNN/`` with ``mutation.json``, ``seed.txt``, ``case.txt`` and
``traceback.txt``; every silent case whose decoded tables differ from its seed's is appended to
``OUT/silent_changed.jsonl`` (index, seed, mutations: replay one with ``--replay-case``; after a
``--resume`` an index may appear twice).  ``--resume`` continues a stopped campaign (same ``--seed``
and ``--out``) from the cases already counted.  A case over ``--case-timeout`` seconds counts as a crash
("hang"), a worker process that dies as "worker died".
"""
from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fuzz import harness, mutate  # noqa: E402
from tests.fuzz.campaign import CaseResult, Seed, Worker, plan  # noqa: E402

SUMMARY_EVERY = 200  # cases
SUMMARY_SECONDS = 60.0


def make_seeds(work: Path, store: Path) -> list[Path]:
    """The seed PROF dirs; collector runs are made in ``work`` and kept in ``store``."""
    from msprof_py.collect import collect

    seeds = sorted((ROOT / "fixtures" / "prof_small").glob("PROF_*"))
    real = ROOT / "fixtures" / "real"
    if real.is_dir():
        seeds += sorted(p for p in real.rglob("PROF_*") if p.is_dir())
    for i, (target, kw) in enumerate((("single_op", {"iterations": 2}),
                                      ("resnet50", {"iterations": 2, "devices": 2}),
                                      ("bert", {"iterations": 1}))):
        res = collect(target, output=work / f"collected_{i}", seed=i, fixed_clock=True, **kw)
        dest = store / Path(res.prof_dir).name  # outside the scratch dir: reproducers stay valid
        if not dest.exists():
            store.mkdir(parents=True, exist_ok=True)
            shutil.copytree(res.prof_dir, dest, symlinks=True)
        seeds.append(dest)
    return seeds


def prepare(paths: list[Path], work: Path, export: bool) -> list[Seed]:
    """Inventory, file sizes, tables' digest and own warnings of each seed (once per campaign)."""
    seeds = []
    for p in paths:
        inv = mutate.inventory(p)
        o = harness.run_case(harness.fresh_copy(p, work / p.name), export=export)
        shutil.rmtree(work / p.name, ignore_errors=True)
        if o.kind not in ("warning", "silent"):
            print(f"seed {p} does not load cleanly: {o.kind} {o.where} {o.message[:300]}", file=sys.stderr)
        seeds.append(Seed(p, inv, mutate.file_sizes(p, inv), o.digest, frozenset(o.warnings)))
    return seeds


def load_mutations(text: str) -> list[mutate.Mutation]:
    return [mutate.Mutation(**d) for d in json.loads(text)]


def git_commit() -> str:
    """HEAD of the code running (``+dirty`` when tracked files differ from it)."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + ("+dirty" if dirty else "")


# ---- worker processes ------------------------------------------------------------------------

_WORKER: Worker | None = None


def _init_worker(*args) -> None:
    global _WORKER
    _WORKER = Worker(*args)


def _run(index: int) -> CaseResult:
    assert _WORKER is not None
    return _WORKER.run(index)


def _pool(n: int, init_args: tuple) -> ProcessPoolExecutor:
    # spawn, not fork: the parent has run exports (worker threads) before the pool starts
    return ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker,
                               initargs=init_args)


def _stop(ex: ProcessPoolExecutor) -> None:
    """Kill the pool's processes (a hung or dead worker: shutdown alone would wait for it)."""
    for p in list(getattr(ex, "_processes", {}).values()):  # no public API for this
        p.kill()
    ex.shutdown(wait=True, cancel_futures=True)


def run_pool(indices: range, n: int, init_args: tuple, seeds: list[Seed], rng_seed: int,
             timeout: float) -> Iterator[CaseResult]:
    """Results of ``indices`` in index order, from ``n`` worker processes.  A case that kills its
    worker or outlives ``timeout`` (the worker's own alarm failed) is re-run alone in a fresh
    worker; if it does it again it is a crash ("worker died" / "hang")."""
    todo = iter(indices)
    pending: collections.deque = collections.deque()
    ex = _pool(n, init_args)

    def fill() -> None:
        while len(pending) < 4 * n:
            i = next(todo, None)
            if i is None:
                return
            pending.append((i, ex.submit(_run, i)))

    try:
        fill()
        while pending:
            i, fut = pending.popleft()
            try:
                yield fut.result(timeout=timeout)
            except (BrokenProcessPool, FutureTimeout):
                rest = [j for j, _ in pending]
                pending.clear()
                _stop(ex)
                yield _alone(i, init_args, seeds, rng_seed, timeout)
                ex = _pool(n, init_args)
                pending.extend((j, ex.submit(_run, j)) for j in rest)
            fill()
    finally:
        _stop(ex)


def _alone(i: int, init_args: tuple, seeds: list[Seed], rng_seed: int, timeout: float) -> CaseResult:
    one = _pool(1, init_args)
    try:
        return one.submit(_run, i).result(timeout=timeout)
    except (BrokenProcessPool, FutureTimeout) as err:
        k, muts = plan(rng_seed, i, seeds)
        if isinstance(err, FutureTimeout):
            what, why = "hang", f"the worker was killed after {timeout:.0f} s (its alarm did not fire)"
        else:
            what, why = "worker died", "the worker process died (a signal: segfault, OOM kill?)"
        return CaseResult(i, k, [vars(m) for m in muts], "crash", what, why, False)
    finally:
        _stop(one)


# ---- the campaign ----------------------------------------------------------------------------

class Tally:
    """Outcome counts of cases 0..cases-1 (what summary.json reports; restored on --resume)."""

    def __init__(self, prev: dict | None = None) -> None:
        prev = prev or {}
        self.cases: int = prev.get("cases", 0)
        self.counts: Counter[str] = Counter(prev.get("outcomes", {}))
        self.by_kind = {k: Counter(v) for k, v in prev.get("by_first_mutation", {}).items()}
        self.sites: Counter[str] = Counter(prev.get("crash_sites", {}))
        self.silent_changed: int = prev.get("silent_changed_values", 0)

    def add(self, r: CaseResult) -> bool:
        """Count ``r``; True when it is the first crash at its site."""
        assert r.index == self.cases, (r.index, self.cases)
        self.cases += 1
        self.counts[r.kind] += 1
        first = self.by_kind.setdefault(r.mutations[0]["kind"], Counter())
        first[r.kind] += 1
        if r.changed:
            self.silent_changed += 1
            first["silent_changed"] += 1
        if r.kind == "crash":
            self.sites[r.where] += 1
            return self.sites[r.where] == 1
        return False


def write_crash(out: Path, n: int, r: CaseResult, seeds: list[Seed], rng_seed: int) -> None:
    d = out / "crashes" / f"{n:03d}"
    d.mkdir(parents=True, exist_ok=True)
    (d / "mutation.json").write_text(json.dumps(r.mutations, indent=1))
    (d / "seed.txt").write_text(f"{seeds[r.seed].path}\n")
    (d / "case.txt").write_text(f"case {r.index} of --seed {rng_seed}\n")
    (d / "traceback.txt").write_text(f"{r.where}\n\n{r.message}")


def log_changed(out: Path, r: CaseResult, seeds: list[Seed]) -> None:
    """Append a silent case with changed values to ``OUT/silent_changed.jsonl`` (replayable)."""
    with open(out / "silent_changed.jsonl", "a") as f:
        f.write(json.dumps({"index": r.index, "seed": str(seeds[r.seed].path), "mutations": r.mutations}) + "\n")


def write_summary(args, tally: Tally, legs: list[dict], seeds: list[Seed]) -> None:
    seconds = sum(leg["seconds"] for leg in legs)
    data = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": legs[-1]["machine"],
            "cases": tally.cases, "target_cases": args.cases, "seconds": round(seconds, 1),
            "cases_per_s": round(tally.cases / seconds, 2) if seconds else 0,
            "outcomes": dict(tally.counts), "silent_changed_values": tally.silent_changed,
            "crash_sites": dict(tally.sites),
            "by_first_mutation": {k: dict(v) for k, v in sorted(tally.by_kind.items())},
            "export": not args.no_export, "rng_seed": args.seed, "commits": sorted({g["commit"] for g in legs}),
            "legs": legs, "seeds": [str(s.path) for s in seeds]}
    tmp = args.out / "summary.json.tmp"
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, args.out / "summary.json")


def replay(args, work: Path) -> int:
    """--replay DIR (a crash reproducer) or --replay-case I (case I of --seed)."""
    if args.replay:
        muts = load_mutations((args.replay / "mutation.json").read_text())
        seed = Path((args.replay / "seed.txt").read_text().strip())
        prof = harness.fresh_copy(seed, work / seed.name)
        known = prepare([seed], work / "base", not args.no_export)[0].known_warnings  # as in the campaign
        for m in muts:
            try:
                mutate.apply(m, prof)
            except (OSError, ValueError):
                pass
        out = harness.run_case(prof, export=not args.no_export, known=known)
        print(out.kind, out.where)
        print(out.message)
        return 1 if out.kind == "crash" else 0
    summary = args.out / "summary.json"
    if summary.exists():
        paths = [Path(p) for p in json.loads(summary.read_text())["seeds"]]
    else:
        paths = args.seed_dirs or make_seeds(work, args.out / "seeds")
    seeds = prepare(paths, work, not args.no_export)
    w = Worker(seeds, args.seed, not args.no_export, args.case_timeout, None, work)
    r = w.run(args.replay_case)
    print(f"case {r.index} of --seed {args.seed}: seed {seeds[r.seed].path}")
    print(json.dumps(r.mutations, indent=1))
    print(r.kind, r.where, "(changed values)" if r.changed else "")
    print(r.message)
    return 1 if r.kind == "crash" else 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=1000, help="campaign size (a resumed one runs up to it)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "fuzz_out")
    ap.add_argument("--workers", type=int, default=1, help="worker processes (1: in this process)")
    ap.add_argument("--resume", action="store_true", help="continue the campaign in --out")
    ap.add_argument("--max-seconds", type=float, default=None, help="stop this leg after this long")
    ap.add_argument("--case-timeout", type=int, default=60)
    ap.add_argument("--memory-gb", type=float, default=4.0, help="address-space limit of each worker")
    ap.add_argument("--no-export", action="store_true", help="load only (faster, fewer exporter paths)")
    ap.add_argument("--seed-dirs", type=Path, nargs="+", default=None,
                    help="fuzz these PROF dirs instead of the default seeds")
    ap.add_argument("--replay", type=Path, default=None, help="re-run one crash reproducer dir")
    ap.add_argument("--replay-case", type=int, default=None, help="re-run case I of --seed (seeds of --out)")
    args = ap.parse_args(argv)
    if args.workers < 1 or args.cases < 0:
        ap.error("--workers must be >= 1 and --cases >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    scratch_root = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else None
    work = Path(tempfile.mkdtemp(prefix="msprof_fuzz_", dir=scratch_root))
    try:
        if args.replay or args.replay_case is not None:
            return replay(args, work)
        return campaign(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def campaign(args, work: Path) -> int:
    summary = args.out / "summary.json"
    prev = json.loads(summary.read_text()) if summary.exists() else None
    if args.resume:
        if prev is None:
            sys.exit(f"fuzz.py: --resume: no {summary} to resume")
        if prev["rng_seed"] != args.seed or prev["export"] == args.no_export:
            sys.exit(f"fuzz.py: --resume: {summary} is a campaign with --seed {prev['rng_seed']}"
                     f"{'' if prev['export'] else ' --no-export'}; give the same options")
    elif prev is not None and prev.get("cases"):
        sys.exit(f"fuzz.py: {summary} holds a campaign of {prev['cases']} cases: --resume it or use another --out")
    args.out.mkdir(parents=True, exist_ok=True)
    t_seed = time.time()
    if args.resume:
        paths = [Path(p) for p in prev["seeds"]]
        missing = [p for p in paths if not p.is_dir()]
        if missing:
            sys.exit(f"fuzz.py: --resume: seed {missing[0]} is gone; the campaign cannot continue honestly")
    else:
        paths = args.seed_dirs or make_seeds(work, args.out / "seeds")
    seeds = prepare(paths, work, not args.no_export)
    print(f"{len(seeds)} seeds ready in {time.time() - t_seed:.1f} s", file=sys.stderr)
    tally = Tally(prev if args.resume else None)
    legs = list(prev.get("legs", [])) if args.resume else []
    leg = {"commit": git_commit(), "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "workers": args.workers,
           "cases_from": tally.cases, "cases_to": tally.cases, "seconds": 0.0,
           "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cpus, "
                      f"python {platform.python_version()}"}
    legs.append(leg)
    init = (seeds, args.seed, not args.no_export, args.case_timeout, args.memory_gb, work)
    indices = range(tally.cases, args.cases)
    if args.workers == 1:
        w = Worker(*init)
        results: Iterator[CaseResult] = map(w.run, indices)
    else:
        results = run_pool(indices, args.workers, init, seeds, args.seed, 2.0 * args.case_timeout + 30)
    t0 = last = time.time()
    try:
        for r in results:
            if tally.add(r):
                write_crash(args.out, len(tally.sites), r, seeds, args.seed)
            if r.changed:
                log_changed(args.out, r, seeds)
            now = time.time()
            leg["cases_to"], leg["seconds"] = tally.cases, round(now - t0, 1)
            if tally.cases % SUMMARY_EVERY == 0 or now - last > SUMMARY_SECONDS:
                write_summary(args, tally, legs, seeds)
                last = now
            if args.max_seconds is not None and now - t0 > args.max_seconds:
                break
    finally:
        close = getattr(results, "close", None)
        if close:
            close()
        leg["ended"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        write_summary(args, tally, legs, seeds)
    print(summary.read_text())
    return 1 if tally.counts["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
