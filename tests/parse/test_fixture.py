"""The hand-made fixture PROF dir parses to the checked-in expected tables, and to the facts the
generator put in by construction (independent of the collector).

Regenerate the expected CSVs only on purpose: ``python fixtures/make_prof_small.py --write-expected``.
"""
from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from msprof_py.parse.session import load
from tests.parse.conftest import EXPECTED, FIXTURE, ROOT

TABLES = ("api", "tasks", "steps", "all_reduce", "communication", "comm_tasks", "memcpy", "fusion_ops")
US = 1000
T0 = 1_767_225_600_000_000_000  # collection start, local ns


def _tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", TABLES)
def test_tables_match_expected_csv(small_prof: Path, name: str) -> None:
    session = load(small_prof, use_cache=False)
    got = session.table(name).to_csv(index=False)
    assert got == (EXPECTED / f"{name}.csv").read_text(), f"{name} differs from fixtures/prof_small_expected"


def test_generator_reproduces_checked_in_fixture(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_prof_small", ROOT / "fixtures" / "make_prof_small.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["make_prof_small"] = mod  # dataclasses need the module registered
    spec.loader.exec_module(mod)
    mod.write(tmp_path)
    assert _tree_digest(tmp_path) == _tree_digest(FIXTURE)


def test_facts_built_into_the_fixture(small_prof: Path) -> None:
    s = load(small_prof, use_cache=False)
    t = s.tasks
    dev = t[t["match"] != "host_only"]
    # static graph: 3 ops (+2 FFTS contexts of the MIX op) replayed in 3 iterations, one host launch each
    m1 = dev[dev["model_id"] == 1]
    assert len(m1) == 3 * 5
    assert sorted(m1["index_id"].unique()) == [1, 2, 3]
    assert (m1.groupby("index_id")["op_name"].apply(lambda x: sorted(set(x))) == [["conv1", "mm1", "relu1"]] * 3).all()
    assert set(m1[m1["op_name"] == "mm1"]["context_id"]) == {1, 2, 4294967295}
    # MIX op: msprof also expands context "0" for MIX kernels; it has no device log -> host-only
    ho = t[t["match"] == "host_only"]
    assert set(zip(ho["op_name"], ho["context_id"])) == {("mm1", 0), ("EVENT_RECORD", 4294967295)}
    # exact clock conversion: conv1 of iteration 1 ran at 1110 us for 50 us (sim time)
    conv = m1[(m1["op_name"] == "conv1") & (m1["index_id"] == 1)].iloc[0]
    assert (conv["start_ns"], conv["dur_ns"]) == (T0 + 1110 * US, 50 * US)
    # task-id wrap: ids 0/1 appear in batch 0 and batch 1, each joined to its own launch
    s5 = dev[dev["stream_id"] == 5].sort_values("start_ns")
    assert list(zip(s5["task_id"], s5["batch_id"])) == [(0, 0), (1, 0), (65534, 0), (65535, 0), (0, 1), (1, 1)]
    assert list(s5["op_name"]) == [f"aclnnAdd_Add_{i}" for i in (0, 1, 2, 3, 5, 6)]
    # dynamic model 2: index from the ModelExecute event's request id (msprof's AscendTask);
    # the third iteration is still open at the end, so it has no step row (iter_id 0)
    m2 = dev[dev["model_id"] == 2].sort_values("start_ns")
    assert list(m2["index_id"]) == [1, 1, 2, 2, 3, 3]
    assert list(m2["iter_id"]) == [4, 4, 5, 5, 0, 0]
    # device-only task kept and named by its device type
    do = t[t["match"] == "device_only"]
    assert list(zip(do["stream_id"], do["task_id"], do["op_name"])) == [(9, 7, "EVENT_RECORD_SQE")]
    assert (do["model_id"] == 4294967295).all() and (do["connection_id"] == -1).all()
    # steps: model 1 has 3 iterations, model 2 has 2; iter ids ranked by end time
    st = s.steps
    assert list(zip(st["model_id"], st["index_id"], st["iter_id"])) == [(1, 1, 1), (1, 2, 2), (1, 3, 3), (2, 1, 4),
                                                                         (2, 2, 5)]
    assert st.loc[1, "data_aug_bound_ns"] == 705 * US  # FP(2105us) - end of iteration 1 (1400us)
    assert list(zip(s.all_reduce["index_id"], s.all_reduce["end_ns"] - s.all_reduce["start_ns"])) == [(2, 50 * US)]
    # the aging stream's torn head is reported once
    assert sum("torn record of 16 bytes" in m for m in s.warnings) == 1
    # the Node launch carries the op; the Runtime call under it issued the task
    api = s.api
    launch = api[(api["name"] == "launch") & (api["item_id"] == "conv1")].iloc[0]
    rt = api[api["parent"] == launch.name]
    assert list(rt["name"]) == ["KernelLaunch"] and list(rt["device_id"]) == [0]
    assert api.loc[api.loc[launch.name, "parent"], "name"] == "ModelLoad"
    # connection ids: each task carries its Node launch's id
    assert set(m1[m1["op_name"] == "conv1"]["connection_id"]) == {int(launch["connection_id"])}
    assert np.all(dev["dur_ns"] >= 0)


def test_fixture_is_not_modified_by_parsing() -> None:
    before = _tree_digest(FIXTURE)
    load(FIXTURE.parent / FIXTURE.name, use_cache=False)
    assert _tree_digest(FIXTURE) == before
