"""Where error starts, and computation vs accumulated error (acceptance 1)."""
from __future__ import annotations

import orjson
import pytest

from graphs import deep_mlp, tiny_cnn
from msprof_py.precision.compare import CompareOptions, compare_dump
from msprof_py.precision.dump import run_and_dump
from msprof_py.precision.locate import locate
from msprof_py.precision.numerics import Fault


def run(short_dir, graph, faults=(), seed=3):
    d = str(short_dir / "d")
    run_and_dump(graph, d, seed=seed, faults=faults)
    res = compare_dump(d, CompareOptions())
    return res, locate(res)


@pytest.mark.parametrize("fault,node", [
    (Fault("fc9"), "fc9_bias9_gelu9"),  # wrong result in a cube op inside a fused node
    (Fault("gelu13", "overflow"), "fc13_bias13_gelu13"),  # fp16 overflow
    (Fault("norm7"), "norm7"),  # a vector op on its own
])
def test_injected_fault_is_named_as_a_computation_error(short_dir, fault, node):
    res, loc = run(short_dir, deep_mlp(), (fault,))
    assert loc.first_error_node == node
    assert loc.verdict == "computation error" and loc.error_node == node
    c = next(c for c in loc.candidates if c.node == node)
    assert c.confirmed and c.e_local == pytest.approx(c.e_cum, rel=0.5)
    assert f"error starts at: {node}" in loc.summary() and "injected fault" in loc.summary()
    saved = orjson.loads((short_dir / "d" / "result" / "locate.json").read_bytes())
    assert saved["error_node"] == node and saved["faults_injected"] == [fault.as_dict()]


def test_deep_fp16_network_without_fault_is_accumulated_error(short_dir):
    res, loc = run(short_dir, deep_mlp())
    assert res.failed, "the deep fp16 chain should drift past the tolerances somewhere"
    assert loc.verdict == "accumulated error" and loc.error_node is None
    assert all(c.confirmed is False for c in loc.candidates)
    # the error grows with depth
    mre = [n.cmp.mre for n in res.nodes]
    assert max(mre[-6:]) > 2 * max(mre[:3])
    assert "computation error" not in loc.summary().replace("no computation error", "")


def test_an_inherited_jump_is_refuted_by_the_isolated_rerun(short_dir):
    # the fault in gelu13 makes fc14's Pearson drop too; only gelu13 is the computation error
    res, loc = run(short_dir, deep_mlp(), (Fault("gelu13", "overflow"),))
    assert loc.error_node == "fc13_bias13_gelu13"


def test_clean_small_network_has_no_error(short_dir):
    res, loc = run(short_dir, tiny_cnn())
    assert loc.verdict == "no error" and loc.first_error_node is None


def test_without_graphs_the_verdict_rests_on_heuristics(short_dir):
    res, _ = run(short_dir, deep_mlp(layers=8), (Fault("fc5"),))
    for f in ("graph_npu.json", "graph_cpu.json", "run.json", "node_runtime.file"):
        (short_dir / "d" / "result" / f).unlink()
    # without the fusion record the user maps fused nodes to the reference by hand
    mapping = {f"gelu{i}": f"fc{i}_bias{i}_gelu{i}" for i in range(8)}
    res = compare_dump(str(short_dir / "d"), CompareOptions(map_node_dict=mapping))
    assert not [n for n in res.nodes if n.cpu_node is None]
    loc = locate(res)
    assert not loc.rerun_possible and loc.error_node == "fc5_bias5_gelu5"
    assert "heuristics only" in loc.summary()


def test_uneven_error_distribution_is_reported():
    import numpy as np

    from msprof_py.precision.locate import uneven_axis

    ref = np.ones((2, 3, 8, 4))
    npu = ref.copy()
    npu[:, :, 4:, :] += 0.5  # second half of H wrong
    assert uneven_axis(npu, ref) == "axis 2: error only in the second half"
    npu[:, :, :4, :] += 0.01
    assert uneven_axis(npu, ref) == "axis 2: second half 50x the first"
    npu2 = ref + 0.01  # evenly spread error
    assert uneven_axis(npu2, ref) == ""


def test_wrong_result_fault_shows_its_uneven_distribution(short_dir):
    _, loc = run(short_dir, deep_mlp(layers=8), (Fault("fc5"),))
    c = next(c for c in loc.candidates if c.node == loc.error_node)
    assert c.uneven.startswith("axis 0: second half")  # the fault negates the tail half of the rows
    assert "uneven along axis 0" in loc.summary()
