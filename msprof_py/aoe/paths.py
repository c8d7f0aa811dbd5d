"""Where AOE keeps things, and the environment variables that move them (as AOE documents).

Custom repository (knowledge bank), first match wins -- note the asymmetry:

============  =========================================  ====================================
variable      operator bank (OPAT)                       subgraph bank (SGAT)
============  =========================================  ====================================
TUNE_BANK_PATH   ``$TUNE_BANK_PATH/<soc_version>``       ``$TUNE_BANK_PATH`` (no soc level)
ASCEND_CACHE_PATH ``$ASCEND_CACHE_PATH/aoe_data/<soc>``  ``$ASCEND_CACHE_PATH/aoe_data``
neither       ``$HOME/Ascend/latest/data/aoe/custom/op/<soc>``  ``.../custom/graph/<soc>``
============  =========================================  ====================================

``TUNE_BANK_PATH`` must already exist and be readable, writable and searchable, otherwise AOE
stops with an error (so do we).  A relative path is taken from the working directory.

Result files go to ``$ASCEND_WORK_PATH`` if set, else the working directory.
``AOE_MODE`` (1 = subgraph tuning, 2 = operator tuning), ``REPEAT_TUNE`` (default False) and
``TE_PARALLEL_COMPILER`` (parallel compile workers, default 8) are read here too.  Command-line
options win over these variables (msprof_py's rule).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from msprof_py.errors import InvalidParamError, InvalidPathError

JOB_SGAT = 1
JOB_OPAT = 2
JOB_NAMES = {JOB_SGAT: "SGAT", JOB_OPAT: "OPAT"}


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def _abs(p: str, cwd: Path | None) -> Path:
    path = Path(p).expanduser()
    return path if path.is_absolute() else (cwd or Path.cwd()) / path


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


def check_tune_bank_path(path: Path) -> None:
    """AOE's rule: TUNE_BANK_PATH must exist and be rwx for the user, else error and stop."""
    if not path.is_dir():
        raise InvalidPathError(f"TUNE_BANK_PATH={path}: directory does not exist (create it first)")
    if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
        raise InvalidPathError(f"TUNE_BANK_PATH={path}: needs read, write and execute permission")


def bank_dir(kind: str, soc_version: str, env: Mapping[str, str] | None = None, cwd: Path | None = None,
             *, check: bool = True) -> Path:
    """The custom repository directory for ``kind`` "op" or "graph" (table in the module doc).

    Raises:
        InvalidPathError: (``check``) TUNE_BANK_PATH is set but missing or not rwx.
    """
    if kind not in ("op", "graph"):
        raise ValueError(f"bank kind must be 'op' or 'graph', not {kind!r}")
    e = _env(env)
    tune_bank = e.get("TUNE_BANK_PATH", "")
    if tune_bank:
        base = _abs(tune_bank, cwd)
        if check:
            check_tune_bank_path(base)
        return base / soc_version if kind == "op" else base
    cache = e.get("ASCEND_CACHE_PATH", "")
    if cache:
        base = _abs(cache, cwd) / "aoe_data"
        return base / soc_version if kind == "op" else base
    return _home(e) / "Ascend" / "latest" / "data" / "aoe" / "custom" / kind / soc_version


def work_dir(env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Path:
    """Where result files go: ASCEND_WORK_PATH, else the working directory."""
    w = _env(env).get("ASCEND_WORK_PATH", "")
    return _abs(w, cwd) if w else (cwd or Path.cwd())


def _bool(name: str, value: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "1", "yes", "on"):
        return True
    if v in ("false", "0", "no", "off", ""):
        return False
    raise InvalidParamError(f"{name}={value!r}: expected True or False")


def repeat_tune(env: Mapping[str, str] | None = None) -> bool:
    """REPEAT_TUNE (default False): re-tune operators/subgraphs that already hit the repository."""
    return _bool("REPEAT_TUNE", _env(env).get("REPEAT_TUNE", "False"))


def aoe_mode(env: Mapping[str, str] | None = None) -> int | None:
    """AOE_MODE: 1 = subgraph tuning, 2 = operator tuning, None when unset."""
    v = _env(env).get("AOE_MODE", "").strip()
    if not v:
        return None
    if v not in ("1", "2"):
        raise InvalidParamError(f"AOE_MODE={v!r}: expected 1 (subgraph tuning) or 2 (operator tuning)")
    return int(v)


def parallel_compilers(env: Mapping[str, str] | None = None) -> int:
    """TE_PARALLEL_COMPILER (default 8; AOE caps it at 80% of the CPU cores), at least 1."""
    v = _env(env).get("TE_PARALLEL_COMPILER", "").strip()
    try:
        n = int(v) if v else 8
    except ValueError:
        raise InvalidParamError(f"TE_PARALLEL_COMPILER={v!r}: expected a whole number") from None
    if n < 0:
        raise InvalidParamError(f"TE_PARALLEL_COMPILER={v!r}: must not be negative")
    cap = max(1, int((os.cpu_count() or 1) * 0.8))
    return max(1, min(n, cap))
