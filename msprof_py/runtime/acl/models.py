"""``acl.mdl`` (aclmdl*): load a model (a graph file, a :class:`Graph`, a :class:`Workload` or a
built-in workload name) once, execute it on a stream any number of times, unload it.

Each loaded model gets its own block of ``MODEL_STREAM_STRIDE`` stream ids for its internal
streams; its tasks are GE's static-graph program (:func:`msprof_py.runtime.ge.build_static`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from msprof_py.errors import WorkloadError
from msprof_py.runtime import apis, ge
from msprof_py.runtime.acl.process import current
from msprof_py.runtime.acl.streams import Stream, _stream_of
from msprof_py.runtime.graph import Graph
from msprof_py.runtime.graph_file import load_graph_file
from msprof_py.runtime.program import Program
from msprof_py.runtime.rts import FIRST_MODEL_STREAM, USER_STREAM
from msprof_py.runtime.workloads import Workload, get_workload

MODEL_STREAM_STRIDE = 48  # each loaded model gets its own block of stream ids


@dataclass
class Model:
    """A loaded model: its program per user stream it was executed on (built once each)."""
    model_id: int
    device_id: int
    name: str
    program: Program
    workload: Workload
    first_stream: int
    _prog_by_stream: dict[int, Program] = field(default_factory=dict)


def _load(target: str | Path | Graph | Workload) -> Model:
    """Load a graph file path, a :class:`Graph`, a :class:`Workload` or a built-in workload name."""
    s = current()
    d, ds = s.dev()
    if isinstance(target, Workload):
        wl = target
    elif isinstance(target, Graph):
        wl = Workload(target.name, target, "static", any(op.phase in ("fp", "bp") for op in target.ops))
    elif isinstance(target, (str, Path)) and str(target).endswith(".json"):
        g = load_graph_file(target)
        wl = Workload(g.name, g, "static", any(op.phase in ("fp", "bp") for op in g.ops))
    elif isinstance(target, str):
        wl = get_workload(target)
    else:
        raise WorkloadError(f"acl: cannot load {target!r}")
    if wl.mode != "static":
        raise WorkloadError(f"acl: workload {wl.name!r} is a single-operator workload, not a model")
    mid = s.next_model
    s.next_model += 1
    first = FIRST_MODEL_STREAM + (mid - 1) * MODEL_STREAM_STRIDE
    sid = ds.streams[0] if ds.streams else USER_STREAM
    prog, recs, load_end = ge.build_static(wl, d, 1, s.thread, s.t, s.spec, s.tuning, s.names, model_id=mid,
                                           user_stream=sid, first_model_stream=first)
    for tag, aging, r in recs:
        s.em.add(tag, aging, r)
    s.t = load_end + 10 * apis.US
    model = Model(mid, d, wl.name, prog, wl, first, {sid: prog})
    s.models[mid] = model
    return model


def _execute(model: Model, stream: Stream | None = None) -> None:
    """``aclmdlExecute``: launch one execution (input copies, the model's tasks, output copies)."""
    s = current()
    d, ds, sid = _stream_of(stream)
    if not isinstance(model, Model) or s.models.get(model.model_id) is not model:
        raise WorkloadError(f"acl: model {model!r} is not loaded")
    if model.device_id != d:
        raise WorkloadError(f"acl: model {model.model_id} was loaded on device {model.device_id}, not {d}")
    prog = model._prog_by_stream.get(sid)
    if prog is None:  # same model, another user stream: same static tasks, copies on that stream
        prog, _, _ = ge.build_static(model.workload, d, 1, s.thread, 0, s.spec, s.tuning, s.names,
                                     model_id=model.model_id, user_stream=sid, first_model_stream=model.first_stream)
        model._prog_by_stream[sid] = prog
    s.run_block(d, ds, prog)


def _unload(model: Model) -> None:
    s = current()
    d, _ = s.dev()
    if s.models.pop(getattr(model, "model_id", -1), None) is None:
        raise WorkloadError(f"acl: model {model!r} is not loaded")
    s.em.acl(d, "aclmdlUnload", s.t, s.t + 300 * apis.US)
    s.t += 310 * apis.US


mdl = SimpleNamespace(load_from_file=_load, load=_load, execute=_execute, unload=_unload)
