"""``msprof-py collect``: run a workload, a graph file or a Python script with profiling on."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

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
@click.option("--ranks", type=click.IntRange(min=1, max=4096), default=None,
              help="simulate a cluster job: one process and PROF dir per rank")
@click.option("--ranks-per-node", type=click.IntRange(min=1, max=16), default=8, show_default=True,
              help="NPUs per node (HCCS inside a node, RoCE between nodes)")
@click.option("--tp", type=click.IntRange(min=1), default=None,
              help="tensor-parallel size (default: ranks per node for llm_decoder, else 1)")
@click.option("--pp", type=click.IntRange(min=1), default=1, show_default=True,
              help="pipeline-parallel stages (llm_decoder: its layers split over the stages)")
@click.option("--slow-rank", multiple=True, metavar="R=FACTOR", help="rank R computes FACTOR times slower")
@click.option("--slow-link", multiple=True, metavar="A-B=FACTOR", help="link A-B runs at FACTOR of its bandwidth")
@click.option("--straggler-host", multiple=True, metavar="NODE=FACTOR",
              help="node NODE spends FACTOR times longer on host work between iterations")
@click.option("--clock-offset", multiple=True, metavar="NODE=US", help="node's host clock offset in us")
@click.option("--clock-drift", multiple=True, metavar="NODE=PPM", help="node's host clock drift in ppm")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def collect(workload: str | None, graph_file: str | None, iterations: int, devices: int, batch_size: int | None,
            output: str | None, seed: int, fixed_clock: bool, options: str | None, slice_size: int | None,
            tune_bank: str | None, ranks: int | None, ranks_per_node: int, tp: int | None, pp: int,
            slow_rank: tuple[str, ...], slow_link: tuple[str, ...], straggler_host: tuple[str, ...],
            clock_offset: tuple[str, ...], clock_drift: tuple[str, ...], command: tuple[str, ...]) -> None:
    """Profile the simulated NPU and write one PROF_* directory.

    \b
    msprof-py collect --workload resnet50 --iterations 5 --devices 2 --output OUT
    msprof-py collect --graph my_model.json --output OUT
    msprof-py collect --output OUT -- python my_script.py ARGS...
    msprof-py collect --workload llm_decoder --ranks 16 --ranks-per-node 8 --slow-rank 5=1.3 --output OUT
    """
    from msprof_py.collect.cli_support import CollectRequest, run_collect
    from msprof_py.errors import WarningLog

    with _sigterm_as_interrupt():
        warnings = WarningLog()
        request = CollectRequest(workload=workload, graph_file=graph_file, command=list(command),
                                 iterations=iterations, devices=devices, batch_size=batch_size, output=output,
                                 seed=seed, fixed_clock=fixed_clock, options=options, slice_bytes=slice_size)
        if ranks is not None:
            from msprof_py.collect.cluster import ClusterRequest, run_collect_cluster

            req = ClusterRequest(request, ranks, ranks_per_node, tp, slow_rank, slow_link, straggler_host,
                                 clock_offset, clock_drift, pp)
            result = run_guarded(lambda: run_collect_cluster(req, warnings))
        elif tune_bank is not None:
            from msprof_py.aoe.cli_support import run_collect_tuned

            result = run_guarded(lambda: run_collect_tuned(request, warnings, tune_bank))
        else:
            result = run_guarded(lambda: run_collect(request, warnings))
        click.echo(result.summary())
        print_warnings(warnings)


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Let ``kill`` clean up like Ctrl-C does: the session removes its temporary PROF dir.  The
    caller's handler comes back afterwards (a program or test that runs ``collect`` in-process
    keeps its own SIGTERM behaviour, and so do the processes it forks later)."""
    import signal

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
