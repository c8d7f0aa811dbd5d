"""A profiling session: one PROF directory built under a temporary name, renamed when complete.

``profile(...)`` is the context manager users (and the CLI) switch collection on with::

    from msprof_py.collect import profile
    with profile('{"output": "/tmp/prof", "task_trace": "on"}') as session:
        session.run("resnet50", devices=2, iterations=5)
    print(session.result.prof_dir)

A failure or Ctrl-C inside the block removes the temporary directory, so nothing half-written is
ever left in the output folder.  ``collect(...)`` is the one-call form the CLI uses.
"""
from __future__ import annotations

import os
import random
import re
import secrets
import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from msprof_py.atomic import clean_dead
from msprof_py.collect.hooks import CollectorHooks
from msprof_py.collect.metadata import RunInfo, write_metadata
from msprof_py.collect.options import ProfilingOptions, load_options
from msprof_py.collect.slices import DONE_SUFFIX
from msprof_py.errors import InvalidParamError, InvalidPathError, WarningLog
from msprof_py.raw import files
from msprof_py.runtime.clock import SimClock
from msprof_py.runtime.device import ATLAS_A2, DeviceSpec

TMP_PREFIX = ".msprof_py_tmp_"
TMP_RE = re.compile(r"^\.msprof_py_tmp_(?P<pid>\d+)_[0-9a-f]{8}$")


@dataclass
class CollectResult:
    """What a finished session wrote."""

    prof_dir: Path
    device_ids: list[int]
    device_tasks: int  # tasks with an ACSQ start/end pair written (0 when task_time is off)
    total_bytes: int  # bytes of all data/ files
    record_counts: dict[str, int]
    warnings: WarningLog
    sim: Any = None  # the runtime's SimResult when the session ran a target itself

    def summary(self) -> str:
        devs = ",".join(str(d) for d in self.device_ids) or "-"
        return (f"PROF directory: {self.prof_dir}\n"
                f"devices: {devs}  device tasks: {self.device_tasks}  "
                f"raw data: {self.total_bytes / 1e6:.1f} MB in {_count_data_files(self.prof_dir)} files")


@dataclass
class ProfileSession:
    """Owns the temporary PROF directory, the clock and the hooks of one collection."""

    options: ProfilingOptions
    output: Path
    fixed_clock: bool = False
    seed: int = 0
    slice_bytes: int = files.DEFAULT_SLICE_BYTES
    spec: DeviceSpec = ATLAS_A2
    warnings: WarningLog = field(default_factory=WarningLog)

    def __post_init__(self) -> None:
        self.clock = SimClock.create(self.spec.host_cpu_frequency_mhz, self.spec.hwts_frequency_mhz,
                                     self.fixed_clock)
        ensure_output(self.output)
        clean_dead(self.output, (TMP_RE,))  # what a collect killed with SIGKILL left here
        self.tmp_dir = self.output / f"{TMP_PREFIX}{os.getpid()}_{secrets.token_hex(4)}"
        try:
            self.tmp_dir.mkdir()
        except OSError as err:
            raise InvalidPathError(f"cannot write to output directory {self.output}: {err.strerror}") from None
        self.hooks = CollectorHooks(self.tmp_dir, self.options, self.slice_bytes, self.warnings)
        self.run_info: RunInfo | None = None
        self.sim: Any = None
        self.result: CollectResult | None = None

    def run(self, target: Any, *, devices: int = 1, iterations: int = 1, seed: int | None = None,
            runner: Callable[..., Any] | None = None, **kwargs: Any) -> Any:
        """Run ``target`` (workload name, Graph, ...) on the simulator with profiling on.

        ``runner`` defaults to :func:`msprof_py.runtime.sim.run`; returns its SimResult.  The
        options' ``fp_point`` / ``bp_point`` (when set, and not given in ``kwargs``) are passed on
        to it, so the FP / BP step-trace tags go at those ops.
        """
        if runner is None:
            from msprof_py.runtime.sim import run as runner
        for key in ("fp_point", "bp_point"):
            if getattr(self.options, key):
                kwargs.setdefault(key, getattr(self.options, key))
        sim = runner(target, devices=devices, iterations=iterations, seed=self.seed if seed is None else seed,
                     hooks=self.hooks, clock=self.clock, spec=self.spec, **kwargs)
        self.sim = sim
        self.set_run(device_ids=list(sim.device_ids), pid=sim.pid, pid_name=sim.pid_name,
                     end_sim_ns=sim.end_sim_ns, spec=sim.spec)
        return sim

    def set_run(self, *, device_ids: list[int], pid: int, pid_name: str, end_sim_ns: int,
                spec: DeviceSpec | None = None, rank_id: int | None = None, hostname: str | None = None) -> None:
        """Record what the metadata needs when the stack was driven from outside :meth:`run`
        (``rank_id`` / ``hostname``: one rank of a cluster job)."""
        self.run_info = RunInfo(spec or self.spec, self.clock, sorted(int(d) for d in device_ids), int(pid),
                                pid_name, int(end_sim_ns), self.fixed_clock, rank_id, hostname)

    def finish(self) -> CollectResult:
        """Close the data files, write dictionaries + metadata, and rename into the final PROF dir."""
        if self.run_info is None:
            raise InvalidParamError("nothing was profiled: no workload ran inside the profiling session")
        run = self.run_info
        try:
            self.hooks.close()
            final = self._final_name()
            write_metadata(self.tmp_dir, run, self.options, final)
            os.rename(self.tmp_dir, final)
        except OSError as err:
            raise InvalidPathError(f"cannot write PROF directory in {self.output}: {err}") from None
        self._check_points()
        self.result = CollectResult(final, run.device_ids, self.hooks.device_task_count(),
                                    self.hooks.total_bytes(), dict(self.hooks.record_counts), self.warnings,
                                    self.sim)
        return self.result

    def abort(self) -> None:
        """Remove everything written so far (failure or interrupt)."""
        try:
            self.hooks.close_streams()
        finally:
            shutil.rmtree(self.tmp_dir, ignore_errors=True)

    def _final_name(self) -> Path:
        us = self.clock.wall_start_us
        when = (datetime.fromtimestamp(us / 1e6, tz=timezone.utc) if self.fixed_clock
                else datetime.fromtimestamp(us / 1e6))
        rng = random.Random(self.seed) if self.fixed_clock else random.SystemRandom()
        seq = 1 + sum(1 for p in self.output.iterdir() if files.PROF_DIR_RE.match(p.name))
        while True:
            final = self.output / files.prof_dir_name(seq, when, rng)
            if not final.exists():
                return final
            seq += 1

    def _check_points(self) -> None:
        names = set(self.hooks.names.values())
        for key in ("fp_point", "bp_point"):
            op = getattr(self.options, key)
            if op and op not in names:
                self.warnings.warn(f"{key} {op!r} is not an op of the profiled run; "
                                   "step trace uses the runtime's own FP/BP points")


@contextmanager
def profile(options: str | os.PathLike[str] | Mapping[str, Any] | ProfilingOptions | None = None, *,
            output: str | os.PathLike[str] | None = None, fixed_clock: bool = False, seed: int = 0,
            slice_bytes: int = files.DEFAULT_SLICE_BYTES, spec: DeviceSpec = ATLAS_A2,
            warnings: WarningLog | None = None) -> Iterator[ProfileSession]:
    """Switch profiling on for the ``with`` block; the PROF dir appears only if the block succeeds.

    Args:
        options: profiling_options JSON text, a JSON file path, a dict or ProfilingOptions.
        output: output folder; overrides the options' ``output``.
        fixed_clock: pin the wall clock and counters (byte-identical output for the same seed).
        seed: seed for the simulator (via :meth:`ProfileSession.run`) and the PROF dir suffix.
        slice_bytes: slice file size limit.
    """
    warnings = warnings if warnings is not None else WarningLog()
    opts = load_options(options, warnings)
    out = output if output is not None else opts.output
    if out is None:
        raise InvalidParamError("no output directory: pass --output or set \"output\" in the profiling options")
    session = ProfileSession(opts, Path(out), fixed_clock, seed, slice_bytes, spec, warnings)
    try:
        yield session
        session.finish()
    except BaseException:
        session.abort()
        raise


def collect(target: Any, *, output: str | os.PathLike[str] | None = None,
            options: str | os.PathLike[str] | Mapping[str, Any] | ProfilingOptions | None = None,
            devices: int = 1, iterations: int = 1, seed: int = 0, fixed_clock: bool = False,
            slice_bytes: int = files.DEFAULT_SLICE_BYTES, spec: DeviceSpec = ATLAS_A2,
            runner: Callable[..., Any] | None = None, warnings: WarningLog | None = None,
            **run_kwargs: Any) -> CollectResult:
    """Run ``target`` on the simulated NPU with profiling on and write one PROF directory."""
    with profile(options, output=output, fixed_clock=fixed_clock, seed=seed, slice_bytes=slice_bytes,
                 spec=spec, warnings=warnings) as session:
        session.run(target, devices=devices, iterations=iterations, runner=runner, **run_kwargs)
    assert session.result is not None
    return session.result


def ensure_output(output: Path) -> None:
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InvalidPathError(f"cannot create output directory {output}: {err.strerror or err}") from None
    if not output.is_dir():
        raise InvalidPathError(f"output path {output} is not a directory")
    if not os.access(output, os.W_OK | os.X_OK):
        raise InvalidPathError(f"output directory {output} is not writable")


def _count_data_files(prof_dir: Path) -> int:
    return sum(1 for p in prof_dir.glob("*/data/*") if p.is_file() and not p.name.endswith(DONE_SUFFIX))
