"""User graph files: a JSON description of a model, run as a static (loaded) model.

Schema (JSON object)::

    {
      "name": "my_model",                      # required, model name (graph_id_map)
      "batch": 8,                              # optional: the batch size the shapes are written for
      "inputs":  [TENSOR, ...],                # copied host -> device every execution
      "outputs": ["tensor name", ...],         # optional: copied device -> host (default: last op's outputs)
      "weights": [TENSOR, ...],                # constants resident on the device
      "ops": [                                 # in execution order
        {"name": "layer1/MatMul", "type": "MatMulV2",
         "inputs": ["x", "w1"],                # names of graph inputs, weights or earlier op outputs
         "outputs": [TENSOR, ...],             # at least one
         "attrs": {"transpose_x1": false},     # optional
         "task_type": "AI_CORE",               # optional: AI_CORE, AI_VECTOR_CORE, MIX_AIC, MIX_AIV, AI_CPU
         "stream": 0,                          # optional logical stream (0 = main)
         "phase": "fp",                        # optional: fp / bp / update (training step trace)
         "fused_from": ["a/MatMul", "a/Add"],  # optional: GE fusion (fusion_op_info)
         "dynamic": false}                     # optional: dynamic shape (launched every execution)
      ]
    }
    TENSOR = {"name": "x", "shape": [8, 1024], "dtype": "FLOAT16", "format": "ND"}

``dtype`` is one of GE's names (FLOAT16, BF16, FLOAT, INT8, INT32, INT64, ...; default FLOAT16);
``format`` e.g. ND, NCHW, NHWC, NC1HWC0, FRACTAL_Z, FRACTAL_NZ (default ND).  When ``batch`` is
given in the file and a different batch is requested, every tensor dimension 0 equal to the file's
batch is replaced.  Any problem raises :class:`~msprof_py.errors.WorkloadError` with the file name
and where it is (JSON line/column, op index, key).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from msprof_py.errors import WorkloadError
from msprof_py.raw.tensor_info import FORMATS
from msprof_py.runtime.cost import op_cost
from msprof_py.runtime.device import ATLAS_A2
from msprof_py.runtime.graph import DTYPE_BYTES, TASK_TYPES, Graph, Op, Tensor

PHASES = ("", "fp", "bp", "update")
TASK_TYPE_CHOICES = tuple(t for t in TASK_TYPES if t != "HCCL")
KNOWN_FORMATS = frozenset(FORMATS.values()) | {"HWCN", "NDHWC"}


class _Where:
    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, where: str, problem: str) -> WorkloadError:
        return WorkloadError(f"{self.path}: {where}: {problem}" if where else f"{self.path}: {problem}")


def load_graph_file(path: str | os.PathLike[str], batch: int | None = None) -> Graph:
    """Parse and validate a graph file (see the module docstring); ``batch`` rescales dimension 0."""
    p = Path(path)
    w = _Where(str(path))
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise w.fail("", "no such graph file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise w.fail("", f"cannot read graph file: {err}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise w.fail(f"line {err.lineno} column {err.colno}", f"invalid JSON: {err.msg}") from None
    if not isinstance(doc, dict):
        raise w.fail("", "top level must be a JSON object")
    name = doc.get("name")
    if not isinstance(name, str) or not name:
        raise w.fail("", "missing or empty \"name\"")
    file_batch = doc.get("batch")
    if file_batch is not None and (not isinstance(file_batch, int) or file_batch < 1):
        raise w.fail("\"batch\"", f"must be a positive integer, got {file_batch!r}")
    if batch is not None and batch < 1:
        raise WorkloadError(f"batch size must be >= 1, got {batch}")
    scale = (file_batch, batch) if (file_batch and batch and batch != file_batch) else None

    def tensor(obj: Any, where: str) -> Tensor:
        if not isinstance(obj, dict):
            raise w.fail(where, "a tensor must be an object with name/shape/dtype/format")
        tname = obj.get("name")
        if not isinstance(tname, str) or not tname:
            raise w.fail(where, "tensor without a \"name\"")
        shape = obj.get("shape")
        if not isinstance(shape, list) or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                                                  for x in shape):
            raise w.fail(where, f"tensor {tname!r}: \"shape\" must be a list of non-negative integers, got {shape!r}")
        if len(shape) > 8:
            raise w.fail(where, f"tensor {tname!r}: at most 8 dimensions, got {len(shape)}")
        if scale and shape and shape[0] == scale[0]:
            shape = [scale[1]] + shape[1:]
        dtype = obj.get("dtype", "FLOAT16")
        if dtype not in DTYPE_BYTES:
            raise w.fail(where, f"tensor {tname!r}: unknown dtype {dtype!r} (use one of {', '.join(DTYPE_BYTES)})")
        fmt = obj.get("format", "ND")
        if fmt not in KNOWN_FORMATS:
            raise w.fail(where, f"tensor {tname!r}: unknown format {fmt!r}")
        return Tensor(tname, tuple(shape), dtype, fmt)

    def tensor_list(key: str) -> list[Tensor]:
        items = doc.get(key, [])
        if not isinstance(items, list):
            raise w.fail(f"\"{key}\"", "must be a list of tensors")
        return [tensor(t, f"{key}[{i}]") for i, t in enumerate(items)]

    inputs = tensor_list("inputs")
    weights = tensor_list("weights")
    known: dict[str, Tensor] = {}
    for t in inputs + weights:
        if t.name in known:
            raise w.fail("", f"tensor name {t.name!r} defined twice")
        known[t.name] = t
    raw_ops = doc.get("ops")
    if not isinstance(raw_ops, list) or not raw_ops:
        raise w.fail("\"ops\"", "missing or empty list of ops")
    ops: list[Op] = []
    op_names: set[str] = set()
    for i, o in enumerate(raw_ops):
        where = f"ops[{i}]"
        if not isinstance(o, dict):
            raise w.fail(where, "an op must be an object")
        for key in ("name", "type", "inputs", "outputs"):
            if key not in o:
                raise w.fail(where, f"missing key \"{key}\"")
        oname, otype = o["name"], o["type"]
        if not isinstance(oname, str) or not oname or not isinstance(otype, str) or not otype:
            raise w.fail(where, "\"name\" and \"type\" must be non-empty strings")
        where = f"ops[{i}] ({oname})"
        if oname in op_names:
            raise w.fail(where, "op name used twice")
        op_names.add(oname)
        if not isinstance(o["inputs"], list) or not all(isinstance(x, str) for x in o["inputs"]):
            raise w.fail(where, "\"inputs\" must be a list of tensor names")
        ins = []
        for x in o["inputs"]:
            if x not in known:
                raise w.fail(where, f"unknown input tensor {x!r} (not a graph input, weight or earlier output)")
            ins.append(known[x])
        if not isinstance(o["outputs"], list) or not o["outputs"]:
            raise w.fail(where, "\"outputs\" must be a non-empty list of tensors")
        outs = [tensor(t, f"{where} outputs[{j}]") for j, t in enumerate(o["outputs"])]
        for t in outs:
            if t.name in known:
                raise w.fail(where, f"output tensor {t.name!r} already defined")
            known[t.name] = t
        attrs = o.get("attrs", {})
        if not isinstance(attrs, dict):
            raise w.fail(where, "\"attrs\" must be an object")
        task_type = o.get("task_type", "")
        if task_type and task_type not in TASK_TYPE_CHOICES:
            raise w.fail(where, f"unknown task_type {task_type!r} (use one of {', '.join(TASK_TYPE_CHOICES)})")
        stream = o.get("stream", 0)
        if not isinstance(stream, int) or isinstance(stream, bool) or not 0 <= stream < 32:
            raise w.fail(where, f"\"stream\" must be an integer 0..31, got {stream!r}")
        phase = o.get("phase", "")
        if phase not in PHASES:
            raise w.fail(where, f"unknown phase {phase!r} (use fp, bp or update)")
        fused = o.get("fused_from", [])
        if not isinstance(fused, list) or not all(isinstance(x, str) for x in fused):
            raise w.fail(where, "\"fused_from\" must be a list of op names")
        dynamic = o.get("dynamic", False)
        if not isinstance(dynamic, bool):
            raise w.fail(where, "\"dynamic\" must be true or false")
        if otype.lower().startswith("hcom"):
            raise w.fail(where, f"communication op type {otype!r}: the runtime inserts the all-reduce itself "
                                "for --devices N (remove this op)")
        op = Op(oname, otype, ins, outs, dict(attrs), task_type, stream, phase, tuple(fused), dynamic)
        try:
            op_cost(op, ATLAS_A2)  # shapes the op type's FLOPs formula cannot use fail here, with the op named
        except (IndexError, ValueError, ZeroDivisionError, KeyError) as err:
            shapes = "; ".join(str(list(t.shape)) for t in ins) or "none"
            raise w.fail(where, f"op type {otype!r} cannot run on inputs of shapes {shapes} ({err})") from None
        ops.append(op)
    out_names = doc.get("outputs")
    if out_names is None:
        outputs = list(ops[-1].outputs)
    else:
        if not isinstance(out_names, list):
            raise w.fail("\"outputs\"", "must be a list of tensor names")
        outputs = []
        for x in out_names:
            if x not in known:
                raise w.fail("\"outputs\"", f"unknown tensor {x!r}")
            outputs.append(known[x])
    return Graph(name=name, ops=ops, inputs=inputs, outputs=outputs, weights=weights)
