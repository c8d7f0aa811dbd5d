"""One case of a fuzz campaign, addressable by its index (used by ``benchmarks/fuzz.py``).

Case ``i`` of a campaign with RNG seed ``S`` draws its seed dir, its number of mutations and the
mutations from ``random.Random(f"msprof-fuzz:{S}:{i}")`` only, so its outcome depends neither on
the number of worker processes nor on which cases ran before it, and any case can be replayed
from ``(S, i)`` alone.  A :class:`Worker` owns one scratch dir (tmpfs when there is one) and
runs cases there; the campaign runs one in-process or one per worker process.
"""
from __future__ import annotations

import random
import resource
import shutil
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz import harness, mutate


class Hang(BaseException):  # not an Exception: run_case must not classify it
    pass


def _alarm(signum, frame):
    raise Hang("case took longer than --case-timeout")


@dataclass
class Seed:
    """A seed PROF dir with what the mutation generator needs, computed once per campaign."""

    path: Path
    inventory: dict[str, list[str]]
    sizes: dict[str, int]
    digest: str  # the unmutated seed's tables (harness.digest)
    known_warnings: frozenset[str]  # the unmutated seed's own warnings (harness.Outcome.warnings)


def case_rng(rng_seed: int, index: int) -> random.Random:
    return random.Random(f"msprof-fuzz:{rng_seed}:{index}")


def plan(rng_seed: int, index: int, seeds: list[Seed]) -> tuple[int, list[mutate.Mutation]]:
    """Case ``index``: (which seed, its mutations)."""
    rng = case_rng(rng_seed, index)
    chooser = mutate.RandomChooser(rng)
    k = rng.randrange(len(seeds))
    s = seeds[k]
    return k, [mutate.generate(chooser, s.inventory, s.sizes) for _ in range(rng.choice((1, 1, 1, 2, 3)))]


@dataclass
class CaseResult:
    index: int
    seed: int  # index into the campaign's seeds
    mutations: list[dict]
    kind: str  # harness.Outcome.kind
    where: str
    message: str
    changed: bool  # a silent case whose decoded tables differ from the seed's


class Worker:
    """Runs cases in its own scratch dir, with its own address-space limit and alarm."""

    def __init__(self, seeds: list[Seed], rng_seed: int, export: bool = True, case_timeout: int = 60,
                 memory_gb: float | None = None, scratch_root: Path | None = None) -> None:
        self.seeds, self.rng_seed, self.export, self.case_timeout = seeds, rng_seed, export, case_timeout
        if memory_gb:
            lim = int(memory_gb * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
        signal.signal(signal.SIGALRM, _alarm)
        self.work = Path(tempfile.mkdtemp(prefix="worker_", dir=scratch_root))

    def run(self, index: int) -> CaseResult:
        k, muts = plan(self.rng_seed, index, self.seeds)
        s = self.seeds[k]
        prof = harness.fresh_copy(s.path, self.work / s.path.name)
        try:
            for m in muts:
                try:
                    mutate.apply(m, prof)
                except (OSError, ValueError):
                    pass  # an earlier mutation removed/replaced the target: keep the rest
            signal.alarm(self.case_timeout)
            try:
                out = harness.run_case(prof, export=self.export, known=s.known_warnings,
                                           always_digest=False)
            finally:
                signal.alarm(0)
        except Hang:
            out = harness.Outcome("crash", "hang", "hang")
        except MemoryError:
            out = harness.Outcome("crash", "MemoryError", "MemoryError")
        return CaseResult(index, k, [vars(m) for m in muts], out.kind, out.where, out.message,
                          out.kind == "silent" and out.changed(s.digest))

    def close(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)
