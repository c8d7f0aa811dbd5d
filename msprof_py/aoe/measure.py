"""Measuring a tuning candidate: run it on the simulated NPU, read the time back.

Every measurement is a real :func:`msprof_py.runtime.sim.run` -- GE builds the program, the
task scheduler places the tasks, durations carry the simulator's seeded jitter -- never a cost
formula evaluated on its own.  Each candidate runs in its own simulation with the *same* seed and
the same task layout, so all candidates of an op see the same jitter draws (common random
numbers): their comparison is fair, and measuring a candidate again gives the same number, which
is how the result file's before/after values can be checked.

- :meth:`SimMeasurer.op_us`: one op as a one-task graph, ``iterations`` executions, the median
  task duration in us.
- :meth:`SimMeasurer.graph_us`: a few ops (a subgraph) as a graph; the median per-execution span
  (first task start to last task end, including the scheduling gaps) in us.
- :meth:`SimMeasurer.model_ms`: a whole workload; the median iteration span in ms.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from msprof_py.runtime.cost import TuneChoice
    from msprof_py.runtime.device import DeviceSpec
    from msprof_py.runtime.graph import Op
    from msprof_py.runtime.workloads import Workload

DEFAULT_ITERATIONS = 5


@dataclass
class SimMeasurer:
    """Measures on the simulator with a fixed seed; remembers every measurement it made."""

    spec: "DeviceSpec"
    seed: int = 0
    iterations: int = DEFAULT_ITERATIONS
    runs: int = 0  # simulations started
    log: list[dict[str, Any]] = field(default_factory=list)  # every measurement (for the provenance file)
    _cache: dict[Any, float] = field(default_factory=dict)

    def _run(self, target: Any, tuning: dict[str, "TuneChoice"] | None) -> Any:
        from msprof_py.runtime import sim

        self.runs += 1
        return sim.run(target, devices=1, iterations=self.iterations, seed=self.seed, spec=self.spec, tuning=tuning)

    def op_us(self, op: "Op", choice: "TuneChoice | None", *, key: str = "") -> float:
        """Median device duration (us, ns resolution) of ``op`` run with ``choice`` (None = GE default)."""
        from msprof_py.runtime.graph import Graph

        cache_key = ("op", key or op.name, choice)
        if key and cache_key in self._cache:
            return self._cache[cache_key]
        # phase "" keeps the one-op graph an inference graph (no FP/BP tags, no all-reduce)
        solo = replace(op, phase="", stream=0)
        res = self._run(Graph(f"aoe_measure_{op.type}", [solo]), {op.name: choice} if choice is not None else None)
        t = res.truth
        dur = t.loc[t["op_name"].astype(str) == op.name, "dur_ns"].to_numpy()
        if len(dur) != self.iterations:
            raise RuntimeError(f"simulator returned {len(dur)} task(s) for {op.name!r}, expected {self.iterations}")
        us = float(np.median(dur)) / 1000.0
        self.log.append({"what": "op", "op_name": op.name, "key": key, "choice": _choice(choice), "us": us,
                         "samples_ns": [int(x) for x in dur]})
        if key:
            self._cache[cache_key] = us
        return us

    def graph_us(self, ops: list["Op"], tuning: dict[str, "TuneChoice"] | None, *, label: str = "") -> float:
        """Median span (us) of one execution of ``ops`` as a graph (first task start -> last task end)."""
        from msprof_py.runtime.graph import Graph

        graph = Graph(f"aoe_measure_{label or ops[0].name}", [replace(op, phase="", stream=0) for op in ops])
        res = self._run(graph, tuning)
        steps = res.truth_steps
        span = (steps["end_sim_ns"] - steps["start_sim_ns"]).to_numpy()
        us = float(np.median(span)) / 1000.0
        self.log.append({"what": "subgraph", "label": label, "ops": [op.name for op in ops],
                         "tuning": {k: _choice(v) for k, v in sorted((tuning or {}).items())}, "us": us,
                         "samples_ns": [int(x) for x in span]})
        return us

    def model_ms(self, workload: "Workload", tuning: dict[str, "TuneChoice"] | None, *, label: str = "") -> float:
        """Median iteration span (ms) of ``workload`` on one device.  A single-op workload has no
        model and so no step trace: its "iteration" is then one round of its operator calls, and
        the span is their device time (sum of task durations / iterations; every round is the same
        calls, so that is the mean, not a median of separate samples)."""
        res = self._run(workload, tuning or None)
        steps = res.truth_steps
        if len(steps):
            span = (steps["end_sim_ns"] - steps["start_sim_ns"]).to_numpy()
        else:
            span = np.array([int(res.truth["dur_ns"].sum()) // self.iterations], np.int64)
        ms = float(np.median(span)) / 1e6
        self.log.append({"what": "model", "label": label, "workload": workload.name, "ms": ms,
                         "tuned_ops": len(tuning or {}), "samples_ns": [int(x) for x in span]})
        return ms


def _choice(choice: Any) -> dict[str, Any] | None:
    if choice is None:
        return None
    return {"format": choice.format, "schedule": choice.schedule, "impl": choice.impl}
