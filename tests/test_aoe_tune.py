"""Tuning on the simulated NPU: result files in AOE's schema, numbers that the simulator
measures, repository counters, the tuned bank used by a later run."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

pytest.importorskip("msprof_py.runtime.sim")

from msprof_py.aoe import schema as S  # noqa: E402
from msprof_py.aoe.apply import op_bank, tuned_build  # noqa: E402
from msprof_py.aoe.measure import SimMeasurer  # noqa: E402
from msprof_py.aoe.ops import op_key, select_ops  # noqa: E402
from msprof_py.aoe.reader import read_results  # noqa: E402
from msprof_py.aoe.tuner import tune  # noqa: E402
from msprof_py.aoe.writer import ResultWriter  # noqa: E402
from msprof_py.cli import cli  # noqa: E402
from msprof_py.errors import InvalidParamError, InvalidPathError  # noqa: E402
from msprof_py.runtime import sim  # noqa: E402
from msprof_py.runtime.cost import TuneChoice  # noqa: E402
from msprof_py.runtime.device import ATLAS_A2  # noqa: E402
from msprof_py.runtime.workloads import get_workload  # noqa: E402

SOC = ATLAS_A2.name


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    bank = tmp_path / "bank"
    bank.mkdir(parents=True, exist_ok=True)
    return {"HOME": str(tmp_path / "home"), "TUNE_BANK_PATH": str(bank), **extra}


def _ops_file(tmp_path: Path, **lists: list[str]) -> Path:
    p = tmp_path / "ops.json"
    p.write_text(json.dumps(lists))
    return p


@pytest.fixture(scope="module")
def resnet_opat(tmp_path_factory):
    """Acceptance 1: ``tune --job_type 2 --workload resnet50`` (the whole graph, once per module)."""
    tmp = tmp_path_factory.mktemp("opat")
    env = _env(tmp)
    out = tune("resnet50", job_type=2, seed=7, output=tmp / "out", env=env)
    return tmp, env, out


def test_result_file_validates_and_reads_back(resnet_opat):
    tmp, env, out = resnet_opat
    doc = json.loads(out.result_path.read_text())
    assert S.validate(doc) == []
    assert S.RESULT_NAME_RE.match(out.result_path.name)
    assert out.result_path.read_text() == json.dumps(doc, sort_keys=True, indent=4, ensure_ascii=False) + "\n"
    opat = doc[1]["OPAT"]
    assert opat["opat_tuning_result"] == "tuning successful" and "tuning_failed_operators" not in opat
    res = read_results([out.result_path], strict=True)
    assert res.repairs == [] and not res.warnings  # counters and percentages consistent
    assert (res.operators["pct_formula"] == "before/after-1").all()
    assert len(res.operators) == sum(len(m["tune_performance"]) for m in opat["repo_modified_operators"])
    # what makes the numbers simulated is in the side file, not the result
    prov = json.loads(out.provenance_path.read_text())
    assert prov["simulated"] is True and prov["seed"] == 7 and prov["sim_runs"] == out.sim_runs > 0
    assert "simulated" not in out.result_path.read_text()


def test_counters_agree_with_what_happened(resnet_opat):
    tmp, env, out = resnet_opat
    graph = get_workload("resnet50").graph
    keys = {op_key(op, SOC) for op in select_ops(graph)}
    s = out.summary.as_dict()
    assert s["total_num"] == len(keys)
    assert s["repo_add_num"] == len(out.modified) and s["repo_hit_num"] == 0
    assert s["repo_add_num"] + s["repo_unsatisfied_num"] == s["total_num"]
    entries = op_bank(ATLAS_A2, env).all_entries()
    assert set(entries) == {op_key(next(o for o in graph.ops if o.name == m["op_name"]), SOC) for m in out.modified}
    assert (tmp / "bank" / SOC).is_dir()  # the operator bank is TUNE_BANK_PATH/<soc_version>


def test_before_after_equal_what_the_simulator_measures(resnet_opat):
    tmp, env, out = resnet_opat
    graph = get_workload("resnet50").graph
    by_name = {op.name: op for op in graph.ops}
    m = SimMeasurer(ATLAS_A2, seed=7)
    entries = op_bank(ATLAS_A2, env).all_entries()
    for item in out.modified[:12]:
        op = by_name[item["op_name"]]
        chosen = TuneChoice(**entries[op_key(op, SOC)].choice)
        dims = [d for d in ("Format", "Schedule", "Impl") if d in item["tune_performance"]]  # search order
        first, last = item["tune_performance"][dims[0]], item["tune_performance"][dims[-1]]
        assert first["performance_before_tune(us)"] == round(m.op_us(op, None), 3)
        assert last["performance_after_tune(us)"] == round(m.op_us(op, chosen), 3)
        for a, b in zip(dims, dims[1:]):  # each dimension starts where the previous one ended
            assert item["tune_performance"][a]["performance_after_tune(us)"] == \
                item["tune_performance"][b]["performance_before_tune(us)"]
    wl = get_workload("resnet50")
    doc = json.loads(out.result_path.read_text())[1]["OPAT"]
    assert doc["model_baseline_performance(ms)"] == round(m.model_ms(wl, None), 6)
    tuned_wl, tuning = tuned_build("resnet50", env=env)
    assert doc["model_result_performance(ms)"] == round(m.model_ms(tuned_wl, tuning), 6)


def test_rerun_with_the_bank_is_faster_by_the_reported_amount(resnet_opat):
    tmp, env, out = resnet_opat
    wl, tuning = tuned_build("resnet50", env=env)
    assert tuning
    before = sim.run("resnet50", iterations=3, seed=123).truth
    after = sim.run(wl, iterations=3, seed=123, tuning=tuning).truth
    mean_before = before.groupby("op_name", observed=True)["dur_ns"].mean() / 1000
    mean_after = after.groupby("op_name", observed=True)["dur_ns"].mean() / 1000
    for item in out.modified:
        perf = item["tune_performance"]
        dims = [d for d in ("Format", "Schedule", "Impl") if d in perf]
        rep_before, rep_after = perf[dims[0]]["performance_before_tune(us)"], perf[dims[-1]]["performance_after_tune(us)"]
        name = item["op_name"]
        assert mean_after[name] < mean_before[name]
        assert mean_before[name] == pytest.approx(rep_before, rel=0.05)
        assert mean_after[name] == pytest.approx(rep_after, rel=0.05)


def test_second_run_hits_the_bank(resnet_opat, tmp_path):
    import shutil

    tmp, env, first = resnet_opat
    # work on a copy: REPEAT_TUNE below updates entries, and other tests check the first run's bank
    shutil.copytree(env["TUNE_BANK_PATH"], tmp_path / "bank")
    env = {**env, "TUNE_BANK_PATH": str(tmp_path / "bank")}
    # REPEAT_TUNE off: every tuned key is a hit and is kept; the rest is tuned again
    out = tune("resnet50", job_type=2, seed=7, output=tmp_path, env={**env, "REPEAT_TUNE": "False"})
    s = out.summary.as_dict()
    assert s["repo_hit_num"] == s["repo_reserved_num"] == first.summary.repo_add_num
    assert s["repo_add_num"] == 0 and s["repo_update_num"] == 0 and out.modified == []
    assert s["total_num"] == first.summary.total_num
    assert out.baseline_ms == pytest.approx(first.result_ms, rel=1e-9)
    # REPEAT_TUNE on: hits are re-tuned starting from their bank entry; a few find a better point
    # (the search path from the entry differs from the one from the default) and update it
    out = tune("resnet50", job_type=2, seed=7, output=tmp_path, env={**env, "REPEAT_TUNE": "True"},
               tune_ops_file=_ops_file(tmp_path, tune_ops_type=["Conv2D"]))
    s = out.summary.as_dict()
    assert s["repo_hit_num"] == s["total_num"] == s["repo_reserved_num"] + s["repo_update_num"]
    assert s["repo_update_num"] == len(out.modified)
    for item in out.modified:
        for leaf in item["tune_performance"].values():
            assert leaf["update_mode"] == "update"
            assert leaf["performance_after_tune(us)"] < leaf["performance_before_tune(us)"]


def test_repeat_tune_updates_a_worse_entry(tmp_path):
    env = _env(tmp_path)
    ops = _ops_file(tmp_path, tune_ops_name=["resnet50/conv1/Conv2D"])
    first = tune("resnet50", job_type=2, output=tmp_path, env=env, tune_ops_file=ops)
    assert first.summary.repo_add_num == 1
    # make the stored entry worse (a slow naive kernel), as if an older tuner had stored it
    f = tmp_path / "bank" / SOC / "Conv2D.json"
    doc = json.loads(f.read_text())
    (entry,) = doc["entries"].values()
    entry["choice"] = {"format": "default", "schedule": "default", "impl": "naive"}
    entry["tuned_us"] = 10_000.0
    f.write_text(json.dumps(doc))
    out = tune("resnet50", job_type=2, output=tmp_path, env={**env, "REPEAT_TUNE": "True"}, tune_ops_file=ops)
    assert out.summary.as_dict() == {"repo_add_num": 0, "repo_hit_num": 1, "repo_reserved_num": 0,
                                     "repo_unsatisfied_num": 0, "repo_update_num": 1, "total_num": 1}
    (item,) = out.modified
    assert {v["update_mode"] for v in item["tune_performance"].values()} == {"update"}
    assert S.validate(json.loads(out.result_path.read_text())) == []


def test_tune_ops_file_and_no_match(tmp_path):
    env = _env(tmp_path)
    out = tune("resnet50", job_type=2, output=tmp_path, env=env,
               tune_ops_file=_ops_file(tmp_path, tune_ops_type=["MatMulV2"], tune_ops_name=["resnet50/conv1/Conv2D"]))
    tuned = {m["op_type"] for m in out.modified}
    assert tuned <= {"MatMulV2", "Conv2D"} and out.summary.total_num >= 2
    none = tune("resnet50", job_type=2, output=tmp_path / "none", env=env,
                tune_ops_file=_ops_file(tmp_path, tune_ops_name=["no/such/op"]))
    doc = json.loads(none.result_path.read_text())
    assert [list(x) for x in doc] == [["basic"]]  # documented: no OPAT section without an operator to tune
    assert any("matches the tune_ops_file" in w for w in none.warnings)


def test_failed_operator_is_recorded(tmp_path, monkeypatch):
    env = _env(tmp_path)
    real = SimMeasurer.op_us

    def flaky(self, op, choice, *, key=""):
        if op.type == "MatMulV2":
            raise RuntimeError("simulated compile failure")
        return real(self, op, choice, key=key)

    monkeypatch.setattr(SimMeasurer, "op_us", flaky)
    out = tune("resnet50", job_type=2, output=tmp_path, env=env,
               tune_ops_file=_ops_file(tmp_path, tune_ops_type=["MatMulV2", "Relu"]))
    opat = json.loads(out.result_path.read_text())[1]["OPAT"]
    assert opat["opat_tuning_result"] == "tuning failed"
    assert opat["tuning_failed_operators"] and all("MatMul" in n for n in opat["tuning_failed_operators"])
    assert S.validate(json.loads(out.result_path.read_text())) == []
    assert read_results([out.result_path]).tasks.loc[0, "status"] == "failed"


def test_same_seed_same_results(tmp_path):
    ops = _ops_file(tmp_path, tune_ops_type=["Conv2D"])
    a = tune("resnet50", job_type=2, seed=3, output=tmp_path / "a", env=_env(tmp_path / "a"), tune_ops_file=ops)
    b = tune("resnet50", job_type=2, seed=3, output=tmp_path / "b", env=_env(tmp_path / "b"), tune_ops_file=ops)
    assert a.document[1] == b.document[1]
    bank_a = (tmp_path / "a" / "bank" / SOC / "Conv2D.json").read_bytes()
    assert bank_a == (tmp_path / "b" / "bank" / SOC / "Conv2D.json").read_bytes()


def test_result_file_is_written_while_tuning_runs(tmp_path):
    seen = []

    def echo(line):
        if line.startswith("[Aoe]") and not seen:
            seen.append(json.loads(next(tmp_path.glob("aoe_result_opat_*_pid*.json")).read_text()))

    tune("resnet50", job_type=2, output=tmp_path, env=_env(tmp_path), echo=echo,
         tune_ops_file=_ops_file(tmp_path, tune_ops_type=["Conv2D"]))
    (mid,) = seen
    assert "tuning_time(s)" not in mid[0]["basic"]
    assert mid[1]["OPAT"]["opat_tuning_result"] == "tune tuning incomplete"
    assert "model_result_performance(ms)" not in mid[1]["OPAT"]


def test_report_layout_two_tasks(tmp_path):
    from datetime import datetime

    w = ResultWriter(tmp_path, "opat", now=datetime(2024, 1, 2, 3, 4, 5, 678000), pid=42, layout="report")
    env = _env(tmp_path)
    tune("resnet50", job_type=2, env=env, writer=w, tune_ops_file=_ops_file(tmp_path, tune_ops_type=["MatMulV2"]))
    tune("resnet50", job_type=2, env=env, writer=w, tune_ops_file=_ops_file(tmp_path, tune_ops_type=["Relu"]))
    assert w.path.name == "aoe_result_opat_20240102_030405678_pid42.json"
    doc = json.loads(w.path.read_text())
    assert len(doc) == 2 and S.validate(doc) == []
    res = read_results([w.path], strict=True)
    assert res.tasks["layout"].tolist() == ["report_dict"] * 2 and res.tasks["pid"].tolist() == ["42", "42"]


def test_sgat(tmp_path):
    env = _env(tmp_path)
    out = tune("resnet50", job_type=1, seed=1, output=tmp_path, env=env)
    doc = json.loads(out.result_path.read_text())
    assert S.validate(doc) == [] and out.result_path.name.startswith("aoe_result_sgat_")
    sgat = doc[1]["SGAT"]
    assert sgat["repo_summary"]["total_num"] > 0
    assert (tmp_path / "bank" / "subgraphs.json").exists()  # the graph bank is TUNE_BANK_PATH itself
    res = read_results([out.result_path], strict=True)
    assert not res.warnings and len(res.subgraphs) == len(out.modified)
    wl, tuning = tuned_build("resnet50", env=env)
    fused = [op for op in wl.graph.ops if op.fused_from]
    assert fused and len(wl.graph.ops) < len(get_workload("resnet50").graph.ops)
    assert sgat["model_result_performance(ms)"] < sgat["model_baseline_performance(ms)"]


def test_bad_options(tmp_path):
    with pytest.raises(InvalidParamError, match="no tuning mode"):
        tune("resnet50", env={"HOME": str(tmp_path)})
    with pytest.raises(InvalidParamError, match="AOE_MODE"):
        tune("resnet50", env={"HOME": str(tmp_path), "AOE_MODE": "7"})
    with pytest.raises(InvalidPathError, match="TUNE_BANK_PATH"):
        tune("resnet50", job_type=2, env={"HOME": str(tmp_path), "TUNE_BANK_PATH": str(tmp_path / "missing")})
    with pytest.raises(InvalidParamError, match="tune_ops_file"):
        tune("resnet50", job_type=1, env=_env(tmp_path), tune_ops_file=_ops_file(tmp_path, tune_ops_type=["Relu"]))
    bad = tmp_path / "bad.json"
    bad.write_text("{\"tune_ops_name\": \"conv1\"}")
    with pytest.raises(InvalidParamError, match="list of strings"):
        tune("resnet50", job_type=2, env=_env(tmp_path), tune_ops_file=bad)


def test_cli_tune(tmp_path, monkeypatch):
    env = _env(tmp_path)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("AOE_MODE", "2")  # job type from the environment
    r = CliRunner().invoke(cli, ["tune", "--workload", "resnet50", "--output", str(tmp_path / "o"),
                                 "--tune_ops_file", str(_ops_file(tmp_path, tune_ops_type=["MatMulV2"]))])
    assert r.exit_code == 0, r.output
    assert "sim_resnet50 process finished. Performance improved by " in r.output
    assert "[Aoe]" in r.output and "Result file:" in r.output
    r = CliRunner().invoke(cli, ["tune", "--job_type", "2", "--workload", "nope", "--output", str(tmp_path)])
    assert r.exit_code != 0 and "unknown workload" in r.output and "Traceback" not in r.output
    monkeypatch.setenv("TUNE_BANK_PATH", str(tmp_path / "absent"))
    r = CliRunner().invoke(cli, ["tune", "--job_type", "2", "--workload", "resnet50", "--output", str(tmp_path)])
    assert r.exit_code == 2 and "TUNE_BANK_PATH" in r.output and "does not exist" in r.output


def test_reprofile_with_tune_bank_shows_the_tuned_ops_faster(resnet_opat, tmp_path):
    """Acceptance 1, end to end: collect with and without the bank, parse, compare per-op times."""
    import msprof_py

    try:
        load = msprof_py.load
    except AttributeError:
        pytest.skip("the profile parser (msprof_py.load) is not in this build")
    tmp, env, out = resnet_opat
    runner = CliRunner()
    base = ["collect", "--workload", "resnet50", "--iterations", "2", "--seed", "5"]
    r = runner.invoke(cli, base + ["--output", str(tmp_path / "plain")])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, base + ["--output", str(tmp_path / "tuned"), "--tune-bank", env["TUNE_BANK_PATH"]])
    assert r.exit_code == 0, r.output
    (plain,) = (tmp_path / "plain").glob("PROF_*")
    (tuned,) = (tmp_path / "tuned").glob("PROF_*")

    def per_op(prof):
        t = load(prof).tasks
        t = t[t["dur_ns"] > 0]
        return t.groupby(t["op_name"].astype(str))["dur_ns"].mean() / 1000

    us_plain, us_tuned = per_op(plain), per_op(tuned)
    checked = 0
    for item in out.modified:
        perf = item["tune_performance"]
        dims = [d for d in ("Format", "Schedule", "Impl") if d in perf]
        before, after = perf[dims[0]]["performance_before_tune(us)"], perf[dims[-1]]["performance_after_tune(us)"]
        name = item["op_name"]
        assert us_plain[name] == pytest.approx(before, rel=0.05)
        assert us_tuned[name] == pytest.approx(after, rel=0.05)
        assert us_plain[name] / us_tuned[name] == pytest.approx(before / after, rel=0.05)
        checked += 1
    assert checked == len(out.modified) > 100
    # ... and so does msprof's op_summary written by ``msprof-py export`` (when the exporter is present)
    import importlib.util

    if importlib.util.find_spec("msprof_py.cli.export_cmd") is not None:
        import pandas as pd

        means = {}
        for label, prof in (("plain", plain), ("tuned", tuned)):
            r = runner.invoke(cli, ["export", "--output", str(prof)])
            assert r.exit_code == 0, r.output
            (csv,) = prof.glob("mindstudio_profiler_output/op_summary_*.csv")
            df = pd.read_csv(csv)
            means[label] = df.groupby("Op Name")["Task Duration(us)"].mean()
        for item in out.modified:
            perf = item["tune_performance"]
            dims = [d for d in ("Format", "Schedule", "Impl") if d in perf]
            ratio = perf[dims[0]]["performance_before_tune(us)"] / perf[dims[-1]]["performance_after_tune(us)"]
            name = item["op_name"]
            assert means["plain"][name] / means["tuned"][name] == pytest.approx(ratio, rel=0.05)
    # the reader joins the tuned operators with the re-profiled run
    r = runner.invoke(cli, ["aoe-report", str(out.result_path), "--output", str(tmp_path / "rep"),
                            "--profile", str(tuned)])
    assert r.exit_code == 0, r.output
    assert f"Profile: {len(out.modified)} of {len(out.modified)} tuned operator(s) found" in r.output


def test_collect_tune_bank_bad_input(tmp_path):
    """``collect --tune-bank`` errors (the tuned re-profile itself is checked end to end above)."""
    from msprof_py.aoe.cli_support import run_collect_tuned
    from msprof_py.collect.cli_support import CollectRequest
    from msprof_py.errors import WarningLog

    with pytest.raises(InvalidParamError, match="not with a Python script"):
        run_collect_tuned(CollectRequest(command=["python", "x.py"], output=str(tmp_path)), WarningLog(), "auto")
    r = CliRunner().invoke(cli, ["collect", "--workload", "resnet50", "--output", str(tmp_path / "x"),
                                 "--tune-bank", str(tmp_path / "no_bank")])
    assert r.exit_code == 2 and "TUNE_BANK_PATH" in r.output and "Traceback" not in r.output


def test_parallel_measurement_gives_the_same_results(tmp_path, monkeypatch):
    """TE_PARALLEL_COMPILER workers measure candidates concurrently; choices and numbers do not change."""
    from msprof_py.aoe import tuner

    ops = _ops_file(tmp_path, tune_ops_type=["Conv2D", "Relu"])
    one = tune("resnet50", job_type=2, output=tmp_path / "1", env=_env(tmp_path / "1", TE_PARALLEL_COMPILER="1"),
               tune_ops_file=ops)
    monkeypatch.setattr(tuner.paths, "parallel_compilers", lambda env: 3)  # this machine caps it at 1
    three = tune("resnet50", job_type=2, output=tmp_path / "3", env=_env(tmp_path / "3"), tune_ops_file=ops)
    assert one.document[1] == three.document[1]
    assert json.loads(three.provenance_path.read_text())["te_parallel_compiler"] == 3


def test_cli_tune_graph_file_and_bad_output(tmp_path, monkeypatch):
    graph = Path(__file__).resolve().parents[1] / "fixtures" / "graphs" / "mlp_train.json"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TUNE_BANK_PATH", raising=False)
    monkeypatch.delenv("ASCEND_CACHE_PATH", raising=False)
    r = CliRunner().invoke(cli, ["tune", "--job_type", "1", "--graph", str(graph), "--output", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    (res,) = [p for p in (tmp_path / "o").glob("aoe_result_sgat_*_pid*.json") if "provenance" not in p.name]
    assert S.validate(json.loads(res.read_text())) == []
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = CliRunner().invoke(cli, ["tune", "--job_type", "2", "--graph", str(graph), "--output", str(blocker / "o")])
    assert r.exit_code == 2 and "cannot create the result directory" in r.output
    r = CliRunner().invoke(cli, ["tune", "--job_type", "2", "--graph", str(tmp_path / "missing.json")])
    assert r.exit_code != 0 and "missing.json" in r.output and "Traceback" not in r.output
