"""``msprof_{device}[_{model}_{iter}].json``: msprof's timeline layout (reference §5.3).

Processes (pid = ``(pid << 10) | (sortIndex << 5) | deviceId``):

* CANN (sort 7, host device id 31): one thread per OS thread, X events named
  ``{AscendCL|Model|Node|Communication|Runtime}@{api}`` with msprof's args.  (Sort indices of the
  msprof of CANN 9.0; a legacy-layout capture gets 2024's: ``timeline_layers.layer_sorts``.)
* Ascend Hardware (sort 13): one thread per physical stream ("Stream {id}") with one X per
  device task; Step Trace threads (tid = model_id + 70000) in the same process.
* Communication (sort 15): "Group {g} Communication" threads for HCCL big ops and "Plane {p}"
  threads for their sub-tasks, when the session has communication.
* Overlap Analysis (sort 30): Computing / Communication / Communication(Not Overlapped) / Free,
  when the session has communication.
* HostToDevice flows: ``s`` at the Node launch on its CANN thread, ``f`` (``bp: "e"``) at the
  device task, ``id = str(connection_id << 32)`` as msprof writes it -- unless a connection id
  reaches 2**21, where the shifted id would pass 2**53 and viewers that read ids as doubles would
  merge neighbouring flows; the whole file then uses the plain connection id (still unique, still a
  string), see :func:`~msprof_py.export.timeline_links.flow_ids`.  Only pairs whose two ends are both in the file
  are written (every flow has both ends), and a launch replayed N times (static graph) gets one
  flow, to its first execution.

Not written, on purpose: msprof's "Data_aug Bound" pseudo-flows (a ``t`` and an ``s`` sharing a
non-numeric id and no ``f``): they are not valid flows; the value is in step_trace_*.csv.
The layer order in the file is fixed (msprof's is nondeterministic).
"""
from __future__ import annotations

from pathlib import Path

from msprof_py.export import counter_export, pmu_export
from msprof_py.export.base import ExportContext, Naming, register
from msprof_py.export.session_access import of_device
from msprof_py.export.timeline_layers import (DeviceTasks, cann_layer, communication_layer, device_pid,
                                              hardware_layer, layer_sorts, step_trace_slices)
from msprof_py.export.timeline_links import host_to_device_flows, overlap_layer
from msprof_py.export.timeline_model import Timeline
from msprof_py.export.timeline_write import check_timeline, write_timeline
from msprof_py.export.trace_events import format_pid
from msprof_py.export.views import cpp_export
from msprof_py.parse.session import Session


def build_timeline(session: Session, device_id: int, ctx: ExportContext) -> Timeline:
    tl = Timeline()
    if ctx.layer_on("msproftx") and device_id != counter_export.HOST_DEVICE_ID:  # host-only: msprof_tx.json
        tl.slices += counter_export.tx_layer(session, tl.meta)
    api = cann_layer(session, device_id, tl) if ctx.layer_on("cann") else session.api.iloc[:0]
    # the device's shown tasks: one copy for the hardware layer, Overlap Analysis and the flows
    shown = DeviceTasks(session, device_id) if ctx.layer_on("ascend") or ctx.layer_on("overlap_analyse") else None
    tasks = hardware_layer(session, device_id, tl, shown) if ctx.layer_on("ascend") and shown is not None \
        else session.tasks.iloc[:0]
    if ctx.layer_on("step_trace"):
        tl.slices += step_trace_slices(session, device_id, tl.meta)
    comm_ops = communication_layer(session, device_id, tl) if ctx.layer_on("communication") \
        else session.communication.iloc[:0]
    if ctx.layer_on("overlap_analyse"):
        overlap_layer(session, device_id, shown, of_device(session.communication, device_id), tl)
    srt = layer_sorts(session)
    dpid = device_pid(session, device_id)
    if ctx.layer_on("freq"):
        tl.counters += pmu_export.freq_counters(session, device_id, tl.meta, dpid, srt.hw)
    comm_tid = None
    if len(comm_ops):
        names = [e for e in tl.meta.events if e["name"] == "thread_name"
                 and e["pid"] == format_pid(dpid, srt.comm, device_id)]
        comm_tid = {e["args"]["name"][len("Group "):-len(" Communication")]: e["tid"]
                    for e in names if e["args"]["name"].startswith("Group ")}
    flows = host_to_device_flows(api, tasks, comm_ops, format_pid(dpid, srt.hw, device_id),
                                 format_pid(dpid, srt.comm, device_id), comm_tid, srt.cann, not cpp_export(session),
                                 shown.info() if len(tasks) and shown is not None else None)
    if flows is not None and len(flows):
        tl.flows.append(flows)
    return tl


class MsprofTimeline:
    name = "msprof"
    kind = "timeline"
    per_device = True
    describe = "timeline of all layers: CANN APIs, Ascend Hardware tasks, step trace, communication, flows"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        tl = build_timeline(session, naming.device_id or 0, ctx)
        if not tl:
            return []
        # (no malloc_trim between the build, the check and the render: their temporaries are reused
        # from the heap; trimming made the next phase fault them in again, +0.05-0.1 s a device on A)
        path = out_dir / naming.file("msprof", "json")
        if ctx.slice_bytes:
            from msprof_py.export.timeline_slices import write_sliced

            check_timeline(tl, path, ctx)
            return write_sliced(tl, path, ctx, ctx.slice_bytes)
        from msprof_py.export.timeline_slices import remove_stale

        out = write_timeline(tl, path, ctx, "timeline")
        remove_stale(path, [out])
        return [out]


register(MsprofTimeline())
