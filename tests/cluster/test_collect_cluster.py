"""``collect --ranks``: one PROF dir per rank with rank id, host and node clock in its metadata."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from msprof_py.cli import cli as main


def _info(prof: Path) -> dict:
    return json.loads(next(prof.glob("device_*/info.json.*")).read_text())


def test_collect_ranks_writes_one_prof_dir_per_rank(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["collect", "--graph", str(Path(__file__).parents[2] / "fixtures/graphs/mlp_train.json"),
                                    "--ranks", "4", "--ranks-per-node", "2", "-n", "2", "--fixed-clock",
                                    "--clock-offset", "1=5000", "-o", str(tmp_path)])
    assert res.exit_code == 0, res.output
    profs = sorted(tmp_path.glob("PROF_*"))
    assert len(profs) == 4
    infos = [_info(p) for p in profs]
    assert sorted(i["rank_id"] for i in infos) == [0, 1, 2, 3]
    by_rank = {i["rank_id"]: i for i in infos}
    assert [by_rank[r]["devices"] for r in range(4)] == ["0", "1", "0", "1"]
    assert by_rank[0]["hostname"] == by_rank[1]["hostname"] != by_rank[2]["hostname"]
    assert len({i["pid"] for i in infos}) == 4
    starts = {}
    for p in profs:
        r = _info(p)["rank_id"]
        starts[r] = int(json.loads((p / "host" / "start_info").read_text())["collectionTimeBegin"])
    assert starts[2] - starts[0] == 5000 and starts[1] == starts[0]


def test_collect_ranks_bad_values_are_one_line_errors(tmp_path: Path) -> None:
    for args, msg in ((["--slow-link", "3=0.5"], "expected A-B=FACTOR"),
                      (["--slow-rank", "9=2"], "rank 9 does not exist"),
                      (["--ranks-per-node", "3"], "do not fill nodes"),
                      (["--devices", "2"], "one device per rank")):
        res = CliRunner().invoke(main, ["collect", "--workload", "llm_decoder", "--ranks", "4", *args,
                                        "-o", str(tmp_path)])
        assert res.exit_code != 0 and msg in res.output, (args, res.output)
        assert "Traceback" not in res.output
    assert not list(tmp_path.glob("PROF_*")) and not list(tmp_path.glob(".msprof_py_tmp_*"))
