"""The options of ``compare`` (the seed's run_precision_analysis.py options, its defaults) and
the parsing of the two given as text: ``--map_node_dict`` and ``--skip_keys``."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from msprof_py.errors import InvalidParamError, InvalidPathError


@dataclass(frozen=True)
class CompareOptions:
    """The seed's options (defaults as documented there)."""

    atol: float = 0.005
    rtol: float = 0.2
    diff_cnt: int = 128
    show_graph: bool = False
    max_bins: int = 128
    min_bins: int = 1
    max_cores: int = 16
    map_node_dict: dict[str, str] = field(default_factory=dict)  # cpu name -> npu name
    force_compare: bool = False
    skip_keys: tuple[str, ...] = ()

    def validate(self) -> None:
        for name in ("atol", "rtol"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise InvalidParamError(f"--{name} must be a finite number >= 0, got {v}")
        if self.rtol > 1.0:
            raise InvalidParamError(f"--rtol must be in [0.0, 1.0], got {self.rtol}")
        if not 0 <= self.diff_cnt <= 2**63 - 1:  # it is stored as a 64-bit count (compare_params.json)
            raise InvalidParamError(f"--diff_cnt must be in 0 .. 2^63-1 (it caps the error elements written per "
                                    f"node; no tensor has more), got {self.diff_cnt}")
        if self.max_bins < 1:
            raise InvalidParamError(f"--max_bins must be >= 1, got {self.max_bins}")
        if not 1 <= self.min_bins <= self.max_bins:
            raise InvalidParamError(f"--min_bins must be in [1, max_bins={self.max_bins}], got {self.min_bins}")
        if self.show_graph:
            from msprof_py.precision.plots import require_matplotlib

            require_matplotlib()
        if self.max_cores < 1:
            raise InvalidParamError(f"--max_cores must be >= 1, got {self.max_cores}")


def parse_map_node_dict(text: str | None) -> dict[str, str]:
    """The seed's ``'{"cpu_name":"npu_name"}'`` (a JSON object given inline, or ``@file``)."""
    if not text:
        return {}
    src = "--map_node_dict"
    if text.startswith("@"):
        src = text[1:]
        try:
            text = Path(src).read_text()
        except OSError as err:
            raise InvalidPathError(f"{src}: cannot read --map_node_dict file ({err.strerror})") from None
    try:
        d = orjson.loads(text)
    except orjson.JSONDecodeError as err:
        raise InvalidParamError(f"{src}: not a JSON object like '{{\"cpu_name\":\"npu_name\"}}' ({err})") from None
    if not isinstance(d, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in d.items()):
        raise InvalidParamError(f"{src}: must map reference (CPU) node names to NPU node names, strings only")
    return d


def parse_skip_keys(text: str | None) -> tuple[str, ...]:
    """Comma-separated keywords; a node whose name contains one is skipped."""
    return tuple(k.strip() for k in (text or "").split(",") if k.strip())
