"""Where does error start, and is it a computation error or accumulated fp16 error?

The seed's method, in execution order:

1. **Jump heuristics.**  For node k with producer nodes P(k) (from the fusion record; the
   previous node when there is no graph):
   - mean relative error (MRE) jump: ``MRE_k >= JUMP_FACTOR * max(max_P MRE_p, MRE_FLOOR)``
     and ``MRE_k >= MRE_MIN``  (the seed's example: input < 0.1, output > 1);
   - Pearson drop: ``min_P r_p >= PEARSON_IN`` and ``r_k <= min_P r_p - PEARSON_DROP``
     (the seed's example: input > 0.9, output < 0.1).
   Graph inputs count as exact (MRE 0, r 1).  Skipped nodes are not candidates.
2. **Confirmation by isolated re-run** (possible because the NPU is simulated): the candidate
   op runs again in NPU precision on the CPU reference's inputs.  If the error is still there
   (``e_local >= LOCAL_SHARE * e_cum`` and ``e_local >= MRE_MIN``), the op makes it itself:
   **computation error**.  If it vanishes, the op only passed on its inputs' error: not a
   computation error, and the next candidate is tried.
3. Verdict: ``computation error`` at the first confirmed candidate; else ``accumulated error``
   when some node fails the tolerances; else ``no error``.
4. Evidence only (the seed's third sign): whether a candidate's error sits in one half of an
   axis (``uneven_axis``), e.g. the second half of H.

Without the graphs (dumps from elsewhere) step 2 is impossible and the verdict says it rests
on the heuristics alone.  The thresholds are heuristics; they are recorded in locate.json.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from msprof_py import atomic
from msprof_py.precision import dumpdir, graphio
from msprof_py.precision.compare import CompareResult, NodeResult
from msprof_py.precision.metrics import compare_tensors, sanitize

JUMP_FACTOR = 10.0
MRE_FLOOR = 1e-3  # about two fp16 ulps: below this an error is rounding, not a signal
MRE_MIN = 0.05
PEARSON_IN = 0.9
PEARSON_DROP = 0.2
LOCAL_SHARE = 0.5
UNEVEN_RATIO = 10.0


@dataclass
class Candidate:
    node: str
    mre_in: float
    mre_out: float
    pearson_in: float
    pearson_out: float
    why: str
    e_local: float | None = None
    e_cum: float | None = None
    confirmed: bool | None = None  # None: could not re-run
    uneven: str = ""  # the seed's third sign: error concentrated in one half of an axis


def uneven_axis(npu: np.ndarray, ref: np.ndarray, ratio: float = UNEVEN_RATIO) -> str:
    """The seed's distribution check: for each axis of length >= 2, the mean absolute error of
    its first and second half.  Returns e.g. ``"axis 2: second half 35x the first"`` for the
    most uneven axis when the ratio reaches ``ratio``, else ""."""
    if npu.size != ref.size or ref.ndim == 0:
        return ""
    n, _, _ = sanitize(npu)
    r, _, _ = sanitize(ref)
    ad = np.abs(n - r).reshape(ref.shape)
    best, text = 0.0, ""
    for ax, size in enumerate(ref.shape):
        if size < 2:
            continue
        a = np.take(ad, range(size // 2), axis=ax).mean()
        b = np.take(ad, range(size // 2, size), axis=ax).mean()
        lo, hi = min(a, b), max(a, b)
        q = hi / lo if lo > 0 else (np.inf if hi > 0 else 1.0)
        if q > best:
            best = q
            which, other = ("second", "first") if b > a else ("first", "second")
            text = (f"axis {ax}: error only in the {which} half" if np.isinf(q)
                    else f"axis {ax}: {which} half {q:.3g}x the {other}")
    return text if best >= ratio else ""


@dataclass
class Location:
    first_error_node: str | None  # first node (execution order) with errors/total > 0
    verdict: str  # "computation error" | "accumulated error" | "no error"
    error_node: str | None  # the op where the computation error happens
    candidates: list[Candidate] = field(default_factory=list)
    rerun_possible: bool = False
    faults_injected: list[dict] = field(default_factory=list)

    def summary(self) -> str:
        lines = []
        if self.faults_injected:
            lines.append("injected fault(s): " + ", ".join(f"{f['op']} ({f['kind']})" for f in self.faults_injected))
        lines.append(f"first node with errors: {self.first_error_node or '-'}")
        if self.verdict == "computation error":
            c = next(c for c in self.candidates if c.node == self.error_node)
            how = (f"isolated re-run on CPU inputs keeps the error: e_local={c.e_local:.4g}, e_cum={c.e_cum:.4g}"
                   if c.confirmed else "heuristics only: no graph to re-run the op")
            lines.append(f"error starts at: {self.error_node} ({c.why}); verdict: computation error ({how})")
            if c.uneven:
                lines.append(f"error distribution of {self.error_node}: uneven along {c.uneven}")
        elif self.verdict == "accumulated error":
            unconf = [c.node for c in self.candidates if c.confirmed is False]
            extra = f"; jumps at {', '.join(unconf)} vanish when re-run on CPU inputs" if unconf else ""
            lines.append(f"verdict: accumulated error (fp16 precision loss growing layer by layer; "
                         f"no computation error found{extra})")
        else:
            unconf = [c.node for c in self.candidates if c.confirmed is False]
            extra = f"; error jumps at {', '.join(unconf)} vanish when re-run on CPU inputs" if unconf else ""
            lines.append(f"verdict: no error (every compared node is within atol/rtol{extra})")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "first_error_node": self.first_error_node, "verdict": self.verdict, "error_node": self.error_node,
            "rerun_possible": self.rerun_possible, "faults_injected": self.faults_injected,
            "candidates": [c.__dict__ for c in self.candidates],
            "thresholds": {"jump_factor": JUMP_FACTOR, "mre_floor": MRE_FLOOR, "mre_min": MRE_MIN,
                           "pearson_in": PEARSON_IN, "pearson_drop": PEARSON_DROP, "local_share": LOCAL_SHARE,
                           "uneven_ratio": UNEVEN_RATIO},
            "mre": "mean(|npu-ref| / max(|ref|, atol))",
        }


def _finite(x: float, default: float) -> float:
    return x if x is not None and math.isfinite(x) else default


def locate(res: CompareResult) -> Location:
    """Find where error starts in ``res`` (execution order) and classify it; writes
    ``result/locate.json``."""
    result_dir = res.root / "result"
    npu_g = result_dir / "graph_npu.json"
    cpu_g = result_dir / "graph_cpu.json"
    run_json = result_dir / "run.json"
    npu_graph = graphio.load_graph(npu_g) if npu_g.is_file() else None
    cpu_graph = graphio.load_graph(cpu_g) if cpu_g.is_file() else None
    run = orjson.loads(run_json.read_bytes()) if run_json.is_file() else {}
    by_name = {n.npu_node: n for n in res.nodes}
    compared = [n for n in res.nodes if n.cmp is not None]
    first = next((n.npu_node for n in compared if not n.cmp.passed), None)
    producers = _producers(npu_graph, [n.npu_node for n in res.nodes])

    cands: list[Candidate] = []
    for n in compared:
        ins = [by_name[p] for p in producers.get(n.npu_node, []) if p in by_name and by_name[p].cmp is not None]
        mre_in = max((p.cmp.mre for p in ins), default=0.0)
        r_in = min((_finite(p.cmp.pearson, 1.0) for p in ins), default=1.0)
        mre, r = n.cmp.mre, _finite(n.cmp.pearson, 1.0)
        why = []
        if mre >= MRE_MIN and mre >= JUMP_FACTOR * max(mre_in, MRE_FLOOR):
            why.append(f"mean relative error {mre_in:.3g} -> {mre:.3g}")
        if r_in >= PEARSON_IN and r <= r_in - PEARSON_DROP:
            why.append(f"Pearson {r_in:.3f} -> {r:.3f}")
        if why:
            c = Candidate(n.npu_node, mre_in, mre, r_in, r, "; ".join(why))
            if n.npu_node in res.files:
                npu_p, cpu_p = res.files[n.npu_node]
                c.uneven = uneven_axis(dumpdir.load_tensor(npu_p), dumpdir.load_tensor(cpu_p))
            cands.append(c)

    can_rerun = npu_graph is not None and cpu_graph is not None and "seed" in run
    loc = Location(first, "no error", None, cands, can_rerun, list(run.get("faults", [])))
    rerun = _Rerun(res, npu_graph, cpu_graph, run) if can_rerun else None
    for c in cands:
        if rerun is None:
            loc.verdict, loc.error_node = "computation error", c.node
            break
        c.e_local, c.e_cum = rerun.errors(by_name[c.node])
        c.confirmed = c.e_local >= MRE_MIN and c.e_local >= LOCAL_SHARE * c.e_cum
        if c.confirmed:
            loc.verdict, loc.error_node = "computation error", c.node
            break
    else:
        if first is not None:
            loc.verdict = "accumulated error"
    atomic.write_text(result_dir / "locate.json", graphio.dump_json(loc.as_dict()).decode())
    return loc


def _producers(g, order: list[str]) -> dict[str, list[str]]:
    """NPU node key -> producing NPU node keys; the previous node when there is no graph."""
    if g is None:
        return {n: [order[i - 1]] if i else [] for i, n in enumerate(order)}
    from msprof_py.precision.dump import output_keys

    tensor_key = {}
    for op in g.ops:
        for k, t in zip(output_keys(op), op.outputs):
            tensor_key[t.name] = k
    out = {}
    for op in g.ops:
        ps = [tensor_key[t.name] for t in op.inputs if t.name in tensor_key]
        for k in output_keys(op):
            out[k] = ps
    return out


class _Rerun:
    """Re-runs one NPU op on the CPU reference's inputs, from the dump directory alone."""

    def __init__(self, res: CompareResult, npu_graph, cpu_graph, run: dict) -> None:
        from msprof_py.precision.dump import output_keys
        from msprof_py.precision.numerics import Fault

        self.npu_ops = {k: op for op in npu_graph.ops for k in output_keys(op)[:1]}
        self.originals = {op.name: op for op in cpu_graph.ops}
        self.faults = tuple(Fault(f["op"], f["kind"], float(f.get("scale", 1e5))) for f in run.get("faults", []))
        self.seed = int(run["seed"])
        self.graphs = (cpu_graph, npu_graph)
        self.values: dict[str, np.ndarray] = {}
        cpu_dir = res.root / "cpu"
        self._cpu_files = {}
        for op in cpu_graph.ops:
            for k, t in zip(output_keys(op), op.outputs):
                self._cpu_files[t.name] = cpu_dir / f"{dumpdir.node_file_name(k)}.npy"
        self.res = res

    def _cpu(self, tensor: str) -> np.ndarray | None:
        if tensor not in self.values and tensor in self._cpu_files and self._cpu_files[tensor].is_file():
            self.values[tensor] = dumpdir.load_tensor(self._cpu_files[tensor])
        return self.values.get(tensor)

    def errors(self, node: NodeResult) -> tuple[float, float]:
        """(e_local, e_cum): MRE of the op re-run on CPU inputs, and of the dumped NPU output."""
        from msprof_py.precision.numerics import rerun_isolated

        op = self.npu_ops.get(node.npu_node)
        if op is None:
            return float("nan"), node.cmp.mre
        from msprof_py.precision.numerics import make_leaves

        missing = {t.name for t in op.inputs if self._cpu(t.name) is None}
        for g in self.graphs:  # graph inputs and weights: drawn again from the run's seed
            if missing:
                got = make_leaves(g, self.seed, only=missing)
                self.values.update(got)
                missing -= set(got)
        outs = rerun_isolated(op, self.values, faults=self.faults, originals=self.originals)
        ref = dumpdir.load_tensor(self.res.files[node.npu_node][1])
        local = compare_tensors(outs[0].reshape(ref.shape), ref, node.atol, node.rtol, 0)
        return local.mre, node.cmp.mre
