"""Helpers shared by the experiment scripts: settings, output folder, JSON, tables.

Every experiment ``experiments/<name>.py`` reads its settings from
``configs/experiments/<name>.toml`` (falling back to a default dict in the
script), writes ``results/<name>/figure.png`` and ``results/<name>/summary.json``,
and prints its table.
"""

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax

ROOT = Path(__file__).resolve().parent.parent


def enable_float64() -> None:
    """Experiments run in float64 (the switch path locates events to ~1e-10);
    call before building any array."""
    jax.config.update("jax_enable_x64", True)


def load_settings(name: str, default: Mapping[str, Any]) -> dict[str, Any]:
    """``configs/experiments/<name>.toml`` if it exists, else a copy of `default`.

    A path given as the first command-line argument replaces the default file.
    """
    from jaxfric.io import read_toml

    path = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    if path is None:
        path = ROOT / "configs" / "experiments" / f"{name}.toml"
    if path.exists():
        print(f"settings: {path}")
        return read_toml(path)
    print(f"settings: built-in defaults ({path} not found)")
    return dict(default)


def results_dir(name: str) -> Path:
    """``results/<name>/`` at the repository root, created."""
    path = ROOT / "results" / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_json(data: Any, path: Path) -> Path:
    """Write JSON (arrays to lists, non-finite floats to null)."""
    from jaxfric.io import write_json as _write

    return _write(data, path)


def format_table(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str, str]]
) -> str:
    """A Markdown table.

    Args:
        rows: one dict per row.
        columns: ``(key, header, format spec)`` per column, e.g.
            ``("error", "|x − x*|", ".2e")``; missing values print as ``—``.

    Returns:
        The table as text.
    """

    def cell(row, key, spec):
        value = row.get(key)
        if value is None:
            return "—"
        return format(value, spec) if spec else str(value)

    body = [[cell(r, k, s) for k, _, s in columns] for r in rows]
    headers = [h for _, h, _ in columns]
    widths = [
        max(len(h), *(len(b[i]) for b in body)) if body else len(h)
        for i, h in enumerate(headers)
    ]

    def line(cells):
        return (
            "| "
            + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True))
            + " |"
        )

    out = [line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out.extend(line(b) for b in body)
    return "\n".join(out)


# --- Robots: example-robot-data URDFs and Pinocchio comparisons ---------------


def example_robot_urdf(relative: str) -> str:
    """Path of a URDF shipped by PyPI ``example-robot-data``, e.g.
    ``"ur_description/urdf/ur5_robot.urdf"`` (relative to its ``robots/``)."""
    import importlib.metadata

    dist = importlib.metadata.distribution("example-robot-data")
    path = dist.locate_file(f"cmeel.prefix/share/example-robot-data/robots/{relative}")
    return str(path)


def pinocchio_configuration(model, q):
    """jaxfric joint positions ``q`` (rad, m), shape ``(dof,)`` -> the
    configuration vector of the Pinocchio `model` (continuous joints are stored
    as ``(cos q, sin q)`` there, other joints as ``q``)."""
    import numpy as np

    out = np.zeros(model.nq)
    for k, joint in enumerate(model.joints[1:]):
        if joint.nq == 2:
            out[joint.idx_q : joint.idx_q + 2] = np.cos(q[k]), np.sin(q[k])
        else:
            out[joint.idx_q] = q[k]
    return out


def random_robot_states(seed: int, num: int, n_dof: int):
    """Seeded random joint states for dynamics comparisons, each ``(num, n_dof)``:
    ``q ~ U(−π, π)`` rad, ``q̇ ~ N(0, 2²)`` rad/s, ``q̈ ~ N(0, 5²)`` rad/s² and
    ``τ ~ N(0, 10²)`` N·m, drawn in that order. Returns ``(q, q̇, q̈, τ)``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return (
        rng.uniform(-np.pi, np.pi, (num, n_dof)),
        rng.normal(0.0, 2.0, (num, n_dof)),
        rng.normal(0.0, 5.0, (num, n_dof)),
        rng.normal(0.0, 10.0, (num, n_dof)),
    )
