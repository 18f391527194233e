"""What every simulation path shares: the protocol a law family's path
implements (`AbstractPath`), the applied force and its initial state, the
vector-field evaluation count, and the solution's stats and result code."""

import abc
from typing import ClassVar

import diffrax
import equinox as eqx
import jax.numpy as jnp

from .._types import Array, Coordinates, Float, Int, Real, State, Vector
from ..forces import AbstractForce
from ..systems import AbstractSystem
from ._common import (
    classify,
    last_finite,
    name_configuration_failure,
    state_vector,
)
from ._fixed_step import StageStepRK4, step_size
from ._law import AbstractFrictionLaw
from ._options import OPTION_NAMES, SimulateOptions
from ._solution import RESULTS, Solution


class AbstractPath(eqx.Module):
    """How a law family is simulated. Each abstract law family declares its
    path as ``simulation_path`` (as a diffrax solver declares its
    ``term_structure``), so `jaxfric.simulate` dispatches on it without naming
    law classes: a new family adds a path (a subclass of this) and declares it.

    Attributes:
        name: how messages name the path, e.g. ``"the switch path"``.
        options: the `SimulateOptions` fields the path uses; `simulate` rejects
            any other that is given.
        fixed_step: whether `dt0` is the fixed step (then ``dt0 <= t1 − t0``).
        coordinate_rates: whether the path integrates ``q`` by the system's
            `coordinate_rate` (systems with `n_coord` != `n_dof`, e.g. unit
            quaternions); the others integrate ``q̇`` and refuse such systems.
    """

    name: ClassVar[str]
    options: ClassVar[frozenset[str]]
    fixed_step: ClassVar[bool] = False
    coordinate_rates: ClassVar[bool] = False

    def check_used(self, law: AbstractFrictionLaw, options: SimulateOptions):
        """Raise `ValueError` naming the first given option that this path
        does not use, the law and the path."""
        for name in options.given():
            if name not in self.options:
                used = ", ".join(n for n in OPTION_NAMES if n in self.options)
                raise ValueError(
                    f"`{name}` is not an option of {self.name}, which simulates "
                    f"{type(law).__name__}; its options are {used}."
                )

    @abc.abstractmethod
    def defaults(self, options: SimulateOptions, t0, t1, dtype) -> SimulateOptions:
        """`options` with every `None` one that the path uses resolved to its
        default (`SimulateOptions.with_defaults`)."""

    @abc.abstractmethod
    def run(
        self,
        system: AbstractSystem,
        law: AbstractFrictionLaw,
        force: AbstractForce | None,
        q0: Coordinates,
        qd0: Vector,
        t0,
        t1,
        ts: Float[Array, " t"],
        options: SimulateOptions,
    ) -> Solution:
        """Simulate; `options` come from `defaults`. Failures are reported in
        ``Solution.result`` (`simulate` raises on them with ``throw``)."""


class AbstractFixedStepPath(AbstractPath):
    """A path at a fixed step: `dt0` is the step (default ``min(1e-3, t1 −
    t0)`` s, at most ``t1 − t0``), and the solver `StageStepRK4` by default."""

    fixed_step: ClassVar[bool] = True

    def defaults(self, options, t0, t1, dtype):
        return options.with_defaults(solver=StageStepRK4(), dt0=step_size(t0, t1))


def applied_force(
    force: AbstractForce | None, t, q: Coordinates, qd: Vector, x: State
) -> tuple[Vector, State]:
    """``(τ, ẋ)``: the applied force broadcast to one entry per velocity
    and the rate of its state `x` (controller integrators)."""
    if force is None:
        return jnp.zeros_like(qd), x
    tau = jnp.broadcast_to(jnp.asarray(force.force(t, q, qd, x), qd.dtype), qd.shape)
    return tau, jnp.asarray(force.state_derivative(t, q, qd, x), q.dtype)


def force_state0(force: AbstractForce | None, q0: Coordinates, qd0: Vector) -> State:
    """Initial state of the applied force (empty for `None` or stateless forces)."""
    if force is None:
        return jnp.zeros((0,), dtype=q0.dtype)
    return jnp.asarray(force.init_state(q0, qd0), dtype=q0.dtype).reshape(-1)


def friction_state0(
    law: AbstractFrictionLaw,
    system: AbstractSystem,
    q0: Coordinates,
    qd0: Vector,
    value,
) -> State:
    """Initial state of a friction law with state: `law.init_state` at the
    initial slip, or the `friction_state0` option `value` (a scalar or one
    entry per state). A concrete non-finite `value` raises `ValueError`; a
    traced one ends the run as ``RESULTS.nonfinite_state`` (no host callback:
    the program stays cacheable with ``throw=False``)."""
    z0 = jnp.asarray(law.init_state(system.slip_velocity(q0, qd0)), dtype=q0.dtype)
    if value is None:
        return z0
    why = f"the state of {type(law).__name__} (a scalar is broadcast)"
    return state_vector("friction_state0", value, z0.shape[0], why, throw=False)


def evals_per_step(solver) -> tuple[int, int] | None:
    """``(vector-field evaluations per step, extra evaluations at the start)``
    of `solver`, which diffrax does not count; `None` when not known.

    A Runge–Kutta solver with ``s`` stages evaluates the vector field ``s``
    times per step, accepted or rejected, less one when its tableau is
    first-same-as-last (FSAL: a step's last stage is the next step's first),
    plus one for the first stage of the first step (Tsit5, Dopri5:
    ``1 + 6·num_steps``). This is exact for explicit solvers except that every
    rejected attempt at the very first step re-evaluates ``f(t0, y0)`` once
    more (checked against a counting callback). For implicit (ESDIRK, e.g.
    Kvaerno5) solvers it counts one evaluation per stage; Newton iterations and
    Jacobians are not counted, so it is a lower bound. `StageStepRK4`: 4,
    `diffrax.Euler`: 1. Other solvers (not Runge–Kutta, or IMEX with several
    tableaus): `None`.
    """
    if isinstance(solver, StageStepRK4):
        return 4, 0
    if isinstance(solver, diffrax.Euler):
        return 1, 0
    if not isinstance(solver, diffrax.AbstractRungeKutta):
        return None
    tableau = solver.tableau
    if not isinstance(tableau, diffrax.ButcherTableau):
        return None
    stages = len(tableau.c) + 1
    if tableau.fsal:
        return stages - 1, 1
    return stages, 0


def solve_stats(solves: dict, num_vf_evals, num_events=0) -> dict[str, Int[Array, ""]]:
    """The `Solution.stats` dict, each counter an int32 scalar.

    Args:
        solves: the step counters (``num_steps``, ``num_accepted_steps``,
            ``num_rejected_steps``) of a `diffrax.Solution` (or their sums).
        num_vf_evals: vector-field evaluations (``-1``: not counted).
        num_events: mode switches (event-driven paths).
    """
    names = ("num_steps", "num_accepted_steps", "num_rejected_steps")
    stats = {name: solves[name] for name in names}
    stats["num_vf_evals"] = num_vf_evals
    stats["num_events"] = num_events
    return {name: jnp.asarray(value, jnp.int32) for name, value in stats.items()}


def count_vf_evals(solver, num_steps) -> Int[Array, ""]:
    """Vector-field evaluations of `num_steps` steps of `solver` from its start
    (`evals_per_step`), ``-1`` when not known."""
    counts = evals_per_step(solver)
    if counts is None:
        return jnp.asarray(-1, jnp.int32)
    per_step, at_start = counts
    return per_step * num_steps + at_start


def fixed_step_result(system, sol: diffrax.Solution, q, *arrays) -> RESULTS:
    """diffrax's result code, or `RESULTS.nonfinite_state` when a saved value
    (`q` or one of `arrays`) is NaN or inf (a fixed step accepts every step, so
    a NaN runs on to `t1`), named after the system's cause at the last finite
    saved coordinates (`name_configuration_failure`)."""
    result = classify(sol.result)
    finite = jnp.array(True)
    for a in (q, *arrays):
        finite = finite & jnp.all(jnp.isfinite(a))
    result = RESULTS.where(
        (result == RESULTS.successful) & ~finite, RESULTS.nonfinite_state, result
    )
    return name_configuration_failure(system, result, last_finite(q))


def eventless_solution(
    sol: diffrax.Solution,
    solver: diffrax.AbstractSolver,
    result: RESULTS,
    ts: Float[Array, " t"],
    q: Float[Array, "t coord"],
    qd: Float[Array, "t dof"],
    friction: Float[Array, "t m"],
    slip_velocity: Float[Array, "t m"],
    friction_state: Float[Array, "t z"],
    force_state: Float[Array, "t c"],
    modes: Real[Array, "t m"] | None = None,
) -> Solution:
    """The `Solution` of a path without events (one `diffeqsolve`, `sol`, by
    `solver`): no `event_times`, the stats counted from `sol`'s steps and the
    solver's stages, and `modes` ``sign(s)`` unless given (paths without a
    stick mode)."""
    if modes is None:
        modes = jnp.sign(slip_velocity)
    return Solution(
        ts=ts,
        q=q,
        qd=qd,
        friction=friction,
        slip_velocity=slip_velocity,
        friction_state=friction_state,
        force_state=force_state,
        modes=modes.astype(jnp.int32),
        event_times=jnp.zeros((0,), dtype=ts.dtype),
        stats=solve_stats(sol.stats, count_vf_evals(solver, sol.stats["num_steps"])),
        result=result,
    )
