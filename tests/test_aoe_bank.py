"""The custom repository: AOE's paths, its add/update/reserve rules, counters, concurrency."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from msprof_py.aoe import paths as P
from msprof_py.aoe.bank import Bank, BankEntry, RepoSummary, classify, repo_key
from msprof_py.errors import InvalidParamError, InvalidPathError

ROOT = Path(__file__).resolve().parent.parent
SOC = "Ascend910B3"
VALID = {"soc_version": SOC, "cost_model": "abc"}


# ---- paths: every combination of TUNE_BANK_PATH x ASCEND_CACHE_PATH, for op and graph banks ----
@pytest.mark.parametrize("tune, cache, kind, expected", [
    (True, True, "op", "{tune}/Ascend910B3"),
    (True, False, "op", "{tune}/Ascend910B3"),
    (False, True, "op", "{cache}/aoe_data/Ascend910B3"),
    (False, False, "op", "{home}/Ascend/latest/data/aoe/custom/op/Ascend910B3"),
    (True, True, "graph", "{tune}"),
    (True, False, "graph", "{tune}"),
    (False, True, "graph", "{cache}/aoe_data"),
    (False, False, "graph", "{home}/Ascend/latest/data/aoe/custom/graph/Ascend910B3"),
])
def test_bank_dir_matrix(tmp_path, tune, cache, kind, expected):
    d = {"tune": tmp_path / "tb", "cache": tmp_path / "cache", "home": tmp_path / "home"}
    d["tune"].mkdir()
    env = {"HOME": str(d["home"])}
    if tune:
        env["TUNE_BANK_PATH"] = str(d["tune"])
    if cache:
        env["ASCEND_CACHE_PATH"] = str(d["cache"])
    assert P.bank_dir(kind, SOC, env) == Path(expected.format(**{k: str(v) for k, v in d.items()}))


def test_relative_tune_bank_path_is_from_the_working_dir(tmp_path):
    (tmp_path / "rel").mkdir()
    assert P.bank_dir("op", SOC, {"TUNE_BANK_PATH": "rel"}, cwd=tmp_path) == tmp_path / "rel" / SOC
    assert P.bank_dir("graph", SOC, {"ASCEND_CACHE_PATH": "c"}, cwd=tmp_path) == tmp_path / "c" / "aoe_data"


def test_tune_bank_path_must_exist(tmp_path):
    with pytest.raises(InvalidPathError, match="does not exist"):
        P.bank_dir("op", SOC, {"TUNE_BANK_PATH": str(tmp_path / "nope")})
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidPathError, match="does not exist"):
        P.bank_dir("graph", SOC, {"TUNE_BANK_PATH": str(tmp_path / "file")})


def test_tune_bank_path_must_be_rwx(tmp_path, monkeypatch):
    monkeypatch.setattr(P.os, "access", lambda path, mode: False)  # root can write anywhere
    with pytest.raises(InvalidPathError, match="read, write and execute"):
        P.bank_dir("op", SOC, {"TUNE_BANK_PATH": str(tmp_path)})


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_tune_bank_path_read_only_for_real(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    with pytest.raises(InvalidPathError, match="read, write and execute"):
        P.bank_dir("op", SOC, {"TUNE_BANK_PATH": str(ro)})


def test_bank_write_failure_is_a_clear_error(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the bank directory should be")
    bank = Bank(blocker / SOC, "op", VALID)
    with pytest.raises(InvalidPathError, match="cannot write the custom repository"):
        bank.offer(_entry("1", 5.0))


def test_work_dir_and_env_flags(tmp_path):
    assert P.work_dir({"ASCEND_WORK_PATH": str(tmp_path)}) == tmp_path
    assert P.work_dir({}, cwd=tmp_path) == tmp_path
    assert P.repeat_tune({}) is False
    assert P.repeat_tune({"REPEAT_TUNE": "True"}) is True
    assert P.repeat_tune({"REPEAT_TUNE": "false"}) is False
    with pytest.raises(InvalidParamError):
        P.repeat_tune({"REPEAT_TUNE": "maybe"})
    assert P.aoe_mode({"AOE_MODE": "2"}) == 2 and P.aoe_mode({}) is None
    with pytest.raises(InvalidParamError):
        P.aoe_mode({"AOE_MODE": "3"})
    assert P.parallel_compilers({"TE_PARALLEL_COMPILER": "1"}) == 1
    assert P.parallel_compilers({"TE_PARALLEL_COMPILER": "0"}) == 1
    with pytest.raises(InvalidParamError):
        P.parallel_compilers({"TE_PARALLEL_COMPILER": "x"})


# ---- rules: REPEAT_TUNE on/off x hit/miss x better/not better ----
@pytest.mark.parametrize("repeat, hit, better, outcome, counters", [
    # counters: add, hit, reserved, unsatisfied, update, total
    (False, False, False, "unsatisfied", (0, 0, 0, 1, 0, 1)),
    (False, False, True, "add", (1, 0, 0, 0, 0, 1)),
    (False, True, False, "reserved", (0, 1, 1, 0, 0, 1)),
    (False, True, True, "reserved", (0, 1, 1, 0, 0, 1)),  # hit + REPEAT_TUNE off: not re-tuned
    (True, False, False, "unsatisfied", (0, 0, 0, 1, 0, 1)),
    (True, False, True, "add", (1, 0, 0, 0, 0, 1)),
    (True, True, False, "reserved", (0, 1, 1, 0, 0, 1)),
    (True, True, True, "update", (0, 1, 0, 0, 1, 1)),
])
def test_repository_rules(tmp_path, repeat, hit, better, outcome, counters):
    bank = Bank(tmp_path, "op", VALID)
    if hit:
        assert bank.offer(_entry("42", 10.0)) == "add"
    reference = 10.0 if hit else 12.0  # the existing entry's time on a hit, the default's on a miss
    tuned = reference - 1.0 if better else reference
    assert classify(hit, repeat, tuned, reference) == outcome
    s = RepoSummary()
    s.record(outcome)
    assert tuple(s.as_dict().values()) == counters
    if outcome in ("add", "update"):
        assert bank.offer(_entry("42", tuned)) == outcome
    stored = bank.get("Conv2D", "42")
    if outcome in ("add", "update"):
        assert stored.tuned_us == tuned
    elif hit:
        assert stored.tuned_us == 10.0  # reserved: the existing entry stays
    else:
        assert stored is None  # unsatisfied: nothing written


def test_summary_invariants_over_many_outcomes():
    s = RepoSummary()
    for o in ["add", "add", "update", "reserved", "reserved", "unsatisfied"]:
        s.record(o)
    d = s.as_dict()
    assert d["total_num"] == d["repo_hit_num"] + d["repo_add_num"] + d["repo_unsatisfied_num"] == 6
    assert d["repo_reserved_num"] == d["repo_hit_num"] - d["repo_update_num"] == 2


def test_offer_keeps_the_faster_entry(tmp_path):
    bank = Bank(tmp_path, "op", VALID)
    assert bank.offer(_entry("1", 10.0)) == "add"
    assert bank.offer(_entry("1", 11.0)) == "kept"
    assert bank.offer(_entry("1", 10.0)) == "kept"
    assert bank.offer(_entry("1", 9.0)) == "update"
    assert bank.get("Conv2D", "1").tuned_us == 9.0
    doc = json.loads((tmp_path / "Conv2D.json").read_text())
    assert doc["format"] == "msprof_py.aoe.bank" and doc["schema_version"] == 1
    assert doc["validators"] == {"bank_kind": "op", **VALID}
    assert "not compatible with CANN" in doc["note"]


def test_validator_mismatch_ignores_the_file(tmp_path):
    Bank(tmp_path, "op", VALID).offer(_entry("1", 10.0))
    other = Bank(tmp_path, "op", {"soc_version": SOC, "cost_model": "changed"})
    assert other.get("Conv2D", "1") is None
    assert any("ignored" in w for w in other.warnings)
    assert other.offer(_entry("1", 12.0)) == "add"  # the stale file is moved aside, not merged
    assert (tmp_path / "Conv2D.json.stale").exists()


def test_corrupt_bank_file_is_ignored(tmp_path):
    (tmp_path / "Conv2D.json").write_text("{not json")
    bank = Bank(tmp_path, "op", VALID)
    assert bank.get("Conv2D", "1") is None and any("not JSON" in w for w in bank.warnings)


def test_repo_key_is_stable_and_decimal():
    a = repo_key({"op_type": "Conv2D", "inputs": [[1, 64, 56, 56]], "soc": SOC})
    assert a == repo_key({"soc": SOC, "inputs": [[1, 64, 56, 56]], "op_type": "Conv2D"})
    assert a.isdigit() and a != repo_key({"op_type": "Conv2D", "inputs": [[1, 64, 28, 28]], "soc": SOC})


_WRITER = """
import sys
from pathlib import Path
from msprof_py.aoe.bank import Bank, BankEntry
bank = Bank(Path(sys.argv[1]), "op", {"soc_version": "Ascend910B3", "cost_model": "abc"})
start = int(sys.argv[2])
for i in range(start, start + 150):
    assert bank.offer(BankEntry(str(i), f"op{i}", "Conv2D", {"schedule": 1}, ("Schedule",), 10.0, 9.0)) == "add"
"""


def test_two_concurrent_tuners_lose_no_entries(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), str(start)], env=env)
             for start in (0, 1000)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    keys = set(Bank(tmp_path, "op", VALID).all_entries())
    assert keys == {str(i) for i in list(range(150)) + list(range(1000, 1150))}
    assert not list(tmp_path.glob("*.tmp"))


def _entry(key: str, tuned_us: float) -> BankEntry:
    return BankEntry(key=key, name="conv1", op_type="Conv2D", choice={"format": "NC1HWC0", "schedule": 2, "impl": 0},
                     dims=("Schedule",), default_us=12.0, tuned_us=tuned_us)


def test_bank_goes_stale_when_the_cost_model_version_changes(tmp_path, monkeypatch):
    """The simulator's validators carry runtime.cost.COST_MODEL_VERSION (not a hash of cost.py,
    so a doc edit keeps banks): a bank tuned under one version is reused by the same version
    and set aside as stale by the next one."""
    from msprof_py.aoe import apply
    from msprof_py.runtime import cost
    from msprof_py.runtime.device import ATLAS_A2

    assert apply.validators(ATLAS_A2)["cost_model"] == cost.COST_MODEL_VERSION
    apply.op_bank(ATLAS_A2, directory=tmp_path).offer(_entry("1", 10.0))
    same = apply.op_bank(ATLAS_A2, directory=tmp_path)
    assert same.get("Conv2D", "1").tuned_us == 10.0 and not list(same.warnings)
    monkeypatch.setattr(cost, "COST_MODEL_VERSION", cost.COST_MODEL_VERSION + ".next")
    bumped = apply.op_bank(ATLAS_A2, directory=tmp_path)
    assert bumped.get("Conv2D", "1") is None and any("ignored" in w for w in bumped.warnings)
    assert bumped.offer(_entry("1", 12.0)) == "add" and (tmp_path / "Conv2D.json.stale").exists()
