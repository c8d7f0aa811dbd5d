"""``msprof-py collect``: run a workload, a graph file or a Python script with profiling on."""
from __future__ import annotations

import click

from msprof_py.cli import print_warnings, run_guarded


@click.command()
@click.option("--workload", "-w", help="built-in workload (e.g. resnet50, bert, llm_decoder, single_op)")
@click.option("--graph", "graph_file", type=click.Path(dir_okay=False), help="user graph file (JSON)")
@click.option("--iterations", "-n", type=click.IntRange(min=1), default=1, show_default=True,
              help="training iterations / executions")
@click.option("--devices", "-d", type=click.IntRange(min=1, max=16), default=1, show_default=True,
              help="number of NPUs (data parallel)")
@click.option("--batch-size", type=click.IntRange(min=1), default=None, help="override the workload's batch size")
@click.option("--output", "-o", type=click.Path(file_okay=False), default=None,
              help="folder for the PROF_* directory (or \"output\" in --options)")
@click.option("--seed", type=int, default=0, show_default=True, help="simulator seed")
@click.option("--fixed-clock", is_flag=True, help="pin clocks and dates: same seed -> identical bytes")
@click.option("--options", "options", default=None, metavar="JSON_OR_FILE",
              help="profiling_options JSON (text or file), e.g. '{\"task_trace\":\"on\"}'")
@click.option("--slice-size", type=click.IntRange(min=1), default=None, metavar="BYTES",
              help="raw slice file size limit (default 2 MiB)")
@click.option("--tune-bank", "tune_bank", default=None, metavar="DIR|auto",
              help="build with AOE custom repositories: DIR as TUNE_BANK_PATH, or auto (AOE's env/default paths)")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def collect(workload: str | None, graph_file: str | None, iterations: int, devices: int, batch_size: int | None,
            output: str | None, seed: int, fixed_clock: bool, options: str | None, slice_size: int | None,
            tune_bank: str | None, command: tuple[str, ...]) -> None:
    """Profile the simulated NPU and write one PROF_* directory.

    \b
    msprof-py collect --workload resnet50 --iterations 5 --devices 2 --output OUT
    msprof-py collect --graph my_model.json --output OUT
    msprof-py collect --output OUT -- python my_script.py ARGS...
    """
    from msprof_py.collect.cli_support import CollectRequest, run_collect
    from msprof_py.errors import WarningLog

    _sigterm_as_interrupt()
    warnings = WarningLog()
    request = CollectRequest(workload=workload, graph_file=graph_file, command=list(command),
                             iterations=iterations, devices=devices, batch_size=batch_size, output=output,
                             seed=seed, fixed_clock=fixed_clock, options=options, slice_bytes=slice_size)
    if tune_bank is not None:
        from msprof_py.aoe.cli_support import run_collect_tuned

        result = run_guarded(lambda: run_collect_tuned(request, warnings, tune_bank))
    else:
        result = run_guarded(lambda: run_collect(request, warnings))
    click.echo(result.summary())
    print_warnings(warnings)


def _sigterm_as_interrupt() -> None:
    """Let ``kill`` clean up like Ctrl-C does: the session removes its temporary PROF dir."""
    import signal

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
