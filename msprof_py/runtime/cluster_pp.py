"""Pipeline parallelism in a simulated cluster job: ``pp`` stages, each running its share of the layers.

Stages (Megatron's layout, :class:`~msprof_py.runtime.cluster.Topology`): stage ``s`` holds the
ranks ``s * tp * dp .. (s + 1) * tp * dp - 1``; a pipeline-parallel group is one rank per stage
(``tp * dp`` apart), the tensor- and data-parallel groups stay inside a stage.  The graph is cut
by its decoder layers (ops named ``.../layers/<i>/...``), as evenly as the layer count allows;
what comes before the first layer (the embedding) runs on stage 0, what follows the last one
(final norm, lm_head, sampling) on the last stage.  Every stage is its own GE model (one model
per process, model id 1 on every rank).

Per iteration (one forward pass, one micro-batch): stage ``s > 0`` first receives the previous
stage's activations (``hcom_receive``), runs its layers (with its TP all-reduces) and sends its
output to the next stage (``hcom_send``); the last stage sends its output (the logits) back to
stage 0, which receives it at the end of its iteration, as a serving pipeline returns the
sampled tokens to its first stage.  So every stage waits for the others for ``(pp - 1) / pp`` of
an iteration of equal stages: the pipeline bubble, spent inside the receives (msprof-analyze's
``Bubble`` column).  The data-parallel all-reduce of each stage's gradient shard follows on its
communication stream.  Micro-batching (several micro-batches in flight) is not simulated.

Send / receive as HCCL runs them over the PP group's communicator (``rank_size`` = pp): the
receiver records "ready" and both sides wait for each other (a handshake), the sender copies the
bytes over the link between the two ranks (HCCS inside a node, RoCE across) and records "done",
and both wait for that (the receiver for the data, the sender for the acknowledgement).  Each
wait is a barrier of the two ranks (:mod:`msprof_py.runtime.scheduler`); since the stages run
different programs, :meth:`Pipeline.timeline` schedules every stage on its own and meets the
stages at those barriers.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable

import numpy as np

from msprof_py.errors import WorkloadError
from msprof_py.runtime import apis, ge, hccl
from msprof_py.runtime.cluster import Faults, Topology, _Collective, dur_scale, group_name, link, plan_for
from msprof_py.runtime.device import DeviceSpec
from msprof_py.runtime.graph import Graph, Op
from msprof_py.runtime.program import Program, Template
from msprof_py.runtime.scheduler import NEG, schedule_steps
from msprof_py.runtime.sim import prepare
from msprof_py.runtime.workloads import Workload

LAYER_RE = re.compile(r"/layers/(\d+)/")


def stage_of_ops(graph: Graph, pp: int) -> list[int]:
    """The pipeline stage of every op of ``graph`` (module docstring)."""
    layer = [int(m.group(1)) if (m := LAYER_RE.search(op.name)) else -1 for op in graph.ops]
    layers = sorted({x for x in layer if x >= 0})
    if not layers:
        raise WorkloadError(f"pipeline parallelism cuts a graph by its layers (ops named .../layers/<i>/...); "
                            f"{graph.name!r} has none")
    if len(layers) < pp:
        raise WorkloadError(f"{graph.name!r} has {len(layers)} layers, too few for {pp} pipeline stages")
    stage_of_layer = {x: s for s, chunk in enumerate(np.array_split(np.array(layers), pp)) for x in chunk.tolist()}
    first = layer.index(layers[0]) if layers[0] in layer else 0
    out = []
    for i, x in enumerate(layer):
        out.append(stage_of_layer[x] if x >= 0 else (0 if i < first else pp - 1))
    return out


def stage_graphs(graph: Graph, pp: int) -> list[Graph]:
    """One graph per stage: its ops, the weights they read, the model inputs on stage 0 and the
    model outputs on the last stage."""
    stages = stage_of_ops(graph, pp)
    out = []
    for s in range(pp):
        ops = [op for op, st in zip(graph.ops, stages) if st == s]
        read = {t.name for op in ops for t in op.inputs}
        out.append(Graph(graph.name, ops, graph.inputs if s == 0 else [], graph.outputs if s == pp - 1 else [],
                         [w for w in graph.weights if w.name in read]))
    return out


def handoff_bytes(graph: Graph) -> int:
    """Bytes a stage hands on: the first output of its last model op (dynamic tail ops run outside the model)."""
    body = [op for op in graph.ops if not op.dynamic]
    return body[-1].outputs[0].nbytes if body and body[-1].outputs else 0


def make_p2p(topo: Topology, faults: Faults, spec: DeviceSpec, rank: int, peer: int, nbytes: int, send: bool,
             seq: int) -> hccl.AllReduce:
    """One side of a send / receive between ``rank`` and ``peer`` over their PP group (module docstring)."""
    c = _Collective(topo, faults, spec, rank)
    c.comm = topo.pp_group(rank)
    c.op_type = "HcomSend" if send else "HcomReceive"
    pair = (min(rank, peer), max(rank, peer))
    ln = link(topo, faults, spec, rank, peer)
    wait = hccl.NOTIFY_WAIT_BASE_NS + ln.latency_ns
    if send:
        c.add("Notify_Wait", wait, peer, 0, pair)  # the receiver is ready
        c.stage = 1
        c.add("Memcpy", hccl.SDMA_SETUP_NS + int(nbytes / ln.gbps), peer, nbytes, pair, ln)
        c.add("Notify_Record", hccl.NOTIFY_RECORD_NS, peer, 0, pair, ln)
        c.add("Notify_Wait", wait, peer, 0, pair)  # the receiver has the data
    else:
        c.add("Notify_Record", hccl.NOTIFY_RECORD_NS, peer, 0, pair)
        c.add("Notify_Wait", wait, peer, 0, pair)
        c.stage = 1
        c.add("Notify_Wait", wait, peer, 0, pair)  # the data has arrived
    kind = "send" if send else "receive"
    members = topo.pp_group(rank)
    return hccl.AllReduce(f"hcom_{kind}__{seq:03d}_{peer}_1", nbytes, len(members), members.index(rank), c.subs,
                          group_name=group_name("pp", members), alg="NA", op_type=c.op_type)


class Pipeline:
    """The stages of one cluster run: per-rank workloads and plans, and the coupled schedule."""

    def __init__(self, wl: Workload, topo: Topology, faults: Faults, spec: DeviceSpec) -> None:
        if wl.training:
            raise WorkloadError(f"pipeline parallelism is simulated for forward passes (llm_decoder); "
                                f"{wl.name!r} is a training graph")
        self.topo, self.faults, self.spec = topo, faults, spec
        self.graphs = stage_graphs(wl.graph, topo.pp)
        self.wls = [replace(wl, graph=g) for g in self.graphs]
        self.out_bytes = [handoff_bytes(g) for g in self.graphs]

    def rank_plan(self, rank: int) -> tuple[Workload, Callable[[list[Op]], ge.Plan]]:
        """The rank's stage workload and its GE plan (receive, layers, send; module docstring)."""
        topo, pp = self.topo, self.topo.pp
        s = topo.stage(rank)
        group = topo.pp_group(rank)
        prv, nxt = group[(s - 1) % pp], group[(s + 1) % pp]
        n = len(self.graphs[s].ops)

        def p2p(peer: int, nbytes: int, send: bool, k: int) -> hccl.AllReduce:
            return make_p2p(topo, self.faults, self.spec, rank, peer, nbytes, send, (n + k) % 1000)

        before = [p2p(prv, self.out_bytes[s - 1], False, 0)] if s > 0 else []
        after = [p2p(nxt, self.out_bytes[s], True, 1)]  # the last stage's output goes back to stage 0
        if s == 0:
            after.append(p2p(prv, self.out_bytes[pp - 1], False, 2))
        return self.wls[s], plan_for(self.wls[s], topo, self.faults, self.spec, rank, before, after)

    def timeline(self, progs: list[Program], ready: np.ndarray, K: int, rng: np.random.Generator,
                 gap_scale: np.ndarray) -> list[tuple]:
        """Every rank's ``(start, end, h0, sync_end, speed, H)`` as :func:`msprof_py.runtime.sim.timeline`
        gives them (first axis of length 1), the stages scheduled on their own and met at the
        barriers they share."""
        topo = self.topo
        stages = [list(range(s * topo.tp * topo.dp, (s + 1) * topo.tp * topo.dp)) for s in range(topo.pp)]
        preps, meets = [], []
        for rows in stages:
            sp = [progs[r] for r in rows]
            preps.append(prepare(sp, K, rng, self.spec, self.wls[0].step_gap_us, dur_scale(sp, rows, topo, self.faults),
                                 gap_scale[rows], barrier_jitter=False))
            meets.append(_Meetings(rows, [p.tasks for p in sp]))
        T = [len(progs[rows[0]].tasks) for rows in stages]
        start = [np.empty((len(rows), K, t), np.int64) for rows, t in zip(stages, T)]
        end = [np.empty_like(x) for x in start]
        h0 = [np.empty((len(rows), K), np.int64) for rows in stages]
        sync_end = [np.empty_like(x) for x in h0]
        h = ready.copy()
        for k in range(K):
            steps = []
            for g, rows in enumerate(stages):
                segs, gap, dur, _, _, submit, _ = preps[g]
                steps.append(schedule_steps(h[rows][:, None] + submit[:, k, :], dur[:, k, :], segs, gap))
            results = _run_stages(steps, meets)
            for g, rows in enumerate(stages):
                st, en = results[g]
                H, step_gap = preps[g][6], preps[g][3]
                start[g][:, k], end[g][:, k] = st, en
                h0[g][:, k] = h[rows]
                sync_end[g][:, k] = np.maximum(h[rows] + H[:, k], en.max(axis=1)) + apis.SYNC_RETURN_NS
                h[rows] = sync_end[g][:, k] + step_gap[:, k]
        parts: list[tuple] = [()] * topo.ranks
        for g, rows in enumerate(stages):
            speed, H = preps[g][4], preps[g][6]
            for i, r in enumerate(rows):
                parts[r] = tuple(x[i:i + 1] for x in (start[g], end[g], h0[g], sync_end[g], speed, H))
        return parts


class _Meetings:
    """The barriers of one stage's template: inside the stage (resolved at once, as
    :func:`~msprof_py.runtime.scheduler.schedule` does) or shared with other stages (keyed by
    the members and the barrier's rank among the template's barriers of those members)."""

    def __init__(self, rows: list[int], templates: list[Template]) -> None:
        self.rows = rows
        inside = set(rows)
        self.local: dict[int, np.ndarray] = {}
        self.shared: dict[int, list[tuple]] = {}
        keys = [_barrier_keys(t) for t in templates]
        for i in sorted(templates[0].barriers):
            ks = [kk[i] for kk in keys]
            if all(set(k[0]) <= inside for k in ks):
                ids: dict[tuple, int] = {}
                self.local[i] = np.array([ids.setdefault(k, len(ids)) for k in ks], np.int64)
            else:
                self.shared[i] = ks


def _barrier_keys(t: Template) -> dict[int, tuple]:
    seen: dict[tuple, int] = {}
    out: dict[int, tuple] = {}
    for i in sorted(t.barriers):
        m = t.barrier_group.get(i)
        if m is None:
            raise AssertionError(f"barrier {i} of a pipeline stage has no communicator")
        out[i] = (m, seen.get(m, 0))
        seen[m] = out[i][1] + 1
    return out


def _run_stages(steps: list, meets: list[_Meetings]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Drive every stage's :func:`~msprof_py.runtime.scheduler.schedule_steps` until all are done."""
    n = len(steps)
    pending: list = [None] * n
    results: list = [None] * n
    arrivals: dict[tuple, dict[int, int]] = {}
    posted: set[tuple[int, int]] = set()

    def advance(g: int, value) -> None:
        try:
            pending[g] = steps[g].send(value)
        except StopIteration as stop:
            pending[g], results[g] = None, stop.value

    for g in range(n):
        advance(g, None)
    while any(p is not None for p in pending):
        moved = False
        for g in range(n):
            while pending[g] is not None:
                lo, first = pending[g]
                m = meets[g]
                groups = m.local.get(lo)
                if groups is not None:
                    last = np.full(int(groups.max()) + 1, NEG, np.int64)
                    np.maximum.at(last, groups, first)
                    advance(g, last[groups])
                    moved = True
                    continue
                ks = m.shared[lo]
                if (g, lo) not in posted:
                    posted.add((g, lo))
                    for key, r, t in zip(ks, m.rows, first.tolist()):
                        arrivals.setdefault(key, {})[r] = t
                if not all(len(arrivals[key]) == len(key[0]) for key in ks):
                    break  # a peer stage has not reached this barrier yet
                advance(g, np.array([max(arrivals[key].values()) for key in ks], np.int64))
                moved = True
        if not moved:
            raise AssertionError("pipeline stages wait for each other at barriers they do not share")
    return results
