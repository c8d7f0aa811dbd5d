"""``msprof-py aoe-report``: read AOE result files, print a summary, write tables."""
from __future__ import annotations

import click

from msprof_py.cli import print_warnings, run_guarded


@click.command("aoe-report")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["csv", "json"]), default="csv", show_default=True,
              help="Format of the tables written.")
@click.option("--output", type=click.Path(file_okay=False), default=None,
              help="Directory for aoe_tasks/aoe_operators/aoe_subgraphs/aoe_failed tables [default: working dir].")
@click.option("--strict", is_flag=True, help="Refuse files that need repair (missing commas, cut-short files, ...).")
@click.option("--profile", "profile", type=click.Path(), default=None,
              help="A PROF_* directory: show how much device time the tuned operators took in it.")
def aoe_report(paths: tuple[str, ...], fmt: str, output: str | None, strict: bool, profile: str | None) -> None:
    """Summarise AOE result files (aoe_result_opat_*.json / aoe_result_sgat_*.json; files or directories)."""
    from msprof_py.aoe.report import aoe_report as run

    outcome = run_guarded(lambda: run(paths, fmt=fmt, output=output, strict=strict, profile=profile))
    click.echo(outcome.summary)
    print_warnings(outcome.warnings)
