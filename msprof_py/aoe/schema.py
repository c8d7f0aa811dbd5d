"""AOE result-file schema: field names, the improvement formula, and a small validator.

The schema is the one Huawei documents for ``aoe_result_opat_*.json`` (operator tuning, OPAT)
and ``aoe_result_sgat_*.json`` (subgraph tuning, SGAT).  Two layouts exist:

- a top-level list ``[{"basic": {...}}, {"OPAT": {...}}]`` (one tuning task), and
- a dict ``{"report_{timestamp}_{tid}": [ ...same list... ], ...}`` (several tuning tasks).

Improvement percentages are ``before / after - 1`` (the documented 134 us -> 99 us example is
"35.35%", not 26.12%).  The documented OPAT examples round to two decimals (16.71 -> 15.71 us is
"6.37%", 6.365 exactly), the SGAT examples truncate (4.58434 -> 2.573203 ms is "78.15%",
78.157 exactly); :func:`format_pct` reproduces both.

:func:`validate` checks a parsed document against :data:`RESULT_SCHEMA`, a JSON-schema-like
description written as plain dicts (no dependency): it returns a list of problems, each naming
the JSON path, empty when the document conforms.
"""
from __future__ import annotations

import math
import re
from typing import Any

OPAT = "OPAT"
SGAT = "SGAT"
BASIC = "basic"
TUNE_DIMS = ("Format", "Schedule", "Impl")
OPAT_RESULTS = ("tuning successful", "tuning failed", "tune tuning incomplete")
UPDATE_MODES = ("add", "update")
SUMMARY_KEYS = ("repo_add_num", "repo_hit_num", "repo_reserved_num", "repo_unsatisfied_num",
                "repo_update_num", "total_num")

REPORT_KEY_RE = re.compile(r"^report_(?P<ts>\d{8}_\d+|\d+)_(?P<tid>\d+)$")
RESULT_NAME_RE = re.compile(
    r"^aoe_result_(?P<mode>opat|sgat)_(?P<ts>\d{8}_\d+)_(?:pid)?(?P<pid>\d+)\.json$")

PCT_TOLERANCE = 0.0101  # percentage points: two-decimal rounding or truncation of the exact value


def improvement(before: float, after: float) -> float:
    """AOE's improvement in percent: ``100 * (before / after - 1)`` (NaN if after <= 0)."""
    if not (after > 0) or not math.isfinite(before):
        return math.nan
    return 100.0 * (before / after - 1.0)


def format_pct(pct: float, mode: str = OPAT) -> str:
    """``35.3535 -> "35.35%"``: OPAT rounds half-up to 2 decimals, SGAT truncates toward zero
    (as the documented examples do)."""
    cents = pct * 100.0
    # the 1e-9 guards against representation error (0.35 * 100 == 34.99999...)
    if mode == OPAT:
        whole = math.floor(cents + 0.5 + 1e-9)
    else:
        whole = math.floor(abs(cents) + 1e-9) * (1 if cents >= 0 else -1)
    return f"{whole / 100:.2f}%"


def parse_pct(value: Any) -> float:
    """``"35.35%"`` / ``35.35`` / ``"35.35"`` -> 35.35; anything else -> NaN."""
    if isinstance(value, bool):
        return math.nan
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        s = value.strip().rstrip("%").strip()
        try:
            return float(s)
        except ValueError:
            return math.nan
    return math.nan


def pct_formula(reported: float, before: float, after: float) -> str:
    """Which formula ``reported`` follows: "before/after-1", "1-after/before" or "unknown"."""
    if not (math.isfinite(reported) and after > 0 and before > 0):
        return "unknown"
    if abs(reported - improvement(before, after)) <= PCT_TOLERANCE:
        return "before/after-1"
    if abs(reported - 100.0 * (1.0 - after / before)) <= PCT_TOLERANCE:
        return "1-after/before"
    return "unknown"


# ---------------------------------------------------------------------------------------------
# A JSON-schema-like description.  Node kinds:
#   {"type": "object", "required": {...}, "optional": {...}, "extra": False}
#   {"type": "array", "items": node}          {"type": "number"}  {"type": "integer"}
#   {"type": "string", "enum": (...), "pattern": "..."}      {"any_of": [node, ...]}
# ---------------------------------------------------------------------------------------------
_NUM = {"type": "number"}
_INT = {"type": "integer", "minimum": 0}
_PCT = {"type": "string", "pattern": r"^-?\d+\.\d{2}%$"}
_STR = {"type": "string"}

_SUMMARY = {"type": "object", "required": {k: _INT for k in SUMMARY_KEYS}, "extra": False}

_TUNE_LEAF = {"type": "object", "extra": False, "required": {
    "performance_after_tune(us)": _NUM,
    "performance_before_tune(us)": _NUM,
    "performance_improvement": _PCT,
    "update_mode": {"type": "string", "enum": UPDATE_MODES},
}}
_OP_ITEM = {"type": "object", "extra": False, "required": {
    "op_name": _STR,
    "op_type": {"any_of": [_STR, {"type": "array", "items": _STR}]},
    "tune_performance": {"type": "object", "extra": False, "min_keys": 1,
                         "optional": {d: _TUNE_LEAF for d in TUNE_DIMS}},
}}
_OPAT = {"type": "object", "extra": False,
         "required": {"opat_tuning_result": {"type": "string", "enum": OPAT_RESULTS},
                      "repo_summary": _SUMMARY},
         "optional": {
             "model_baseline_performance(ms)": _NUM,
             "model_performance_improvement": _PCT,
             "model_result_performance(ms)": _NUM,
             "repo_modified_operators": {"any_of": [
                 {"type": "array", "items": _OP_ITEM},
                 {"type": "object", "extra": False,
                  "optional": {"add_repo_operators": {"type": "array", "items": _OP_ITEM},
                               "update_repo_operators": {"type": "array", "items": _OP_ITEM}}}]},
             "tuning_failed_operators": {"type": "array", "items": _STR},
         }}
_SG_ITEM = {"type": "object", "extra": False, "required": {
    "performance_after_tune(ms)": _NUM,
    "performance_before_tune(ms)": _NUM,
    "performance_improvement": _PCT,
    "repo_key": _STR,
}}
_SGAT = {"type": "object", "extra": False,
         "required": {"model_baseline_performance(ms)": _NUM,
                      "model_performance_improvement": _PCT,
                      "model_result_performance(ms)": _NUM,
                      "repo_modified_subgraphs": {"type": "object", "extra": False, "required": {
                          "add_repo_subgraphs": {"type": "array", "items": _SG_ITEM},
                          "update_repo_subgraphs": {"type": "array", "items": _SG_ITEM}}},
                      "repo_summary": _SUMMARY}}
_BASIC = {"type": "object", "extra": False, "required": {"tuning_name": _STR},
          "optional": {"tuning_time(s)": _INT}}
_TASK = {"type": "array", "min_items": 1, "max_items": 2, "items": {"any_of": [
    {"type": "object", "extra": False, "required": {BASIC: _BASIC}},
    {"type": "object", "extra": False, "required": {OPAT: _OPAT}},
    {"type": "object", "extra": False, "required": {SGAT: _SGAT}},
]}}
RESULT_SCHEMA: dict[str, Any] = {"any_of": [
    _TASK,
    {"type": "object", "min_keys": 1, "key_pattern": REPORT_KEY_RE.pattern, "values": _TASK},
]}
"""The documented result file, either layout (the writer's output must validate against this)."""


def validate(doc: Any, schema: dict[str, Any] | None = None, path: str = "$") -> list[str]:
    """Problems of ``doc`` against ``schema`` (default :data:`RESULT_SCHEMA`), as ``"$.a[0].b: ..."``."""
    node = RESULT_SCHEMA if schema is None else schema
    if "any_of" in node:
        results = [validate(doc, alt, path) for alt in node["any_of"]]
        if any(not r for r in results):
            return []
        # report the alternative that got furthest: right type here, then fewest problems at this
        # very level (missing or unexpected keys), then fewest problems overall
        return min(results, key=lambda r: (any(e.startswith(f"{path}: expected an ") for e in r),
                                           sum(e.startswith(f"{path}: ") for e in r), len(r)))
    kind = node["type"]
    if kind == "object":
        if not isinstance(doc, dict):
            return [f"{path}: expected an object, got {type(doc).__name__}"]
        errors: list[str] = []
        required = node.get("required", {})
        optional = node.get("optional", {})
        if len(doc) < node.get("min_keys", 0):
            errors.append(f"{path}: expected at least {node['min_keys']} key(s)")
        for key, sub in required.items():
            if key not in doc:
                errors.append(f"{path}: missing key {key!r}")
            else:
                errors += validate(doc[key], sub, f"{path}.{key}")
        for key, value in doc.items():
            if key in required:
                continue
            if key in optional:
                errors += validate(value, optional[key], f"{path}.{key}")
            elif "values" in node:
                if not re.match(node["key_pattern"], key):
                    errors.append(f"{path}: key {key!r} does not match {node['key_pattern']}")
                errors += validate(value, node["values"], f"{path}.{key}")
            elif node.get("extra", True) is False:
                errors.append(f"{path}: unexpected key {key!r}")
        return errors
    if kind == "array":
        if not isinstance(doc, list):
            return [f"{path}: expected an array, got {type(doc).__name__}"]
        errors = []
        if len(doc) < node.get("min_items", 0):
            errors.append(f"{path}: expected at least {node['min_items']} item(s)")
        if len(doc) > node.get("max_items", len(doc)):
            errors.append(f"{path}: expected at most {node['max_items']} item(s)")
        for i, item in enumerate(doc):
            errors += validate(item, node["items"], f"{path}[{i}]")
        return errors
    if kind == "string":
        if not isinstance(doc, str):
            return [f"{path}: expected a string, got {type(doc).__name__}"]
        if "enum" in node and doc not in node["enum"]:
            return [f"{path}: {doc!r} is not one of {list(node['enum'])}"]
        if "pattern" in node and not re.match(node["pattern"], doc):
            return [f"{path}: {doc!r} does not match {node['pattern']}"]
        return []
    if kind in ("number", "integer"):
        ok = isinstance(doc, (int, float)) and not isinstance(doc, bool)
        if kind == "integer":
            ok = ok and float(doc).is_integer()
        if not ok:
            return [f"{path}: expected {'an integer' if kind == 'integer' else 'a number'}, got {doc!r}"]
        if not math.isfinite(doc):
            return [f"{path}: not finite"]
        if doc < node.get("minimum", -math.inf):
            return [f"{path}: {doc} < {node['minimum']}"]
        return []
    raise ValueError(f"unknown schema node type {kind!r}")  # a bug in RESULT_SCHEMA itself
