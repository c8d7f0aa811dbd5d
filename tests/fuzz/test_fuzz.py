"""Bounded fuzzing in CI: hypothesis draws one to three mutations (tests/fuzz/mutate.py) of a
seed PROF dir -- the small fixture and the trimmed real msprof captures in fixtures/real/ --
and every outcome must be a one-line error, a warning or a clean result, never a traceback
(tests/fuzz/harness.py).  Long campaigns: ``python benchmarks/fuzz.py --cases N``.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz import harness, mutate

ROOT = Path(__file__).parents[2]
SEEDS = sorted((ROOT / "fixtures" / "prof_small").glob("PROF_*"))
SEEDS += sorted(p for p in (ROOT / "fixtures" / "real").rglob("PROF_*") if p.is_dir())
INVENTORY = {s: (inv := mutate.inventory(s), mutate.file_sizes(s, inv)) for s in SEEDS}


class DrawChooser:
    """mutate.Chooser over hypothesis' ``data.draw`` (shrinkable)."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def choice(self, options):
        return self.data.draw(st.sampled_from(list(options)))

    def integer(self, lo: int, hi: int) -> int:
        return self.data.draw(st.integers(lo, hi))


@pytest.mark.parametrize("seed", SEEDS, ids=[s.parent.name if s.parent.name != "prof_small" else "prof_small"
                                             for s in SEEDS])
@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_prof_dir_never_crashes(seed: Path, data: st.DataObject) -> None:
    inv, sizes = INVENTORY[seed]
    chooser = DrawChooser(data)
    mutations = [mutate.generate(chooser, inv, sizes) for _ in range(data.draw(st.integers(1, 3)))]
    with tempfile.TemporaryDirectory() as tmp:
        prof = harness.fresh_copy(seed, Path(tmp) / seed.name)
        for m in mutations:
            try:
                mutate.apply(m, prof)
            except (OSError, ValueError):
                pass  # an earlier mutation removed / replaced the target
        out = harness.run_case(prof)
    assert out.kind != "crash", f"{[m.to_json() for m in mutations]}\n{out.where}\n{out.message}"


def test_seeds_load_cleanly() -> None:
    """The seeds themselves are good input (otherwise the fuzz tests test nothing)."""
    assert len(SEEDS) >= 2
    with tempfile.TemporaryDirectory() as tmp:
        for s in SEEDS:
            out = harness.run_case(harness.fresh_copy(s, Path(tmp) / s.name), export=False)
            assert out.kind in ("warning", "silent"), (s, out.where, out.message)
