"""msprof_py: collect, parse and export Ascend NPU profiles in msprof's own on-disk format.

Stages import one way: ``runtime`` <- ``collect``; ``raw`` (record layouts) is shared by
``collect`` and ``parse``; ``export`` reads only the parsed session; ``cli`` sits on top.
"""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "load", "load_cluster", "advise", "diff"]


def __getattr__(name: str):
    # lazy: ``import msprof_py`` stays light (no numpy/pandas until load is used)
    if name == "load":
        from msprof_py.parse import load

        return load
    if name == "load_cluster":
        from msprof_py.cluster import load_cluster

        return load_cluster
    if name == "advise":  # advise(session) -> DataFrame of findings
        from msprof_py.analyse.advise import advise

        return advise
    if name == "diff":  # diff(a, b) -> DiffResult (DataFrames: ops, op_types, iterations, phases)
        from msprof_py.analyse.diff import diff

        return diff
    raise AttributeError(f"module 'msprof_py' has no attribute {name!r}")
