"""The ``msprof-py`` command line.

Each sub-command lives in its own module under ``msprof_py/cli/`` and is imported only when
it runs, so ``msprof-py --help`` stays fast (pandas is never imported for it).  A command
parses options, calls one library function, and lets :func:`run_guarded` map
:class:`~msprof_py.errors.MsprofError` to a one-line message and an exit code.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any, Callable, TypeVar

import click

from msprof_py import __version__

# command name -> "module:attribute"; a module is imported only when its command is used.
COMMANDS: dict[str, str] = {
    "collect": "msprof_py.cli.collect_cmd:collect",
    "query": "msprof_py.cli.query_cmd:query",
    "export": "msprof_py.cli.export_cmd:export",
    "tune": "msprof_py.cli.tune_cmd:tune",
    "aoe-report": "msprof_py.cli.aoe_report_cmd:aoe_report",
    "compare": "msprof_py.cli.compare_cmd:compare",
    "advise": "msprof_py.cli.advise_cmd:advise",
    "diff": "msprof_py.cli.diff_cmd:diff",
    "cluster": "msprof_py.cli.cluster_cmd:cluster",
}


class LazyGroup(click.Group):
    """A click group whose sub-commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name, target in COMMANDS.items() if _importable(target))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None or not _importable(target):
            return None
        module_name, attr = target.split(":")
        return getattr(importlib.import_module(module_name), attr)


def _importable(target: str) -> bool:
    module_name = target.split(":")[0]
    return importlib.util.find_spec(module_name) is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="msprof-py")
def cli() -> None:
    """Collect, parse and export Ascend NPU profiles in msprof's format."""


F = TypeVar("F", bound=Callable[..., Any])


def run_guarded(fn: Callable[[], Any]) -> Any:
    """Run ``fn``; turn an MsprofError into ``msprof-py: error: ...`` and its exit code."""
    from msprof_py.errors import MsprofError

    try:
        return fn()
    except MsprofError as err:
        click.echo(f"msprof-py: error: {err}", err=True)
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        click.echo("msprof-py: interrupted", err=True)
        sys.exit(130)


def print_warnings(warnings: Any) -> None:
    """Print collected warnings once, at the end of a command."""
    msgs = list(warnings or [])
    for m in msgs:
        click.echo(f"msprof-py: warning: {m}", err=True)


def main() -> None:
    cli(prog_name="msprof-py")
