"""``msprof-py advise``: tuning advice for a profile (prof_rule_{device}.json, tune-ops file,
terminal / json / html report)."""
from __future__ import annotations

from pathlib import Path

import click

from msprof_py.cli import print_warnings, run_guarded


@click.command("advise")
@click.option("--output", "output", required=True, type=click.Path(path_type=Path, exists=True),
              help="A PROF_* directory, or a directory holding several.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "html"]), default="text", show_default=True,
              help="json / html also write advice.json / advice.html next to prof_rule_{device}.json.")
def advise(output: Path, fmt: str) -> None:
    """Find performance problems and say what to do about them, with the time at stake."""
    from msprof_py.analyse.advise.run import advise_path

    res = run_guarded(lambda: advise_path(output, fmt))
    click.echo(res.text, nl=False)
    for p in res.files:
        click.echo(f"wrote {p}")
    print_warnings(res.warnings)
