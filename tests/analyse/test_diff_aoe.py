"""Acceptance: ``tune --job_type 2``, then ``collect --tune-bank``, then ``diff``: the per-op
changes are the AOE result file's before/after for the tuned ops (within the simulator's
jitter) and the ops account for the iteration change."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import msprof_py
from msprof_py.aoe.reader import find_result_files, read_results
from msprof_py.cli import cli

from . import scenarios as sc


def _prof(out: Path) -> Path:
    (p,) = [d for d in out.iterdir() if d.name.startswith("PROF_")]
    return p


def test_diff_agrees_with_the_aoe_result_file(tmp_path: Path) -> None:
    graph = tmp_path / "g.json"
    # one op ships with a slow kernel, so tuning has something real to find
    graph.write_text(json.dumps(sc.with_op(sc.graph_doc(), "l2/MatMulV2", attrs={"kernel_choice": {"impl": "naive"}})))
    env = {"TUNE_BANK_PATH": str(tmp_path / "bank"), "HOME": str(tmp_path / "home")}
    (tmp_path / "bank").mkdir()
    run = CliRunner(env=env).invoke
    r = run(cli, ["tune", "--job_type", "2", "--graph", str(graph), "--output", str(tmp_path / "aoe")])
    assert r.exit_code == 0, r.output
    r = run(cli, ["collect", "--graph", str(graph), "-n", "5", "--seed", "11", "--output", str(tmp_path / "base")])
    assert r.exit_code == 0, r.output
    r = run(cli, ["collect", "--graph", str(graph), "-n", "5", "--seed", "11", "--tune-bank", str(tmp_path / "bank"),
                  "--output", str(tmp_path / "new")])
    assert r.exit_code == 0, r.output
    r = run(cli, ["diff", str(_prof(tmp_path / "base")), str(_prof(tmp_path / "new")), "--output", str(tmp_path / "d")])
    assert r.exit_code == 0, r.output

    aoe = read_results(find_result_files([tmp_path / "aoe"])).operators
    chain = {}  # per op the tuned dimensions chain: the first one's before, the last one's after
    for name, g in aoe.groupby("op_name"):
        before = g.loc[~g["before_us"].isin(g["after_us"]), "before_us"]
        after = g.loc[~g["after_us"].isin(g["before_us"]), "after_us"]
        chain[name] = (float(before.iloc[0]), float(after.iloc[0]))
    res = msprof_py.diff(_prof(tmp_path / "base"), _prof(tmp_path / "new"))
    ops = res.ops.set_index("name")
    assert "l2/MatMulV2" in chain  # the slow kernel was tuned
    for name, (before, after) in chain.items():
        row = ops.loc[name]
        assert row["status"] == "matched"
        assert row["base_mean_us"] == pytest.approx(before, rel=0.05)
        assert row["new_mean_us"] == pytest.approx(after, rel=0.05)
        assert row["new_mean_us"] - row["base_mean_us"] == pytest.approx(after - before, abs=0.05 * before)
    change = res.new_iteration_us - res.base_iteration_us
    assert change < 0
    assert ops["delta_per_iter_us"].sum() == pytest.approx(change)
    assert abs(ops.at["(idle, overlap, other)", "delta_per_iter_us"]) < 0.10 * abs(change)
