"""A measured record (time, positions, optional velocities and known inputs),
checked at construction; `jaxfric.io.load_record` and `save_record` read and
write it as CSV or NPZ.

Column names (CSV header, NPZ keys, `Record.columns`):

- ``t``: sample times, s, strictly increasing;
- ``q`` (one coordinate) or ``q0, q1, ...``: positions, m or rad;
- ``qd`` or ``qd0, qd1, ...``: velocities, m/s or rad/s (optional);
- ``u`` or ``u0, u1, ...``: known inputs (applied forces), N or N·m (optional).

In an NPZ file ``q``, ``qd`` and ``u`` may also be 2-D arrays ``(T, n)``. Every
problem (NaN, non-increasing time, lengths that differ, an unknown or missing
column) raises `RecordError`, a `ValueError` whose message names the file and
the column.
"""

import dataclasses
from typing import Any

import numpy as np

_CHANNELS = ("q", "qd", "u")


class RecordError(ValueError):
    """A measured record is malformed; the message names the file and column."""


@dataclasses.dataclass(frozen=True)
class Record:
    """One measured experiment, host-side (numpy) arrays.

    Attributes:
        ts: sample times, s, shape ``(T,)``, strictly increasing.
        q: positions, m or rad, shape ``(T, n)``.
        qd: velocities, m/s or rad/s, shape ``(T, n)``, or `None`.
        u: known inputs (applied forces), N or N·m, shape ``(T, k)``, or `None`.
        source: the file it was read from (used in error messages), or `None`.
    """

    # Annotated loosely: inputs are converted and checked in `__post_init__`,
    # which raises `RecordError` (naming the column) on anything malformed.
    ts: Any
    q: Any
    qd: Any = None
    u: Any = None
    source: str | None = None

    def __post_init__(self):
        where = self.source or "<record>"
        ts = np.asarray(self.ts, dtype=float)
        if ts.ndim != 1 or ts.shape[0] < 2:
            raise RecordError(
                f"{where}: column 't' must be 1-D with at least 2 samples; got "
                f"shape {ts.shape}."
            )
        object.__setattr__(self, "ts", ts)
        for name in _CHANNELS:
            value = getattr(self, name)
            if value is None:
                if name == "q":
                    raise RecordError(f"{where}: column 'q' (positions) is missing.")
                continue
            arr = np.asarray(value, dtype=float)
            if arr.ndim == 1:
                arr = arr[:, None]
            if arr.ndim != 2 or arr.shape[1] < 1:
                raise RecordError(
                    f"{where}: column '{name}' must have shape (T,) or (T, n); got "
                    f"shape {arr.shape}."
                )
            if arr.shape[0] != ts.shape[0]:
                raise RecordError(
                    f"{where}: column '{name}' has {arr.shape[0]} samples but 't' "
                    f"has {ts.shape[0]}."
                )
            object.__setattr__(self, name, arr)
        if self.qd is not None and self.qd.shape != self.q.shape:
            raise RecordError(
                f"{where}: column 'qd' has {self.qd.shape[1]} coordinates but 'q' "
                f"has {self.q.shape[1]}."
            )
        _check_values(self, where)

    @property
    def n_dof(self) -> int:
        return self.q.shape[1]

    def columns(self) -> dict[str, np.ndarray]:
        """The record as named 1-D columns (the CSV layout)."""
        out = {"t": self.ts}
        for name in _CHANNELS:
            arr = getattr(self, name)
            if arr is None:
                continue
            if arr.shape[1] == 1:
                out[name] = arr[:, 0]
            else:
                for i in range(arr.shape[1]):
                    out[f"{name}{i}"] = arr[:, i]
        return out


def _column_names(name: str, arr: np.ndarray) -> list[str]:
    return [name] if arr.shape[1] == 1 else [f"{name}{i}" for i in range(arr.shape[1])]


def _check_values(record: Record, where: str) -> None:
    """NaN/inf in any column, and time that does not strictly increase."""
    if not np.all(np.isfinite(record.ts)):
        i = int(np.flatnonzero(~np.isfinite(record.ts))[0])
        raise RecordError(f"{where}: column 't' is not finite at row {i}.")
    steps = np.diff(record.ts)
    if np.any(steps <= 0):
        i = int(np.flatnonzero(steps <= 0)[0]) + 1
        raise RecordError(
            f"{where}: column 't' must be strictly increasing; t[{i}] = "
            f"{record.ts[i]!r} <= t[{i - 1}] = {record.ts[i - 1]!r}."
        )
    for name in _CHANNELS:
        arr = getattr(record, name)
        if arr is None:
            continue
        bad = ~np.isfinite(arr)
        if np.any(bad):
            row, col = (int(k) for k in np.argwhere(bad)[0])
            column = _column_names(name, arr)[col]
            raise RecordError(
                f"{where}: column '{column}' is not finite (NaN or inf) at row {row}."
            )


__all__ = ["Record", "RecordError"]
