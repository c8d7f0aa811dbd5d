"""What a simulated run can afford, checked before any work is done.

A size that cannot fit is refused up front with the estimate, never discovered by the allocator
(``collect --iterations 1000000000`` used to die after asking numpy for 4.93 TiB):

- every tensor dimension must fit msprof's tensor_info shape field (uint32), and one tensor must
  fit the device's memory (:data:`HBM_BYTES`, the Atlas A2's 64 GB);
- the run's device tasks (devices x iterations x tasks per iteration) times
  :data:`BYTES_PER_TASK` (the simulator's and collector's peak memory per task, measured in
  benchmarks/RESULTS.md: 1,000,000 tasks take < 400 MB) must fit this machine's RAM.
"""
from __future__ import annotations

import os

from msprof_py.errors import WorkloadError
from msprof_py.runtime.graph import DTYPE_BYTES, Graph

HBM_BYTES = 64 * 10**9  # Atlas A2 (910B) HBM: 64 GB
MAX_DIM = 2**32 - 1  # msprof's tensor_info shape entries are uint32
BYTES_PER_TASK = 400


def physical_memory() -> int:
    """Bytes of RAM of this machine (a large default where the OS does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 2**40


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if n < 1024 or unit == "EiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} B"


def check_graph(graph: Graph) -> None:
    """Every tensor of ``graph`` has dims in [0, 2^32-1] and fits the device memory."""
    tensors = [("input", t) for t in graph.inputs] + [("weight", t) for t in graph.weights]
    tensors += [(f"op {op.name!r}", t) for op in graph.ops for t in (*op.inputs, *op.outputs)]
    for where, t in tensors:
        if any(not isinstance(d, int) or d < 0 or d > MAX_DIM for d in t.shape):
            raise WorkloadError(f"{graph.name}: {where} tensor {t.name!r} shape {list(t.shape)}: every dimension "
                                f"must be an integer in 0 .. {MAX_DIM} (msprof's tensor_info field is 32-bit)")
        nbytes = t.numel * DTYPE_BYTES.get(t.dtype, 4)
        if nbytes > HBM_BYTES:
            raise WorkloadError(f"{graph.name}: {where} tensor {t.name!r} shape {list(t.shape)} needs {human(nbytes)}, "
                                f"more than the device's {human(HBM_BYTES)} of HBM")


def check_run(name: str, devices: int, iterations: int, tasks_per_iteration: int,
              memory: int | None = None) -> None:
    """Refuse a run whose device tasks would not fit this machine's memory (``memory`` bytes)."""
    memory = physical_memory() if memory is None else memory
    tasks = devices * iterations * max(tasks_per_iteration, 1)
    need = tasks * BYTES_PER_TASK
    if need > memory:
        fit = max(memory // (BYTES_PER_TASK * devices * max(tasks_per_iteration, 1)), 0)
        raise WorkloadError(f"{name}: {iterations} iteration(s) x {devices} device(s) x {tasks_per_iteration} tasks "
                            f"= {tasks:.3g} device tasks need about {human(need)} of memory "
                            f"(~{BYTES_PER_TASK} B per task) and this machine has {human(memory)}; "
                            f"at most {fit} iteration(s) fit")
