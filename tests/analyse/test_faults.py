"""The documented fault options of the runtime refuse bad values with a one-line error."""
from __future__ import annotations

import pytest

from msprof_py.errors import WorkloadError
from msprof_py.runtime import acl, sim
from msprof_py.runtime.graph_file import load_graph_file

from . import scenarios as sc


def _graph(tmp_path, doc):
    import json
    f = tmp_path / "g.json"
    f.write_text(json.dumps(doc))
    return load_graph_file(f)


@pytest.mark.parametrize("attrs,msg", [({"kernel_choice": {"impl": "fast"}}, "bad kernel_choice"),
                                       ({"kernel_choice": {"colour": "red"}}, "bad kernel_choice"),
                                       ({"slow_iterations": {"x": 2}}, "slow_iterations wants")])
def test_bad_fault_attrs(tmp_path, attrs, msg) -> None:
    g = _graph(tmp_path, sc.with_op(sc.graph_doc(), "l2/MatMulV2", attrs=attrs))
    with pytest.raises(WorkloadError, match=msg):
        sim.run(g, iterations=2)


def test_slow_iterations_only_slows_those_iterations(tmp_path) -> None:
    g = _graph(tmp_path, sc.with_op(sc.graph_doc(), "l2/MatMulV2", attrs={"slow_iterations": {"2": 3.0, "9": 5}}))
    t = sim.run(g, iterations=3, seed=1).truth
    d = t[t["op_name"].astype(str) == "l2/MatMulV2"]["dur_ns"].to_numpy()
    assert d[1] == pytest.approx(3 * d[0], rel=0.1) and d[2] == pytest.approx(d[0], rel=0.1)


def test_host_work_bad_value() -> None:
    acl.init()
    acl.rt.set_device(0)
    try:
        with pytest.raises(WorkloadError, match="host.work"):
            acl.host.work(-1)
    finally:
        acl.finalize()
