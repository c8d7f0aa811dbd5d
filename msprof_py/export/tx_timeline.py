"""``msprof_tx.json``: the msproftx marks and ranges alone (msprof writes ``msprof_tx_{ts}.json``
beside ``msprof_{ts}.json``, whose msproftx process holds the same events)."""
from __future__ import annotations

from pathlib import Path

from msprof_py.export.base import ExportContext, Naming, register
from msprof_py.export.counter_export import tx_layer
from msprof_py.export.timeline_model import Timeline
from msprof_py.export.timeline_write import write_timeline
from msprof_py.parse.session import Session


class MsprofTxTimeline:
    name = "msprof_tx"
    kind = "timeline"
    per_device = False
    describe = "msproftx marks and ranges of the profiled process (msproftx switch)"

    def write(self, session: Session, out_dir: Path, naming: Naming, ctx: ExportContext) -> list[Path]:
        if not ctx.layer_on("msproftx"):
            return []
        tl = Timeline()
        tl.slices += tx_layer(session, tl.meta)
        if not tl:
            return []
        return [write_timeline(tl, out_dir / naming.file(self.name, "json", device=False), ctx, "msproftx")]


register(MsprofTxTimeline())
