"""A simulated cluster job: ``N`` ranks (one process and one NPU each) on nodes of ``K`` NPUs.

Topology: rank ``r`` runs on node ``r // K`` as device ``r % K``.  Devices of a node talk over
HCCS (``spec.hccs_bandwidth_gbps`` per link, SDMA transport), nodes over RoCE
(``spec.roce_bandwidth_gbps`` per port, RDMA transport).  Parallel groups follow Megatron's
rank order (tensor parallel innermost, then data parallel, pipeline stages outermost): ``tp``
consecutive ranks form a TP group (kept inside a node), ranks ``tp`` apart inside a pipeline stage
form a data-parallel group, and ranks ``tp * dp`` apart form a pipeline-parallel group (one rank
per stage; :mod:`msprof_py.runtime.cluster_pp`).

Collectives are lock-step: every ring step ends when every member of the communicator has
reached it (a barrier over the members, :func:`msprof_py.runtime.scheduler.schedule`), so the
slowest member or link sets the pace.  An all-reduce over a group inside one node is a ring; a
group spanning nodes with several members per node runs hierarchically (intra-node ring
reduce-scatter, inter-node ring all-reduce of each member's shard among its peers on the other
nodes, intra-node ring all-gather).

Workloads: training graphs (resnet50, bert, user graphs with phases) all-reduce their gradient
segments over the data-parallel group.  ``llm_decoder`` runs with tensor parallelism: each
layer's o_proj and down_proj outputs are all-reduced over the TP group on the compute stream
(Megatron's row-parallel layers), the sharded ops (matmuls, attention, SwiGLU, RoPE, split) take
``1/tp`` of their single-device time, and the step closes with the data-parallel all-reduce of
the rank's gradient shard (the weights' bytes / tp) as a training step would; the backward
compute itself is not simulated for it.  With ``pp`` pipeline stages each stage runs its share of
the layers and hands its activations to the next stage (``hcom_send`` / ``hcom_receive``), see
:mod:`msprof_py.runtime.cluster_pp`.

Faults (:class:`Faults`): a slow rank's compute tasks take ``factor`` times longer, a slow link
moves data at ``factor`` times its bandwidth (both directions), a straggler host spends ``factor``
times longer on host work between iterations.  Every node has its own host clock: an offset of
its wall clock and a drift of its counters (:class:`~msprof_py.runtime.clock.SimClock`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np

from msprof_py.errors import WorkloadError
from msprof_py.runtime import ge, hccl
from msprof_py.runtime.clock import SimClock
from msprof_py.runtime.device import ATLAS_A2, DeviceSpec
from msprof_py.runtime.graph import Graph, Op
from msprof_py.runtime.hooks import ProfilerHooks
from msprof_py.runtime.program import TaskInfo
from msprof_py.runtime.sim import SimResult, _Run, pid_for_seed, resolve, timeline
from msprof_py.runtime.workloads import Workload

COMPUTE_TASK_TYPES = frozenset({"AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV", "AI_CPU"})
# op types whose work splits across tensor-parallel ranks (heads / hidden columns)
TP_SHARDED_TYPES = frozenset({"MatMulV2", "BatchMatMul", "FlashAttentionScore", "Swiglu", "RotaryMul", "SplitD"})
TP_REDUCED_SUFFIXES = ("o_proj/MatMulV2", "down_proj/MatMulV2")  # row-parallel layers: output all-reduced


@dataclass(frozen=True)
class Topology:
    ranks: int
    ranks_per_node: int
    tp: int = 1
    pp: int = 1

    def __post_init__(self) -> None:
        if self.ranks < 1 or self.ranks_per_node < 1:
            raise WorkloadError(f"ranks and ranks per node must be >= 1 (got {self.ranks}, {self.ranks_per_node})")
        if self.ranks % self.ranks_per_node:
            raise WorkloadError(f"{self.ranks} ranks do not fill nodes of {self.ranks_per_node}")
        if self.tp < 1 or self.ranks_per_node % self.tp:
            raise WorkloadError(f"tensor-parallel size {self.tp} must divide the ranks per node "
                                f"({self.ranks_per_node})")
        if self.pp < 1 or self.ranks % (self.tp * self.pp):
            raise WorkloadError(f"{self.ranks} ranks do not split into tensor-parallel groups of {self.tp} "
                                f"x {self.pp} pipeline stages")

    @property
    def nodes(self) -> int:
        return self.ranks // self.ranks_per_node

    @property
    def dp(self) -> int:
        return self.ranks // (self.tp * self.pp)

    def stage(self, rank: int) -> int:
        """The rank's pipeline stage (0 = the first layers)."""
        return rank // (self.tp * self.dp)

    def node(self, rank: int) -> int:
        return rank // self.ranks_per_node

    def local(self, rank: int) -> int:
        return rank % self.ranks_per_node

    def tp_group(self, rank: int) -> tuple[int, ...]:
        first = rank - rank % self.tp
        return tuple(range(first, first + self.tp))

    def dp_group(self, rank: int) -> tuple[int, ...]:
        first = self.stage(rank) * self.tp * self.dp
        return tuple(range(first + rank % self.tp, first + self.tp * self.dp, self.tp))

    def pp_group(self, rank: int) -> tuple[int, ...]:
        return tuple(range(rank % (self.tp * self.dp), self.ranks, self.tp * self.dp))

    def groups(self) -> dict[str, list[tuple[int, ...]]]:
        """Every communicator: ``{"tp": [...], "dp": [...], "pp": [...]}`` (groups of one rank left out)."""
        out: dict[str, list[tuple[int, ...]]] = {"tp": [], "dp": [], "pp": []}
        for kind, size, members in (("tp", self.tp, self.tp_group), ("dp", self.dp, self.dp_group),
                                    ("pp", self.pp, self.pp_group)):
            if size > 1:
                out[kind] = sorted({members(r) for r in range(self.ranks)})
        return out

    def host_name(self, node: int) -> str:
        return f"node{node:03d}"


@dataclass(frozen=True)
class Faults:
    """What to inject.  Factors: compute time x (slow rank), bandwidth x (slow link), host work
    between iterations x (straggler host).  Clocks: per-node wall-clock offset (us) and counter
    drift (ppm); nodes absent get none."""

    slow_ranks: dict[int, float] = field(default_factory=dict)
    slow_links: dict[tuple[int, int], float] = field(default_factory=dict)  # (low rank, high rank)
    straggler_hosts: dict[int, float] = field(default_factory=dict)
    clock_offset_us: dict[int, int] = field(default_factory=dict)
    clock_drift_ppm: dict[int, float] = field(default_factory=dict)

    def check(self, topo: Topology) -> None:
        for r in self.slow_ranks:
            _check_rank(r, topo, "--slow-rank")
        for a, b in self.slow_links:
            _check_rank(a, topo, "--slow-link")
            _check_rank(b, topo, "--slow-link")
            if a == b:
                raise WorkloadError(f"--slow-link {a}-{b}: a link joins two different ranks")
        for n in (*self.straggler_hosts, *self.clock_offset_us, *self.clock_drift_ppm):
            if not 0 <= n < topo.nodes:
                raise WorkloadError(f"node {n} does not exist (nodes 0..{topo.nodes - 1})")
        for f in (*self.slow_ranks.values(), *self.slow_links.values(), *self.straggler_hosts.values()):
            if not f > 0:
                raise WorkloadError(f"fault factors must be > 0, got {f}")


def _check_rank(r: int, topo: Topology, what: str) -> None:
    if not 0 <= r < topo.ranks:
        raise WorkloadError(f"{what}: rank {r} does not exist (ranks 0..{topo.ranks - 1})")


@dataclass(frozen=True)
class Link:
    gbps: float  # GB/s
    latency_ns: int
    link_type: int  # hccl_info link type (HCCS / ROCE)
    transport: int  # hccl_info transport type (SDMA / RDMA)


def link(topo: Topology, faults: Faults, spec: DeviceSpec, a: int, b: int) -> Link:
    """The link from rank ``a`` to rank ``b`` with its (possibly degraded) bandwidth."""
    factor = faults.slow_links.get((min(a, b), max(a, b)), 1.0)
    if topo.node(a) == topo.node(b):
        return Link(spec.hccs_bandwidth_gbps * factor, int(spec.hccs_latency_us * 1000), hccl.LINK_HCCS,
                    hccl.TRANSPORT_SDMA)
    return Link(spec.roce_bandwidth_gbps * factor, int(spec.roce_latency_us * 1000), hccl.LINK_ROCE,
                hccl.TRANSPORT_RDMA)


def group_name(kind: str, members: tuple[int, ...]) -> str:
    return f"{kind}_group_{members[0]}"


class _Collective:
    """Builds one rank's sub-tasks of an all-reduce (see the module docstring)."""

    def __init__(self, topo: Topology, faults: Faults, spec: DeviceSpec, rank: int) -> None:
        self.topo, self.faults, self.spec, self.rank = topo, faults, spec, rank
        self.subs: list[hccl.SubTask] = []
        self.stage = 0
        self.comm: tuple[int, ...] = (rank,)  # the whole communicator (sorted global ranks)
        self.op_type = "HcomAllReduce"

    def add(self, kind: str, dur: int, remote: int, size: int, group: tuple[int, ...], ln: Link | None = None) -> None:
        host_type, sqe = hccl.KINDS[kind][1], hccl.KINDS[kind][2]
        ln = ln or link(self.topo, self.faults, self.spec, self.rank, remote)
        # hccl_info carries ranks inside the communicator: the position among its sorted members
        local_remote = self.comm.index(remote)
        self.subs.append(hccl.SubTask(len(self.subs), kind, dur, kind == "Notify_Wait", self.stage, local_remote, size,
                                      TaskInfo(host_type, self.op_type, "HCCL", host_type, sqe),
                                      ln.link_type, ln.transport, group))

    def ring(self, members: tuple[int, ...], nbytes: int, steps: int, reduce_steps: int) -> None:
        """``steps`` ring steps over ``members`` moving ``nbytes / len(members)`` each; the first
        ``reduce_steps`` reduce in line."""
        g = len(members)
        if g < 2:
            return
        i = members.index(self.rank)
        nxt, prv = members[(i + 1) % g], members[(i - 1) % g]
        chunk = -(-nbytes // g)
        out = link(self.topo, self.faults, self.spec, self.rank, nxt)
        copy_ns = hccl.SDMA_SETUP_NS + int(chunk / out.gbps)
        for step in range(steps):
            self.stage += 1
            self.add("Reduce_Inline" if step < reduce_steps else "Memcpy", copy_ns, nxt, chunk, members, out)
            self.add("Notify_Record", hccl.NOTIFY_RECORD_NS, nxt, 0, members, out)
            self.add("Notify_Wait", hccl.NOTIFY_WAIT_BASE_NS + out.latency_ns, prv, 0, members)

    def allreduce(self, members: tuple[int, ...], nbytes: int) -> str:
        """Ring or hierarchical all-reduce over ``members``; returns the algorithm's name."""
        topo = self.topo
        self.comm = tuple(sorted(members))
        by_node: dict[int, list[int]] = {}
        for m in members:
            by_node.setdefault(topo.node(m), []).append(m)
        g = len(members)
        nxt = members[(members.index(self.rank) + 1) % g]
        self.add("Notify_Record", hccl.NOTIFY_RECORD_NS, nxt, 0, members)
        self.add("Notify_Wait", hccl.NOTIFY_WAIT_BASE_NS, members[members.index(self.rank) - 1], 0, members)
        per_node = {len(v) for v in by_node.values()}
        if len(by_node) == 1 or per_node == {1} or len(per_node) > 1:
            self.ring(members, nbytes, 2 * (g - 1), g - 1)
            return "RING"
        local = tuple(by_node[topo.node(self.rank)])
        pos = local.index(self.rank)
        peers = tuple(sorted(v[pos] for v in by_node.values()))
        shard = -(-nbytes // len(local))
        self.ring(local, nbytes, len(local) - 1, len(local) - 1)  # reduce-scatter inside the node
        self.ring(peers, shard, 2 * (len(peers) - 1), len(peers) - 1)  # all-reduce of the shard across nodes
        self.ring(local, nbytes, len(local) - 1, 0)  # all-gather inside the node
        return "HIERARCHICAL"


def make_allreduce(topo: Topology, faults: Faults, spec: DeviceSpec, rank: int, graph: Graph, kind: str,
                   members: tuple[int, ...], nbytes: int, seq: int) -> hccl.AllReduce:
    c = _Collective(topo, faults, spec, rank)
    alg = c.allreduce(members, nbytes)
    name = f"hcom_allReduce__{len(graph.ops) % 1000:03d}_{seq}_1"
    return hccl.AllReduce(name, nbytes, len(members), members.index(rank), c.subs, group_name=group_name(kind, members),
                          alg=alg)


def plan_for(wl: Workload, topo: Topology, faults: Faults, spec: DeviceSpec, rank: int,
             p2p_before: Sequence[hccl.AllReduce] = (), p2p_after: Sequence[hccl.AllReduce] = ()
             ) -> Callable[[list[Op]], ge.Plan]:
    """GE's node plan of ``rank``: the body ops with the rank's collectives (module docstring);
    ``p2p_before`` / ``p2p_after``: a pipeline stage's receives / sends around its layers, on the
    compute stream (:mod:`msprof_py.runtime.cluster_pp`)."""
    graph = wl.graph
    dp_members, tp_members = topo.dp_group(rank), topo.tp_group(rank)

    def plan(body: list[Op]) -> ge.Plan:
        seq = iter(range(1 << 30))
        if wl.training:
            if topo.dp < 2:
                return [("op", op, op.stream) for op in body]
            return ge.model_plan(wl, body, topo.dp, rank, spec, lambda nbytes, seg: make_allreduce(
                topo, faults, spec, rank, graph, "dp", dp_members, nbytes, next(seq)))
        main = body[0].stream if body else 0
        out: ge.Plan = [("hccl", p, main) for p in p2p_before]
        for op in body:
            out.append(("op", op, op.stream))
            if topo.tp > 1 and op.name.endswith(TP_REDUCED_SUFFIXES):
                nbytes = sum(t.nbytes for t in op.outputs)
                out.append(("hccl", make_allreduce(topo, faults, spec, rank, graph, "tp", tp_members, nbytes,
                                                   next(seq)), op.stream))
        last_compute = len(out) - 1
        out += [("hccl", p, main) for p in p2p_after]
        if topo.dp > 1 and body:
            grads = sum(w.nbytes for w in graph.weights) // topo.tp
            ar = make_allreduce(topo, faults, spec, rank, graph, "dp", dp_members, grads, next(seq))
            ar.after = last_compute
            out.append(("hccl", ar, "comm"))
        return out

    return plan


def node_clocks(base: SimClock, topo: Topology, faults: Faults) -> list[SimClock]:
    """One clock per node: its own wall-clock offset, uptime (monotonic origin) and counter drift."""
    out = []
    for n in range(topo.nodes):
        mono = base.monotonic_start_ns + n * 7_919_000_000_000  # each host booted at another time
        out.append(replace(base, wall_start_us=base.wall_start_us + int(faults.clock_offset_us.get(n, 0)),
                           monotonic_start_ns=mono,
                           host_cntvct_start=int(mono * base.host_freq_mhz / 1000),
                           device_syscnt_start=int(mono * base.hwts_freq_mhz / 1000),
                           drift_ppm=float(faults.clock_drift_ppm.get(n, 0.0))))
    return out


@dataclass
class ClusterRank:
    """One rank's run: its SimResult plus where it ran."""

    rank: int
    node: int
    device_id: int
    result: SimResult


def run_cluster(target: str | Workload | Graph, topo: Topology, *, iterations: int = 1, seed: int = 0,
                hooks: Callable[[int], ProfilerHooks], clocks: Sequence[SimClock], spec: DeviceSpec = ATLAS_A2,
                faults: Faults | None = None, done: Callable[[ClusterRank], None] | None = None,
                keep_truth: bool = True) -> list[ClusterRank]:
    """Simulate ``iterations`` of ``target`` on every rank of ``topo``.

    Args:
        hooks: rank -> the hooks its records go to (one PROF dir per rank).
        clocks: one clock per node (:func:`node_clocks`).
        done: called once per rank right after its records were reported (close its PROF dir there).
        keep_truth: keep every rank's truth tables in the returned list (drop them for big runs).
    """
    faults = faults or Faults()
    faults.check(topo)
    wl = resolve(target)
    if wl.mode != "static":
        raise WorkloadError(f"workload {wl.name!r} runs single ops; a cluster run needs a model (static graph)")
    if len(clocks) != topo.nodes:
        raise WorkloadError(f"need one clock per node ({topo.nodes}), got {len(clocks)}")
    pipe = None
    if topo.pp > 1:
        from msprof_py.runtime.cluster_pp import Pipeline
        pipe = Pipeline(wl, topo, faults, spec)
    runs: list[_Run] = []
    progs = []
    ready = np.zeros(topo.ranks, np.int64)
    for r in range(topo.ranks):
        rwl, plan = (wl, plan_for(wl, topo, faults, spec, r)) if pipe is None else pipe.rank_plan(r)
        run = _Run(rwl, 1, iterations, seed + r, hooks(r), clocks[topo.node(r)], spec, None, 0,
                   device_ids=[topo.local(r)], pid=pid_for_seed(seed * 7919 + r), model_id=1, plan_comm=plan)
        if run.on:
            run.names.register_record_types()
        p, rd = run._setup()
        runs.append(run)
        progs.append(p[0])
        ready[r] = rd[0]
    gap_scale = np.array([faults.straggler_hosts.get(topo.node(r), 1.0) for r in range(topo.ranks)])
    if pipe is None:
        tl = timeline(progs, ready, iterations, np.random.default_rng(seed), spec, wl.step_gap_us,
                      barrier_groups=_barrier_groups(progs), dur_scale=dur_scale(progs, range(topo.ranks), topo, faults),
                      gap_scale=gap_scale, barrier_jitter=False)
        parts = [tuple(x[r:r + 1] for x in tl) for r in range(topo.ranks)]
    else:
        parts = pipe.timeline(progs, ready, iterations, np.random.default_rng(seed), gap_scale)
    out = []
    for r, run in enumerate(runs):
        res = run.emit([progs[r]], parts[r])
        parts[r] = ()  # type: ignore[call-overload]
        cr = ClusterRank(r, topo.node(r), topo.local(r), res)
        if done is not None:
            done(cr)
        if not keep_truth:
            cr.result = replace(res, truth=res.truth.iloc[:0], truth_steps=res.truth_steps.iloc[:0])
        out.append(cr)
        runs[r] = None  # type: ignore[call-overload]  # free the rank's buffers
    return out


def _barrier_groups(progs: list) -> dict[int, np.ndarray]:
    """Template barrier -> communicator number of every rank (the same member tuple = one number)."""
    out: dict[int, np.ndarray] = {}
    for i in progs[0].tasks.barriers:
        keys = [p.tasks.barrier_group.get(i) for p in progs]
        if any(k is None for k in keys):
            continue
        ids: dict[tuple, int] = {}
        out[i] = np.array([ids.setdefault(k, len(ids)) for k in keys], np.int64)
    return out


def dur_scale(progs: list, ranks: Sequence[int], topo: Topology, faults: Faults) -> np.ndarray:
    """``(rows, T)`` factors on the tasks' base durations (rows = ``ranks``, one program each):
    TP sharding and slow ranks."""
    info = progs[0].tasks.info
    compute = np.array([i.task_type in COMPUTE_TASK_TYPES for i in info])
    sharded = np.array([i.op_type in TP_SHARDED_TYPES for i in info]) & compute
    scale = np.ones((len(progs), len(info)))
    if topo.tp > 1:
        scale[:, sharded] /= topo.tp
    for row, r in enumerate(ranks):
        scale[row, compute] *= faults.slow_ranks.get(r, 1.0)
    return scale
