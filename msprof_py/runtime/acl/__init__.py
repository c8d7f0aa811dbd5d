"""An AscendCL-like Python API over the simulated NPU, for user scripts.

A script drives the stack call by call, as it would drive CANN::

    from msprof_py.runtime import acl

    acl.init()
    acl.rt.set_device(0)
    stream = acl.rt.create_stream()
    model = acl.mdl.load_from_file("fixtures/graphs/mlp_train.json")
    for _ in range(5):
        acl.mdl.execute(model, stream)          # launches and returns (the device runs behind)
        acl.rt.synchronize_stream(stream)       # the host blocks here
    acl.nn.matmul((64, 1024), (1024, 1024), stream=stream)   # single-operator aclnnMatmul
    acl.rt.memcpy(4 << 20, "d2h")               # synchronous copy
    acl.host.work(200)                          # 200 us of host-side work, no AscendCL call
    result = acl.finalize()                     # SimResult: truth, pid, end time ...

Every call advances the script's (simulated) host thread by its host cost; device tasks queue
per stream in FIFO order after what is already there.  Profiling is off until the collector
calls :func:`install_hooks` (the runtime never imports ``collect``); then every call reports
the same records as :func:`msprof_py.runtime.sim.run` does.  Misuse (no device set, an unknown
model or stream, a bad graph file) raises :class:`~msprof_py.errors.WorkloadError`.

The API lives in one module per AscendCL group: :mod:`.process` (the simulated process,
``init`` / ``finalize``, the profiling switch), :mod:`.streams` (``rt``, ``host``),
:mod:`.models` (``mdl``), :mod:`.ops` (``nn``) and :mod:`.marks` (``prof``).
"""
from __future__ import annotations

from typing import Any

from msprof_py.runtime.acl import process
from msprof_py.runtime.acl.marks import mark, prof, range_start, range_stop
from msprof_py.runtime.acl.models import MODEL_STREAM_STRIDE, Model, mdl
from msprof_py.runtime.acl.ops import nn
from msprof_py.runtime.acl.process import finalize, init, install_hooks, result, uninstall_hooks
from msprof_py.runtime.acl.streams import EXTRA_STREAM_BASE, Stream, host, rt
from msprof_py.runtime.sim import SimResult

__all__ = ["SimResult", "Stream", "Model", "init", "finalize", "install_hooks", "uninstall_hooks", "result", "rt",
           "mdl", "nn", "host", "prof", "mark", "range_start", "range_stop"]


def __getattr__(name: str) -> Any:
    # ``acl._state``: the current simulated process, replaced by install_hooks / init after
    # finalize, so it is looked up on each access rather than bound once here
    if name == "_state":
        return process.current()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
