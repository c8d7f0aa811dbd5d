"""Parser benchmark (issue 3, acceptance 5): parse a 1,000,000-task collection.

The collection is generated here with the raw/ dtypes directly (vectorised; no collector), as a
dynamic-graph workload, the host-heavy case: every task has its own Node launch API, Runtime
API, task_track, node_basic_info and tensor_info record; 1000 tasks per iteration
(aclmdlExecute + ModelExecute event + MODEL_START/END step trace), 4 host threads, 8 streams
whose 16-bit task ids wrap (FLIP_TASK + device TaskFlip), STARS ACSQ start/end logs, 2 MB slices.

Each measurement runs in a fresh process so its peak RSS (ru_maxrss) belongs to it alone:
1. parse without cache (writes the cache), 2. cached reload.

Usage: python benchmarks/bench_parse.py [--tasks 1000000] [--dir /tmp/bench_parse] [--append-results]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from msprof_py.raw import (api_event, hash_dic, node_basic_info, stars_soc, task_track, tensor_info,  # noqa: E402
                           ts_track)
from msprof_py.raw.common import EVENT_FLAG, LEVEL_ACL, LEVEL_MODEL, LEVEL_NODE, LEVEL_RUNTIME, new_records  # noqa: E402
from msprof_py.raw.files import DEFAULT_SLICE_BYTES, device_data_name, host_data_name  # noqa: E402

PER_ITER = 1000
THREADS = 4
STREAMS = 8
HOST_MHZ, HWTS_MHZ = 100, 50
WALL_US, MONO_NS = 1_767_225_600_000_000, 3_600_000_000_000
HOST0, DEV0 = MONO_NS * HOST_MHZ // 1000, MONO_NS * HWTS_MHZ // 1000
OPS = [("Conv2D", 0), ("Relu", 2), ("Add", 2), ("MatMul", 0), ("Cast", 2)]


def hcnt(ns: np.ndarray) -> np.ndarray:
    return (HOST0 + ns * HOST_MHZ // 1000).astype(np.uint64)


def dcnt(ns: np.ndarray) -> np.ndarray:
    return (DEV0 + ns * HWTS_MHZ // 1000).astype(np.uint64)


def rows(a: np.ndarray) -> np.ndarray:
    """Records as (n, itemsize) bytes; np.concatenate of padded structured arrays drops padding."""
    return np.frombuffer(a.tobytes(), np.uint8).reshape(len(a), a.dtype.itemsize)


def write_stream(folder: Path, name_of, blob: bytes) -> None:
    for k, off in enumerate(range(0, len(blob), DEFAULT_SLICE_BYTES)):
        (folder / name_of(k)).write_bytes(blob[off:off + DEFAULT_SLICE_BYTES])


def make_collection(out: Path, n: int) -> Path:
    prof = out / "PROF_000001_20260101000000000_BENCHPARSE000001"
    if prof.exists():
        shutil.rmtree(prof)
    host, dev = prof / "host" / "data", prof / "device_0" / "data"
    host.mkdir(parents=True)
    dev.mkdir(parents=True)
    i = np.arange(n, dtype=np.int64)
    it = i // PER_ITER
    n_it = int(it[-1]) + 1
    t = it * (PER_ITER * 2_000 + 100_000) + (i % PER_ITER) * 2_000 + 50_000  # launch times, ns
    thread = (1001 + it % THREADS).astype(np.uint32)
    names = {f"op{k}_{OPS[k % len(OPS)][0]}": hash_dic.stable_hash(f"op{k}_{OPS[k % len(OPS)][0]}")
             for k in range(PER_ITER)}
    op_hash = np.array(list(names.values()), dtype=np.uint64)[i % PER_ITER]
    types = {name: hash_dic.stable_hash(name) for name, _ in OPS}
    op_type = np.array([types[OPS[k % len(OPS)][0]] for k in range(PER_ITER)], np.uint64)[i % PER_ITER]
    ge_type = np.array([OPS[k % len(OPS)][1] for k in range(PER_ITER)], np.uint32)[i % PER_ITER]

    # api_event: per iteration ACL + 2 Model events; per task Node launch + Runtime KernelLaunch
    it_start = np.arange(n_it, dtype=np.int64) * (PER_ITER * 2_000 + 100_000)
    it_end = it_start + PER_ITER * 2_000 + 90_000
    it_thread = (1001 + np.arange(n_it) % THREADS).astype(np.uint32)
    acl = new_records(api_event.DTYPE, n_it)
    acl["level"], acl["type"], acl["thread_id"] = LEVEL_ACL, (2 << 16) | 2, it_thread
    acl["timestamp"], acl["end"] = hcnt(it_start + 10_000), hcnt(it_end)
    ev = new_records(api_event.DTYPE, 2 * n_it)
    ev["level"], ev["type"], ev["thread_id"] = LEVEL_MODEL, 1, np.repeat(it_thread, 2)
    ev["timestamp"] = hcnt(np.stack([it_start + 20_000, it_end - 5_000], 1).reshape(-1))
    ev["end"], ev["item_id"], ev["data_len"] = EVENT_FLAG, 1, np.repeat(np.arange(1, n_it + 1), 2)
    node = new_records(api_event.DTYPE, n)
    node["level"], node["type"], node["thread_id"] = LEVEL_NODE, 5, thread
    node["timestamp"], node["end"], node["item_id"] = hcnt(t), hcnt(t + 1_500), op_hash
    rt = new_records(api_event.DTYPE, n)
    rt["level"], rt["type"], rt["thread_id"] = LEVEL_RUNTIME, 100, thread
    rt["timestamp"], rt["end"] = hcnt(t + 300), hcnt(t + 1_200)
    allapi = np.concatenate([rows(a) for a in (acl, ev, node, rt)])
    order = np.argsort(np.concatenate([a["timestamp"] for a in (acl, ev, node, rt)]), kind="stable")
    write_stream(host, lambda k: host_data_name(True, api_event.FILE_TAG, k), allapi[order].tobytes())

    # task ids per stream with wraps (start near the top so every stream wraps)
    stream = (i % STREAMS).astype(np.uint16)
    seq = i // STREAMS + 40_000
    task_id = (seq % 65536).astype(np.uint16)
    batch = (seq // 65536).astype(np.uint16)
    tt = new_records(task_track.DTYPE, n)
    tt["level"], tt["type"], tt["thread_id"], tt["timestamp"] = LEVEL_RUNTIME, 0, thread, hcnt(t + 800)
    tt["stream_id"], tt["task_id"], tt["batch_id"] = stream, task_id, batch
    tt["task_type"] = np.where(ge_type == 0, 0, 1)
    tt["kernel_name"] = op_hash
    wrap = np.flatnonzero((task_id == 0) & (seq > 0))
    fl = new_records(task_track.DTYPE, len(wrap))
    fl["level"], fl["type"], fl["thread_id"], fl["timestamp"] = LEVEL_RUNTIME, 8, thread[wrap], hcnt(t[wrap] + 700)
    fl["stream_id"], fl["task_id"], fl["batch_id"], fl["task_type"] = stream[wrap], 0, batch[wrap], 8
    alltt = np.concatenate([rows(tt), rows(fl)])
    order = np.argsort(np.concatenate([tt["timestamp"], fl["timestamp"]]), kind="stable")
    write_stream(host, lambda k: host_data_name(True, task_track.FILE_TAG, k), alltt[order].tobytes())
    nb = new_records(node_basic_info.DTYPE, n)
    nb["level"], nb["type"], nb["thread_id"], nb["timestamp"] = LEVEL_NODE, 0, thread, hcnt(t + 100)
    nb["op_name"], nb["op_type"], nb["task_type"], nb["block_num"], nb["op_state"] = op_hash, op_type, ge_type, 24, 1
    write_stream(host, lambda k: host_data_name(True, node_basic_info.FILE_TAG, k), nb.tobytes())
    ti = new_records(tensor_info.DTYPE, n)
    ti["level"], ti["type"], ti["thread_id"], ti["timestamp"] = LEVEL_NODE, 1, thread, hcnt(t + 200)
    ti["op_name"], ti["tensor_num"] = op_hash, 2
    tens = ti["tensors"]
    tens["tensor_type"][:, 1] = 1
    tens["data_type"][:] = 1
    tens["shape"][:, 0, :4] = [1, 64, 56, 56]
    tens["shape"][:, 1, :4] = [1, 64, 56, 56]
    tens["shape"][:, 0, 1] = 64 + (i % PER_ITER % 7)[:] * 16
    ti["tensors"] = tens
    write_stream(host, lambda k: host_data_name(True, tensor_info.FILE_TAG, k), ti.tobytes())
    (host / host_data_name(False, hash_dic.HASH_FILE_TAG, 0)).write_bytes(
        hash_dic.encode_hash_dic({**{v: k for k, v in names.items()}, **{v: k for k, v in types.items()}}))
    (host / host_data_name(False, hash_dic.TYPE_FILE_TAG, 0)).write_bytes(hash_dic.encode_type_dic(
        [(5000, 0, "KERNEL_AICORE"), (5000, 1, "KERNEL_AIVEC"), (5000, 8, "FLIP_TASK"), (5000, 100, "KernelLaunch"),
         (20000, (2 << 16) | 2, "aclmdlExecute"), (15000, 1, "ModelExecute"), (10000, 5, "launch")]))

    # device: ACSQ start/end per task, step trace per iteration, flips per wrap
    d_start = t + 60_000
    logs = np.zeros(2 * n, stars_soc.DTYPE)
    logs["word0"] = stars_soc.pack_word0(np.tile([0, 1], n), 0, np.repeat(np.where(ge_type == 0, 0, 2), 2))
    logs["resv0"] = stars_soc.MAGIC
    logs["stream_id"], logs["task_id"] = np.repeat(stream, 2), np.repeat(task_id, 2)
    logs["timestamp"] = dcnt(np.stack([d_start, d_start + 1_000], 1).reshape(-1))
    order = np.argsort(logs["timestamp"], kind="stable")
    write_stream(dev, lambda k: device_data_name(stars_soc.FILE_TAG, 0, k), rows(logs)[order].tobytes())
    st = np.zeros(2 * n_it, ts_track.STEP_TRACE_DTYPE)
    st["func_type"], st["model_id"] = ts_track.FUNC_STEP_TRACE, 1
    st["tag_id"] = np.tile([0, 1], n_it)
    st["timestamp"] = dcnt(np.stack([it_start + 30_000, it_end + 70_000], 1).reshape(-1))
    df = np.zeros(len(wrap), ts_track.TASK_FLIP_DTYPE)
    df["func_type"], df["stream_id"], df["flip_num"] = ts_track.FUNC_TASK_FLIP, stream[wrap], batch[wrap]
    df["timestamp"] = dcnt(d_start[wrap] - 100)
    ts_all = np.concatenate([rows(st), rows(df)])
    ts_time = np.concatenate([st["timestamp"], df["timestamp"]])
    write_stream(dev, lambda k: device_data_name(ts_track.FILE_TAG, 0, k), ts_all[np.argsort(ts_time)].tobytes())

    start = json.dumps({"collectionTimeBegin": str(WALL_US), "clockMonotonicRaw": str(MONO_NS),
                        "collectionDateBegin": "2026-01-01 00:00:00.000000"})
    end = json.dumps({"collectionTimeEnd": str(WALL_US + int(t[-1] // 1000) + 1_000_000)})
    info = {"jobInfo": "NA", "pid": 1, "rank_id": -1, "platform_version": "5", "drvVersion": 467732,
            "CPU": [{"Frequency": f"{HOST_MHZ}.000000"}]}
    hs = f"[Host]\nclock_monotonic_raw: {MONO_NS}\ncntvct: {HOST0}\ncntvct_diff: 0\n"
    for d, sfx, extra in ((prof / "host", "", {"devices": "", "DeviceInfo": []}),
                          (prof / "device_0", ".0", {"devices": "0", "DeviceInfo": [{"hwts_frequency": "50",
                                                                                     "ai_core_num": 24}]})):
        (d / f"info.json{sfx}").write_text(json.dumps({**info, **extra}))
        (d / f"start_info{sfx}").write_text(start)
        (d / f"end_info{sfx}").write_text(end)
        (d / f"host_start.log{sfx}").write_text(hs)
    (prof / "device_0" / "dev_start.log.0").write_text(f"clock_monotonic_raw: {MONO_NS}\ncntvct: {DEV0}\n")
    return prof


def raw_bytes(prof: Path) -> int:
    return sum(p.stat().st_size for top in ("host", "device_0") for p in (prof / top).rglob("*") if p.is_file())


def measure(prof: Path, use_cache: bool) -> dict:
    """Run one load in a fresh interpreter; returns wall seconds, peak RSS and row counts."""
    code = f"""
import resource, time, json, sys
sys.path.insert(0, {str(ROOT)!r})
t0 = time.perf_counter()
from msprof_py.parse.session import load
t1 = time.perf_counter()
s = load({str(prof)!r}, use_cache={use_cache})
t2 = time.perf_counter()
r = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({{"wall_s": t2 - t0, "load_call_s": t2 - t1, "import_s": t1 - t0, "cpu_s": r.ru_utime + r.ru_stime,
                  "peak_rss_mb": r.ru_maxrss / 1024,
                  "tasks": len(s.tasks), "api": len(s.api), "steps": len(s.steps),
                  "device_only": int((s.tasks["match"] == "device_only").sum()),
                  "host_only": int((s.tasks["match"] == "host_only").sum())}}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1_000_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/bench_parse"))
    ap.add_argument("--append-results", action="store_true", help="append to benchmarks/RESULTS.md")
    args = ap.parse_args()
    t0 = time.perf_counter()
    prof = make_collection(args.dir, args.tasks)
    gen_s = time.perf_counter() - t0
    size = raw_bytes(prof)
    shutil.rmtree(prof / "msprof_py_cache", ignore_errors=True)
    load_avg = os.getloadavg()[0]
    cold = measure(prof, use_cache=False)  # parse only
    write = measure(prof, use_cache=True)  # no cache yet: parse + write the cache
    warm = measure(prof, use_cache=True)  # cached reload
    res = {"tasks": args.tasks, "raw_mb": size / 2 ** 20, "generate_s": gen_s, "load_avg_1min": load_avg,
           "parse": cold, "parse_and_cache_write": write, "cached": warm}
    print(json.dumps(res, indent=1))
    if args.append_results:
        line = (f"| {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC | {platform.node()} ({os.cpu_count()} cores, "
                f"load avg {load_avg:.1f}, Python {platform.python_version()}) | {args.tasks:,} | {size / 2**20:.0f} MB | "
                f"{cold['wall_s']:.2f} s wall / {cold['cpu_s']:.2f} s CPU | "
                f"{cold['peak_rss_mb']:.0f} MB ({cold['peak_rss_mb'] * 2**20 / size:.2f}x raw) | "
                f"{write['wall_s']:.2f} s, {write['peak_rss_mb']:.0f} MB | "
                f"{warm['load_call_s']:.2f} s load() ({warm['wall_s']:.2f} s with imports) | "
                f"{warm['peak_rss_mb']:.0f} MB |\n")
        path = ROOT / "benchmarks" / "RESULTS.md"
        if not path.exists():
            path.write_text("# Benchmarks\n")
        text = path.read_text()
        if "## Parser (bench_parse.py)" not in text:
            text += ("\n## Parser (bench_parse.py)\n\n`python benchmarks/bench_parse.py --append-results`: parse of a "
                     "generated dynamic-graph collection (per task: Node + Runtime API, task_track, node_basic_info, "
                     "tensor_info, 2 STARS logs), fresh process per run (wall includes importing pandas); parse = "
                     "load(use_cache=False); + cache write = first load(); cached = reload from "
                     "PROF/msprof_py_cache.\n\n| date | machine | tasks | raw data | parse | peak RSS (parse) | "
                     "parse + cache write | cached reload | peak RSS (cached) |\n"
                     "|---|---|---|---|---|---|---|---|---|\n")
        path.write_text(text + line)


if __name__ == "__main__":
    main()
