"""What the tuner tunes: operator keys, the ops to tune, and subgraphs (fusion chains).

- :func:`op_signature` / :func:`op_key`: an operator's repository key hashes what real AOE
  matches on -- op type, input/output shapes, data types and formats, attributes -- plus the
  soc version.  Ops with the same key share one repository entry (they are tuned once).
- :func:`select_ops`: the AI Core / AI Vector ops of a graph (AOE tunes only static, non-AI-CPU
  ops), optionally narrowed by a ``--tune_ops_file``.
- :func:`find_subgraphs`: chains of vector ops where each op's only consumer is the next one --
  the candidates for GE-style UB fusion that subgraph tuning (SGAT) decides on.
- :func:`fuse`: one op that stands for a chain: the first op's type and work, the chain's outside
  inputs, the last op's outputs (the intermediate tensors never go to HBM), ``fused_from`` set.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from msprof_py.aoe.bank import repo_key
from msprof_py.errors import InvalidParamError, InvalidPathError

if TYPE_CHECKING:
    from msprof_py.runtime.graph import Graph, Op

TUNABLE_TASK_TYPES = ("AI_CORE", "AI_VECTOR_CORE", "MIX_AIV", "MIX_AIC")


def _tensors(ts: Iterable[Any]) -> list[list[Any]]:
    return [[list(t.shape), t.dtype, t.format] for t in ts]


def op_signature(op: "Op", soc_version: str) -> dict[str, Any]:
    """What an operator's repository key is made of (readable; stored next to the entry)."""
    return {"op_type": op.type, "inputs": _tensors(op.inputs), "outputs": _tensors(op.outputs),
            "attrs": {k: repr(v) for k, v in sorted(op.attrs.items())}, "task_type": op.task_type,
            "fused_types": list(op.attrs.get("_fused_types", ())), "soc_version": soc_version}


def op_key(op: "Op", soc_version: str) -> str:
    return repo_key(op_signature(op, soc_version))


def subgraph_signature(ops: list["Op"], soc_version: str) -> dict[str, Any]:
    return {"ops": [{k: v for k, v in op_signature(op, soc_version).items() if k != "soc_version"} for op in ops],
            "soc_version": soc_version}


def subgraph_key(ops: list["Op"], soc_version: str) -> str:
    return repo_key(subgraph_signature(ops, soc_version))


# ---------------------------------------------------------------------------------------------
# --tune_ops_file
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OpFilter:
    """``{"tune_ops_name": [...], "tune_ops_type": [...]}``: whole-word matches; an op is tuned
    when its name or its type is listed (either list may be absent)."""

    names: frozenset[str] = frozenset()
    types: frozenset[str] = frozenset()

    def __call__(self, op: "Op") -> bool:
        return op.name in self.names or op.type in self.types


def load_tune_ops_file(path: str | os.PathLike[str]) -> OpFilter:
    """Read AOE's ``--tune_ops_file`` (JSON).  Raises InvalidPathError / InvalidParamError."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as err:
        raise InvalidPathError(f"{p}: cannot read the tune_ops_file ({err.strerror})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise InvalidParamError(f"{p}: tune_ops_file is not JSON (line {err.lineno}: {err.msg})") from None
    if not isinstance(doc, dict) or not ({"tune_ops_name", "tune_ops_type"} & set(doc)):
        raise InvalidParamError(f"{p}: tune_ops_file needs \"tune_ops_name\" and/or \"tune_ops_type\" lists")
    out = {}
    for key in ("tune_ops_name", "tune_ops_type"):
        v = doc.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise InvalidParamError(f"{p}: {key} must be a list of strings")
        out[key] = frozenset(v)
    unknown = set(doc) - {"tune_ops_name", "tune_ops_type"}
    if unknown:
        raise InvalidParamError(f"{p}: unknown key(s) {sorted(unknown)} in tune_ops_file")
    return OpFilter(out["tune_ops_name"], out["tune_ops_type"])


def select_ops(graph: "Graph", op_filter: OpFilter | None = None) -> list["Op"]:
    """The ops AOE would tune, in graph order: static AI Core / AI Vector / MIX ops (filtered)."""
    from msprof_py.runtime.cost import derive_task_type

    out = []
    for op in graph.ops:
        if op.dynamic or derive_task_type(op) not in TUNABLE_TASK_TYPES:
            continue
        if op_filter is not None and not op_filter(op):
            continue
        out.append(op)
    return out


# ---------------------------------------------------------------------------------------------
# subgraphs (fusion chains)
# ---------------------------------------------------------------------------------------------
def _is_vector(op: "Op") -> bool:
    from msprof_py.runtime.cost import VECTOR_FLOPS_PER_ELEM, derive_task_type

    return derive_task_type(op) == "AI_VECTOR_CORE" and op.type in VECTOR_FLOPS_PER_ELEM and not op.dynamic


def find_subgraphs(graph: "Graph") -> list[list["Op"]]:
    """Maximal chains ``a -> b -> ...`` of consecutive vector ops where ``a``'s first output is
    consumed only by ``b`` (and ``a``'s other outputs by nobody): fusable without changing what
    any other op reads.  Chains of one op are not subgraphs."""
    consumers: dict[str, int] = {}
    for op in graph.ops:
        for t in op.inputs:
            consumers[t.name] = consumers.get(t.name, 0) + 1
    for t in graph.outputs:
        consumers[t.name] = consumers.get(t.name, 0) + 1
    chains: list[list[Op]] = []
    current: list[Op] = []
    for prev, op in zip([None] + graph.ops[:-1], graph.ops):
        link = (prev is not None and current and current[-1] is prev and _is_vector(op)
                and prev.outputs and consumers.get(prev.outputs[0].name, 0) == 1
                and all(consumers.get(t.name, 0) == 0 for t in prev.outputs[1:])
                and any(t.name == prev.outputs[0].name for t in op.inputs)
                and prev.stream == op.stream and prev.phase == op.phase)
        if link:
            current.append(op)
            continue
        if len(current) >= 2:
            chains.append(current)
        current = [op] if _is_vector(op) else []
    if len(current) >= 2:
        chains.append(current)
    return chains


def fuse(chain: list["Op"]) -> "Op":
    """One op for the chain (GE's fused-op naming: the member names concatenated)."""
    inside = {t.name for op in chain for t in op.outputs}
    inputs, seen = [], set()
    for op in chain:
        for t in op.inputs:
            if t.name not in inside and t.name not in seen:
                seen.add(t.name)
                inputs.append(t)
    first, last = chain[0], chain[-1]
    attrs = dict(first.attrs)
    attrs["_fused_types"] = tuple(op.type for op in chain)
    return replace(first, name="".join(op.name for op in chain), inputs=inputs, outputs=list(last.outputs),
                   attrs=attrs, fused_from=tuple(op.name for op in chain))


def apply_fusions(graph: "Graph", chains_to_fuse: list[list["Op"]]) -> "Graph":
    """A copy of ``graph`` with each chain replaced by its fused op (at the chain's place)."""
    from msprof_py.runtime.graph import Graph

    first_of = {id(c[0]): c for c in chains_to_fuse}
    members = {id(op) for c in chains_to_fuse for op in c}
    ops = []
    for op in graph.ops:
        if id(op) in first_of:
            ops.append(fuse(first_of[id(op)]))
        elif id(op) not in members:
            ops.append(op)
    return Graph(graph.name, ops, list(graph.inputs), list(graph.outputs), list(graph.weights))
