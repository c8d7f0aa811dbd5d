"""benchmarks/fuzz.py's campaign options: cases addressable by index (independent of the worker
count and of the cases before), --workers, --resume, --replay-case, and the harness counting a
warning only when the unmutated seed does not give it.  Small: one seed, a few cases, no export.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz import harness, mutate
from tests.fuzz.campaign import CaseResult, Seed, plan

ROOT = Path(__file__).parents[2]
FIXTURE = next((ROOT / "fixtures" / "prof_small").glob("PROF_*"))
SCRIPT = ROOT / "benchmarks" / "fuzz.py"


def _fuzz():
    spec = importlib.util.spec_from_file_location("fuzz_campaign_script", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _seed(path: Path) -> Seed:
    inv = mutate.inventory(path)
    return Seed(path, inv, mutate.file_sizes(path, inv), "", frozenset())


def test_case_plan_depends_on_seed_and_index_only() -> None:
    seeds = [_seed(FIXTURE)] * 3
    first = plan(7, 5, seeds)
    for i in range(5):
        plan(7, i, seeds)  # drawing other cases first changes nothing
    assert plan(7, 5, seeds) == first
    assert len({json.dumps([vars(m) for m in plan(7, i, seeds)[1]]) for i in range(20)}) > 15
    assert any(plan(8, i, seeds) != plan(7, i, seeds) for i in range(5))


def test_seed_warnings_are_not_counted(tmp_path: Path) -> None:
    own = harness.run_case(harness.fresh_copy(FIXTURE, tmp_path / "a" / FIXTURE.name), export=False)
    assert own.kind == "warning" and own.warnings  # the fixture warns by itself (a torn record)
    again = harness.run_case(harness.fresh_copy(FIXTURE, tmp_path / "b" / FIXTURE.name),
                             export=False, known=frozenset(own.warnings))
    assert again.kind == "silent" and not again.changed(own.digest)
    prof = harness.fresh_copy(FIXTURE, tmp_path / "c" / FIXTURE.name)
    raw = "device_0/data/stars_soc.data.0.slice_0"
    mutate.apply(mutate.Mutation("truncate", raw, {"size": (FIXTURE / raw).stat().st_size - 7}), prof)
    assert harness.run_case(prof, export=False, known=frozenset(own.warnings)).kind == "warning"


def test_silent_changed_values_are_counted_and_logged(tmp_path: Path) -> None:
    # cntvct_diff -1 moves every host time by 10 ns: no check can tell (real captures hold any
    # small value), so the case is silent and its decoded tables differ from the seed's
    fuzz = _fuzz()
    seed = fuzz.prepare([FIXTURE], tmp_path / "base", False)[0]
    m = mutate.Mutation("start_log_value", "host/host_start.log", {"key": "cntvct_diff", "value": "-1"})
    prof = harness.fresh_copy(FIXTURE, tmp_path / "c" / FIXTURE.name)
    mutate.apply(m, prof)
    out = harness.run_case(prof, export=False, known=seed.known_warnings)
    assert out.kind == "silent" and out.changed(seed.digest)
    r = CaseResult(0, 0, [vars(m)], out.kind, out.where, out.message, True)
    tally = fuzz.Tally()
    tally.add(r)
    fuzz.log_changed(tmp_path, r, [seed])
    assert tally.silent_changed == 1 and tally.by_kind["start_log_value"] == {"silent": 1, "silent_changed": 1}
    (line,) = (tmp_path / "silent_changed.jsonl").read_text().splitlines()
    assert json.loads(line) == {"index": 0, "seed": str(FIXTURE), "mutations": [vars(m)]}


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


SAME = ("outcomes", "by_first_mutation", "crash_sites", "silent_changed_values", "cases")


def test_workers_and_resume_give_the_campaign_of_one_process(tmp_path: Path, capsys) -> None:
    fuzz = _fuzz()
    common = ["--seed", "3", "--no-export", "--memory-gb", "0", "--seed-dirs", str(FIXTURE)]
    assert fuzz.main(["--cases", "6", "--out", str(tmp_path / "one"), *common]) == 0
    one = _summary(tmp_path / "one")
    assert one["cases"] == 6 and sum(one["outcomes"].values()) == 6 and len(one["legs"]) == 1

    # the same campaign stopped after 3 cases, then resumed with 2 worker processes
    two = tmp_path / "two"
    assert fuzz.main(["--cases", "3", "--out", str(two), *common]) == 0
    with pytest.raises(SystemExit, match="--resume"):  # never overwritten by accident
        fuzz.main(["--cases", "6", "--out", str(two), *common])
    with pytest.raises(SystemExit, match="--seed 3"):  # nor resumed with other options
        fuzz.main(["--cases", "6", "--out", str(two), "--resume", *common[2:], "--seed", "4"])
    subprocess.run([sys.executable, str(SCRIPT), "--cases", "6", "--out", str(two), "--resume", "--workers", "2",
                    *common], check=True, capture_output=True, timeout=300)
    resumed = _summary(two)
    assert {k: resumed[k] for k in SAME} == {k: one[k] for k in SAME}
    assert [(g["cases_from"], g["cases_to"], g["workers"]) for g in resumed["legs"]] == [(0, 3, 1), (3, 6, 2)]
    assert resumed["commits"] and resumed["seeds"] == one["seeds"]

    # any case replays by index, with the outcome the campaign counted
    capsys.readouterr()
    fuzz.main(["--replay-case", "4", "--out", str(tmp_path / "one"), *common])
    shown = capsys.readouterr().out
    assert shown.startswith("case 4 of --seed 3: seed ")
    kind = shown.split("]\n", 1)[1].split()[0]
    assert kind in one["outcomes"]
