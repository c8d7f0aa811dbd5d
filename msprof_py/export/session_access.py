"""Reading the parsed session the way every exporter needs it.

Exporters read the one typed :class:`~msprof_py.parse.session.Session` (every table with the
columns and dtypes of :mod:`msprof_py.parse.schema`; ``Session.from_tables`` builds one from
tables) and these grouping helpers.  Nothing here computes time: it only selects rows.
"""
from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import pandas as pd

from msprof_py.parse.session import Session

NA_ID = 4294967295


def device_ids(session: Session) -> list[int]:
    """Devices to export: the session's device dirs plus any device that ran tasks (all the PROF
    dir's when the session holds one device's tables: ``Session.all_devices``)."""
    if session.all_devices is not None:
        return list(session.all_devices)
    ids: set[int] = set()
    for name in ("devices", "tasks", "steps", "communication"):
        df = getattr(session, name)
        if len(df):
            ids.update(int(d) for d in pd.unique(df["device_id"].astype("int64")))
    return sorted(ids)


def device_info(session: Session, device_id: int) -> dict[str, Any]:
    df = session.devices
    rows = df[df["device_id"].astype("int64") == device_id] if len(df) else df
    if len(rows) == 0:
        return {}
    return rows.iloc[0].to_dict()


def of_device(df: pd.DataFrame, device_id: int) -> pd.DataFrame:
    if len(df) == 0:
        return df
    return df[df["device_id"].to_numpy(dtype=np.int64) == device_id]


def thread_device(api: pd.DataFrame, devices: list[int]) -> pd.Series:
    """Which device's files show each host thread's API calls.

    A thread goes with the device its task-issuing calls target (the most frequent one);
    threads that never targeted a device (setup threads) go with the lowest device id, so every
    call appears in exactly one timeline.  Returns a Series indexed like ``api``.
    """
    if len(api) == 0:
        return pd.Series([], dtype=np.int64)
    default = devices[0] if devices else 0
    if _one_owner(api, devices) is not None:
        return pd.Series(np.full(len(api), default, dtype=np.int64), index=api.index)
    dev = api["device_id"].astype("int64")
    known = dev >= 0
    key = api["pid"].astype("int64") * (1 << 32) + api["thread_id"].astype("int64")
    counts = pd.DataFrame({"key": key[known], "dev": dev[known]}).value_counts().reset_index()
    counts = counts.sort_values(["key", "count", "dev"], ascending=[True, False, True])
    best = counts.drop_duplicates("key").set_index("key")["dev"]
    return key.map(best).fillna(default).astype("int64")


def _one_owner(api: pd.DataFrame, devices: list[int]) -> int | None:
    """The device :func:`thread_device` gives every row of ``api`` when it is one for all (one
    device; or every call that targets a device targets the default one: a one-device run with
    the host pseudo-device listed), else None."""
    default = devices[0] if devices else 0
    if len(devices) <= 1:
        return default
    dev = api["device_id"].to_numpy(dtype=np.int64)
    targets = dev[dev >= 0]
    if len(targets) == 0 or bool((targets == default).all()):
        return default  # (every thread goes with it, without counting per thread)
    return None


# the last API table's thread owners: several exporters of one device ask for the same table's
# rows (a weak reference, so a table is never kept alive by this and an id is never reused wrongly);
# the one device when it owns every row (no array of every row, nor a mask per call: 4.2 M rows on
# the single-op million, 18 calls)
_OWNER: list[tuple[weakref.ref, tuple[int, ...], np.ndarray | int]] = []


def _owners(api: pd.DataFrame, devices: list[int]) -> np.ndarray | int:
    key = tuple(devices)
    if _OWNER and _OWNER[0][0]() is api and _OWNER[0][1] == key:
        return _OWNER[0][2]
    one = _one_owner(api, devices)
    owner: np.ndarray | int = one if one is not None else thread_device(api, devices).to_numpy()
    _OWNER[:] = [(weakref.ref(api), key, owner)]
    return owner


def api_of_device(session: Session, device_id: int) -> pd.DataFrame:
    """The API rows shown in ``device_id``'s files (:func:`thread_device`); the table itself (no
    copy) when they are all of it."""
    api = session.api
    if len(api) == 0:
        return api
    owner = _owners(api, device_ids(session))
    if isinstance(owner, int):  # one device owns every row
        return api if owner == device_id else api[np.zeros(len(api), bool)]
    mine = owner == device_id
    return api if mine.all() else api[mine]
