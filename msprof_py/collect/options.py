"""The ``profiling_options`` JSON that switches collection on (seed 003, msprof's switches).

Example (TensorFlow adapter style)::

    {"output": "/tmp/profiling", "training_trace": "on", "task_trace": "on",
     "fp_point": "", "bp_point": "", "aic_metrics": "PipeUtilization"}

Switch -> what gets written (everything defaults to "on"):

| key                     | records                                                             |
|-------------------------|---------------------------------------------------------------------|
| task_time / task_trace  | device stars_soc + ts_track flip/task-type, host task_track, node-level api/launch, node_basic_info, tensor/context/fusion info, graph_id_map, memcpy_info |
| training_trace          | device ts_track step-trace tags (FP/BP/iteration end, all-reduce)    |
| ascendcl                | host api_event records of level acl (20000)                         |
| model_execution         | host api_event records of level model (15000)                       |
| runtime_api             | host api_event records of level runtime (5000)                      |
| hccl                    | level communication (5500) api/events, hccl_info, hccl_op_info      |
| aicpu (default off)     | device aicpu.data: AI CPU kernel runs and data-preprocess dequeues  |
| l2 (default off)        | device l2_cache.data: per-task L2 request / hit / victim counters   |
| msproftx (default off)  | host additional.msproftx: ``acl.prof`` marks and ranges of a script |

``aic_metrics`` is validated and recorded in sample.json (msprof_py.collect.sample_json says
which switch lands in which key); ``fp_point`` / ``bp_point`` (op names) move the FP / BP
step-trace tags to those ops' start / end (a warning when the op is not in the run);
``aic_metrics`` picks the events the simulated PMU counts.  Unknown keys are warnings;
a bad value or malformed JSON is an :class:`~msprof_py.errors.InvalidParamError` naming the key
or the line/column.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from msprof_py.errors import InvalidParamError, WarningLog

AIC_METRICS = ("PipeUtilization", "ArithmeticUtilization", "Memory", "MemoryL0", "MemoryUB",
               "ResourceConflictRatio", "MemoryAccess", "L2Cache")
_ON_OFF = ("on", "off")
_TASK_TIME_VALUES = ("on", "off", "l0", "l1", "l2")
_SWITCHES = ("training_trace", "ascendcl", "model_execution", "runtime_api", "hccl")
# msprof's switches that are off unless asked for (msprof_py.runtime.counters_model, acl.prof)
OFF_BY_DEFAULT = ("aicpu", "l2", "msproftx")
# msprof switches the simulator accepts but has no data for: warn instead of failing
_NO_EFFECT = ("sys_hardware_mem", "ai_core", "aic_mode", "aiv", "aiv_metrics",
              "storage_limit", "instr_profiling", "llc_profiling", "sys_io_sampling_freq")


@dataclass(frozen=True)
class ProfilingOptions:
    """Validated collection switches.  ``task_time`` is "off" or a level ("on", "l0", "l1", "l2")."""

    output: str | None = None
    task_time: str = "on"
    training_trace: str = "on"
    ascendcl: str = "on"
    model_execution: str = "on"
    runtime_api: str = "on"
    hccl: str = "on"
    aic_metrics: str = "PipeUtilization"
    aicpu: str = "off"  # AI CPU kernel records and the data-preprocess queue (aicpu_*.csv, dp_*.csv)
    l2: str = "off"  # per-task L2 cache counters (l2_cache_*.csv)
    msproftx: str = "off"  # the script's acl.prof marks and ranges (msprof_tx_*.csv, timeline)
    fp_point: str = ""
    bp_point: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # accepted-but-inert msprof keys, echoed

    def on(self, switch: str) -> bool:
        return getattr(self, switch) != "off"


def load_options(source: str | os.PathLike[str] | Mapping[str, Any] | ProfilingOptions | None,
                 warnings: WarningLog | None = None) -> ProfilingOptions:
    """Parse and validate profiling options.

    Args:
        source: a JSON string (``{...}``), a path to a JSON file, a dict, a ready
            :class:`ProfilingOptions`, or ``None`` (all defaults).
        warnings: receives one message per unknown or inert key.
    Raises:
        InvalidParamError: malformed JSON (with line/column) or a bad value (naming the key).
    """
    warnings = warnings if warnings is not None else WarningLog()
    if source is None:
        return ProfilingOptions()
    if isinstance(source, ProfilingOptions):
        return source
    if isinstance(source, Mapping):
        return _validate(dict(source), warnings)
    text, where = _read_source(source)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise InvalidParamError(f"profiling options{where}: malformed JSON at line {err.lineno} "
                                f"column {err.colno}: {err.msg}") from None
    if not isinstance(data, dict):
        raise InvalidParamError(f"profiling options{where}: expected a JSON object, got {type(data).__name__}")
    return _validate(data, warnings)


def _read_source(source: str | os.PathLike[str]) -> tuple[str, str]:
    text = os.fspath(source)
    if text.lstrip()[:1] in ("{", "["):
        return text, ""
    path = Path(text)
    try:
        return path.read_text(encoding="utf-8"), f" ({path})"
    except FileNotFoundError:
        raise InvalidParamError(f"profiling options: {text!r} is neither a JSON object nor an existing file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidParamError(f"profiling options: cannot read {path}: {err}") from None


def _validate(data: dict[str, Any], warnings: WarningLog) -> ProfilingOptions:
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in data.items():
        if key == "output":
            if value is not None and (not isinstance(value, str) or not value):
                raise InvalidParamError("profiling options: 'output' must be a non-empty path string")
            values["output"] = value
        elif key in ("task_time", "task_trace"):
            values[key] = _choice(key, value, _TASK_TIME_VALUES)
        elif key in _SWITCHES or key in OFF_BY_DEFAULT:
            values[key] = _choice(key, value, _ON_OFF)
        elif key == "aic_metrics":
            values[key] = _choice(key, value, AIC_METRICS, fold_case=False)
        elif key in ("fp_point", "bp_point"):
            if not isinstance(value, str):
                raise InvalidParamError(f"profiling options: {key!r} must be an op name string, got {value!r}")
            values[key] = value
        elif key in _NO_EFFECT:
            warnings.warn(f"profiling option {key!r} has no effect in the simulator (accepted, not collected)")
            extra[key] = value
        else:
            warnings.warn(f"unknown profiling option {key!r} ignored")
    tt, tr = values.pop("task_time", None), values.pop("task_trace", None)
    if tt is not None and tr is not None and (tt == "off") != (tr == "off"):
        raise InvalidParamError(f"profiling options: 'task_time' ({tt}) and 'task_trace' ({tr}) disagree")
    task_time = tt if tt is not None else tr
    if task_time is not None:
        values["task_time"] = task_time
    return ProfilingOptions(**values, extra=extra)


def _choice(key: str, value: Any, allowed: tuple[str, ...], fold_case: bool = True) -> str:
    text = value.lower() if (fold_case and isinstance(value, str)) else value
    if isinstance(value, bool):  # tolerate JSON true/false for on/off switches
        text = "on" if value else "off"
    if text not in allowed:
        raise InvalidParamError(f"profiling options: {key!r} must be one of {', '.join(allowed)}; got {value!r}")
    return text
