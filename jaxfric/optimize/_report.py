"""Reports of an optimisation: a JSON-ready summary and figures (matplotlib,
object-oriented; figures are returned, the caller saves them)."""

from typing import Any

import jax
import numpy as np

from ..simulate._solution import RESULTS
from ._optimize import OptimizeResult
from ._problem import Problem, applied_force


def summary(result: OptimizeResult, problem: Problem) -> dict[str, Any]:
    """A JSON-ready summary: best objective and its parts, decision variables,
    final state, limit violation, loss history.

    Args:
        result: what `optimize` returned.
        problem: the `Problem` it solved.

    Returns:
        A dict of plain Python values and numpy arrays.
    """
    sol = result.solution
    history = np.asarray(result.value_history)
    first = history[..., 0]
    return {
        "success": bool(result.success),
        "result": "successful"
        if bool(sol.result == RESULTS.successful)
        else RESULTS[sol.result],
        "objective": float(result.value),
        "loss": float(result.loss),
        "penalty": float(result.penalty),
        "violation": float(result.violation),
        "initial_objective": first.tolist(),
        "num_steps": int(history.shape[-1] - 1),
        "num_starts": 1 if result.member_values is None else len(result.member_values),
        "best_index": result.best_index,
        "member_objectives": None
        if result.member_values is None
        else np.asarray(result.member_values).tolist(),
        "params": [np.asarray(x).tolist() for x in jax.tree.leaves(result.params)],
        "final": {
            "t": float(sol.ts[-1]),
            "q": np.asarray(sol.q[-1]).tolist(),
            "qd": np.asarray(sol.qd[-1]).tolist(),
            "modes": np.asarray(sol.modes[-1]).tolist(),
            "friction": np.asarray(sol.friction[-1]).tolist(),
        },
        "max_abs_force": np.max(
            np.abs(np.asarray(applied_force(sol, result.force))), axis=0
        ).tolist(),
        "max_abs_velocity": np.max(np.abs(np.asarray(sol.qd)), axis=0).tolist(),
        "history": history.tolist(),
    }


def plot_history(result: OptimizeResult, *, title: str | None = None):
    """Objective against iteration (log scale), one line per start."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 4.0), layout="constrained")
    ax = fig.subplots()
    history = np.atleast_2d(np.asarray(result.value_history))
    for i, row in enumerate(history):
        best = result.best_index is None or i == result.best_index
        ax.semilogy(
            np.arange(row.shape[0]),
            row,
            lw=1.6 if best else 0.8,
            alpha=1.0 if best else 0.5,
            label="best start" if best and history.shape[0] > 1 else None,
        )
    ax.set_xlabel("iteration")
    ax.set_ylabel("objective (loss + penalties)")
    ax.grid(True, which="both", lw=0.3)
    if history.shape[0] > 1:
        ax.legend(loc="best", fontsize="small")
    if title:
        ax.set_title(title)
    return fig


def plot_motion(
    result: OptimizeResult,
    *,
    bounds: tuple[float, float] | None = None,
    title: str | None = None,
):
    """Position, velocity and applied force of the best solution (with the force
    bounds dashed), switch events dotted."""
    from matplotlib.figure import Figure

    sol = result.solution
    ts = np.asarray(sol.ts)
    fig = Figure(figsize=(7.0, 7.0), layout="constrained")
    axes = fig.subplots(3, 1, sharex=True)
    rows = (
        (np.asarray(sol.q), "position q"),
        (np.asarray(sol.qd), "velocity q̇"),
        (np.asarray(applied_force(sol, result.force)), "applied force τ"),
    )
    events = np.asarray(sol.event_times)
    for ax, (values, label) in zip(axes, rows, strict=True):
        for i in range(values.shape[1]):
            ax.plot(ts, values[:, i], lw=1.2, label=f"{label}$_{i}$")
        for t in events[np.isfinite(events)]:
            ax.axvline(float(t), color="0.7", lw=0.6, ls=":", zorder=0)
        ax.set_ylabel(label)
        ax.grid(True, lw=0.3)
    if bounds is not None:
        for b in bounds:
            axes[2].axhline(b, color="k", lw=0.8, ls="--")
    axes[2].set_xlabel("time t [s]")
    if title:
        fig.suptitle(title)
    return fig


__all__ = ["plot_history", "plot_motion", "summary"]
