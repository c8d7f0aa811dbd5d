"""``acl.rt`` (aclrt*: devices, streams, synchronisation, copies) and ``acl.host`` (host work
between calls).

Every call advances the script's host thread by its host cost (sim ns); device tasks (copies)
queue per stream in FIFO order after what is already there.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from msprof_py.errors import WorkloadError
from msprof_py.runtime import apis, ge
from msprof_py.runtime.acl.process import DeviceQueues, current, init
from msprof_py.runtime.rts import USER_STREAM
from msprof_py.runtime.sim import SET_DEVICE_NS

EXTRA_STREAM_BASE = 1000  # streams created after the first one


@dataclass
class Stream:
    """A stream the script created (``acl.rt.create_stream``) on ``device_id``."""
    device_id: int
    stream_id: int


def _set_device(device_id: int) -> None:
    s = current()
    if s.result is not None or not s.inited:
        init()
        s = current()
    if not isinstance(device_id, int) or device_id < 0:
        raise WorkloadError(f"acl: bad device id {device_id!r}")
    if device_id not in s.devices:
        s.em.acl(device_id, "aclrtSetDevice", s.t, s.t + SET_DEVICE_NS)
        s.em.rt(device_id, "SetDevice", s.t + apis.US, s.t + SET_DEVICE_NS - apis.US)
        s.t += SET_DEVICE_NS + 5 * apis.US
        s.devices[device_id] = DeviceQueues()
    s.device = device_id


def _reset_device(device_id: int | None = None) -> None:
    s = current()
    d = s.device if device_id is None else device_id
    if d not in s.devices:
        raise WorkloadError(f"acl: device {d} was not set")
    _synchronize_device()
    s.em.acl(d, "aclrtResetDevice", s.t, s.t + 800 * apis.US)
    s.t += 810 * apis.US


def _create_stream() -> Stream:
    s = current()
    d, ds = s.dev()
    sid = USER_STREAM if not ds.streams else EXTRA_STREAM_BASE + len(ds.streams)
    ds.streams.append(sid)
    s.em.acl(d, "aclrtCreateStream", s.t, s.t + 20 * apis.US)
    s.em.rt(d, "StreamCreate", s.t + apis.US, s.t + 19 * apis.US)
    s.t += 25 * apis.US
    return Stream(d, sid)


def _stream_of(stream: Stream | None) -> tuple[int, DeviceQueues, int]:
    s = current()
    d, ds = s.dev()
    if stream is None:
        if not ds.streams:
            ds.streams.append(USER_STREAM)  # the default stream
        return d, ds, ds.streams[0]
    if not isinstance(stream, Stream) or stream.device_id != d or stream.stream_id not in ds.streams:
        raise WorkloadError(f"acl: unknown stream {stream!r} on device {d}")
    return d, ds, stream.stream_id


def _destroy_stream(stream: Stream) -> None:
    s = current()
    d, ds, sid = _stream_of(stream)
    _synchronize_stream(stream)
    ds.streams.remove(sid)
    s.em.acl(d, "aclrtDestroyStream", s.t, s.t + 15 * apis.US)
    s.t += 20 * apis.US


def _synchronize_stream(stream: Stream | None = None) -> None:
    """``aclrtSynchronizeStream``: the host blocks until the stream's queued tasks are done."""
    s = current()
    d, ds, sid = _stream_of(stream)
    begin = s.t
    end = max(begin, ds.free.get(sid, 0)) + apis.SYNC_RETURN_NS
    s.em.sync(d, np.array([begin]), np.array([end]))
    s.t = end + apis.OP_GAP_NS


def _synchronize_device() -> None:
    s = current()
    d, ds = s.dev()
    begin = s.t
    end = max([begin] + list(ds.free.values())) + apis.SYNC_RETURN_NS
    s.em.acl(d, "aclrtSynchronizeDevice", begin, end)
    s.t = end + apis.OP_GAP_NS


_DIRECTIONS = {"h2d": ge.H2D, "d2h": ge.D2H, "d2d": 3}


def _memcpy_async(nbytes: int, kind: str = "h2d", stream: Stream | None = None) -> None:
    s = current()
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
    s = current()
    s.dev()
    if not isinstance(us, (int, float)) or not 0 <= us <= 3.6e9:
        raise WorkloadError(f"acl: host.work wants 0..3.6e9 microseconds, got {us!r}")
    s.t += int(round(us * 1000))


host = SimpleNamespace(work=_host_work)


rt = SimpleNamespace(set_device=_set_device, reset_device=_reset_device, create_stream=_create_stream,
                     destroy_stream=_destroy_stream, synchronize_stream=_synchronize_stream,
                     synchronize_device=_synchronize_device, memcpy=_memcpy, memcpy_async=_memcpy_async)
