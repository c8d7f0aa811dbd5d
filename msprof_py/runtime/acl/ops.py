"""``acl.nn`` (aclnn*): single-operator calls.  Each call builds (once per op type, shapes,
dtype, stream and attrs) a one-op single_op program and launches it on the stream."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Sequence

from msprof_py.errors import WorkloadError
from msprof_py.runtime import ge
from msprof_py.runtime.acl.process import current
from msprof_py.runtime.acl.streams import Stream, _stream_of
from msprof_py.runtime.graph import Tensor
from msprof_py.runtime.workloads import Workload
from msprof_py.runtime.workloads._builder import GraphBuilder

Shape = Sequence[int]


def _call(op_type: str, inputs: Sequence[Shape], outputs: Sequence[Shape], *, dtype: str = "FLOAT16",
          api: str | None = None, stream: Stream | None = None, attrs: dict | None = None) -> None:
    """One single-operator call ``aclnn<Api>`` launching ``op_type`` on ``stream``."""
    s = current()
    d, ds, sid = _stream_of(stream)
    api = api or f"aclnn{op_type}"
    key = (op_type, tuple(map(tuple, inputs)), tuple(map(tuple, outputs)), dtype, api, sid, d,
           tuple(sorted((attrs or {}).items())))
    prog = s.op_cache.get(key)
    if prog is None:
        b = GraphBuilder(api, dtype)
        ins = [Tensor(f"in{i}", tuple(sh), dtype) for i, sh in enumerate(inputs)]
        b.op(f"{api}_{op_type}AiCore_{op_type}", op_type, ins, [(tuple(sh), dtype) for sh in outputs],
             attrs={"api": api, **(attrs or {})})
        wl = Workload(api, b.graph, "single_op")
        prog = s.op_cache[key] = ge.build_single_op(wl, d, s.thread, s.spec, s.tuning, s.names, user_stream=sid)
    s.run_block(d, ds, prog)


def _elementwise(op_type: str, api: str):
    def f(shape: Shape, *, dtype: str = "FLOAT16", stream: Stream | None = None) -> None:
        n_in = 2 if op_type in ("Add", "Mul", "Sub", "RealDiv") else 1
        _call(op_type, [shape] * n_in, [shape], dtype=dtype, api=api, stream=stream)
    f.__doc__ = f"``{api}`` on a tensor of ``shape``."
    return f


def _matmul(a: Shape, b: Shape, *, dtype: str = "FLOAT16", stream: Stream | None = None) -> None:
    """``aclnnMatmul``: ``a (.., M, K) @ b (K, N)``."""
    if a[-1] != b[0]:
        raise WorkloadError(f"acl: aclnnMatmul shapes do not match: {tuple(a)} @ {tuple(b)}")
    _call("MatMulV2", [a, b], [tuple(a[:-1]) + (b[-1],)], dtype=dtype, api="aclnnMatmul", stream=stream)


nn = SimpleNamespace(
    call=_call, matmul=_matmul,
    add=_elementwise("Add", "aclnnAdd"), mul=_elementwise("Mul", "aclnnMul"), relu=_elementwise("Relu", "aclnnRelu"),
    gelu=_elementwise("Gelu", "aclnnGelu"), softmax=_elementwise("SoftmaxV2", "aclnnSoftmax"),
    layer_norm=_elementwise("LayerNormV3", "aclnnLayerNorm"), rms_norm=_elementwise("RmsNorm", "aclnnRmsNorm"),
    cast=_elementwise("Cast", "aclnnCast"), silu=_elementwise("Silu", "aclnnSilu"),
)
