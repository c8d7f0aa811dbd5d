"""The column-wise event renderer (trace_events over rows.RowBuilder) against a plain per-event
reference over random events (hypothesis, differential): every byte, whatever the chunking and
threads, and the events parse back to the values they were built from."""
from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from msprof_py.export.timeline_model import RenderedSlices, Timeline
from msprof_py.export.timeline_write import json_array
from msprof_py.export.trace_events import Arg, Counters, Flows, Slices

ints = st.integers(-(2**53) + 1, 2**53 - 1)
ns = st.integers(-(2**62), 2**62)
texts = st.text(max_size=12)


def j(s: str) -> str:
    """A JSON string literal the plain way."""
    return orjson.dumps(s).decode()


def us3(v: int) -> str:
    """ns -> "us.nnn", the plain way (sign, then the magnitude's whole µs and three decimals)."""
    m = abs(v)
    return f"{'-' if v < 0 else ''}{m // 1000}.{m % 1000:03d}"


def num(v: float) -> str:
    if v != v or v in (float("inf"), float("-inf")):
        return "null"
    return str(int(v)) if v.is_integer() else repr(v)


def value_text(kind: str, v: Any) -> str:
    return {"int": lambda: str(int(v)), "us": lambda: us3(int(v)), "tsstr": lambda: f'"{us3(int(v))}"',
            "str": lambda: j(str(v)), "raw": lambda: str(v)}[kind]()


def column(values: list[Any], form: str) -> Any:
    """The same values as the layers hand them over: a list-backed object array, a Categorical,
    a pandas Series (categorical or not)."""
    if form == "cat":
        return pd.Categorical(values)
    if form == "series":
        return pd.Series(values, dtype=object)
    if form == "catseries":
        return pd.Series(values, dtype="category")
    return np.asarray(values, dtype=object)


@st.composite
def slices(draw: Any) -> tuple[Slices, list[str], list[dict[str, Any]]]:
    n = draw(st.integers(1, 30))
    name_const = draw(st.booleans())
    names = [draw(texts)] * n if name_const else draw(st.lists(texts, min_size=n, max_size=n))
    pid, tid = (draw(st.lists(ints, min_size=n, max_size=n)) for _ in range(2))
    start, dur = (draw(st.lists(ns, min_size=n, max_size=n)) for _ in range(2))
    cat = draw(st.none() | texts)
    args: list[Arg] = []
    plain: list[tuple[str, str, list[Any]]] = []
    for key in draw(st.lists(texts, max_size=5)):
        kind = draw(st.sampled_from(["int", "us", "tsstr", "str", "str_const", "raw"]))
        if kind == "str_const":
            v = draw(texts)
            args.append(Arg(key, "str", v))
            plain.append((key, "str", [v] * n))
            continue
        if kind == "str":
            vals = draw(st.lists(texts, min_size=n, max_size=n))
            args.append(Arg(key, "str", column(vals, draw(st.sampled_from(["obj", "cat", "series", "catseries"])))))
        elif kind == "raw":  # preformatted JSON numbers, as the layers give bandwidths
            vals = [repr(x) for x in draw(st.lists(st.floats(allow_nan=False, allow_infinity=False),
                                                   min_size=n, max_size=n))]
            args.append(Arg(key, "raw", column(vals, draw(st.sampled_from(["obj", "cat"])))))
        else:
            vals = draw(st.lists(ints if kind == "int" else ns, min_size=n, max_size=n))
            args.append(Arg(key, kind, np.asarray(vals, np.int64)))
        plain.append((key, kind, vals))
    s = Slices(name=names[0] if name_const else column(names, draw(st.sampled_from(["obj", "cat", "series"]))),
               pid=np.asarray(pid, np.int64), tid=np.asarray(tid, np.int64), start_ns=np.asarray(start, np.int64),
               dur_ns=np.asarray(dur, np.int64), args=args, cat=cat)
    ref, parsed = [], []
    for i in range(n):
        body = ",".join(f"{j(k)}:{value_text(kind, vals[i])}" for k, kind, vals in plain)
        ref.append(f'{{"name":{j(names[i])},"pid":{pid[i]},"tid":{tid[i]},"ts":"{us3(start[i])}",'
                   f'"dur":{us3(dur[i])},"ph":"X"' + (f',"cat":{j(cat)}' if cat is not None else "")
                   + f',"args":{{{body}}}}},\n')
        # what a JSON reader gets back (the last of duplicate keys wins, as in a dict)
        a = {k: orjson.loads(value_text(kind, vals[i])) for k, kind, vals in plain}
        parsed.append({"name": names[i], "pid": pid[i], "tid": tid[i], "ts": us3(start[i]),
                       "dur": float(us3(dur[i])), "ph": "X", **({"cat": cat} if cat is not None else {}),
                       "args": a})
    return s, ref, parsed


@given(slices(), st.integers(1, 7), st.sampled_from([1, 2]))
@settings(max_examples=150, deadline=None)
def test_slices_render_like_the_plain_reference(case: Any, chunk_rows: int, workers: int) -> None:
    s, ref, parsed = case
    got = b"".join(s.rows().chunks(chunk_rows=chunk_rows, workers=workers))
    assert got == "".join(ref).encode()
    assert s.rows().row_lengths(chunk_rows=chunk_rows).tolist() == [len(r.encode()) for r in ref]
    events = orjson.loads(b"".join(json_array(iter([got]))))
    assert events == parsed


@given(st.lists(st.tuples(ints, ints, ints, ns, ints, ints, ns), min_size=1, max_size=30), texts, texts)
@settings(max_examples=80, deadline=None)
def test_flows_render_like_the_plain_reference(rows: list[tuple[int, ...]], cat: str, prefix: str) -> None:
    ids, sp, stid, sns, fp, ftid, fns = (np.asarray(c, np.int64) for c in zip(*rows))
    f = Flows(cat, prefix, ids, sp, stid, sns, fp, ftid, fns)
    for phase, (p, t, x) in (("s", (sp, stid, sns)), ("f", (fp, ftid, fns))):
        ref = "".join(f'{{"name":{j(prefix)[:-1]}{ids[i]}","pid":{p[i]},"tid":{t[i]},"ph":"{phase}",'
                      f'"cat":{j(cat)},"id":"{ids[i]}","ts":"{us3(int(x[i]))}"'
                      + (',"bp":"e"' if phase == "f" else "") + "},\n" for i in range(len(ids)))
        assert b"".join(f.rows(phase).chunks(chunk_rows=3, workers=1)) == ref.encode()


@given(st.lists(st.tuples(ns, st.floats(), st.floats(width=32)), min_size=1, max_size=30), texts, ints, ints)
@settings(max_examples=80, deadline=None)
def test_counters_render_like_the_plain_reference(rows: list[tuple[Any, ...]], name: str, pid: int, tid: int) -> None:
    ts, a, b = zip(*rows)
    c = Counters(name, pid, np.asarray(ts, np.int64), {"MHz": np.asarray(a), "x\"y": np.asarray(b)}, tid)
    ref = "".join(f'{{"name":{j(name)},"pid":{pid},"tid":{tid},"ts":"{us3(ts[i])}","ph":"C","args":'
                  f'{{"MHz":{num(float(a[i]))},{j(chr(120) + chr(34) + chr(121))}:{num(float(b[i]))}}}}},\n'
                  for i in range(len(ts)))
    assert b"".join(c.rows().chunks(chunk_rows=4, workers=1)) == ref.encode()


def test_a_replayed_layer_needs_its_rendering() -> None:
    """A RenderedSlices outside the export that rendered it is refused, never written empty."""
    tl = Timeline(slices=[RenderedSlices(("hw", 0), 3)])
    assert tl and tl.check() == ([], 0)  # checked with the file that rendered it
    try:
        b"".join(tl.chunks())
    except ValueError as err:
        assert "not rendered" in str(err)
    else:
        raise AssertionError("rendered nothing for a replayed layer")


@given(st.lists(st.one_of(st.floats(), st.none()), max_size=30))
@settings(max_examples=80, deadline=None)
def test_communication_number_texts_are_each_values_repr(values: list[Any]) -> None:
    """``_num_text`` formats once per distinct value, yet gives every row its own repr (0.0 and
    -0.0 apart, NaN / missing as null)."""
    from msprof_py.export.timeline_layers import _num_text

    got = np.asarray(_num_text(pd.Series(values, dtype=object)), dtype=object).tolist()
    assert got == ["null" if v is None or v != v else repr(float(v)) for v in values]
