"""benchmarks/bench_vs_msprof.py's rounds, run against a stand-in for msprof's analysis (a script that
writes a file into the copy it is given): every round runs both tools on fresh copies, the source
PROF dir is left untouched, and the report lists each round and the ratio's min / median / max."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks" / "bench_vs_msprof.py"
SMALL = ROOT / "fixtures" / "prof_small"


def _fake_msprof(tmp: Path) -> Path:
    """analysis/msprof/msprof.py stand-in: ``export WHAT -dir DIR`` writes DIR/fake_WHAT.txt."""
    script = tmp / "analysis" / "msprof" / "msprof.py"
    script.parent.mkdir(parents=True)
    script.write_text("import sys, pathlib\n"
                      "what, d = sys.argv[2], pathlib.Path(sys.argv[4])\n"
                      "assert not (d / f'fake_{what}.txt').exists(), 'copy not fresh'\n"
                      "(d / f'fake_{what}.txt').write_text(what)\n")
    return script


def _prof(tmp: Path) -> Path:
    src = next(p for p in SMALL.iterdir() if p.name.startswith("PROF_"))
    dst = tmp / "src" / src.name
    shutil.copytree(src, dst)
    return dst


def test_rounds_run_both_tools_on_fresh_copies(tmp_path: Path) -> None:
    prof = _prof(tmp_path)
    before = sorted(str(p.relative_to(prof)) for p in prof.rglob("*"))
    work = tmp_path / "work"
    r = subprocess.run([sys.executable, str(BENCH), str(prof), "--msprof", str(_fake_msprof(tmp_path)),
                        "--rounds", "2", "--work", str(work)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("| 1 |") or line.startswith("| 2 |")]
    assert [row.split("|")[2].strip() for row in rows] == ["msprof summary", "msprof timeline", "msprof-py export"] * 2
    assert "round 1: msprof" in r.stdout and "round 2: msprof" in r.stdout
    assert "wall ratio over 2 rounds: min" in r.stdout
    assert sorted(str(p.relative_to(prof)) for p in prof.rglob("*")) == before  # the source is untouched
    # the last round's copies stay (--work), the first round's are removed
    assert (work / "msprof_2" / prof.name / "fake_summary.txt").is_file()
    assert (work / "msprof_py_2" / prof.name / "mindstudio_profiler_output").is_dir()
    assert not (work / "msprof_1").exists() and not (work / "msprof_py_1").exists()


def test_rounds_must_be_positive(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, str(BENCH), str(_prof(tmp_path)), "--msprof", str(_fake_msprof(tmp_path)),
                        "--rounds", "0"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--rounds must be at least 1" in r.stderr
