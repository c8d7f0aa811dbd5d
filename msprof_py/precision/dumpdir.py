"""The dump directory (the seed's DUMP_MEMORY_PATH) and its layout.

::

    $DUMP_MEMORY_PATH/
        .msprof_py_dump          marker: this directory was created by msprof_py
        dump_data/{node}.{k}.hex NPU output of each dumped (fused) node as hex slices (precision/npu_data.py)
        npu/{node}.npy           the same joined by the NPU data analysis, in its dump dtype (fp16)
        cpu/{node}.npy           CPU reference output of each original node (fp32)
        result/                  run metadata, comparison results, logs, op_perf.csv, perf/

Node names become file names with "/" replaced by "_" (the seed's rule; ":" too, for output
indices).  The seed deletes an existing DUMP_MEMORY_PATH before a run; msprof_py deletes only a
directory that holds its own marker and refuses any other existing path, so a mistyped path
never destroys user data.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from msprof_py import atomic
from msprof_py.errors import InvalidParamError, InvalidPathError

ENV_DUMP_PATH = "DUMP_MEMORY_PATH"
MAX_PATH_CHARS = 50  # the seed: absolute path of at most 50 characters
MARKER = ".msprof_py_dump"
MARKER_TEXT = "created by msprof_py; `msprof-py compare --workload` may delete and recreate this directory\n"


def node_file_name(node: str) -> str:
    """File stem for a node name (the seed replaces "/" with "_")."""
    return node.replace("/", "_").replace(":", "_")


def check_dump_path(path: str | None) -> Path:
    """Validate a DUMP_MEMORY_PATH value (absolute, at most 50 characters)."""
    if not path:
        raise InvalidParamError(f"{ENV_DUMP_PATH} is not set: export {ENV_DUMP_PATH}=/absolute/dir "
                                "or pass --dump_path")
    if not os.path.isabs(path):
        raise InvalidParamError(f"{ENV_DUMP_PATH} must be an absolute path, got {path!r}")
    if len(path) > MAX_PATH_CHARS:
        raise InvalidParamError(f"{ENV_DUMP_PATH} {path!r} is {len(path)} characters; "
                                f"the limit is {MAX_PATH_CHARS}")
    return Path(path)


def check_new_dump_dir(path: str | None) -> Path:
    """Validate a dump directory for a new run without touching anything.

    Accepted: a path that does not exist, or a directory carrying msprof_py's marker.  Anything
    else that exists is refused.
    """
    root = check_dump_path(path)
    if root.exists() or root.is_symlink():
        if root.is_symlink() or not root.is_dir():
            raise InvalidPathError(f"{root} exists and is not a directory msprof_py created; "
                                   "refusing to overwrite it")
        if not (root / MARKER).is_file():
            raise InvalidPathError(f"{root} already exists and was not created by msprof_py (no "
                                   f"{MARKER} marker); refusing to delete it. Choose a new "
                                   f"{ENV_DUMP_PATH} or remove the directory yourself")
    return root


def prepare_new_dump_dir(path: str | None) -> Path:
    """Create an empty dump directory for a run.

    A directory that does not exist is created (with parents).  An existing one is deleted and
    recreated only if it carries msprof_py's marker; anything else is refused untouched.
    """
    root = check_new_dump_dir(path)
    if root.exists():
        shutil.rmtree(root)
    try:
        root.mkdir(parents=True)
        (root / MARKER).write_text(MARKER_TEXT)
        for sub in ("dump_data", "npu", "cpu", "result"):
            (root / sub).mkdir()
    except OSError as err:
        raise InvalidPathError(f"{root}: cannot create the dump directory: {err.strerror}") from None
    return root


def existing_dump_dir(path: str | None) -> Path:
    """An existing dump directory to compare (any directory, marker or not; never deleted)."""
    root = check_dump_path(path)
    if not root.is_dir():
        raise InvalidPathError(f"dump directory {root} does not exist")
    return root


def save_tensor(directory: Path, node: str, array: np.ndarray) -> Path:
    """Write ``array`` as ``{directory}/{node_file_name(node)}.npy`` (temporary name, then rename)."""
    final = directory / f"{node_file_name(node)}.npy"
    with atomic.atomic_open(final) as fh:
        np.save(fh, np.ascontiguousarray(array), allow_pickle=False)
    return final


def load_tensor(path: Path) -> np.ndarray:
    """Read one dumped tensor; a file numpy cannot read raises InvalidPathError naming it."""
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        raise InvalidPathError(f"{path}: not a readable .npy tensor ({err})") from None
