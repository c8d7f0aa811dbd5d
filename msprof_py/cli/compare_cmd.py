"""``msprof-py compare``: NPU-vs-CPU precision analysis of a dump directory (the seed's
run_precision_analysis.py), optionally after running a workload numerically to produce the dumps.

Options keep the seed's spelling (``--atol``, ``--show_graph=True``, ...).  The dump directory
is ``--dump_path`` or ``$DUMP_MEMORY_PATH``.
"""
from __future__ import annotations

import os

import click

from msprof_py.cli import print_warnings, run_guarded

BOOL = click.BOOL


def _needs_run(option: str) -> None:
    from msprof_py.errors import InvalidParamError

    raise InvalidParamError(f"{option} needs --workload or --graph (it changes the numeric run)")


@click.command("compare")
@click.option("--dump_path", default=None, metavar="DIR",
              help="Dump directory (absolute, at most 50 characters) [default: $DUMP_MEMORY_PATH].")
@click.option("--workload", default=None, metavar="NAME",
              help="First run this built-in workload numerically (NPU and CPU) and dump it to a new dump directory.")
@click.option("--graph", "graph_file", default=None, metavar="FILE",
              help="First run this user graph file (JSON, as for collect --graph) numerically and dump it.")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="Workload parameter (repeatable).")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the generated inputs and weights.")
@click.option("--inject", "injects", multiple=True, metavar="op=NAME[,kind=wrong_result|overflow][,scale=X]",
              help="Inject a fault into one NPU op (testing; repeatable; always recorded).")
@click.option("--dump_op_perf", type=click.IntRange(0, 2), default=None,
              help="With --workload: 0 precision only, 1 performance only, 2 both [default: $DUMP_OP_PERF or 2].")
@click.option("--cpu_dir", default=None, help="CPU data directory [default: DUMP/cpu].")
@click.option("--npu_dir", default=None, help="NPU data directory [default: DUMP/npu].")
@click.option("--node_runtime_filename", default=None, help="Node execution-order file [default: result/node_runtime.file].")
@click.option("--op_config_name", default=None, help="Per-node atol/rtol file [default: result/op_config.csv].")
@click.option("--diff_cnt", default=128, show_default=True, type=int, help="Error elements written per failing node.")
@click.option("--atol", default=0.005, show_default=True, type=float, help="Absolute error threshold.")
@click.option("--rtol", default=0.2, show_default=True, type=float, help="Relative error threshold, in [0.0, 1.0].")
@click.option("--show_graph", type=BOOL, is_flag=False, flag_value=True, default=False, show_default=True,
              help="Draw the three analysis plots per failing node.")
@click.option("--max_bins", default=128, show_default=True, type=int, help="Histogram bins, at most.")
@click.option("--min_bins", default=1, show_default=True, type=int, help="Histogram bins, at least (1..max_bins).")
@click.option("--max_cores", default=16, show_default=True, type=int, help="Threads used to compare nodes.")
@click.option("--map_node_dict", default=None, metavar="JSON|@FILE",
              help='Reference-to-NPU node names, e.g. \'{"cpu_name":"npu_name"}\'.')
@click.option("--force_compare", type=BOOL, is_flag=False, flag_value=True, default=False, show_default=True,
              help="Compare nodes whose shapes differ but whose sizes are equal.")
@click.option("--skip_keys", default=None, metavar="K1,K2", help="Skip nodes whose names contain a keyword.")
@click.option("--output_dir", default=None, metavar="DIR",
              help="Where the NPU data analysis puts the joined dump_data/ tensors [default: DUMP/npu].")
@click.option("--perf_all_nodes", type=BOOL, is_flag=False, flag_value=True, default=True, show_default=True,
              help="False: leave nodes whose names contain _span out of op_perf.csv and perf/.")
@click.option("--exclude_node_list", default=None, metavar="N1,N2",
              help="Nodes the NPU data analysis ignores (not joined into npu/, not compared).")
@click.option("--default_concat_dim", default="0", show_default=True, metavar="AXIS",
              help="Concat axis of dump_data/ slices without grouping info; -1: the first axis not of size 1.")
def compare(dump_path, workload, graph_file, params, seed, injects, dump_op_perf, cpu_dir, npu_dir, node_runtime_filename,
            op_config_name, diff_cnt, atol, rtol, show_graph, max_bins, min_bins, max_cores, map_node_dict,
            force_compare, skip_keys, output_dir, perf_all_nodes, exclude_node_list, default_concat_dim) -> None:
    """Compare NPU dumps with the CPU reference: result/cpu_vs_npu.csv, per-node CSVs, logs,
    plots, and where the error starts (computation vs accumulated error)."""
    from msprof_py.precision.api import run_compare

    path = dump_path if dump_path is not None else os.environ.get("DUMP_MEMORY_PATH")
    if dump_op_perf is not None and workload is None and graph_file is None:
        run_guarded(lambda: _needs_run("--dump_op_perf"))
    if dump_op_perf is None:
        env = os.environ.get("DUMP_OP_PERF", "2")
        dump_op_perf = int(env) if env in ("0", "1", "2") else -1
    out = run_guarded(lambda: run_compare(
        path, workload=workload, graph_file=graph_file, params=params, seed=seed, injects=injects, dump_op_perf=dump_op_perf,
        cpu_dir=cpu_dir, npu_dir=npu_dir, node_runtime_filename=node_runtime_filename,
        op_config_name=op_config_name, diff_cnt=diff_cnt, atol=atol, rtol=rtol, show_graph=show_graph,
        max_bins=max_bins, min_bins=min_bins, max_cores=max_cores, map_node_dict=map_node_dict,
        force_compare=force_compare, skip_keys=skip_keys, output_dir=output_dir, perf_all_nodes=perf_all_nodes,
        exclude_node_list=exclude_node_list, default_concat_dim=default_concat_dim))
    for line in out.lines:
        click.echo(line)
    print_warnings(out.warnings)
