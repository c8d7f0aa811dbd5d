from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any, Callable, NamedTuple

import pytest

from msprof_py.collect import CollectResult, collect


class Sim(NamedTuple):
    """The simulator the collector tests drive: the real runtime once it exists, else the fake."""

    run: Callable[..., Any]
    target: Any  # a small workload
    real: bool


def _sim() -> Sim:
    try:
        from msprof_py.runtime.sim import run
        from msprof_py.runtime import workloads
    except ImportError:
        from tests.collect.fake_sim import fake_run

        return Sim(fake_run, "tiny", False)
    # the user stream starts 3 tasks before the 16-bit wrap (as if used before profiling began),
    # so even a 2-iteration run wraps and writes FLIP_TASK / TaskFlip records
    return Sim(functools.partial(run, task_id_start=65533), workloads.get_workload("resnet50", batch=4), True)


@pytest.fixture(scope="session")
def sim() -> Sim:
    return _sim()


@pytest.fixture(scope="session")
def collected(tmp_path_factory: pytest.TempPathFactory, sim: Sim) -> CollectResult:
    """One 2-device, 3-iteration collection with tiny slices (300 B) (records straddle slice ends)."""
    out = tmp_path_factory.mktemp("collected")
    return collect(sim.target, output=out, devices=2, iterations=3, seed=7, fixed_clock=True,
                   slice_bytes=300, runner=sim.run)


def tree_digest(root: Path) -> str:
    """SHA-256 over every file's relative path and bytes, in sorted order."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()
