"""``msprof-py query`` on a 2-device, 2-model collection (acceptance 4) and model/iteration
selection with msprof's window rule and error messages."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from msprof_py.cli import cli
from msprof_py.errors import InvalidParamError, StepTraceError
from msprof_py.parse.query import format_table, query_rows
from msprof_py.parse.session import load
from tests.parse.gen import _fixture_module

US = 1000


def two_devices(out: Path) -> Path:
    """device 0: model 1 (static, iterations of 300/500/400 us) and model 2 (dynamic, 2 iterations);
    device 1: model 1 with iterations of 100/400/200/400 us.  All ops launched from the host."""
    m = _fixture_module()
    from msprof_py.raw import ts_track
    from msprof_py.raw.common import LEVEL_ACL, LEVEL_MODEL

    b = m.Builder()
    for dev, thread, durs in ((0, 1001, [300, 500, 400]), (1, 1003, [100, 400, 200, 400])):
        b.device = dev
        base = 100 * US + dev * 50 * US
        b.api(LEVEL_ACL, m.ACL["aclmdlLoadFromFile"], thread, base, base + 200 * US, 0)
        b.api(LEVEL_MODEL, m.MODEL_TYPES["ModelLoad"], thread, base + 5 * US, base + 195 * US, 1)
        m.launch_op(b, thread, base + 10 * US, f"conv_d{dev}", "Conv2D", "AI_CORE", "KERNEL_AICORE", stream=1,
                    task=1, static=True)
        t = 1_000 * US
        for k, d in enumerate(durs):
            b.event_pair(LEVEL_MODEL, m.MODEL_TYPES["ModelExecute"], thread, t, t + 5 * US, 1, k + 1)
            b.step(t + 10 * US, 1, k + 1, ts_track.TAG_MODEL_START)
            b.stars(1, 1, t + 20 * US, t + 60 * US)
            b.step(t + 10 * US + d * US, 1, k + 1, ts_track.TAG_MODEL_END)
            t += (d + 100) * US
    b.device = 0
    t = 4_000 * US
    b.step(t, 2, 1, ts_track.TAG_MODEL_START, stream=8)
    for k in range(2):
        b.event_pair(LEVEL_MODEL, m.MODEL_TYPES["ModelExecute"], 1002, t + 5 * US, t + 150 * US, 2, k + 1)
        m.launch_op(b, 1002, t + 10 * US, f"add{k}", "Add", "AI_VECTOR_CORE", "KERNEL_AIVEC", stream=8, task=k,
                    static=False)
        b.stars(8, k, t + 60 * US, t + 90 * US, sqe=2)
        t += 200 * US
        b.step(t, 2, k + 1, ts_track.TAG_ITER_END, stream=8)
    return m.write_builder(b, out)


EXPECTED_ROWS = [
    ["NA", "", "host", "2026-01-01 00:00:00.000000", "N/A", "N/A", "N/A", "0"],
    ["NA", "0", "device_0", "2026-01-01 00:00:00.000000", "1", "3", "2,3,1", "0"],
    ["NA", "0", "device_0", "2026-01-01 00:00:00.000000", "2", "2", "1,2", "0"],
    ["NA", "1", "device_1", "2026-01-01 00:00:00.000000", "1", "4", "2,4,3,1", "1"],
]


def test_query_rows_two_devices_two_models(tmp_path: Path) -> None:
    prof = two_devices(tmp_path)
    assert query_rows(load(prof, use_cache=False)) == EXPECTED_ROWS


def test_query_command_prints_msprof_layout(tmp_path: Path) -> None:
    prof = two_devices(tmp_path)
    result = CliRunner().invoke(cli, ["query", "--output", str(prof.parent)])
    assert result.exit_code == 0, result.output
    header = ("Job Info\tDevice ID\tDir Name\tCollection Time           \tModel ID\tIteration Number\t"
              "Top Time Iteration\tRank ID\t\n\n")
    assert result.output.startswith(header)
    body = result.output[len(header):].split("\n\n")
    assert body[0] == "NA      \t         \thost    \t2026-01-01 00:00:00.000000\tN/A     \tN/A             \t" \
                      "N/A               \t0      \t"
    assert body[3].split("\t")[:8] == ["NA      ", "1        ", "device_1", "2026-01-01 00:00:00.000000",
                                       "1       ", "4               ", "2,4,3,1           ", "1      "]


def test_format_sorts_by_job_and_collection_time() -> None:
    rows = [["b", "0", "device_0", "2026-01-02", "1", "1", "1", "-1"],
            ["a", "", "host", "2026-01-03", "N/A", "N/A", "N/A", "-1"],
            ["a", "1", "device_1", "2026-01-01", "1", "2", "2,1", "-1"]]
    lines = [line for line in format_table(rows).split("\n") if line]
    assert [line.split("\t")[2].strip() for line in lines[1:]] == ["device_1", "host", "device_0"]


def test_select_model_and_iteration_windows(tmp_path: Path) -> None:
    s = load(two_devices(tmp_path), use_cache=False)
    assert s.model_ids() == [1, 2]
    sel = s.select(1, 2)
    assert list(zip(sel.steps["device_id"], sel.steps["index_id"])) == [(0, 2), (1, 2)]
    dev = sel.tasks[sel.tasks["match"] != "host_only"]
    assert sorted(zip(dev["device_id"], dev["index_id"])) == [(0, 2), (1, 2)]
    # window of iteration 2 of model 1 on device 0: (end of iteration 1, end of iteration 2]
    st = s.steps[(s.steps["device_id"] == 0) & (s.steps["model_id"] == 1)].set_index("index_id")
    assert (dev.loc[dev["device_id"] == 0, "start_ns"] > st.loc[1, "step_end_ns"]).all()
    assert (dev.loc[dev["device_id"] == 0, "start_ns"] <= st.loc[2, "step_end_ns"]).all()
    two = s.select(1, 2, iteration_count=2)
    assert sorted(two.tasks.loc[two.tasks["device_id"] == 1, "index_id"]) == [2, 3]
    # model 2 runs on device 0 only: msprof checks the model per device dir and refuses it for device_1
    with pytest.raises(InvalidParamError, match=r"^device_1: The model id 2 is invalid\. Must select from \{1\}\."):
        s.select(2, 1)


def test_select_errors_use_msprof_messages(tmp_path: Path) -> None:
    s = load(two_devices(tmp_path), use_cache=False)
    with pytest.raises(InvalidParamError, match=r"^The model id 7 is invalid\. Must select from \{1, 2\}\. "
                                                 r"Please enter a valid model id\.$"):
        s.select(7, 1)
    with pytest.raises(StepTraceError, match=r"^The exported iteration 5 is invalid for model id 1\. "
                                              r"Please enter a valid iteration within 1-4\.$"):
        s.select(1, 5)
    with pytest.raises(StepTraceError, match=r"iteration 4-5 is invalid for model id 1\. .* within 1-4\.$"):
        s.select(1, 4, iteration_count=2)


def test_query_without_host_data_falls_back_to_iterations_with_device_tasks(tmp_path: Path) -> None:
    import shutil

    prof = two_devices(tmp_path)
    shutil.rmtree(prof / "host")
    rows = query_rows(load(prof, use_cache=False))
    assert [r[2:6] for r in rows] == [["device_0", "2026-01-01 00:00:00.000000", "1", "3"],
                                      ["device_0", "2026-01-01 00:00:00.000000", "2", "2"],
                                      ["device_1", "2026-01-01 00:00:00.000000", "1", "4"]]
