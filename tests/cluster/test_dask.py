"""The per-rank work on a Dask cluster (LocalCluster on loopback, 2 worker processes) gives the
same files, byte for byte, as the local process pool."""
from __future__ import annotations

from pathlib import Path

import pytest

from msprof_py.cluster.analyze import analyze_cluster
from msprof_py.cluster.outputs import OUTPUT_DIR

distributed = pytest.importorskip("distributed")


def test_dask_local_cluster_gives_the_same_files(faulty_cluster: Path, tmp_path: Path) -> None:
    local = analyze_cluster(faulty_cluster, tmp_path / "local", workers=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as lc:
        on_dask = analyze_cluster(faulty_cluster, tmp_path / "dask", scheduler=lc.scheduler_address)
    names = sorted(p.name for p in (tmp_path / "local" / OUTPUT_DIR).iterdir())
    assert names == sorted(p.name for p in (tmp_path / "dask" / OUTPUT_DIR).iterdir())
    assert "cluster_analysis.db" in names and "cluster_step_trace_time.csv" in names
    for n in names:
        assert (tmp_path / "local" / OUTPUT_DIR / n).read_bytes() == (tmp_path / "dask" / OUTPUT_DIR / n).read_bytes(), n
    assert [f.subject for f in local.findings] == [f.subject for f in on_dask.findings]


def test_unreachable_scheduler_is_a_one_line_error(faulty_cluster: Path, tmp_path: Path, monkeypatch) -> None:
    from msprof_py.cluster import parallel
    from msprof_py.errors import InvalidParamError

    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT_S", 1)
    with pytest.raises(InvalidParamError, match="cannot reach the Dask scheduler"):
        analyze_cluster(faulty_cluster, tmp_path, scheduler="tcp://127.0.0.1:1")
