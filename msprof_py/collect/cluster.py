"""``collect --ranks N``: a simulated multi-process job, one PROF directory per rank.

Each rank is one process driving one NPU, as ``torchrun`` / ``msrun`` jobs do: its PROF dir holds
``host/`` and ``device_{local id}/`` with ``rank_id`` (the global rank) in the device's
info.json, ``hostname`` / ``hostUid`` of its node, the node's own clock (offset and drift) in the
start logs and counters, and its own pid.  Every rank's PROF dir is built under a temporary name
and renamed when complete (:mod:`msprof_py.collect.session`); a failure removes all of them.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from msprof_py.collect.options import ProfilingOptions, load_options
from msprof_py.collect.session import ProfileSession, ensure_output
from msprof_py.errors import InvalidParamError, WarningLog
from msprof_py.raw import files
from msprof_py.runtime.clock import SimClock
from msprof_py.runtime.device import ATLAS_A2, DeviceSpec

DEFAULT_OFFSET_US = 2000  # default per-node clock offsets are drawn in +-2 ms (NTP-grade skew)
DEFAULT_DRIFT_PPM = 5.0


@dataclass
class ClusterCollectResult:
    output: Path
    prof_dirs: list[Path]  # index = rank
    hosts: list[str]
    total_bytes: int
    warnings: WarningLog
    faults: Any = None
    ranks: list[Any] = field(default_factory=list)  # runtime ClusterRank per rank (truth when kept)

    def summary(self) -> str:
        return (f"cluster job: {len(self.prof_dirs)} ranks on {len(set(self.hosts))} nodes -> {self.output}\n"
                f"raw data: {self.total_bytes / 1e6:.1f} MB in {len(self.prof_dirs)} PROF directories")


def parse_factors(items: tuple[str, ...] | list[str], what: str, pair: bool = False) -> dict:
    """``["5=1.3"]`` -> ``{5: 1.3}``; ``pair``: ``["3-11=0.5"]`` -> ``{(3, 11): 0.5}``."""
    out: dict = {}
    pat = r"(\d+)-(\d+)=([0-9.eE+-]+)" if pair else r"(\d+)=([0-9.eE+-]+)"
    for item in items:
        m = re.fullmatch(pat, item.strip())
        if not m:
            form = "A-B=FACTOR" if pair else "N=VALUE"
            raise InvalidParamError(f"{what} {item!r}: expected {form}, e.g. {'3-11=0.5' if pair else '5=1.3'}")
        try:
            value = float(m.group(m.lastindex))
        except ValueError:
            raise InvalidParamError(f"{what} {item!r}: {m.group(m.lastindex)!r} is not a number") from None
        if pair:
            a, b = int(m.group(1)), int(m.group(2))
            out[(min(a, b), max(a, b))] = value
        else:
            out[int(m.group(1))] = value
    return out


def default_clock_faults(nodes: int, seed: int, offsets: dict[int, float], drifts: dict[int, float]
                         ) -> tuple[dict[int, int], dict[int, float]]:
    """Every node but node 0 gets a seeded offset / drift unless given (node 0 is the reference)."""
    rng = np.random.default_rng(seed + 104729)
    off = {n: int(rng.uniform(-DEFAULT_OFFSET_US, DEFAULT_OFFSET_US)) if n else 0 for n in range(nodes)}
    dr = {n: float(np.round(rng.uniform(-DEFAULT_DRIFT_PPM, DEFAULT_DRIFT_PPM), 3)) if n else 0.0
          for n in range(nodes)}
    off.update({n: int(v) for n, v in offsets.items()})
    dr.update(drifts)
    return off, dr


def collect_cluster(target: Any, *, output: str | os.PathLike[str], ranks: int, ranks_per_node: int = 8,
                    tp: int | None = None, pp: int = 1, iterations: int = 1, seed: int = 0, fixed_clock: bool = False,
                    options: str | Mapping[str, Any] | ProfilingOptions | None = None,
                    slow_ranks: dict[int, float] | None = None, slow_links: dict[tuple[int, int], float] | None = None,
                    straggler_hosts: dict[int, float] | None = None, clock_offset_us: dict[int, float] | None = None,
                    clock_drift_ppm: dict[int, float] | None = None, spec: DeviceSpec = ATLAS_A2,
                    slice_bytes: int = files.DEFAULT_SLICE_BYTES, warnings: WarningLog | None = None,
                    keep_truth: bool = False) -> ClusterCollectResult:
    """Run ``target`` as a cluster job of ``ranks`` ranks and write one PROF dir per rank in ``output``.

    ``tp`` (tensor-parallel size) defaults to ``ranks_per_node`` for llm_decoder, 1 otherwise;
    ``pp`` pipeline stages (llm_decoder: the layers split over the stages).
    """
    from msprof_py.runtime.cluster import Faults, Topology, node_clocks, run_cluster
    from msprof_py.runtime.sim import resolve

    warnings = warnings if warnings is not None else WarningLog()
    out = Path(output)
    ensure_output(out)
    opts = load_options(options, warnings) if not isinstance(options, ProfilingOptions) else options
    wl = resolve(target)
    if tp is None:
        tp = ranks_per_node if (wl.name == "llm_decoder" and not wl.training) else 1
    topo = Topology(ranks, ranks_per_node, tp, pp)
    offsets, drifts = default_clock_faults(topo.nodes, seed, clock_offset_us or {}, clock_drift_ppm or {})
    faults = Faults(slow_ranks or {}, slow_links or {}, straggler_hosts or {}, offsets, drifts)
    base = SimClock.create(spec.host_cpu_frequency_mhz, spec.hwts_frequency_mhz, fixed_clock)
    clocks = node_clocks(base, topo, faults)
    sessions: list[ProfileSession] = []
    prof_dirs: list[Path] = []
    total = 0

    def hooks(r: int):
        s = ProfileSession(opts, out, fixed_clock, seed * 100003 + r, slice_bytes, spec, warnings)
        s.clock = clocks[topo.node(r)]
        sessions.append(s)
        return s.hooks

    def done(cr) -> None:
        nonlocal total
        s = sessions[cr.rank]
        res = cr.result
        s.sim = res
        s.set_run(device_ids=res.device_ids, pid=res.pid, pid_name=res.pid_name, end_sim_ns=res.end_sim_ns,
                  spec=res.spec, rank_id=cr.rank, hostname=topo.host_name(cr.node))
        fin = s.finish()
        total += fin.total_bytes
        prof_dirs.append(fin.prof_dir)

    try:
        ranks_out = run_cluster(wl, topo, iterations=iterations, seed=seed, hooks=hooks, clocks=clocks, spec=spec,
                                faults=faults, done=done, keep_truth=keep_truth)
    except BaseException:
        for s in sessions[len(prof_dirs):]:
            s.abort()
        import shutil
        for p in prof_dirs:
            shutil.rmtree(p, ignore_errors=True)
        raise
    hosts = [topo.host_name(topo.node(r)) for r in range(ranks)]
    return ClusterCollectResult(out, prof_dirs, hosts, total, warnings, faults, ranks_out)


@dataclass
class ClusterRequest:
    """``collect --ranks ...``: the plain request plus the cluster options as typed on the command line."""

    base: Any  # collect.cli_support.CollectRequest
    ranks: int
    ranks_per_node: int = 8
    tp: int | None = None
    slow_rank: tuple[str, ...] = ()
    slow_link: tuple[str, ...] = ()
    straggler_host: tuple[str, ...] = ()
    clock_offset: tuple[str, ...] = ()
    clock_drift: tuple[str, ...] = ()
    pp: int = 1


def run_collect_cluster(req: ClusterRequest, warnings: WarningLog) -> ClusterCollectResult:
    """Validate and run ``collect --ranks``; every bad value is a one-line error."""
    from msprof_py.collect.cli_support import model_target, output_folder

    base = req.base
    if base.devices != 1:
        raise InvalidParamError("--ranks simulates one device per rank: leave out --devices")
    target, opts, output = model_target(base, warnings, "--ranks")
    with output_folder(Path(output)):  # a failure leaves no folder behind
        return collect_cluster(
            target, output=output, ranks=req.ranks, ranks_per_node=min(req.ranks_per_node, req.ranks), tp=req.tp, pp=req.pp,
            iterations=base.iterations, seed=base.seed, fixed_clock=base.fixed_clock, options=opts,
            slow_ranks=parse_factors(req.slow_rank, "--slow-rank"),
            slow_links=parse_factors(req.slow_link, "--slow-link", pair=True),
            straggler_hosts=parse_factors(req.straggler_host, "--straggler-host"),
            clock_offset_us=parse_factors(req.clock_offset, "--clock-offset"),
            clock_drift_ppm=parse_factors(req.clock_drift, "--clock-drift"),
            slice_bytes=base.slice_bytes or files.DEFAULT_SLICE_BYTES, warnings=warnings)
