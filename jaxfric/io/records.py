"""Measured records in and out: CSV and NPZ files of time, positions, optional
velocities and known inputs (the columns of `jaxfric.identify.Record`), checked
on load and save. Every problem (NaN, non-increasing time, lengths that differ,
an unknown or missing column) raises `RecordError`, a `ValueError` whose message
names the file and the column.
"""

import os
import re

import numpy as np

from ..identify import Record, RecordError

_CHANNELS = ("q", "qd", "u")
_COLUMN = re.compile(r"^(q|qd|u)(\d*)$")


def _assemble(columns: dict[str, np.ndarray], where: str) -> Record:
    """Group named columns into a `Record`, rejecting unknown or gappy names."""
    if "t" not in columns:
        raise RecordError(f"{where}: column 't' (time) is missing.")
    lengths = {k: np.shape(v)[0] if np.ndim(v) else 0 for k, v in columns.items()}
    n_t = lengths["t"]
    for key, length in lengths.items():
        if length != n_t:
            raise RecordError(
                f"{where}: column '{key}' has {length} samples but 't' has {n_t}."
            )
    groups: dict[str, dict[int | None, np.ndarray]] = {c: {} for c in _CHANNELS}
    for key, value in columns.items():
        if key == "t":
            continue
        match = _COLUMN.match(key)
        if match is None:
            raise RecordError(
                f"{where}: unknown column '{key}'; allowed: 't', 'q', 'qd', 'u' "
                "(or indexed 'q0', 'q1', ..., 'qd0', ..., 'u0', ...)."
            )
        name, index = match.group(1), match.group(2)
        groups[name][int(index) if index else None] = np.asarray(value, dtype=float)
    arrays: dict[str, np.ndarray | None] = {}
    for name, group in groups.items():
        if not group:
            arrays[name] = None
        elif None in group:
            if len(group) > 1:
                raise RecordError(
                    f"{where}: column '{name}' given both plain and indexed "
                    f"({sorted(k for k in group if k is not None)})."
                )
            arrays[name] = group[None]
        else:
            indices = sorted(group)
            if indices != list(range(len(indices))):
                missing = min(set(range(max(indices) + 1)) - set(indices))
                raise RecordError(f"{where}: column '{name}{missing}' is missing.")
            cols = [group[i] for i in indices]
            if any(c.ndim != 1 for c in cols):
                raise RecordError(f"{where}: indexed column '{name}0' must be 1-D.")
            arrays[name] = np.stack(cols, axis=1)
    return Record(
        ts=np.asarray(columns["t"], dtype=float),
        q=arrays["q"],
        qd=arrays["qd"],
        u=arrays["u"],
        source=where,
    )


def _read_csv(path: str) -> dict[str, np.ndarray]:
    with open(path, encoding="utf-8") as fh:
        lines = [ln.strip() for ln in fh if ln.strip() and not ln.startswith("#")]
    if not lines:
        raise RecordError(f"{path}: empty file (no header).")
    header = [h.strip() for h in lines[0].split(",")]
    if len(set(header)) != len(header):
        dup = next(h for h in header if header.count(h) > 1)
        raise RecordError(f"{path}: column '{dup}' appears twice.")
    data: dict[str, list[float]] = {h: [] for h in header}
    for row, line in enumerate(lines[1:]):
        fields = line.split(",")
        if len(fields) != len(header):
            raise RecordError(
                f"{path}: row {row} has {len(fields)} fields; the header has "
                f"{len(header)} columns ({', '.join(header)})."
            )
        for name, text in zip(header, fields, strict=True):
            try:
                data[name].append(float(text))
            except ValueError as e:
                raise RecordError(
                    f"{path}: column '{name}' row {row}: {text.strip()!r} is not a "
                    "number."
                ) from e
    return {k: np.asarray(v, dtype=float) for k, v in data.items()}


def _format(path) -> str:
    ext = os.path.splitext(str(path))[1].lower()
    if ext not in (".csv", ".npz"):
        raise RecordError(f"{path}: unknown file type {ext!r}; use .csv or .npz.")
    return ext


def load_record(path: str | os.PathLike) -> Record:
    """Read a measured record from a ``.csv`` or ``.npz`` file.

    Args:
        path: the file; the format is chosen by its extension.

    Returns:
        A `Record`.

    Raises:
        RecordError: the file has a NaN, time that does not strictly increase,
            columns of different lengths, or an unknown or missing column; the
            message names the file and the column.
    """
    path = os.fspath(path)
    if _format(path) == ".csv":
        columns = _read_csv(path)
    else:
        with np.load(path, allow_pickle=False) as npz:
            columns = {k: np.asarray(npz[k]) for k in npz.files}
    return _assemble(columns, path)


def save_record(path: str | os.PathLike, record: Record) -> None:
    """Write a `Record` to a ``.csv`` (named columns, full float precision) or a
    ``.npz`` (arrays ``t``, ``q`` and, when present, ``qd``, ``u``) file.

    Args:
        path: the file; the format is chosen by its extension.
        record: the record (already checked at construction).
    """
    path = os.fspath(path)
    if _format(path) == ".csv":
        columns = record.columns()
        header = ",".join(columns)
        table = np.stack(list(columns.values()), axis=1)
        np.savetxt(path, table, delimiter=",", header=header, comments="", fmt="%.17g")
    else:
        arrays = {"t": record.ts, "q": record.q}
        for name in ("qd", "u"):
            if getattr(record, name) is not None:
                arrays[name] = getattr(record, name)
        np.savez(path, **arrays)


__all__ = ["load_record", "save_record"]
