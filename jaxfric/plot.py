"""Plots of simulation results (matplotlib, object-oriented: no pyplot state).

Figures are returned, not shown or saved: the caller decides (``fig.savefig``).
"""

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .simulate import Solution


def _mark_events(ax: Axes, sol: Solution) -> None:
    events = np.asarray(sol.event_times)
    for t in events[np.isfinite(events)]:
        ax.axvline(float(t), color="0.7", lw=0.6, ls=":", zorder=0)


def plot_solution(
    sol: Solution,
    *,
    title: str | None = None,
    applied: Any = None,
    bounds: Sequence[float] = (),
) -> Figure:
    """Positions, velocities and friction forces over time, one line per
    coordinate / friction element; switch events as dotted vertical lines.

    Args:
        sol: a `Solution`.
        title: figure title.
        applied: the applied force at the saved times, shape ``(t, n_dof)``
            (e.g. `jaxfric.optimize.applied_force`), drawn in the third row
            instead of the friction force.
        bounds: force levels drawn dashed in the third row (torque limits).

    Returns:
        A matplotlib `Figure` with three stacked axes.
    """
    fig = Figure(figsize=(7.0, 7.0), layout="constrained")
    axes = fig.subplots(3, 1, sharex=True)
    ts = np.asarray(sol.ts)
    rows = (
        ("q", sol.q, "position $q_{%d}$"),
        ("qd", sol.qd, r"velocity $\dot q_{%d}$"),
        ("friction", sol.friction, "friction $f_{%d}$")
        if applied is None
        else ("applied", applied, r"applied $\tau_{%d}$"),
    )
    for ax, (_, values, label) in zip(axes, rows, strict=True):
        values = np.asarray(values)
        for i in range(values.shape[1]):
            ax.plot(ts, values[:, i], lw=1.2, label=label % i)
        _mark_events(ax, sol)
        ax.grid(True, lw=0.3)
        if values.shape[1] > 0:
            ax.legend(loc="best", fontsize="small")
    axes[0].set_ylabel("position")
    axes[1].set_ylabel("velocity")
    axes[2].set_ylabel("friction force" if applied is None else "applied force")
    for level in bounds:
        axes[2].axhline(level, color="k", lw=0.8, ls="--")
    axes[2].set_xlabel("time $t$ [s]")
    if title:
        fig.suptitle(title)
    return fig


def plot_comparison(
    solutions: Mapping[str, Solution],
    *,
    coordinate: int = 0,
    reference: tuple[Sequence[float], Sequence[float]] | None = None,
    title: str | None = None,
) -> Figure:
    """One coordinate's position and velocity for several solutions on shared axes.

    Args:
        solutions: label -> `Solution`.
        coordinate: index of the coordinate to plot.
        reference: optional ``(ts, q)`` of a reference position, drawn dashed.
        title: figure title.

    Returns:
        A matplotlib `Figure` with two stacked axes.
    """
    fig = Figure(figsize=(9.0, 7.0), layout="constrained")
    ax_q, ax_v = fig.subplots(2, 1, sharex=True)
    if reference is not None:
        ax_q.plot(*reference, "k--", lw=1.0, label="reference")
    for label, sol in solutions.items():
        ts = np.asarray(sol.ts)
        ax_q.plot(ts, np.asarray(sol.q)[:, coordinate], lw=1.0, label=label)
        ax_v.plot(ts, np.asarray(sol.qd)[:, coordinate], lw=1.0, label=label)
    ax_q.set_ylabel(f"position $q_{{{coordinate}}}$")
    ax_v.set_ylabel(rf"velocity $\dot q_{{{coordinate}}}$")
    ax_v.set_xlabel("time $t$ [s]")
    for ax in (ax_q, ax_v):
        ax.grid(True, lw=0.3)
    ax_q.legend(loc="upper right", fontsize="x-small", ncol=2)
    if title:
        fig.suptitle(title)
    return fig


__all__ = ["plot_comparison", "plot_solution"]
