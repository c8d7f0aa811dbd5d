"""SliceStream: any sequence of writes at any slice limit reassembles byte for byte."""
from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from msprof_py.collect.slices import SliceStream


@settings(max_examples=60, deadline=None)
@given(chunks=st.lists(st.binary(max_size=300), max_size=12), limit=st.integers(min_value=1, max_value=200))
def test_slices_reassemble_and_roll_exactly_at_the_limit(chunks: list[bytes], limit: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        stream = SliceStream(d, lambda n: f"x.slice_{n}", limit)
        for c in chunks:
            stream.write(c)
        stream.close()
        sizes = [(d / f"x.slice_{n}").stat().st_size for n in range(stream.slices)]
        joined = b"".join((d / f"x.slice_{n}").read_bytes() for n in range(stream.slices))
        assert joined == b"".join(chunks)
        # no empty trailing slice, no stray files: the slices and their .done markers
        assert len(list(d.iterdir())) == 2 * stream.slices
        assert all((d / f"x.slice_{n}.done").read_text().startswith(f"filesize:{sizes[n]}\n")
                   for n in range(stream.slices))
        assert all(s == limit for s in sizes[:-1]) and all(0 < s <= limit for s in sizes)
        assert stream.total_bytes == len(joined)
