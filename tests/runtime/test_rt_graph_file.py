"""User graph files: the example loads and runs; every malformed input is a one-line WorkloadError."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from msprof_py.errors import WorkloadError
from msprof_py.runtime.sim import run
from msprof_py.runtime.workloads import get_workload, load_graph_file

EXAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "graphs" / "mlp_train.json"


def test_example_graph_loads_and_runs() -> None:
    g = load_graph_file(EXAMPLE)
    assert g.name == "mlp_train" and len(g.ops) == 11
    assert g.ops[0].fused_from == ("fc1/MatMul", "fc1/BiasAdd")
    assert g.ops[-1].dynamic and g.ops[4].stream == 1
    res = run(g, devices=2, iterations=2, seed=0)
    t = res.truth
    assert set(t.op_name.astype(str)) >= {op.name for op in g.ops}
    assert (t[t.op_name == "metrics/NonZero"].task_type == "AI_CPU").all()
    assert len(res.truth_steps) == 4 and (res.truth_steps.fp_sim_ns > 0).all()


def test_batch_override_rescales_dim0() -> None:
    g = load_graph_file(EXAMPLE, batch=8)
    assert g.inputs[0].shape == (8, 1024) and g.ops[0].outputs[0].shape == (8, 4096)
    assert g.weights[0].shape == (1024, 4096)


def _write(tmp_path: Path, doc) -> Path:
    p = tmp_path / "g.json"
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def _base() -> dict:
    return {"name": "m", "inputs": [{"name": "x", "shape": [4, 8]}],
            "ops": [{"name": "a", "type": "Relu", "inputs": ["x"], "outputs": [{"name": "y", "shape": [4, 8]}]}]}


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("name"), "missing or empty \"name\""),
    (lambda d: d["ops"][0].pop("outputs"), "ops[0]: missing key \"outputs\""),
    (lambda d: d["ops"][0].update(inputs=["nope"]), "unknown input tensor 'nope'"),
    (lambda d: d["ops"][0]["outputs"][0].update(dtype="FLOAT13"), "unknown dtype 'FLOAT13'"),
    (lambda d: d["ops"][0]["outputs"][0].update(shape=[4, -1]), "\"shape\" must be a list of non-negative"),
    (lambda d: d["ops"][0].update(task_type="GPU"), "unknown task_type 'GPU'"),
    (lambda d: d["ops"][0].update(phase="forward"), "unknown phase 'forward'"),
    (lambda d: d.update(ops=[]), "missing or empty list of ops"),
    (lambda d: d["inputs"][0].update(format="XYZ"), "unknown format 'XYZ'"),
    (lambda d: d["ops"].append(dict(d["ops"][0])), "op name used twice"),
    (lambda d: d.update(outputs=["zz"]), "unknown tensor 'zz'"),
    (lambda d: d["ops"][0].update(type="HcomAllReduce"), "the runtime inserts the all-reduce itself"),
    (lambda d: d["ops"][0].update(type="MatMulV2", inputs=["x"]), "cannot run on inputs of shapes [4, 8]"),
    (lambda d: d["inputs"][0].update(shape=[]) or d["ops"][0].update(type="BatchMatMul", inputs=["x", "x"]),
     "cannot run on inputs of shapes [];"),
])
def test_malformed_graph_files(tmp_path: Path, mutate, message: str) -> None:
    doc = _base()
    mutate(doc)
    p = _write(tmp_path, doc)
    with pytest.raises(WorkloadError) as err:
        load_graph_file(p)
    text = str(err.value)
    assert text.startswith(str(p)) and message in text and "\n" not in text


def test_bad_json_names_line_and_column(tmp_path: Path) -> None:
    p = _write(tmp_path, '{\n  "name": "m",\n  "ops": [,]\n}')
    with pytest.raises(WorkloadError, match=r"g\.json: line 3 column 11: invalid JSON"):
        load_graph_file(p)


def test_missing_file_and_not_an_object(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="no such graph file"):
        load_graph_file(tmp_path / "absent.json")
    with pytest.raises(WorkloadError, match="top level must be a JSON object"):
        load_graph_file(_write(tmp_path, "[1, 2]"))


def test_unknown_workload_and_bad_params() -> None:
    with pytest.raises(WorkloadError, match="unknown workload 'resnet51'.*resnet50"):
        get_workload("resnet51")
    with pytest.raises(WorkloadError, match="bad parameters"):
        get_workload("bert", colour="red")
    with pytest.raises(WorkloadError, match="batch must be a positive integer"):
        get_workload("resnet50", batch=0)
    with pytest.raises(WorkloadError):
        run("resnet50", devices=0)


def test_readme_example_graph_is_valid(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split("### User graph files", 1)[1].split("```json", 1)[1].split("```", 1)[0]
    g = load_graph_file(_write(tmp_path, block))
    assert [op.type for op in g.ops] == ["MatMulV2", "Gelu"]
    assert len(run(g, iterations=2).truth_steps) == 2


def test_odd_but_valid_graphs_run(tmp_path: Path) -> None:
    """Only dynamic ops (nothing to load), or every op on stream 1 (step trace on that stream)."""
    doc = _base()
    doc["ops"][0].update(dynamic=True, phase="fp")
    res = run(load_graph_file(_write(tmp_path, doc)), devices=2, iterations=2)
    assert len(res.truth) == 2 * 2 * 3 and res.truth_steps.empty  # H2D, the op, D2H; no model tasks
    doc = _base()
    doc["ops"][0].update(stream=1)
    res = run(load_graph_file(_write(tmp_path, doc)), iterations=2)
    assert set(res.truth[res.truth.op_name == "a"].stream_id) == {4}
