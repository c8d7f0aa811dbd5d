"""AOE (Ascend Optimization Engine) on msprof_py's simulated NPU.

- :mod:`schema`: the documented result-file schema, AOE's improvement formula, a validator.
- :mod:`repair`, :mod:`reader`: read real ``aoe_result_{opat,sgat}_*.json`` files (with repairs).
- :mod:`report`: terminal summary, CSV/JSON tables, join with a profile's op tasks.
- :mod:`tuner`: ``tune()`` on the simulated NPU; its searches in :mod:`opat` (operators) and
  :mod:`sgat` (subgraphs), the task's bookkeeping in :mod:`task`.
"""
from __future__ import annotations
