"""The graphs of a numeric run, saved next to the dumps (``result/graph_{npu,cpu}.json``).

They let ``compare`` map fused NPU nodes to the original CPU nodes and re-run one op on the
CPU reference's inputs without the workload at hand.  A plain JSON rendering of
:class:`~msprof_py.runtime.graph.Graph`; attribute values that are not JSON become strings.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from msprof_py.errors import InvalidPathError
from msprof_py.runtime.graph import Graph, Op, Tensor


def _t(t: Tensor) -> list:
    return [t.name, list(t.shape), t.dtype, t.format]


def _from_t(v: list) -> Tensor:
    return Tensor(str(v[0]), tuple(int(s) for s in v[1]), str(v[2]), str(v[3]))


def graph_to_dict(g: Graph) -> dict[str, Any]:
    return {
        "name": g.name,
        "inputs": [_t(t) for t in g.inputs],
        "outputs": [_t(t) for t in g.outputs],
        "weights": [_t(t) for t in g.weights],
        "ops": [{"name": op.name, "type": op.type, "inputs": [_t(t) for t in op.inputs],
                 "outputs": [_t(t) for t in op.outputs], "attrs": op.attrs, "task_type": op.task_type,
                 "stream": op.stream, "phase": op.phase, "fused_from": list(op.fused_from),
                 "dynamic": op.dynamic} for op in g.ops],
    }


def graph_from_dict(d: dict[str, Any]) -> Graph:
    ops = [Op(name=o["name"], type=o["type"], inputs=[_from_t(t) for t in o["inputs"]],
              outputs=[_from_t(t) for t in o["outputs"]], attrs=dict(o.get("attrs") or {}),
              task_type=o.get("task_type", ""), stream=int(o.get("stream", 0)), phase=o.get("phase", ""),
              fused_from=tuple(o.get("fused_from") or ()), dynamic=bool(o.get("dynamic", False)))
           for o in d["ops"]]
    return Graph(d["name"], ops, [_from_t(t) for t in d.get("inputs", [])],
                 [_from_t(t) for t in d.get("outputs", [])], [_from_t(t) for t in d.get("weights", [])])


def dump_json(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY,
                        default=str)


def load_graph(path: Path) -> Graph:
    try:
        return graph_from_dict(orjson.loads(path.read_bytes()))
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError, IndexError) as err:
        raise InvalidPathError(f"{path}: not a graph file msprof_py wrote ({err})") from None
