"""Built-in workloads and the registry: ``get_workload(name, **params)``, ``WORKLOADS``.

A :class:`Workload` is a graph plus how it runs: ``mode="static"`` loads it as a model once
(``aclmdlLoadFromFile``) and replays it every iteration (``aclmdlExecute``); ``mode="single_op"``
launches every op through its ``aclnn*`` API every iteration.  ``training`` workloads mark
forward/backward/update phases (FP/BP/ITER_END step-trace tags, an all-reduce on >1 device).
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

from msprof_py.errors import WorkloadError
from msprof_py.runtime.graph import Graph


@dataclass
class Workload:
    name: str
    graph: Graph
    mode: str = "static"  # "static" | "single_op"
    training: bool = False
    step_gap_us: float = 200.0  # host work between iterations (input pipeline, Python)
    description: str = ""


def _resnet50(batch: int = 32, image: int = 224) -> Workload:
    from msprof_py.runtime.workloads import resnet50
    return Workload("resnet50", resnet50.build(batch, image), "static", True, 300.0,
                    f"ResNet-50 training step, batch {batch}, {image}x{image} images")


def _bert(batch: int = 32, seq_len: int = 128, layers: int = 12, hidden: int = 768) -> Workload:
    from msprof_py.runtime.workloads import bert
    return Workload("bert", bert.build(batch, seq_len, layers, hidden), "static", True, 250.0,
                    f"BERT encoder training step, batch {batch}, sequence {seq_len}, {layers} layers")


def _llm_decoder(batch: int = 4, seq_len: int = 1024, layers: int = 8, hidden: int = 4096,
                 vocab: int = 32000) -> Workload:
    from msprof_py.runtime.workloads import llm_decoder
    return Workload("llm_decoder", llm_decoder.build(batch, seq_len, layers, hidden, vocab), "static", False, 100.0,
                    f"LLM decoder forward (prefill), batch {batch}, {seq_len} tokens, {layers} layers")


def _single_op(batch: int = 16, size: int = 1024) -> Workload:
    from msprof_py.runtime.workloads import single_op
    return Workload("single_op", single_op.build(batch, size), "single_op", False, 20.0,
                    f"single-operator aclnn calls on {batch}x{size} tensors")


WORKLOADS: dict[str, Callable[..., Workload]] = {
    "resnet50": _resnet50,
    "bert": _bert,
    "llm_decoder": _llm_decoder,
    "single_op": _single_op,
}


def get_workload(name: str, **params: Any) -> Workload:
    """A built-in workload by name; unknown names or parameters raise :class:`WorkloadError`."""
    factory = WORKLOADS.get(name)
    if factory is None:
        raise WorkloadError(f"unknown workload {name!r} (choose from {', '.join(sorted(WORKLOADS))})")
    known = inspect.signature(factory).parameters
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise WorkloadError(f"workload {name!r}: bad parameters {unknown} (it takes {', '.join(known)})")
    for key, value in params.items():  # every size parameter (batch, seq_len, layers...) is a count
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise WorkloadError(f"workload {name!r}: {key} must be a positive integer, got {value!r}")
    return factory(**params)


from msprof_py.runtime.graph_file import load_graph_file  # noqa: E402  (re-exported for the collector)

__all__ = ["WORKLOADS", "Workload", "get_workload", "load_graph_file"]
