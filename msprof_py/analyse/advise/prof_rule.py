"""msprof's ``prof_rule_{device}.json`` and its "Performance Summary Report" screen print.

Layout (msprof analysis/common_func/common_prof_rule.py and tuning/, checked against real
``prof_rule_0_*.json`` files of an Ascend 310B): ``{"status": 0, "data": {"Op Summary": [five
rule types], "Op Parallel": [...], "Model Summary": [...]}}``; each rule type is ``{"Rule Type",
"Rule Description", "result": [{"Rule Subtype", "Rule Suggestion", "Tuning Data"}]}``.  Op Summary
"Tuning Data" is a list of op names (``["N/A"]`` when the finding has no op); Op Parallel's is
msprof's dict of AI Core / AI CPU / concurrent execution times (us); Model Summary's is the
dict of time per bound type, which needs PMU data (left empty without it).  Our findings are
filed under the Op Summary rule type they belong to, with the finding as the suggestion.
"""
from __future__ import annotations

from typing import Any


from msprof_py.analyse.advise.base import (COMPUTATION, MEMORY, METRICS, PROCESSING, SCHEDULE, Finding,
                                           device_task_of, merge_intervals, overlap_ns, text_in)

DESCRIPTIONS = {
    COMPUTATION: "Prompt users of some improperly high or low vector/cube/scalar usages of operators on AI Cores.",
    MEMORY: "Display improper memory usages of operators.",
    SCHEDULE: "Display inefficient scheduling of operators.",
    PROCESSING: ("Provide various processing suggestions based on operator processing policy, including multi-core "
                 "processing, tiling policy, and reduced use of AI CPU operators."),
    METRICS: "Collect statistics on operator performance efficiency and prompt users of high resource consumption.",
}
PARALLEL = "Operator Parallelism"
PARALLEL_DESCRIPTION = "Identify the serial wait bottleneck between the AI CPU and AI Core."
BOTTLENECK = "Model Bottleneck Analysis"
BOTTLENECK_DESCRIPTION = ("Identify model bottleneck distribution indicated by cube, vector, scalar and mte "
                          "utilization.")
AI_CPU_THRESHOLD = 0.05  # msprof: "Exceed the experience threshold 5%"
PARALLEL_KEYS = ("AI Core Execution Time(us)", "AI CPU Execution Time(us)",
                 "Concurrent AI Core and AI CPU Execution Time(us)")


def op_parallel(session: Any, device_id: int) -> dict[str, float] | None:
    """msprof's Op Parallel data: AI Core and AI CPU time outside their overlap and the overlap
    (us); None when either kind is absent or AI CPU time is under 5% of the total."""
    t = device_task_of(session, device_id)
    core, cpu = text_in(t["task_type"], ["AI_CORE"]), text_in(t["task_type"], ["AI_CPU"])
    if not core.any() or not cpu.any():
        return None
    start, end = t["start_ns"].to_numpy(), t["end_ns"].to_numpy()
    both = overlap_ns(start[core], end[core], start[cpu], end[cpu])
    c0, c1 = merge_intervals(start[core], end[core])
    p0, p1 = merge_intervals(start[cpu], end[cpu])
    d = {PARALLEL_KEYS[0]: (int((c1 - c0).sum()) - both) / 1000.0,
         PARALLEL_KEYS[1]: (int((p1 - p0).sum()) - both) / 1000.0, PARALLEL_KEYS[2]: both / 1000.0}
    total = sum(d.values())
    if not total or d[PARALLEL_KEYS[1]] / total <= AI_CPU_THRESHOLD:
        return None
    return d


def prof_rule(session: Any, device_id: int, found: list[Finding]) -> dict[str, Any]:
    """The ``prof_rule_{device_id}.json`` document."""
    return document(device_id, found, op_parallel(session, device_id))


def document(device_id: int, found: list[Finding], par: dict[str, float] | None) -> dict[str, Any]:
    """The ``prof_rule_{device_id}.json`` document from the findings and the device's
    :func:`op_parallel` data (computed wherever that device's tasks were in memory)."""
    ops = []
    for rtype, desc in DESCRIPTIONS.items():
        res = [{"Rule Subtype": "", "Rule Suggestion": f"{f.title}. {f.suggestion}", "Tuning Data": f.ops or ["N/A"]}
               for f in found if f.device_id == device_id and f.category == rtype]
        ops.append({"Rule Type": rtype, "Rule Description": desc, "result": res})
    par_res = [{"Rule Subtype": "", "Rule Suggestion": "AI CPU and AI Core operators execute serially",
                "Tuning Data": par}] if par else []
    return {"status": 0, "data": {
        "Op Summary": ops,
        "Op Parallel": [{"Rule Type": PARALLEL, "Rule Description": PARALLEL_DESCRIPTION, "result": par_res}],
        "Model Summary": [{"Rule Type": BOTTLENECK, "Rule Description": BOTTLENECK_DESCRIPTION, "result": []}]}}


def summary_report(doc: dict[str, Any]) -> str:
    """msprof's screen print of a prof_rule document (tuning/base_tuning_view.py's format)."""
    lines = ["", "Performance Summary Report:"]
    n = 0
    for kind in ("Op Summary", "Op Parallel", "Model Summary"):
        for item in doc.get("data", {}).get(kind, []):
            n += 1
            lines.append(f"{n}. {item.get('Rule Type', '')}:")
            res = item.get("result") or []
            if not res:
                lines.append("\tN/A")
            for i, r in enumerate(res, 1):
                lines.append(f"\t{i}){r.get('Rule Suggestion', '')}: {_format(kind, r.get('Tuning Data'))}")
    return "\n".join(lines) + "\n"


def _format(kind: str, data: Any) -> str:
    if kind == "Op Parallel" and isinstance(data, dict):
        total = sum(data.values())
        ratio = data.get(PARALLEL_KEYS[1], 0.0) / total if total else 0
        return f"Percentage of AI CPU Execution Time is {ratio:.2%}, Exceed the experience threshold 5%."
    if isinstance(data, dict):
        return ", ".join(f"{k}: {v}" for k, v in data.items())
    return "[{0}]".format(",".join(map(str, data or [])))
