"""``msprof-py export``: msprof's ``--export=on`` with the same options and messages."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from msprof_py.cli import print_warnings, run_guarded


@click.command("export")
@click.option("--output", "output", required=True, type=click.Path(path_type=Path),
              help="A PROF_* directory, or a directory holding several.")
@click.option("--type", "type_", type=click.Choice(["text", "db", "perfetto"]), default="text", show_default=True,
              help="text: timelines + summaries + msprof_*.db; db: only the unified DB; perfetto: only the "
                   "native Perfetto trace msprof.pftrace (every device in one file).")
@click.option("--perfetto", is_flag=True, help="With --type text: also write msprof.pftrace next to the JSON.")
@click.option("--slice-size", "slice_size", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="MB", help="Split each msprof_*.json into msprof_*_slice_N.json files under MB megabytes "
                                 "each (cut between iterations or in time; flows never cut).")
@click.option("--model-id", type=int, default=None, help="Export one iteration of this model (with --iteration-id).")
@click.option("--iteration-id", type=int, default=None, help="The iteration of --model-id to export.")
@click.option("--summary-format", type=click.Choice(["csv", "json"]), default="csv", show_default=True)
@click.option("--reports", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="JSON file with msprof's json_process switches choosing timeline layers.")
@click.option("--clear", is_flag=True, help="Remove the parse cache after exporting.")
def export(output: Path, type_: str, model_id: int | None, iteration_id: int | None, summary_format: str,
           reports: Path | None, clear: bool, perfetto: bool, slice_size: float | None) -> None:
    """Export timelines (msprof_*.json) and summaries into PROF_*/mindstudio_profiler_output/."""
    from msprof_py.export.runner import ExportOptions
    from msprof_py.pipeline import export_with_advice

    opts = ExportOptions(type=type_, model_id=model_id, iteration_id=iteration_id, summary_format=summary_format,
                         reports=reports, clear=clear, progress=sys.stderr.isatty(), perfetto=perfetto,
                         slice_size_mb=slice_size)
    result, advice = run_guarded(lambda: export_with_advice(output, opts))
    total = sum(size for _, size in result.files)
    click.echo(f"wrote {len(result.files)} files ({_size(total)}):")
    for path, size in result.files:
        click.echo(f"  {path}  {_size(size)}")
    if advice is not None:  # msprof prints its tuning suggestions after an export
        click.echo(advice.text, nl=False)
        for p in advice.files:
            click.echo(f"  {p}  {_size(p.stat().st_size)}")
        result.warnings.extend(advice.warnings)
    print_warnings(result.warnings)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
