"""A deliberately naive pure-Python reader + joiner of one PROF dir (device 0), written from
msprof-format.md with ``struct`` and plain loops, for the differential test of the vectorised
parser.  Slow on purpose; use only on small data.

Returns device-side task rows: (stream, task, batch, ctx, start_ns, dur_ns, op_name, model_id,
index_id, connection_id, match), plus the host-only rows (start/dur -1).
"""
from __future__ import annotations

import json
import re
import struct
from fractions import Fraction
from pathlib import Path

MAGIC = 0x5A5A
STARS_MAGIC = 0x6BD3
INVALID = 4294967295
RANK = {20000: 1, 15000: 2, 10000: 3, 5500: 4, 5000: 5}
KNOWN_LEVELS = {30000, 25000, 20500, 20000, 15000, 10000, 6000, 5500, 5000}


def _stream_bytes(data: Path, prefix: str) -> tuple[bytes, bool]:
    files = []
    for p in data.iterdir():
        m = re.match(re.escape(prefix) + r"\.slice_(\d+)$", p.name)
        if m:
            files.append((int(m.group(1)), p))
    return b"".join(p.read_bytes() for _, p in sorted(files)), prefix.startswith("aging")


def host_records(data: Path, tag: str, size: int, fmt: str) -> list[tuple]:
    out = []
    for age in ("aging", "unaging"):
        blob, aging = _stream_bytes(data, f"{age}.{tag}")
        head = len(blob) % size if aging else 0
        n = (len(blob) - head) // size
        for i in range(n):
            rec = struct.unpack_from(fmt, blob, head + i * size)
            assert rec[0] == MAGIC and rec[1] in KNOWN_LEVELS
            out.append(rec + (age == "aging",))
    return out


def dictionary(data: Path, tag: str) -> dict:
    out = {}
    for p in sorted(data.glob(f"*.{tag}.slice_*")):
        for line in p.read_text().splitlines():
            k, _, v = line.partition(":")
            if "_" in k:
                lv, _, ty = k.partition("_")
                out[(int(lv), int(ty))] = v
            else:
                out[int(k)] = v
    return out


class Clock:
    def __init__(self, d: Path, device: bool) -> None:
        info = json.loads(next(d.glob("info.json*")).read_text())
        start = json.loads(next(d.glob("start_info*")).read_text())
        hs = dict(re.findall(r"^(\w+): (\d+)$", next(d.glob("host_start.log*")).read_text(), re.M))
        self.offset = int(start["collectionTimeBegin"]) * 1000 - int(start["clockMonotonicRaw"])
        host_mhz = Fraction(info["CPU"][0]["Frequency"])
        mono = int(hs["clock_monotonic_raw"]) + int(hs.get("cntvct_diff", 0)) * 1000 * host_mhz.denominator // host_mhz.numerator
        if device:
            ds = dict(re.findall(r"^(\w+): (\d+)$", next(d.glob("dev_start.log*")).read_text(), re.M))
            self.mhz, self.cnt0, self.mono = Fraction(info["DeviceInfo"][0]["hwts_frequency"]), int(ds["cntvct"]), mono
        else:
            self.mhz, self.cnt0, self.mono = host_mhz, int(hs["cntvct"]), mono

    def dur(self, ticks: int) -> int:
        return ticks * 1000 * self.mhz.denominator // self.mhz.numerator

    def local(self, cnt: int) -> int:
        return self.dur(cnt - self.cnt0) + self.mono + self.offset


def flip_batches(tasks: list[dict], flips: list[dict]) -> None:
    """msprof's FlipCalculator.compute_batch_id, literally (sets task['batch'])."""
    streams = sorted({t["stream"] for t in tasks})
    for s in streams:
        data = sorted([t for t in tasks if t["stream"] == s], key=lambda t: t["time"])
        fl = sorted([f for f in flips if f["stream"] == s], key=lambda f: f["time"]) + [{"time": float("inf")}]
        batch, ti, fi, done = 0, 0, 0, []
        while ti < len(data):
            task, flip = data[ti], fl[fi]
            if task["time"] >= flip["time"]:
                batch += 1
                fi += 1
                if flip["flip_num"] != 65535:
                    k = len(done) - 1
                    while k >= 0 and done[k]["task"] < flip["task"]:
                        done[k]["batch"] = batch
                        k -= 1
                continue
            task["batch"] = batch
            done.append(task)
            ti += 1


def _cpp_rule(prof: Path) -> bool:
    """msprof exports with its C++ analysis: platform_version 5 / 15 / 16 and drvVersion >= 0x072211
    (the first result dir with an info.json; none: C++)."""
    for info in [prof / "host" / "info.json", *sorted(prof.glob("device_*/info.json.*"))]:
        try:
            d = json.loads(info.read_text())
            chip, drv = int(d.get("platform_version", -1)), int(d.get("drvVersion", 0) or 0)
        except (OSError, ValueError, TypeError):
            continue
        return chip in (5, 15, 16) and drv >= 0x072211
    return True


def naive_tasks(prof: Path) -> list[tuple]:
    hd, dd = prof / "host", prof / "device_0"
    hc, dc = Clock(hd, False), Clock(dd, True)
    hashes = dictionary(hd / "data", "additional.hash_dic")
    types = dictionary(hd / "data", "additional.type_info_dic")
    name = lambda h: hashes.get(h, str(h))  # noqa: E731
    # ---- APIs and events
    # connection ids: msprof's C++ analysis numbers the records from 1 by (begin, level descending),
    # its Python path from 0 in file order (and gives a task its Node call's id only)
    cpp = _cpp_rule(prof)
    records = host_records(hd / "data", "api_event.data", 40, "<HHIIIQQQ")
    order = sorted(range(len(records)), key=lambda i: (records[i][5], -records[i][1], i))
    number = {i: (rank + 1 if cpp else i) for rank, i in enumerate(order)}
    apis, pending = [], {}
    for conn_index, r in enumerate(records):
        conn = number[conn_index]
        _, level, typ, thread, req, begin, end, item, _aging = r
        if end == 0xFFFFFFFFFFFFFFFF:
            key = (level, thread, typ, req, item)
            if key in pending:
                s = pending.pop(key)
                apis.append(dict(level=level, thread=thread, start=s[0], end=hc.local(begin), item=item, req=req,
                                 conn=s[1]))
            else:
                pending[key] = (hc.local(begin), conn)
        elif begin != 0 and end >= begin:
            apis.append(dict(level=level, thread=thread, start=hc.local(begin), end=hc.local(end), item=item, req=-1,
                             conn=conn))
    apis.sort(key=lambda a: a["conn"])

    def container(thread, s, e, rank, same=False):
        best = None
        for i, a in enumerate(apis):
            r = RANK.get(a["level"], 0)
            if a["thread"] != thread or not r or not (a["start"] <= s and a["end"] >= e):
                continue
            if (same and r == rank) or (not same and r < rank):
                if best is None or (r, a["start"]) > (RANK[apis[best]["level"]], apis[best]["start"]):
                    best = i
        return best

    parent = [container(a["thread"], a["start"], a["end"], RANK.get(a["level"], 0)) if RANK.get(a["level"]) else None
              for a in apis]

    def chain(i):
        out = {}
        while i is not None:
            out.setdefault(apis[i]["level"], i)
            i = parent[i]
        return out

    def point_chain(level, thread, ts):
        own = container(thread, ts, ts, RANK[level], same=True)
        return own, chain(own if own is not None else container(thread, ts, ts, RANK[level]))

    node_info = {}
    for r in host_records(hd / "data", "compact.node_basic_info", 64, "<HHIIIQQIQIIB11x"):
        own, _ = point_chain(10000, r[3], hc.local(r[5]))
        if own is not None:
            node_info[own] = (name(r[6]), name(r[8]))
    ctx_of = {}
    for r in host_records(hd / "data", "additional.context_id_info", 256, "<HHIIIQQI55I"):
        own, _ = point_chain(10000, r[3], hc.local(r[5]))
        if own is not None:
            ctx_of.setdefault(own, []).extend(x for x in r[8:8 + r[7]] if x != INVALID)
    host, flips = [], []
    for r in host_records(hd / "data", "compact.task_track", 64, "<HHIIIQHHHHQQ16B"):
        thread, ts, dev, stream, task, batch, ttype, kernel = r[3], hc.local(r[5]), r[6] & 0xFFF, r[7], r[8], r[9], r[10], r[11]
        tname = types.get((5000, ttype), str(ttype))
        if tname == "FLIP_TASK":
            flips.append(dict(stream=stream, time=ts, task=task, flip_num=batch))
            continue
        if tname == "MAINTENANCE" or dev != 0:
            continue
        _, anc = point_chain(5000, thread, ts)
        node, model, acl, hccl = anc.get(10000), anc.get(15000), anc.get(20000), anc.get(5500)
        kernel_like = tname.startswith("KERNEL_") or tname in ("FFTS_PLUS", "STARS_COMMON")
        op = None
        if kernel_like and node is not None:
            op = node_info.get(node, (name(apis[node]["item"]), "N/A"))[0]
        elif kernel_like and hccl is not None:
            op = name(apis[hccl]["item"])
        ctxs = [INVALID]
        if tname in ("KERNEL_AICORE", "KERNEL_AIVEC", "FFTS_PLUS", "KERNEL_MIX_AIC", "KERNEL_MIX_AIV"):
            ctxs = sorted(set(ctx_of.get(node, []) + [INVALID] + ([0] if "MIX" in tname else [])))
        elif "MIX" in tname:
            ctxs = [0, INVALID]
        for c in ctxs:
            host.append(dict(stream=stream, task=task, batch=batch, ctx=c, time=ts, type=tname,
                             op=op if op is not None else tname,
                             model=apis[model]["item"] if model is not None else INVALID,
                             req=apis[model]["req"] if model is not None else -1,
                             conn=apis[node]["conn"] if node is not None else
                             (apis[acl]["conn"] if acl is not None and cpp else -1)))
    flip_batches([h for h in host], flips)  # drvVersion >= 467473 in the generated data

    # ---- device
    blob, _ = _stream_bytes(dd / "data", "stars_soc.data.0")
    logs = []
    for i in range(len(blob) // 64):
        w0, magic, s_raw, t_raw, ts = struct.unpack_from("<HHHHQ", blob, i * 64)
        sub_type, sub_id = struct.unpack_from("<HH", blob, i * 64 + 16)
        if magic != STARS_MAGIC:
            continue
        func = w0 & 0x3F
        if func not in (0, 1, 34, 35):
            continue
        stream, task = s_raw % 2048, t_raw  # the generated data uses plain ids
        ctx = sub_id if func in (34, 35) else INVALID
        logs.append((stream, task, ctx, ts, func in (0, 34), (w0 >> 10) if func in (0, 1) else 1000 + (sub_type & 0xFF)))
    by_key: dict = {}
    for lg in sorted(logs, key=lambda x: (x[3], not x[4])):
        by_key.setdefault(lg[:3], []).append(lg)
    dev_tasks = []
    for key, lst in by_key.items():
        starts, claimed = [], set()
        for lg in lst:
            if lg[4]:
                starts.append(lg)
            elif starts:
                j = len(starts) - 1
                if j not in claimed:
                    claimed.add(j)
                    s = starts[j]
                    dev_tasks.append(dict(stream=key[0], task=key[1], ctx=key[2], time=dc.local(s[3]),
                                          dur=dc.dur(lg[3] - s[3])))
    tblob, _ = _stream_bytes(dd / "data", "ts_track.data.0")
    dflips, steps = [], []
    for i in range(len(tblob) // 40):
        func, = struct.unpack_from("<B", tblob, i * 40 + 1)
        ts, = struct.unpack_from("<Q", tblob, i * 40 + 8)
        if func == 14:
            stream, flip_num, _, task = struct.unpack_from("<HHHH", tblob, i * 40 + 16)
            dflips.append(dict(stream=stream & 0x7FF, time=dc.local(ts), task=task, flip_num=flip_num))
        elif func == 10:
            _, model, _, _, tag = struct.unpack_from("<QQHHH", tblob, i * 40 + 16)
            steps.append((model, dc.local(ts), tag))
    flip_batches(dev_tasks, dflips)

    # ---- iterations (state machine), then task windows
    iters = []  # (model, index, start, end)
    for model in sorted({s[0] for s in steps}):
        state, index, cur = "end", 1, None
        for _, ts, tag in sorted([s for s in steps if s[0] == model], key=lambda s: s[1]):
            if tag == 0 and state in ("end", "iter_end"):
                cur, state = ts, "start"
            elif tag == 1 and state == "start":
                iters.append((model, index, cur, ts)); index += 1; state = "end"
            elif tag == 4 and state in ("start", "iter_end"):
                iters.append((model, index, cur, ts)); index += 1; cur = ts; state = "iter_end"

    def index_of(model, t):
        mine = sorted([it for it in iters if it[0] == model], key=lambda it: it[3])
        for it in mine:
            if it[3] >= t:
                ws = max([o[3] for o in iters if o[3] < it[2]], default=0)
                return it[1] if t > ws else 0
        return 0

    # ---- join
    hkey: dict = {}
    for h in host:
        hkey.setdefault((h["stream"], h["task"], h["ctx"], h["batch"]), []).append(h)
    dkey: dict = {}
    for d in sorted(dev_tasks, key=lambda d: d["time"]):
        dkey.setdefault((d["stream"], d["task"], d["ctx"], d["batch"]), []).append(d)
    rows = []
    for key in set(hkey) | set(dkey):
        hs = sorted(hkey.get(key, []), key=lambda h: h["time"])
        ds = dkey.get(key, [])
        for k, d in enumerate(ds):
            h = hs[0] if len(hs) == 1 else (hs[k] if k < len(hs) else None)
            if h is None:
                rows.append((*key, d["time"], d["dur"], "?", INVALID, 0, -1, "device_only"))
            else:
                idx = h["req"] if h["req"] > 0 else index_of(h["model"], d["time"])
                rows.append((*key, d["time"], d["dur"], h["op"], h["model"], idx, h["conn"],
                             "matched" if len(hs) == 1 else "fifo"))
        used = 1 if len(hs) == 1 and ds else min(len(hs), len(ds))
        for h in hs[used:]:
            rows.append((*key, -1, -1, h["op"], h["model"], h["req"] if h["req"] > 0 else 0, h["conn"], "host_only"))
    return sorted(rows)
