"""``msprof-py query --output PATH``: msprof's query table of a PROF dir or a dir of them."""
from __future__ import annotations

import click

from msprof_py.cli import print_warnings, run_guarded


@click.command()
@click.option("--output", "-o", "output", required=True, type=str,
              help="A PROF_* directory or a directory holding several.")
def query(output: str) -> None:
    """Print devices, models, iteration counts and top iterations (msprof --query)."""
    from msprof_py.parse.query import query as run_query

    text, warnings = run_guarded(lambda: run_query(output))
    click.echo(text, nl=False)
    print_warnings(warnings)
