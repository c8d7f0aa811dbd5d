"""``msprof-py cluster``: analyse every rank of a cluster job (msprof-analyze's cluster outputs)."""
from __future__ import annotations

import click

from msprof_py.cli import run_guarded

MAX_WARNINGS = 5


@click.command()
@click.option("--input", "-i", "input_dir", required=True, type=click.Path(file_okay=False),
              help="folder holding the ranks' PROF_* dirs (searched a few levels deep)")
@click.option("--output", "-o", type=click.Path(file_okay=False), default=None,
              help="where cluster_analysis_output/ goes (default: the input folder)")
@click.option("--workers", "-j", type=click.IntRange(min=1), default=None,
              help="local worker processes (default: all cores)")
@click.option("--scheduler", default=None, metavar="tcp://HOST:8786",
              help="run the per-rank work on this Dask scheduler (or set MSPROF_PY_SCHEDULER)")
@click.option("--steps", default=None, metavar="A-B", help="iterations to analyse, e.g. 3-5 or 4 (default: all)")
@click.option("--timeline", is_flag=True, help="also write one merged timeline of every rank on one clock")
def cluster(input_dir: str, output: str | None, workers: int | None, scheduler: str | None, steps: str | None,
            timeline: bool) -> None:
    """Analyse a cluster job: step time per rank, communication matrix, slow ranks / links / hosts.

    \b
    msprof-py cluster --input OUT
    msprof-py cluster --input OUT --steps 2-3 --timeline
    msprof-py cluster --input /shared/job --scheduler tcp://10.0.0.1:8786
    """
    from msprof_py.cluster.analyze import analyze_cluster, parse_steps

    report = run_guarded(lambda: analyze_cluster(input_dir, output, workers=workers, scheduler=scheduler,
                                                 steps=parse_steps(steps), timeline=timeline))
    click.echo(report.text)
    warns = report.warnings
    for w in warns[:MAX_WARNINGS]:
        click.echo(f"msprof-py: warning: {w}", err=True)
    if len(warns) > MAX_WARNINGS:
        click.echo(f"msprof-py: warning: ... and {len(warns) - MAX_WARNINGS} more (per-rank parse notes)", err=True)
