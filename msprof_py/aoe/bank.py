"""The custom repository ("knowledge bank"): tuned choices that later builds use.

Format (msprof_py's own, documented here; it is *not* CANN's binary bank format and CANN cannot
read it).  A bank directory (see :mod:`msprof_py.aoe.paths`) holds JSON files: one per operator
type for the operator bank (``<OpType>.json``), one ``subgraphs.json`` for the subgraph bank::

    {
      "format": "msprof_py.aoe.bank",
      "schema_version": 1,
      "note": "...",
      "validators": {"bank_kind": "op", "soc_version": "Ascend910B3", "cost_model": "1"},
      "entries": {
        "<repo_key>": {
          "name": "conv1",                  # the op / subgraph it was first tuned for
          "op_type": "Conv2D",              # "subgraph" in the subgraph bank
          "signature": {...},               # what the key hashes (shapes, dtypes, formats, attrs, soc)
          "choice": {"format": ..., "schedule": ..., "impl": ...},   # the runtime's TuneChoice fields
          "dims": ["Schedule"],             # which tune dimensions differ from the default
          "default_us": 12.5,               # measured with the default choice
          "tuned_us": 9.75                  # measured with ``choice``
        }
      }
    }

A file whose ``validators`` differ from the running simulator (other soc, other cost model
version: ``runtime.cost.COST_MODEL_VERSION``, bumped on every change of behaviour) is ignored
with a warning, and moved aside to ``<file>.stale`` before anything new is written, as PyTorch
TunableOp rejects a results file whose validators differ.

An entry goes in only if it beats what is there: :meth:`Bank.offer` re-reads the file under an
exclusive ``fcntl`` lock (``<file>.lock``), compares, and writes a temporary file then renames
it, so two tuners writing the same bank at once lose nothing.

:func:`classify` and :class:`RepoSummary` implement AOE's documented repository rules and the
``repo_summary`` counters (``total = hit + add + unsatisfied``, ``reserved = hit - update``).
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from msprof_py import atomic
from msprof_py.errors import InvalidPathError, WarningLog

BANK_FORMAT = "msprof_py.aoe.bank"
BANK_SCHEMA_VERSION = 1
BANK_NOTE = ("msprof_py custom repository for its simulated NPU; numbers are simulator measurements; "
             "not compatible with CANN/AOE banks")
GRAPH_BANK_FILE = "subgraphs.json"


# ---------------------------------------------------------------------------------------------
# repository rules and counters
# ---------------------------------------------------------------------------------------------
def classify(hit: bool, repeat_tune: bool, tuned_us: float | None, reference_us: float | None) -> str:
    """AOE's repository rule for one operator/subgraph.

    Args:
        hit: the key is already in the repository.
        repeat_tune: REPEAT_TUNE is on.
        tuned_us: the best time tuning found (None when tuning was skipped or failed).
        reference_us: what tuning must beat: the existing entry's time on a hit, the default
            strategy's time on a miss.

    Returns:
        "reserved" (hit, entry kept: not re-tuned, or re-tuned and not better), "update" (hit,
        re-tuned and better), "add" (miss, better than the default), "unsatisfied" (miss, not better).
    """
    better = tuned_us is not None and reference_us is not None and tuned_us < reference_us
    if hit:
        return "update" if (repeat_tune and better) else "reserved"
    return "add" if better else "unsatisfied"


@dataclass
class RepoSummary:
    """``repo_summary`` counters, built from outcomes so that they always agree with what happened."""

    repo_add_num: int = 0
    repo_hit_num: int = 0
    repo_reserved_num: int = 0
    repo_unsatisfied_num: int = 0
    repo_update_num: int = 0
    total_num: int = 0

    def record(self, outcome: str) -> None:
        if outcome not in ("add", "update", "reserved", "unsatisfied"):
            raise ValueError(f"unknown repository outcome {outcome!r}")
        self.total_num += 1
        if outcome in ("update", "reserved"):
            self.repo_hit_num += 1
        setattr(self, f"repo_{outcome}_num", getattr(self, f"repo_{outcome}_num") + 1)

    def as_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in ("repo_add_num", "repo_hit_num", "repo_reserved_num",
                                              "repo_unsatisfied_num", "repo_update_num", "total_num")}


# ---------------------------------------------------------------------------------------------
# keys
# ---------------------------------------------------------------------------------------------
def repo_key(signature: Mapping[str, Any]) -> str:
    """A 64-bit decimal key (AOE's repo_key style) over the canonical JSON of ``signature``."""
    canon = json.dumps(signature, sort_keys=True, separators=(",", ":"), default=str)
    return str(int.from_bytes(hashlib.sha256(canon.encode()).digest()[:8], "big"))


def _safe_name(op_type: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", op_type) or "_"


# ---------------------------------------------------------------------------------------------
# the bank
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BankEntry:
    key: str
    name: str
    op_type: str
    choice: dict[str, Any]
    dims: tuple[str, ...]
    default_us: float
    tuned_us: float
    signature: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "op_type": self.op_type, "signature": self.signature, "choice": self.choice,
                "dims": list(self.dims), "default_us": self.default_us, "tuned_us": self.tuned_us}

    @classmethod
    def from_json(cls, key: str, d: Mapping[str, Any]) -> "BankEntry":
        return cls(key=key, name=str(d.get("name", "")), op_type=str(d.get("op_type", "")),
                   choice=dict(d["choice"]), dims=tuple(d.get("dims", ())), default_us=float(d["default_us"]),
                   tuned_us=float(d["tuned_us"]), signature=dict(d.get("signature", {})))


class Bank:
    """One custom repository directory of ``kind`` "op" or "graph" (see the module doc).

    Reading never fails on a bad file: it is ignored with a warning.  Writing into a directory
    that cannot be created or written raises :class:`InvalidPathError` naming it.
    """

    def __init__(self, directory: Path, kind: str, validators: Mapping[str, str],
                 warnings: WarningLog | None = None) -> None:
        self.directory = Path(directory)
        self.kind = kind
        self.validators = {"bank_kind": kind, **validators}
        self.warnings = warnings if warnings is not None else WarningLog()

    def file_for(self, op_type: str) -> Path:
        return self.directory / (GRAPH_BANK_FILE if self.kind == "graph" else f"{_safe_name(op_type)}.json")

    # -- reading ---------------------------------------------------------------------------
    def _read(self, path: Path) -> tuple[dict[str, Any], bool]:
        """(entries, usable): entries of ``path``; usable False when it exists but must not be used."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}, True
        except OSError as err:
            self.warnings.warn(f"{path}: custom repository file unreadable ({err.strerror}); ignored")
            return {}, False
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as err:
            self.warnings.warn(f"{path}: custom repository file is not JSON (line {err.lineno}); ignored")
            return {}, False
        if not isinstance(doc, dict) or doc.get("format") != BANK_FORMAT or not isinstance(doc.get("entries"), dict):
            self.warnings.warn(f"{path}: not an msprof_py custom repository file; ignored")
            return {}, False
        if doc.get("schema_version") != BANK_SCHEMA_VERSION or doc.get("validators") != self.validators:
            self.warnings.warn(f"{path}: custom repository made for {doc.get('validators')} "
                               f"(schema {doc.get('schema_version')}), this run is {self.validators}; ignored")
            return {}, False
        return doc["entries"], True

    def get(self, op_type: str, key: str) -> BankEntry | None:
        entries, _ = self._read(self.file_for(op_type))
        raw = entries.get(key)
        if raw is None:
            return None
        try:
            return BankEntry.from_json(key, raw)
        except (KeyError, TypeError, ValueError):
            self.warnings.warn(f"{self.file_for(op_type)}: entry {key} is malformed; ignored")
            return None

    def all_entries(self) -> dict[str, BankEntry]:
        """Every usable entry in the directory (key -> entry)."""
        out: dict[str, BankEntry] = {}
        if not self.directory.is_dir():
            return out
        for path in sorted(self.directory.glob("*.json")):
            entries, _ = self._read(path)
            for k, raw in entries.items():
                try:
                    out[k] = BankEntry.from_json(k, raw)
                except (KeyError, TypeError, ValueError):
                    self.warnings.warn(f"{path}: entry {k} is malformed; ignored")
        return out

    # -- writing ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self, path: Path) -> Iterator[None]:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise InvalidPathError(f"{self.directory}: cannot write the custom repository ({err.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def offer(self, entry: BankEntry) -> str:
        """Store ``entry`` if it beats the current one for its key.

        Returns "add" (key was absent), "update" (replaced a slower entry) or "kept" (the
        existing entry is as fast or faster; nothing written).
        """
        path = self.file_for(entry.op_type)
        with self._locked(path):
            entries, usable = self._read(path)
            if not usable and path.exists():
                stale = path.with_name(path.name + ".stale")
                os.replace(path, stale)
                self.warnings.warn(f"{path}: moved aside to {stale.name} (unusable for this run)")
            old = entries.get(entry.key)
            if old is not None and float(old.get("tuned_us", float("inf"))) <= entry.tuned_us:
                return "kept"
            entries = dict(entries)
            entries[entry.key] = entry.to_json()
            self._write(path, entries)
            return "update" if old is not None else "add"

    def _write(self, path: Path, entries: dict[str, Any]) -> None:
        doc = {"format": BANK_FORMAT, "schema_version": BANK_SCHEMA_VERSION, "note": BANK_NOTE,
               "validators": self.validators, "entries": entries}
        text = json.dumps(doc, sort_keys=True, indent=1) + "\n"
        atomic.write_text(path, text, error="cannot write the custom repository")


def load_tuning(target: Any, **kwargs: Any) -> dict[str, Any]:
    """``tuning`` (op name -> runtime TuneChoice) for ``target`` from the custom repositories.

    See :func:`msprof_py.aoe.apply.tuned_build` (which also returns the fused workload to run
    when the subgraph bank fuses ops).
    """
    from msprof_py.aoe.apply import load_tuning as _load_tuning

    return _load_tuning(target, **kwargs)
