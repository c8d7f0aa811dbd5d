"""``msprof-py tune``: AOE-style operator / subgraph tuning on the simulated NPU."""
from __future__ import annotations

import click

from msprof_py.cli import print_warnings, run_guarded


@click.command("tune")
@click.option("--job_type", "job_type", type=click.Choice(["1", "2"]), default=None,
              help="1 = subgraph tuning (SGAT), 2 = operator tuning (OPAT) [default: $AOE_MODE]")
@click.option("--workload", "-w", default=None, help="built-in workload (e.g. resnet50)")
@click.option("--graph", "graph_file", type=click.Path(dir_okay=False), default=None, help="user graph file (JSON)")
@click.option("--tune_ops_file", type=click.Path(dir_okay=False), default=None,
              help='JSON {"tune_ops_name": [...], "tune_ops_type": [...]}: tune only these ops')
@click.option("--seed", type=int, default=0, show_default=True, help="simulator seed of every measurement")
@click.option("--iterations", type=click.IntRange(min=1, max=100), default=5, show_default=True,
              help="executions per measurement (median taken)")
@click.option("--output", type=click.Path(file_okay=False), default=None,
              help="directory for aoe_result_*.json [default: $ASCEND_WORK_PATH or the working dir]")
@click.option("--repeat_tune/--no-repeat_tune", "repeat_tune", default=None,
              help="re-tune repository hits [default: $REPEAT_TUNE, else off]")
@click.option("--tuning_name", default=None, help="tuning task name [default: sim_<workload>]")
@click.option("--layout", type=click.Choice(["list", "report"]), default="list", show_default=True,
              help='result layout: one task list, or {"report_<ts>_<tid>": [...]}')
def tune(job_type: str | None, workload: str | None, graph_file: str | None, tune_ops_file: str | None, seed: int,
         iterations: int, output: str | None, repeat_tune: bool | None, tuning_name: str | None, layout: str) -> None:
    """Tune a workload's operators or subgraphs, write AOE's result file and custom repository.

    \b
    msprof-py tune --job_type 2 --workload resnet50
    TUNE_BANK_PATH=/data/bank msprof-py tune --job_type 1 --graph model.json --output results/
    """
    from msprof_py.aoe.cli_support import run_tune

    outcome = run_guarded(lambda: run_tune(
        workload=workload, graph_file=graph_file, job_type=int(job_type) if job_type else None,
        tune_ops_file=tune_ops_file, seed=seed, iterations=iterations, output=output, repeat_tune=repeat_tune,
        tuning_name=tuning_name, layout=layout, echo=click.echo))
    click.echo(f"Result file: {outcome.result_path}")
    click.echo(f"Custom repository: {outcome.bank_dir}")
    click.echo("Re-profile with the tuned repository to verify, e.g. msprof-py collect ... --tune-bank auto")
    print_warnings(outcome.warnings)
