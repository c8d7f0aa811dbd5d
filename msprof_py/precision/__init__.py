"""NPU-vs-CPU precision analysis on the simulated NPU (the seed's stc-hpaa tool).

- :mod:`kernels`, :mod:`numerics`: execute a Graph with numpy, NPU precision (fp16 storage, fp32
  cube accumulation, fused ops) or the fp32 CPU reference; isolated re-runs.  Its parts:
  :mod:`storage` (each side's rounding), :mod:`leaves` (seeded inputs and weights), :mod:`faults`
  (fault injection), :mod:`fusion` (GE-style UB fusion), :mod:`optypes` (forward / cube / layout ops).
- :mod:`layout`, :mod:`workloads`: device formats (NC1HWC0, FRACTAL_Z) to the logical layout;
  the runtime's workloads and user graph files as (device graph, original ops).
- :mod:`dumpdir`, :mod:`dump`, :mod:`graphio`: the DUMP_MEMORY_PATH directory and what a run
  writes into it.
- :mod:`metrics`, :mod:`compare`, :mod:`plots`: cpu_vs_npu.csv, per-node CSVs, logs, plots
  (:mod:`compare_options`, :mod:`compare_inputs`, :mod:`compare_write`: compare's options, what it
  reads besides the tensors, what it writes).
- :mod:`locate`: where error starts; computation error vs accumulated fp16 error.
- :mod:`perf`: op_perf.csv and perf/{op}.csv from the runtime's cost model and a simulated run.
- :mod:`api`: the ``msprof-py compare`` command as one call.
"""
