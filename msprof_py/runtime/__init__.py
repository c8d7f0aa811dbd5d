"""The simulated NPU software stack: AscendCL -> GE -> Runtime -> task scheduler.

- :mod:`device`: the device table (Atlas A2-like by default).
- :mod:`graph`: the graph IR (ops, tensors, edges) for built-in workloads and user graph files.
- :mod:`hooks`: the profiler-hook protocol the runtime reports through (implemented by ``collect``).
- :mod:`clock`: simulator ns -> host counter / device syscnt / wall clock.
- :mod:`cost`: the roofline cost model (``op_cost``) and ``TuneChoice``.
- :mod:`workloads`: built-in workloads (``get_workload``) and ``load_graph_file`` (:mod:`graph_file`).
- :mod:`ge` (package: node plan, static model load/execute, single-op launch, host records),
  :mod:`rts`, :mod:`hccl`: task ids and flips, the ring all-reduce; they build a :mod:`program`
  (per-iteration templates).
- :mod:`scheduler`: per-stream FIFO scheduling, vectorised; :mod:`emit`: records and truth.
- :mod:`sim`: ``run(...) -> SimResult`` (the collector's entry point); :mod:`acl` (package, one
  module per AscendCL group): the Python API for user scripts.
"""
