"""``msprof-py diff BASE NEW``: where the time went between two runs (per op, op type,
iteration and step-trace phase)."""
from __future__ import annotations

from pathlib import Path

import click

from msprof_py.cli import run_guarded


@click.command("diff")
@click.argument("base", type=click.Path(path_type=Path, exists=True))
@click.argument("new", type=click.Path(path_type=Path, exists=True))
@click.option("--output", "output", type=click.Path(path_type=Path, file_okay=False), default=Path("msprof_py_diff"),
              show_default=True, help="Folder for diff_{ops,op_types,iterations,phases}.csv (and diff.html).")
@click.option("--format", "fmt", type=click.Choice(["text", "html"]), default="text", show_default=True)
@click.option("--device", type=int, default=None, help="Device to compare (default: the lowest).")
def diff(base: Path, new: Path, output: Path, fmt: str, device: int | None) -> None:
    """Compare two PROF dirs or exported folders (BASE -> NEW)."""
    from msprof_py.analyse.diff_report import diff_paths

    _, text, files = run_guarded(lambda: diff_paths(base, new, output, fmt, device))
    click.echo(text, nl=False)
    for p in files:
        click.echo(f"wrote {p}")
