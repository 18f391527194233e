"""Result files of a simulation: trajectory (NPZ, CSV), JSON summary, PNG plot.

The library core returns arrays; this module is where they are written to disk.
"""

import csv
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..simulate import RESULTS, Solution

TRAJECTORY_STEM = "trajectory"


def result_message(sol: Solution) -> str:
    """``"successful"``, or the `RESULTS` message of a failed solve."""
    if bool(sol.result == RESULTS.successful):
        return "successful"
    return RESULTS[sol.result]


def solution_arrays(sol: Solution) -> dict[str, np.ndarray]:
    """Every array of a `Solution` as numpy, with ``stats`` flattened to
    ``stats_<name>`` entries and the event times without their ``inf`` padding."""
    out = {
        name: np.asarray(getattr(sol, name))
        for name in (
            "ts",
            "q",
            "qd",
            "friction",
            "slip_velocity",
            "friction_state",
            "force_state",
            "modes",
        )
    }
    events = np.asarray(sol.event_times)
    out["event_times"] = events[np.isfinite(events)]
    for key, value in sol.stats.items():
        out[f"stats_{key}"] = np.asarray(value)
    return out


def write_npz(sol: Solution, path: str | Path) -> Path:
    """Write `solution_arrays` to a compressed ``.npz`` file; returns the path."""
    path = Path(path)
    np.savez_compressed(path, **solution_arrays(sol))
    return path


def write_csv(sol: Solution, path: str | Path) -> Path:
    """Write the trajectory as CSV, one row per saved time.

    Columns: ``t``, ``q_i``, ``qd_i`` (per coordinate), ``friction_k``,
    ``slip_velocity_k``, ``mode_k`` (per friction element), ``z_k`` (internal
    friction state, if any), ``x_j`` (force state, if any).
    """
    path = Path(path)
    arrays = solution_arrays(sol)
    columns = [("t", arrays["ts"][:, None])]
    for prefix, key in (
        ("q", "q"),
        ("qd", "qd"),
        ("friction", "friction"),
        ("slip_velocity", "slip_velocity"),
        ("mode", "modes"),
        ("z", "friction_state"),
        ("x", "force_state"),
    ):
        columns.append((prefix, arrays[key]))
    header, blocks = [], []
    for prefix, block in columns:
        if prefix == "t":
            header.append("t")
        else:
            header.extend(f"{prefix}_{i}" for i in range(block.shape[1]))
        blocks.append(block.astype(float))
    table = np.concatenate(blocks, axis=1)
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows([repr(float(v)) for v in row] for row in table)
    return path


def to_jsonable(value: Any) -> Any:
    """Numpy/JAX arrays and scalars to plain lists and numbers; non-finite floats
    to `None` (JSON has no inf or NaN)."""
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, str | bool) or value is None:
        return value
    if hasattr(value, "__array__"):
        return to_jsonable(np.asarray(value).tolist())
    if isinstance(value, np.generic):
        return to_jsonable(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


def summarize(sol: Solution, **extra: Any) -> dict[str, Any]:
    """A JSON-ready summary of a solve: result, final state, events, counters.

    Args:
        sol: the solution.
        **extra: more entries to include (configuration, wall time, ...).

    Returns:
        A dict of plain Python values.
    """
    arrays = solution_arrays(sol)
    summary = {
        "result": result_message(sol),
        "success": bool(sol.result == RESULTS.successful),
        "t0": float(arrays["ts"][0]),
        "t1": float(arrays["ts"][-1]),
        "num_saved": int(arrays["ts"].shape[0]),
        "n_dof": int(arrays["q"].shape[1]),
        "n_friction": int(arrays["friction"].shape[1]),
        "final": {
            "q": arrays["q"][-1],
            "qd": arrays["qd"][-1],
            "friction": arrays["friction"][-1],
            "slip_velocity": arrays["slip_velocity"][-1],
            "modes": arrays["modes"][-1],
        },
        "event_times": arrays["event_times"],
        "stats": {k: np.asarray(v).item() for k, v in sol.stats.items()},
    }
    summary.update(extra)
    return to_jsonable(summary)


def write_json(data: Any, path: str | Path) -> Path:
    """Write `data` (made JSON-ready by `to_jsonable`) with indentation."""
    path = Path(path)
    path.write_text(json.dumps(to_jsonable(data), indent=2, allow_nan=False) + "\n")
    return path


def save_solution(
    sol: Solution,
    out_dir: str | Path,
    *,
    stem: str = TRAJECTORY_STEM,
    title: str | None = None,
    summary_extra: Mapping[str, Any] | None = None,
) -> dict[str, Path]:
    """Write the four result files of a simulation into `out_dir` (created).

    Files: ``<stem>.npz``, ``<stem>.csv``, ``<stem>.png`` and ``summary.json``.

    Args:
        sol: the solution.
        out_dir: output folder.
        stem: file name stem of the trajectory files.
        title: plot title.
        summary_extra: entries added to the JSON summary.

    Returns:
        The written paths, keyed ``npz``, ``csv``, ``png``, ``json``.
    """
    from ..plot import plot_solution  # matplotlib only when plotting

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {
        "npz": write_npz(sol, out_dir / f"{stem}.npz"),
        "csv": write_csv(sol, out_dir / f"{stem}.csv"),
    }
    fig = plot_solution(sol, title=title)
    paths["png"] = out_dir / f"{stem}.png"
    fig.savefig(paths["png"], dpi=120)
    paths["json"] = out_dir / "summary.json"
    extra = dict(summary_extra or {})
    extra["files"] = {k: p.name for k, p in paths.items()}
    write_json(summarize(sol, **extra), paths["json"])
    return paths


__all__ = [
    "TRAJECTORY_STEM",
    "result_message",
    "save_solution",
    "solution_arrays",
    "summarize",
    "to_jsonable",
    "write_csv",
    "write_json",
    "write_npz",
]
