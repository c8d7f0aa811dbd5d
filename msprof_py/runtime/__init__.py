"""The simulated Ascend NPU software stack: AscendCL -> GE -> Runtime -> task scheduler.

- :mod:`device`: the device table (Atlas A2-like by default).
- :mod:`graph`: the graph IR (ops, tensors, edges) for built-in workloads and user graph files.
- :mod:`hooks`: the profiler-hook protocol the runtime reports through (implemented by ``collect``).
"""
