"""The collector: profiler hooks that write msprof's PROF_* directories.

- :func:`profile` - context manager that switches profiling on (``profiling_options`` JSON)
- :func:`collect` - run a workload with profiling on, one call
- :mod:`.options` (switches), :mod:`.hooks` (records -> slices), :mod:`.slices` (slice files),
  :mod:`.metadata` (info.json, start logs, ...), :mod:`.bootstrap` (profiling a user script)
"""
from msprof_py.collect.options import ProfilingOptions, load_options
from msprof_py.collect.session import CollectResult, ProfileSession, collect, profile

__all__ = ["CollectResult", "ProfileSession", "ProfilingOptions", "collect", "load_options", "profile"]
