"""Profile a user's Python script: ``python -m msprof_py.collect.bootstrap [opts] -- script.py args``.

Installs the collector's hooks into the runtime's AscendCL layer (``acl.install_hooks``), runs the
script as ``__main__`` with its own argv, and writes the PROF directory when it returns.  If the
script raises or exits non-zero, a one-line message goes to stderr, nothing is written, and the
bootstrap exits with the script's code.  ``--result-file`` receives a JSON summary for the parent.
"""
from __future__ import annotations

import argparse
import json
import runpy
import signal
import sys
import traceback
from pathlib import Path

from msprof_py.collect.session import profile
from msprof_py.errors import MsprofError, WarningLog


class ScriptFailed(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m msprof_py.collect.bootstrap")
    parser.add_argument("--output", required=True)
    parser.add_argument("--result-file")
    parser.add_argument("--options")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--slice-bytes", type=int, default=None)
    parser.add_argument("--fixed-clock", action="store_true")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # killed: abort the session like Ctrl-C
    warnings = WarningLog()
    kwargs = {} if ns.slice_bytes is None else {"slice_bytes": ns.slice_bytes}
    from msprof_py.runtime import acl

    try:
        with profile(ns.options, output=ns.output, fixed_clock=ns.fixed_clock, seed=ns.seed, warnings=warnings,
                     **kwargs) as session:
            acl.install_hooks(session.hooks, clock=session.clock, spec=session.spec, seed=ns.seed)
            try:
                code = _run_script(ns.script, ns.args)
                if code != 0:
                    raise ScriptFailed(code)
                info = acl.finalize()  # ends the simulated process: end time, devices used, pid
            finally:
                acl.uninstall_hooks()
            session.sim = info
            session.set_run(device_ids=info.device_ids, pid=info.pid, pid_name=info.pid_name,
                            end_sim_ns=info.end_sim_ns, spec=info.spec)
    except ScriptFailed as failed:
        return failed.code
    except KeyboardInterrupt:
        print("msprof-py: interrupted; no PROF directory written", file=sys.stderr)
        return 130
    except MsprofError as err:
        print(f"msprof-py: error: {err}", file=sys.stderr)
        return err.exit_code
    result = session.result
    assert result is not None
    if ns.result_file:
        Path(ns.result_file).write_text(json.dumps({
            "prof_dir": str(result.prof_dir), "device_ids": result.device_ids, "device_tasks": result.device_tasks,
            "total_bytes": result.total_bytes, "record_counts": result.record_counts,
            "warnings": list(warnings)}))
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _run_script(script: str, args: list[str]) -> int:
    """Run ``script`` as __main__; its exit code (an exception = 1, reported in one line)."""
    old_argv, old_path = sys.argv, list(sys.path)
    sys.argv = [script, *args]
    sys.path.insert(0, str(Path(script).resolve().parent))
    try:
        runpy.run_path(script, run_name="__main__")
        return 0
    except SystemExit as exc:
        if exc.code is None or exc.code == 0:
            return 0
        if isinstance(exc.code, int):
            return exc.code
        print(exc.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # the user's bug: one line, where it happened
        where = traceback.extract_tb(exc.__traceback__)[-1]
        print(f"{script}: {type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})", file=sys.stderr)
        return 1
    finally:
        sys.argv, sys.path[:] = old_argv, old_path


if __name__ == "__main__":
    sys.exit(main())
