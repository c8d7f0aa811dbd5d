"""profiling_options parsing and validation."""
from __future__ import annotations

from pathlib import Path

import pytest

from msprof_py.collect.options import ProfilingOptions, load_options
from msprof_py.errors import InvalidParamError, WarningLog

SEED_003 = ('{"output":"/tmp/profiling","training_trace":"on","task_trace":"on","fp_point":"","bp_point":"",'
            '"aic_metrics":"PipeUtilization"}')


def test_seed_003_example_parses() -> None:
    w = WarningLog()
    opts = load_options(SEED_003, w)
    assert opts.output == "/tmp/profiling" and opts.on("training_trace") and opts.on("task_time")
    assert opts.aic_metrics == "PipeUtilization" and not w


def test_defaults_are_all_on() -> None:
    opts = load_options(None)
    assert all(opts.on(s) for s in ("task_time", "training_trace", "ascendcl", "runtime_api", "model_execution", "hccl"))


def test_file_source(tmp_path: Path) -> None:
    p = tmp_path / "opts.json"
    p.write_text('{"runtime_api": "off"}')
    assert not load_options(str(p)).on("runtime_api")


def test_unknown_and_inert_keys_warn() -> None:
    w = WarningLog()
    opts = load_options({"colour": "blue", "sys_hardware_mem": "on", "aicpu": "on"}, w)
    assert any("unknown profiling option 'colour'" in m for m in w)
    assert any("'sys_hardware_mem' has no effect" in m for m in w)
    assert opts.extra == {"sys_hardware_mem": "on"}
    assert (opts.aicpu, opts.l2, opts.msproftx) == ("on", "off", "off")  # collected switches, off by default
    assert not any("aicpu" in m for m in w)


@pytest.mark.parametrize("text, match", [
    ('{"task_trace": "maybe"}', "'task_trace' must be one of"),
    ('{"aic_metrics": "Speed"}', "'aic_metrics' must be one of"),
    ('{"fp_point": 3}', "'fp_point' must be an op name"),
    ('{"output": ""}', "'output' must be a non-empty"),
    ('{"task_time": "on", "task_trace": "off"}', "disagree"),
    ('[1, 2]', "expected a JSON object"),
    ('{"task_trace": "on",,}', r"malformed JSON at line 1 column 21"),
    ('{\n"task_trace": "on"\n"x": 1}', r"malformed JSON at line 3 column 1"),
])
def test_bad_options_name_the_problem(text: str, match: str) -> None:
    with pytest.raises(InvalidParamError, match=match) as info:
        load_options(text)
    assert "\n" not in str(info.value)


def test_missing_file_is_an_error() -> None:
    with pytest.raises(InvalidParamError, match="neither a JSON object nor an existing file"):
        load_options("no_such_options.json")


def test_json_booleans_are_on_off() -> None:
    assert load_options({"hccl": False}).hccl == "off"
    assert isinstance(load_options(ProfilingOptions()), ProfilingOptions)
