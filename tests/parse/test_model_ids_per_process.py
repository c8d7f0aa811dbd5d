"""Model ids across the devices of one process follow GE: one process-wide counter, a new id per
model load (``ModelManager::GenModelId``), so a graph loaded on device 0 then device 1 is model 1
there and model 2 here; a cluster job's ranks (one process each) all have model 1.  Export with
``--model-id`` then behaves as msprof's ``_check_model_id`` does per device dir: a model a device
does not have is msprof's error for that device, never a near-empty export."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from msprof_py.cli import cli
from msprof_py.collect import collect
from msprof_py.errors import InvalidParamError
from msprof_py.parse.session import load
from msprof_py.runtime.graph_file import load_graph_file

GRAPH = Path(__file__).resolve().parents[2] / "fixtures" / "graphs" / "mlp_train.json"


@pytest.fixture(scope="module")
def two_device_run(tmp_path_factory) -> Path:
    res = collect(load_graph_file(GRAPH), output=tmp_path_factory.mktemp("two"), devices=2, iterations=3, fixed_clock=True)
    return res.prof_dir


def test_one_process_numbers_its_model_loads(two_device_run: Path) -> None:
    s = load(two_device_run, use_cache=False)
    assert s.model_ids(0) == [1] and s.model_ids(1) == [2]
    assert sorted(map(tuple, s.steps[["device_id", "model_id"]].drop_duplicates().to_numpy().tolist())) == \
        [(0, 1), (1, 2)]
    with pytest.raises(InvalidParamError, match=r"^device_1: The model id 1 is invalid\. Must select from \{2\}\. "):
        s.select(1, 2)
    with pytest.raises(InvalidParamError, match=r"^The model id 3 is invalid\. Must select from \{1, 2\}\."):
        s.select(3, 2)


def test_export_of_a_model_one_device_lacks_is_msprofs_error(two_device_run: Path) -> None:
    r = CliRunner().invoke(cli, ["export", "--output", str(two_device_run), "--model-id", "1", "--iteration-id", "2"])
    assert r.exit_code == 1
    assert "device_1: The model id 1 is invalid. Must select from {2}. Please enter a valid model id." in r.output
    assert "Traceback" not in r.output
    assert not (two_device_run / "mindstudio_profiler_output" / "op_summary_1_1_2.csv").exists()


def test_cluster_ranks_select_the_same_model(tmp_path: Path) -> None:
    from msprof_py.collect.cluster import collect_cluster

    res = collect_cluster(load_graph_file(GRAPH), output=tmp_path, ranks=2, ranks_per_node=2, iterations=3, fixed_clock=True)
    for prof in res.prof_dirs:
        s = load(prof, use_cache=False)
        sel = s.select(1, 2)
        assert set(sel.steps["index_id"]) == {2} and len(sel.tasks) > 0
