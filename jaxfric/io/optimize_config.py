"""TOML configuration of an optimisation (``jaxfric optimize CONFIG.toml``).

The sections of a simulation configuration (``[system]``, ``[friction]``,
``[force]``, ``[simulate]``; see `jaxfric.io.config`) describe the simulation and
the initial applied force; three more describe the optimisation::

    [objective]                 # the loss (PointToPoint)
    type = "PointToPoint"
    target_q = 1.0
    position_weight = 1e3

    [[limits]]                  # optional penalties, any number
    type = "VelocityLimit"
    limit = 2.0
    weight = 1e3

    [optimize]
    parameters = ["values"]     # fields of [force] optimised ("reference.a", ...)
    optimizer = "adam"          # an optax function
    learning_rate = 0.05        # passed when given and the function takes it
    max_steps = 200
    num_starts = 1              # > 1: a batch of starts under vmap, best kept
    init_noise = 0.1            # std of the Gaussian perturbation of extra starts
    seed = 0
    bounds = [-3.0, 3.0]        # optional projection (Box) of the parameters

    [optimize.optimizer_options]  # optional keywords of the optax function;
    linesearch = "none"           # the string "none" stands for None (TOML has
                                  # no null): here, L-BFGS without line search

This module turns the parsed TOML (a dict) into objects; it does no file I/O
itself besides `load_optimize_config`, which the CLI calls.
"""

import functools
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..optimize import (
    AbstractLimit,
    Box,
    OptimizeResult,
    PointToPoint,
    Problem,
    TorqueLimit,
    VelocityLimit,
    applied_force,
    perturbed_starts,
)
from ._tables import check_sections, resolve_path
from .config import (
    ConfigError,
    _is_numeric_array,
    build,
    check_finite_keys,
    check_ranges,
    parse_simulate,
    parse_table,
    read_toml,
    simulate_options,
)
from .results import result_message

SECTIONS = (
    "system",
    "friction",
    "force",
    "simulate",
    "objective",
    "limits",
    "optimize",
)
OBJECTIVES: dict[str, type] = {"PointToPoint": PointToPoint}
# Force types of this package, besides those of `jaxfric.forces`.
LIMITS: dict[str, type[AbstractLimit]] = {
    "TorqueLimit": TorqueLimit,
    "VelocityLimit": VelocityLimit,
}
OPTIMIZE_KEYS: dict[str, Any] = {
    "parameters": ("tuple", str),
    "optimizer": "str",
    "learning_rate": "number",
    "optimizer_options": "table",
    "max_steps": "int",
    "num_starts": "int",
    "init_noise": "number",
    "seed": "int",
    "bounds": "pair",
}
OPTIMIZE_DEFAULTS: dict[str, Any] = {
    "optimizer": "adam",
    "learning_rate": None,
    "optimizer_options": {},
    "num_starts": 1,
    "init_noise": 0.0,
    "seed": 0,
    "bounds": None,
}
# Allowed ranges of the numeric [optimize] keys: name -> (lower bound, bound
# excluded); `bounds` is checked by `Box`, the optimizer options by optax, and
# any integer `seed` makes a `jax.random` key.
OPTIMIZE_RANGES: dict[str, tuple[float, bool]] = {
    "learning_rate": (0.0, True),
    "max_steps": (0.0, False),
    "num_starts": (1.0, False),
    "init_noise": (0.0, False),
}
_SIMULATE_TO_PROBLEM = ("q0", "qd0", "t1", "t0", "ts", "num_save")


class OptimizeConfig(NamedTuple):
    """A parsed optimisation configuration.

    Attributes:
        problem: the `Problem`.
        optimizer: the `optax` transformation.
        params0: the initial decision variables (batched when ``num_starts > 1``).
        batched: whether `params0` is a batch.
        max_steps: optimiser steps.
        project: the `Box` projection, or `None`.
        raw: the configuration as read.
    """

    problem: Problem
    optimizer: optax.GradientTransformation
    params0: Any
    batched: bool
    max_steps: int
    project: Box | None
    raw: dict[str, Any]


@functools.cache
def parameter_selector(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    """``where`` picking the force fields at the dotted paths `names` (the field
    itself for one name, a tuple for several); one function per tuple of names,
    so equal configurations share compiled steps."""
    if len(names) == 1:
        return lambda force: resolve_path(force, names[0])
    return lambda force: tuple(resolve_path(force, name) for name in names)


@functools.cache
def _optimizer(name: str, options: tuple) -> optax.GradientTransformation:
    # Cached: the same settings give the same object, hence the same compiled step.
    return getattr(optax, name)(**dict(options))


def make_optimizer(
    name: str, learning_rate: float | None, options: Mapping[str, Any], where: str
) -> optax.GradientTransformation:
    """The optax transformation ``optax.<name>(learning_rate, **options)``
    (without `learning_rate` when the function takes none, e.g. ``lbfgs``)."""
    fn = getattr(optax, name, None) if not name.startswith("_") else None
    if not callable(fn) or inspect.isclass(fn):
        raise ConfigError(
            f"{where} key 'optimizer': {name!r} is not an optax function."
        )
    # TOML has no null: the string "none" stands for None.
    kwargs = {k: None if v == "none" else v for k, v in options.items()}
    signature = inspect.signature(fn)
    if learning_rate is not None and "learning_rate" in signature.parameters:
        kwargs.setdefault("learning_rate", learning_rate)
    items = tuple(sorted(kwargs.items()))
    try:
        try:
            hash(items)
        except TypeError:  # list-valued options: no cache
            opt = getattr(optax, name)(**kwargs)
        else:
            opt = _optimizer(name, items)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where} optax.{name}({kwargs}): {e}") from e
    if not isinstance(opt, optax.GradientTransformation):
        raise ConfigError(
            f"{where} key 'optimizer': optax.{name} does not return a "
            "GradientTransformation."
        )
    return opt


def _typed(registry: dict[str, type], table, section: str):
    """An objective or a limit, built as the forces are (`build`), with its
    numbers checked finite first (a NaN target or weight would make the loss
    NaN)."""
    if isinstance(table, Mapping):
        numbers = [k for k, v in table.items() if k != "type" and _is_numeric_array(v)]
        check_finite_keys(table, numbers, section)
    return build(section, table, section=section, types=registry)


def _optimize_table(table) -> dict[str, Any]:
    required = ("parameters", "max_steps")
    out = OPTIMIZE_DEFAULTS | parse_table(table, OPTIMIZE_KEYS, "[optimize]", required)
    if not out["parameters"]:
        raise ConfigError("[optimize] key 'parameters': expected at least one name.")
    check_ranges(out, OPTIMIZE_RANGES, "[optimize]")
    return out


def parse_optimize_config(data: Mapping[str, Any]) -> OptimizeConfig:
    """Build an `OptimizeConfig` from a configuration read into a dict.

    Raises:
        ConfigError: unknown section or key, missing key, wrong value type, or
            a value a constructor rejects; the message names section and key.
    """

    check_sections(
        data,
        SECTIONS,
        ("system", "friction", "force", "simulate", "objective", "optimize"),
    )
    system = build("system", data["system"])
    friction = build("friction", data["friction"])
    force = build("force", data["force"])
    sim = parse_simulate(data["simulate"])
    loss = _typed(OBJECTIVES, data["objective"], "[objective]")
    limits_table = data.get("limits", [])
    if not isinstance(limits_table, list):
        raise ConfigError("[[limits]]: expected an array of tables ([[limits]]).")
    limits = tuple(
        _typed(LIMITS, t, f"[[limits]] #{i}") for i, t in enumerate(limits_table)
    )
    opt = _optimize_table(data["optimize"])

    names = tuple(opt["parameters"])
    for name in names:
        try:
            value = resolve_path(force, name)
        except AttributeError:
            raise ConfigError(
                f"[optimize] key 'parameters': the force {type(force).__name__} has "
                f"no field {name!r}."
            ) from None
        if not (
            isinstance(value, jax.Array) and jnp.issubdtype(value.dtype, jnp.floating)
        ):
            raise ConfigError(
                f"[optimize] key 'parameters': {name!r} of {type(force).__name__} is "
                "not an array of numbers."
            )
    problem_kwargs = {k: sim.pop(k) for k in _SIMULATE_TO_PROBLEM if k in sim}
    try:
        problem = Problem(
            system,
            friction,
            force,
            loss,
            where=parameter_selector(names),
            limits=limits,
            simulate_options=simulate_options(sim),
            **problem_kwargs,
        )
    except (TypeError, ValueError) as e:
        raise ConfigError(f"[simulate]: {e}") from e
    optimizer = make_optimizer(
        opt["optimizer"], opt["learning_rate"], opt["optimizer_options"], "[optimize]"
    )
    project = None
    if opt["bounds"] is not None:
        try:
            project = Box(*opt["bounds"])
        except ValueError as e:
            raise ConfigError(f"[optimize] key 'bounds': {e}") from e

    params0 = problem.initial_params()
    batched = opt["num_starts"] > 1
    if batched:
        params0 = perturbed_starts(
            params0, opt["num_starts"], opt["init_noise"], opt["seed"]
        )
    return OptimizeConfig(
        problem, optimizer, params0, batched, opt["max_steps"], project, dict(data)
    )


def load_optimize_config(path: str | Path) -> OptimizeConfig:
    """Read and parse an optimisation configuration file (see the module
    docstring).

    Raises:
        ConfigError: the file cannot be read or is invalid.
    """

    return parse_optimize_config(read_toml(path))


def bounds_array(project: Box | None) -> list[float] | None:
    """The bounds of a `Box` as plain floats (for reports)."""
    if project is None:
        return None
    return [float(np.asarray(project.lower)), float(np.asarray(project.upper))]


# Reports of a run: a JSON-ready summary and figures (matplotlib, object-
# oriented; figures are returned, the caller saves them).


def report(result: OptimizeResult, problem: Problem) -> dict[str, Any]:
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
        "result": result_message(sol),
        "objective": float(result.value),
        "loss": float(result.loss),
        "penalty": float(result.penalty),
        "violation": float(result.violation),
        "initial_objective": first.tolist(),
        "num_steps": result.num_steps,
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


__all__ = [
    "LIMITS",
    "OBJECTIVES",
    "SECTIONS",
    "OptimizeConfig",
    "load_optimize_config",
    "make_optimizer",
    "parameter_selector",
    "parse_optimize_config",
    "plot_history",
    "report",
]
