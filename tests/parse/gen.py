"""Random small PROF dirs for property / differential tests, built with the fixture's
hand-made record builder (raw/ dtypes only, no collector)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def _fixture_module():
    name = "make_prof_small"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "fixtures" / "make_prof_small.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


def random_prof(out: Path, seed: int, n_static: int, replays: int, n_dyn: int, start_id: int,
                p_drop: float, n_extra: int, late_zero: bool = False) -> Path:
    """A PROF dir with a static model (``n_static`` ops replayed ``replays`` times), ``n_dyn``
    single ops on streams 2/3 whose task ids start at ``start_id`` (wrapping with flips on both
    sides), device logs dropped with probability ``p_drop`` and ``n_extra`` device-only tasks."""
    m = _fixture_module()
    rng = np.random.default_rng(seed)
    b = m.Builder()
    us = 1000
    from msprof_py.raw import ts_track
    from msprof_py.raw.common import LEVEL_ACL, LEVEL_MODEL, LEVEL_RUNTIME

    t = 100 * us
    if n_static:
        b.api(LEVEL_ACL, m.ACL["aclmdlLoadFromFile"], 1001, t, t + (60 * n_static + 20) * us, 0)
        b.api(LEVEL_MODEL, m.MODEL_TYPES["ModelLoad"], 1001, t + 5 * us, t + (60 * n_static + 15) * us, 1)
        kinds = [("Conv2D", "AI_CORE", "KERNEL_AICORE", None), ("Relu", "AI_VECTOR_CORE", "KERNEL_AIVEC", None),
                 ("MatMul", "MIX_AIC", "KERNEL_MIX_AIC", [1, 2])]
        ops = []
        for i in range(n_static):
            k = kinds[int(rng.integers(0, 3))]
            m.launch_op(b, 1001, t + 10 * us + i * 60 * us, f"s{i}", k[0], k[1], k[2], stream=1, task=i, static=True,
                        ctx=k[3], block=(4, 2) if k[3] else (4, 0))
            ops.append(k)
        t += (60 * n_static + 100) * us
        for it in range(replays):
            b.event_pair(LEVEL_MODEL, m.MODEL_TYPES["ModelExecute"], 1001, t, t + 10 * us, 1, it + 1)
            b.step(t + 20 * us, 1, it + 1, ts_track.TAG_MODEL_START)
            d = t + 30 * us
            for i, k in enumerate(ops):
                if rng.random() >= p_drop:
                    b.stars(1, i, d, d + int(rng.integers(1, 40)) * us, sqe=0)
                    if k[3]:
                        for c in k[3]:
                            b.stars(1, i, d + c * us, d + (c + 1) * us, ctx=c)
                d += 50 * us
            b.step(d, 1, it + 1, ts_track.TAG_MODEL_END)
            t = d + 100 * us
    next_id = {2: start_id, 3: (start_id + 7) % 65536}
    flips = {2: 0, 3: 0}
    pending = {2: False, 3: False}  # late_zero: id 0 was taken before the runtime's flip record
    dev_t = {2: t + 50 * us, 3: t + 50 * us}

    def flip(stream: int, thread: int, flip_task: int) -> None:
        nonlocal t
        b.api(LEVEL_RUNTIME, m.RT_API["FlipTask"], thread, t, t + 5 * us, 0)
        b.task(thread, t + 2 * us, stream, flip_task, "FLIP_TASK", batch=flips[stream])
        b.dev_flip(dev_t[stream], stream, flips[stream], flip_task)
        dev_t[stream] += 5 * us
        t += 10 * us

    for i in range(n_dyn):
        stream = int(rng.integers(2, 4))
        thread = int(rng.choice([1001, 1002]))
        task = next_id[stream]
        b.api(LEVEL_ACL, m.ACL["aclnnAdd"], thread, t, t + 90 * us, 0)
        m.launch_op(b, thread, t + 5 * us, f"d{i}", "Add", "AI_VECTOR_CORE", "KERNEL_AIVEC", stream=stream, task=task,
                    static=False, batch=flips[stream] + (1 if pending[stream] else 0))
        start = max(dev_t[stream], t + 60 * us)
        if rng.random() >= p_drop:
            b.stars(stream, task, start, start + int(rng.integers(1, 30)) * us, sqe=2)
        dev_t[stream] = start + 40 * us
        t += 100 * us
        next_id[stream] = (task + 1) % 65536
        if pending[stream]:  # the flip record arrives after task 0: flip task id is 1
            pending[stream] = False
            flips[stream] += 1
            flip(stream, thread, 1)
        elif next_id[stream] == 0:  # wrap: the runtime flips; host and device both record it
            if late_zero:
                pending[stream] = True
            else:
                flips[stream] += 1
                flip(stream, thread, 0)
    for j in range(n_extra):
        b.stars(9, j, t + j * 20 * us, t + j * 20 * us + 10 * us, sqe=4)
    return m.write_builder(b, out)
