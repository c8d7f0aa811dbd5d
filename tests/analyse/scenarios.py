"""Simulated runs with and without each problem the advice rules look for.

Each scenario collects a PROF dir with the fault and one without it (same seed, same task
layout, so jitter draws match) and returns both paths plus the injected cost: how much longer
the faulty run's device span (first task start .. last task end, summed over devices) is.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable

from msprof_py.collect import collect, profile
from msprof_py.runtime import acl
from msprof_py.runtime.graph_file import load_graph_file

ITER = 4


def graph_doc(name: str = "adv") -> dict[str, Any]:
    """A small serial inference graph: MatMul -> Add -> MatMul (twin) -> Add (twin) -> Relu."""
    def mm(n: str, x: str, w: str) -> dict:
        return {"name": n, "type": "MatMulV2", "inputs": [x, w], "outputs": [{"name": f"{n}:0", "shape": [512, 1024]}]}

    def add(n: str, a: str, b: str) -> dict:
        return {"name": n, "type": "Add", "inputs": [a, b], "outputs": [{"name": f"{n}:0", "shape": [512, 1024]}]}

    return {"name": name, "batch": 512,
            "inputs": [{"name": "x", "shape": [512, 1024]}],
            "weights": [{"name": "w1", "shape": [1024, 1024], "format": "FRACTAL_NZ"},
                        {"name": "w2", "shape": [1024, 1024], "format": "FRACTAL_NZ"},
                        {"name": "b", "shape": [512, 1024]}],
            "ops": [mm("l1/MatMulV2", "x", "w1"), add("l1/Add", "l1/MatMulV2:0", "b"),
                    mm("l2/MatMulV2", "l1/Add:0", "w2"), add("l2/Add", "l2/MatMulV2:0", "b"),
                    {"name": "out/Relu", "type": "Relu", "inputs": ["l2/Add:0"],
                     "outputs": [{"name": "out/Relu:0", "shape": [512, 1024]}]}]}


def run_graph(doc: dict[str, Any], out: Path, devices: int = 1, iterations: int = ITER, seed: int = 3) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    f = out / "graph.json"
    import json
    f.write_text(json.dumps(doc))
    g = load_graph_file(f)
    return collect(g, output=out, devices=devices, iterations=iterations, seed=seed, fixed_clock=True).prof_dir


def run_script(body: Callable[[], None], out: Path, seed: int = 3) -> Path:
    with profile(output=out, fixed_clock=True, seed=seed) as session:
        acl.install_hooks(session.hooks, clock=session.clock, spec=session.spec, seed=seed)
        try:
            acl.init()
            acl.rt.set_device(0)
            body()
            info = acl.finalize()
        finally:
            acl.uninstall_hooks()
        session.sim = info
        session.set_run(device_ids=info.device_ids, pid=info.pid, pid_name=info.pid_name,
                        end_sim_ns=info.end_sim_ns, spec=info.spec)
    assert session.result is not None
    return session.result.prof_dir


def span_ns(session: Any) -> int:
    """Device span summed over devices: first task start .. last task end of the run."""
    t = session.tasks[session.tasks["start_ns"] >= 0]
    g = t.assign(end=t["start_ns"] + t["dur_ns"]).groupby("device_id")
    return int((g["end"].max() - g["start_ns"].min()).sum())


def with_op(doc: dict[str, Any], name: str, **changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    for op in doc["ops"]:
        if op["name"] == name:
            for k, v in changes.items():
                if k == "attrs":
                    op.setdefault("attrs", {}).update(v)
                else:
                    op[k] = v
    return doc


def matmul_loop(n: int = 20, work_us: float = 0.0, sync_each: bool = False) -> Callable[[], None]:
    """``n`` aclnnMatmul calls; ``work_us`` of host work before each; a sync after each or one at the end."""
    def body() -> None:
        s = acl.rt.create_stream()
        for _ in range(n):
            if work_us:
                acl.host.work(work_us)
            acl.nn.matmul((2048, 2048), (2048, 2048), stream=s)
            if sync_each:
                acl.rt.synchronize_stream(s)
        acl.rt.synchronize_stream(s)
    return body


def graph_doc_train() -> dict[str, Any]:
    """The small graph as a training step (fp / bp / update phases): all-reduces on 2 devices."""
    doc = graph_doc("adv_train")
    for op in doc["ops"]:
        op["phase"] = "fp"
    doc["ops"] += [
        {"name": "grad/l2/MatMulV2", "type": "MatMulV2", "inputs": ["l1/Add:0", "out/Relu:0"], "phase": "bp",
         "attrs": {"transpose_x1": True}, "outputs": [{"name": "grad/w2", "shape": [1024, 1024]}]},
        {"name": "grad/l1/MatMulV2", "type": "MatMulV2", "inputs": ["x", "out/Relu:0"], "phase": "bp",
         "attrs": {"transpose_x1": True}, "outputs": [{"name": "grad/w1", "shape": [1024, 1024]}]},
        {"name": "update/w1", "type": "ApplyMomentum", "inputs": ["w1", "grad/w1"], "phase": "update",
         "outputs": [{"name": "w1_new", "shape": [1024, 1024], "format": "FRACTAL_NZ"}]},
        {"name": "update/w2", "type": "ApplyMomentum", "inputs": ["w2", "grad/w2"], "phase": "update",
         "outputs": [{"name": "w2_new", "shape": [1024, 1024], "format": "FRACTAL_NZ"}]}]
    return doc


def graph_doc_small_grads(alone: bool) -> dict[str, Any]:
    """The training graph plus four small bias gradients (2 KiB each); ``alone``: each is
    all-reduced on its own (op attr ``allreduce: alone``) instead of being fused."""
    doc = graph_doc_train()
    for k in range(4):
        doc["weights"].append({"name": f"bias{k}", "shape": [1024]})
        op = {"name": f"grad/bias{k}/BiasAddGrad", "type": "BiasAddGrad", "inputs": ["out/Relu:0"], "phase": "bp",
              "outputs": [{"name": f"grad/bias{k}", "shape": [1024]}]}
        if alone:
            op["attrs"] = {"allreduce": "alone"}
        doc["ops"].insert(len(doc["ops"]) - 2, op)
    return doc


def graph_doc_train_overlapped() -> dict[str, Any]:
    """The training graph with the weight gradients first, then two long backward ops (fp32
    products of activations on one core: no weight gradient) and a small bias gradient last:
    GE's fusion closes the large all-reduce segment after the weight gradients, where it runs
    beside the long ops, and only the bias's small segment is left after the backward pass."""
    doc = graph_doc_train()
    doc["weights"].append({"name": "bias", "shape": [1024]})
    extra = [{"name": f"grad/proj{k}/MatMulV2", "type": "MatMulV2", "inputs": ["l1/Add:0", "out/Relu:0"],
              "phase": "bp", "attrs": {"transpose_x1": True, "kernel_choice": {"schedule": "single_core"}},
              "outputs": [{"name": f"grad/proj{k}:0", "shape": [1024, 1024], "dtype": "FLOAT"}]} for k in range(2)]
    extra.append({"name": "grad/bias/BiasAddGrad", "type": "BiasAddGrad", "inputs": ["out/Relu:0"], "phase": "bp",
                  "outputs": [{"name": "grad/bias", "shape": [1024]}]})
    doc["ops"][len(doc["ops"]) - 2:len(doc["ops"]) - 2] = extra
    return doc


def device_span_ns(session: Any, device_id: int = 0) -> int:
    """One device's span: first task start .. last task end."""
    t = session.tasks[(session.tasks["start_ns"] >= 0) & (session.tasks["device_id"] == device_id)]
    return int((t["start_ns"] + t["dur_ns"]).max() - t["start_ns"].min())
