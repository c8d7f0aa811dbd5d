"""Which jobs hand the heap back (``malloc_trim``) after they ran (issue 12 phase 13): not the jobs
of a one-device dir (the next exporter takes what the last freed: fewer fresh pages), those of a
dir with several devices (their peak is a device's files beside its DB process), and the same
files either way."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from msprof_py.export import ExportOptions, jobs
from msprof_py.export.base import ExportContext, Naming
from msprof_py.pipeline import export_with_advice


def _collect(where: Path, devices: int) -> Path:
    from msprof_py.collect import collect

    return collect("single_op", output=where, devices=devices, iterations=2, seed=5, fixed_clock=True).prof_dir


def _export_counting(prof: Path, monkeypatch) -> tuple[int, int, dict[str, str]]:
    """(jobs run, jobs that trimmed after them, md5 of the output files)."""
    calls: list[bool] = []
    run = jobs.run_job

    def counted(*a, **k):
        calls.append(k.get("trim_after", True))
        return run(*a, **k)

    import msprof_py.export.stream as stream
    monkeypatch.setattr(stream, "run_job", counted)
    export_with_advice(prof, ExportOptions())
    monkeypatch.undo()
    out = {str(p.relative_to(prof)): hashlib.md5(p.read_bytes()).hexdigest()
           for p in sorted((prof / "mindstudio_profiler_output").rglob("*")) if p.is_file()}
    return len(calls), sum(calls), out


@pytest.mark.parametrize("devices", [1, 2])
def test_device_jobs_trim_only_with_several_devices(devices: int, tmp_path: Path, monkeypatch) -> None:
    prof = _collect(tmp_path / "c", devices)
    n, trimmed, out = _export_counting(prof, monkeypatch)
    assert n > 3 and out
    per_device = n - trimmed if devices == 1 else 0
    if devices == 1:
        assert per_device >= 3  # the device's jobs and the host summaries beside them: no trim
    else:
        assert trimmed == n  # every job trims


def test_run_job_trims_unless_told(monkeypatch, tmp_path: Path) -> None:
    trims: list[int] = []
    monkeypatch.setattr(jobs, "trim", lambda: trims.append(1))
    naming = Naming(None, None, None, "csv", "")
    jobs.run_job(None, None, tmp_path, naming, ExportContext(), write=lambda: [])
    assert trims == [1]
    jobs.run_job(None, None, tmp_path, naming, ExportContext(), write=lambda: [], trim_after=False)
    assert trims == [1]
