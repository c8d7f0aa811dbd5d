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
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Sequence

import numpy as np

from msprof_py.errors import WorkloadError
from msprof_py.runtime import apis, ge
from msprof_py.runtime.apis import Names
from msprof_py.runtime.clock import SimClock
from msprof_py.runtime.cost import TuneChoice
from msprof_py.runtime.device import ATLAS_A2, DeviceSpec
from msprof_py.runtime.emit import Emitter
from msprof_py.runtime.graph import Graph, Tensor
from msprof_py.runtime.graph_file import load_graph_file
from msprof_py.runtime.hooks import NullHooks, ProfilerHooks
from msprof_py.runtime.program import Program
from msprof_py.runtime.rts import FIRST_MODEL_STREAM, USER_STREAM
from msprof_py.runtime.scheduler import plan_segments, schedule
from msprof_py.runtime.tx import MARK_COST_NS, TxRecorder
from msprof_py.runtime.sim import JITTER_SIGMA, SET_DEVICE_NS, SimResult, pid_for_seed

__all__ = ["SimResult", "Stream", "Model", "init", "finalize", "install_hooks", "uninstall_hooks", "result", "rt",
           "mdl", "nn", "host", "prof", "mark", "range_start", "range_stop"]
from msprof_py.runtime.workloads import Workload, get_workload
from msprof_py.runtime.workloads._builder import GraphBuilder

MODEL_STREAM_STRIDE = 48  # each loaded model gets its own block of stream ids
EXTRA_STREAM_BASE = 1000  # streams created after the first one


@dataclass
class Stream:
    device_id: int
    stream_id: int


@dataclass
class Model:
    model_id: int
    device_id: int
    name: str
    program: Program
    workload: Workload
    first_stream: int
    _prog_by_stream: dict[int, Program] = field(default_factory=dict)


@dataclass
class _Device:
    free: dict[int, int] = field(default_factory=dict)  # stream -> earliest next start (ns)
    streams: list[int] = field(default_factory=list)


class _State:
    def __init__(self, hooks: ProfilerHooks, clock: SimClock | None, spec: DeviceSpec, seed: int,
                 tuning: dict[str, TuneChoice] | None = None) -> None:
        self.hooks, self.spec, self.seed, self.tuning = hooks, spec, seed, tuning
        self.clock = clock or SimClock.create(spec.host_cpu_frequency_mhz, spec.hwts_frequency_mhz, fixed=False)
        self.names = Names(hooks)
        if self.names.on:
            self.names.register_record_types()
        self.pid = pid_for_seed(seed)
        self.thread = self.pid  # the script's main thread
        self.em = Emitter(hooks, self.clock, self.names, _AllThreads(self.thread), spec=spec)
        self.rng = np.random.default_rng(seed)
        self.t = 0  # the host thread's clock (sim ns)
        self.inited = False
        self.device: int | None = None
        self.devices: dict[int, _Device] = {}
        self.models: dict[int, Model] = {}
        self.next_model = 1
        self.op_cache: dict[tuple, Program] = {}
        self.result: SimResult | None = None
        self.gap = int(spec.task_schedule_gap_us * 1000)
        self.tx = TxRecorder(self.pid, self.thread)

    # -- helpers
    def dev(self) -> tuple[int, _Device]:
        if self.result is not None:
            raise WorkloadError("acl: the runtime was finalized; call acl.init() to start again")
        if not self.inited:
            init()
        if self.device is None:
            raise WorkloadError("acl: no device set: call acl.rt.set_device(id) first")
        return self.device, self.devices[self.device]

    def run_block(self, d: int, devstate: _Device, prog: Program) -> None:
        """Launch one iteration of ``prog`` now: schedule after the queued work, report, advance the host."""
        tm = prog.tasks
        dur = np.maximum(1, np.rint(np.array(tm.dur_ns) * self.rng.lognormal(0.0, JITTER_SIGMA, len(tm))))
        submit = self.t + np.array(tm.submit_ns, np.int64)
        segs = plan_segments(np.array(tm.stream), tm.deps, set())  # no peers: barriers are plain waits
        free = {s: np.array([v], np.int64) for s, v in devstate.free.items()}
        st, en = schedule(submit[None, :], dur.astype(np.int64)[None, :], segs, self.gap, free)
        for s in set(tm.stream):
            on = np.array(tm.stream) == s
            devstate.free[s] = max(devstate.free.get(s, 0), int(en[0, on].max()) + self.gap)
        self.em.block(d, prog, st, en, np.array([self.t], np.int64))
        self.t += prog.launch_end_ns


class _AllThreads(dict):
    """Every device is driven from the script's one thread."""

    def __init__(self, thread: int) -> None:
        super().__init__()
        self.thread = thread

    def __missing__(self, key: int) -> int:
        return self.thread


_state = _State(NullHooks(), None, ATLAS_A2, 0)


# ---------------------------------------------------------------------- profiling switch
def install_hooks(hooks: ProfilerHooks, clock: SimClock | None = None, spec: DeviceSpec = ATLAS_A2, seed: int = 0,
                  tuning: dict[str, TuneChoice] | None = None) -> None:
    """Start a fresh simulated process whose calls report through ``hooks`` (the collector's)."""
    global _state
    _state = _State(hooks, clock, spec, seed, tuning)


def uninstall_hooks() -> None:
    """Back to profiling off (a fresh process with :class:`NullHooks`)."""
    global _state
    _state = _State(NullHooks(), None, ATLAS_A2, 0)


def result() -> SimResult | None:
    """The :class:`SimResult` of the last :func:`finalize` (None before)."""
    return _state.result


# ---------------------------------------------------------------------- process
def init() -> None:
    """``aclInit``."""
    s = _state
    if s.result is not None:  # a new process after finalize
        install_hooks(s.hooks, s.clock, s.spec, s.seed, s.tuning)
        s = _state
    if s.inited:
        return
    s.inited = True
    s.t = max(s.t, 10_000)
    s.em.acl(0, "aclInit", s.t, s.t + 50_000)
    s.t += 60_000


def finalize() -> SimResult:
    """``aclFinalize``: ends the simulated process; returns its :class:`SimResult` (idempotent)."""
    s = _state
    if s.result is not None:
        return s.result
    if not s.inited:
        init()
    for d in sorted(s.devices):
        busy = max(s.devices[d].free.values(), default=0)
        s.t = max(s.t, busy)
    s.em.acl(0, "aclFinalize", s.t, s.t + 190_000)
    s.t += 250_000
    truth, steps = s.em.finish()
    s.result = SimResult(s.spec, s.clock, sorted(s.devices), s.pid, "python3", int(s.t), truth, steps)
    return s.result


# ---------------------------------------------------------------------- aclrt*
def _set_device(device_id: int) -> None:
    s = _state
    if s.result is not None or not s.inited:
        init()
        s = _state
    if not isinstance(device_id, int) or device_id < 0:
        raise WorkloadError(f"acl: bad device id {device_id!r}")
    if device_id not in s.devices:
        s.em.acl(device_id, "aclrtSetDevice", s.t, s.t + SET_DEVICE_NS)
        s.em.rt(device_id, "SetDevice", s.t + apis.US, s.t + SET_DEVICE_NS - apis.US)
        s.t += SET_DEVICE_NS + 5 * apis.US
        s.devices[device_id] = _Device()
    s.device = device_id


def _reset_device(device_id: int | None = None) -> None:
    s = _state
    d = s.device if device_id is None else device_id
    if d not in s.devices:
        raise WorkloadError(f"acl: device {d} was not set")
    _synchronize_device()
    s.em.acl(d, "aclrtResetDevice", s.t, s.t + 800 * apis.US)
    s.t += 810 * apis.US


def _create_stream() -> Stream:
    s = _state
    d, ds = s.dev()
    sid = USER_STREAM if not ds.streams else EXTRA_STREAM_BASE + len(ds.streams)
    ds.streams.append(sid)
    s.em.acl(d, "aclrtCreateStream", s.t, s.t + 20 * apis.US)
    s.em.rt(d, "StreamCreate", s.t + apis.US, s.t + 19 * apis.US)
    s.t += 25 * apis.US
    return Stream(d, sid)


def _stream_of(stream: Stream | None) -> tuple[int, _Device, int]:
    s = _state
    d, ds = s.dev()
    if stream is None:
        if not ds.streams:
            ds.streams.append(USER_STREAM)  # the default stream
        return d, ds, ds.streams[0]
    if not isinstance(stream, Stream) or stream.device_id != d or stream.stream_id not in ds.streams:
        raise WorkloadError(f"acl: unknown stream {stream!r} on device {d}")
    return d, ds, stream.stream_id


def _destroy_stream(stream: Stream) -> None:
    s = _state
    d, ds, sid = _stream_of(stream)
    _synchronize_stream(stream)
    ds.streams.remove(sid)
    s.em.acl(d, "aclrtDestroyStream", s.t, s.t + 15 * apis.US)
    s.t += 20 * apis.US


def _synchronize_stream(stream: Stream | None = None) -> None:
    """``aclrtSynchronizeStream``: the host blocks until the stream's queued tasks are done."""
    s = _state
    d, ds, sid = _stream_of(stream)
    begin = s.t
    end = max(begin, ds.free.get(sid, 0)) + apis.SYNC_RETURN_NS
    s.em.sync(d, np.array([begin]), np.array([end]))
    s.t = end + apis.OP_GAP_NS


def _synchronize_device() -> None:
    s = _state
    d, ds = s.dev()
    begin = s.t
    end = max([begin] + list(ds.free.values())) + apis.SYNC_RETURN_NS
    s.em.acl(d, "aclrtSynchronizeDevice", begin, end)
    s.t = end + apis.OP_GAP_NS


_DIRECTIONS = {"h2d": ge.H2D, "d2h": ge.D2H, "d2d": 3}


def _memcpy_async(nbytes: int, kind: str = "h2d", stream: Stream | None = None) -> None:
    s = _state
    d, ds, sid = _stream_of(stream)
    if kind not in _DIRECTIONS or not isinstance(nbytes, int) or nbytes <= 0:
        raise WorkloadError(f"acl: bad memcpy ({nbytes!r} bytes, kind {kind!r}; kinds: h2d, d2h, d2d)")
    prog = ge.build_memcpy(nbytes, _DIRECTIONS[kind], d, s.thread, s.spec, s.names, stream=sid)
    s.run_block(d, ds, prog)


def _memcpy(nbytes: int, kind: str = "h2d", stream: Stream | None = None) -> None:
    """``aclrtMemcpy``: a copy the host waits for."""
    _memcpy_async(nbytes, kind, stream)
    _synchronize_stream(stream)


def _host_work(us: float) -> None:
    """The script's host thread computes for ``us`` microseconds (data preparation, Python
    overhead...) without calling AscendCL: no record, the device may run dry meanwhile.  A
    documented fault for the host-bound-launch advice (``acl.host.work(200)`` between launches)."""
    s = _state
    s.dev()
    if not isinstance(us, (int, float)) or not 0 <= us <= 3.6e9:
        raise WorkloadError(f"acl: host.work wants 0..3.6e9 microseconds, got {us!r}")
    s.t += int(round(us * 1000))


host = SimpleNamespace(work=_host_work)

rt = SimpleNamespace(set_device=_set_device, reset_device=_reset_device, create_stream=_create_stream,
                     destroy_stream=_destroy_stream, synchronize_stream=_synchronize_stream,
                     synchronize_device=_synchronize_device, memcpy=_memcpy, memcpy_async=_memcpy_async)


# ---------------------------------------------------------------------- aclmdl*
def _load(target: str | Path | Graph | Workload) -> Model:
    """Load a graph file path, a :class:`Graph`, a :class:`Workload` or a built-in workload name."""
    s = _state
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
    s = _state
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
    s = _state
    d, _ = s.dev()
    if s.models.pop(getattr(model, "model_id", -1), None) is None:
        raise WorkloadError(f"acl: model {model!r} is not loaded")
    s.em.acl(d, "aclmdlUnload", s.t, s.t + 300 * apis.US)
    s.t += 310 * apis.US


mdl = SimpleNamespace(load_from_file=_load, load=_load, execute=_execute, unload=_unload)


# ---------------------------------------------------------------------- aclnn* single operators
Shape = Sequence[int]


def _call(op_type: str, inputs: Sequence[Shape], outputs: Sequence[Shape], *, dtype: str = "FLOAT16",
          api: str | None = None, stream: Stream | None = None, attrs: dict | None = None) -> None:
    """One single-operator call ``aclnn<Api>`` launching ``op_type`` on ``stream``."""
    s = _state
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


# ---------------------------------------------------------------------- aclprof* msproftx marks and ranges
def _tx_record(recs) -> None:
    s = _state
    s.em.add("additional.msproftx", True, recs)
    s.t += MARK_COST_NS


def _mark(message: str) -> None:
    """``aclprofMark``: an instant mark with ``message`` (< 156 bytes) at the script's current time."""
    s = _state
    s.dev()
    _tx_record(s.tx.mark(s.t, message, s.clock))


def _range_start(message: str) -> int:
    """``aclprofRangeStart``: open a range; returns its id for :func:`range_stop`."""
    s = _state
    s.dev()
    rid = s.tx.range_start(s.t, message)
    s.t += MARK_COST_NS
    return rid


def _range_stop(range_id: int) -> None:
    """``aclprofRangeStop``: close the range ``range_id`` (one start/end record)."""
    s = _state
    s.dev()
    _tx_record(s.tx.range_stop(s.t, range_id, s.clock))


def _push(message: str) -> None:
    """``aclprofPush``: open a nested range on this thread."""
    s = _state
    s.dev()
    s.tx.push(s.t, message)
    s.t += MARK_COST_NS


def _pop() -> None:
    """``aclprofPop``: close the innermost pushed range (one push/pop record)."""
    s = _state
    s.dev()
    _tx_record(s.tx.pop(s.t, s.clock))


prof = SimpleNamespace(mark=_mark, range_start=_range_start, range_stop=_range_stop, push=_push, pop=_pop)
mark, range_start, range_stop = _mark, _range_start, _range_stop
