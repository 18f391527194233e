"""The smooth simulation paths: single-valued laws (`Regularized`, any
`AbstractSmoothLaw`) and dynamic laws (`LuGre`, `Dahl`).

Both integrate ``M(q) q̈ = τ − h − Jᵀ f`` with one `diffrax.diffeqsolve`, on the
flat state vector ``y = [q, q̇, z, x]`` (positions, velocities, the law's internal
state ``z`` — empty for memoryless laws — and the applied force's state ``x``).

Reusable pieces for other paths:

- `StateLayout`: splits/joins the flat state vector.
- `rhs(system, force, friction_fn, layout)`: the vector field ``ẏ = F(t, y)`` as
  an `eqx.Module`, for any ``friction_fn(t, slip_velocity, z) -> (f, ż)``.
- `saved_outputs(system, friction_fn, layout, ts, ys)`: the per-time
  fields of a `Solution` (positions, velocities, friction, slip velocity, modes,
  internal and force states) from saved states.
- `count_vf_evals(solver, num_steps)`: the vector-field evaluation count.
"""

from collections.abc import Callable

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import optimistix as optx
from jaxtyping import Array

from .._types import Float, Int, SlipVector, State, Vector
from ..forces._base import AbstractForce
from ..friction._base import AbstractDynamicLaw, AbstractSmoothLaw
from ..systems._base import AbstractSystem
from ._common import classify, default_adjoint, state_vector, step_controller
from ._solution import Solution

# Defaults. Smooth laws: the tolerance must sit far below the regularisation
# error (order eps) so that the eps study measures the law, not the solver.
SMOOTH_RTOL = 1e-8
SMOOTH_ATOL = 1e-8
# Dynamic laws: the bristle state z is of order fc/σ0 (1e-5 m for σ0 = 1e5 N/m,
# fc = 1 N), so the absolute tolerance must be far below it.
DYNAMIC_RTOL = 1e-6
DYNAMIC_ATOL = 1e-10


class StateLayout(eqx.Module):
    """Sizes of the blocks of the flat state ``y = [q, q̇, z, x]``.

    Attributes:
        n_dof: number of coordinates n (``q`` and ``q̇`` each have n entries).
        n_internal: size of the friction law's internal state ``z``.
        n_force: size of the applied force's state ``x``.
    """

    n_dof: int = eqx.field(static=True)
    n_internal: int = eqx.field(static=True)
    n_force: int = eqx.field(static=True)

    def split(
        self, y: Float[Array, " y"]
    ) -> tuple[Vector, Vector, Float[Array, " z"], State]:
        """``y -> (q, q̇, z, x)``."""
        n, nz = self.n_dof, self.n_internal
        return (
            y[:n],
            y[n : 2 * n],
            y[2 * n : 2 * n + nz],
            y[2 * n + nz : 2 * n + nz + self.n_force],
        )

    def join(
        self, q: Vector, qd: Vector, z: Float[Array, " z"], x: State
    ) -> Float[Array, " y"]:
        """``(q, q̇, z, x) -> y``."""
        return jnp.concatenate([q, qd, z, x])


class _VectorField(eqx.Module):
    system: AbstractSystem
    force: AbstractForce | None
    friction_fn: Callable
    layout: StateLayout

    def __call__(self, t, y, args):
        q, qd, z, x = self.layout.split(y)
        applied, xdot = applied_force(self.force, t, q, qd, x)
        slip = self.system.slip_velocity(q, qd)
        friction, zdot = self.friction_fn(t, slip, z)
        qdd = self.system.acceleration(q, qd, applied, friction)
        return self.layout.join(qd, qdd, zdot, xdot)


def rhs(
    system: AbstractSystem,
    force: AbstractForce | None,
    friction_fn: Callable,
    layout: StateLayout,
) -> _VectorField:
    """The vector field of ``M(q) q̈ = τ(t, q, q̇, x) − h(q, q̇) − J(q)ᵀ f``.

    Args:
        system: the mechanical system.
        force: the applied force, or `None`.
        friction_fn: ``(t, slip_velocity, z) -> (f, ż)``: friction force per
            element and the derivative of the law's internal state (shape
            ``(0,)`` for memoryless laws). Pass an `eqx.Module` (e.g.
            `SmoothFriction`, `DynamicFriction`) so that its numbers are traced,
            not baked into the compiled solve.
        layout: the state layout.

    Returns:
        A callable `eqx.Module` ``(t, y, args) -> ẏ`` for `diffrax.ODETerm`.
    """
    return _VectorField(system, force, friction_fn, layout)


class SmoothFriction(eqx.Module):
    """``friction_fn`` of a memoryless law: ``(t, s, z) -> (φ(s), ż = [])``."""

    law: AbstractSmoothLaw

    def __call__(self, t, slip_velocity: SlipVector, state: Float[Array, " z"]):
        return self.law.force(slip_velocity), state


class DynamicFriction(eqx.Module):
    """``friction_fn`` of a dynamic law: ``(t, s, z) -> (f(z, s), ż(z, s))``."""

    law: AbstractDynamicLaw

    def __call__(self, t, slip_velocity: SlipVector, state: SlipVector):
        return (
            self.law.force(state, slip_velocity),
            self.law.state_derivative(state, slip_velocity),
        )


def applied_force(
    force: AbstractForce | None, t, q: Vector, qd: Vector, x: State
) -> tuple[Vector, State]:
    """``(τ, ẋ)`` of the applied force, ``τ`` broadcast to one entry per coordinate."""
    if force is None:
        return jnp.zeros_like(q), x
    tau = jnp.broadcast_to(jnp.asarray(force.force(t, q, qd, x), float), q.shape)
    return tau, jnp.asarray(force.state_derivative(t, q, qd, x), float)


def force_state0(force: AbstractForce | None, q0: Vector, qd0: Vector) -> State:
    """Initial state of the applied force (empty for `None` or stateless forces)."""
    if force is None:
        return jnp.zeros((0,), dtype=q0.dtype)
    return jnp.asarray(force.init_state(q0, qd0), dtype=q0.dtype).reshape(-1)


def saved_outputs(
    system: AbstractSystem,
    friction_fn: Callable,
    layout: StateLayout,
    ts: Float[Array, " t"],
    ys: Float[Array, "t y"],
) -> dict[str, Array]:
    """The per-time `Solution` fields from states saved at `ts`.

    Returns:
        A dict with ``q``, ``qd``, ``friction``, ``slip_velocity``,
        ``friction_state``, ``force_state`` and ``modes`` (``sign(s)`` as int:
        smooth laws have no stick mode).
    """

    def one(t, y):
        q, qd, z, x = layout.split(y)
        slip = system.slip_velocity(q, qd)
        friction, _ = friction_fn(t, slip, z)
        return q, qd, friction, slip, z, x

    q, qd, friction, slip, z, x = jax.vmap(one)(ts, ys)
    return dict(
        q=q,
        qd=qd,
        friction=friction,
        slip_velocity=slip,
        friction_state=z,
        force_state=x,
        modes=jnp.sign(slip).astype(jnp.int32),
    )


def count_vf_evals(
    solver: diffrax.AbstractSolver, num_steps: Int[Array, ""]
) -> Int[Array, ""]:
    """Vector-field evaluations of a `diffeqsolve`, which diffrax does not count.

    Computed as steps × stages. A Runge–Kutta solver with ``s`` stages evaluates
    the vector field ``s`` times per step, accepted or rejected, less one when
    its tableau is first-same-as-last (FSAL: a step's last stage is the next
    step's first), plus one for the first stage of the first step:
    ``1 + (s − 1)·num_steps`` (Tsit5, Dopri5: ``1 + 6·num_steps``). This is
    exact for explicit solvers except that every rejected attempt at the very
    first step re-evaluates ``f(t0, y0)`` once more, which diffrax's stats do not
    reveal (checked against a counting callback). For implicit (ESDIRK, e.g.
    Kvaerno5) solvers it counts one evaluation per stage; the Newton iterations
    and Jacobians of the stage solves are not counted, so it is a lower bound.
    Other solvers (not Runge–Kutta, or IMEX with several tableaus) report
    ``-1`` (not counted).
    """
    if not isinstance(solver, diffrax.AbstractRungeKutta):
        return jnp.asarray(-1)
    tableau = solver.tableau
    if not isinstance(tableau, diffrax.ButcherTableau):
        return jnp.asarray(-1)
    stages = len(tableau.c) + 1
    if tableau.fsal:
        return 1 + (stages - 1) * num_steps
    return stages * num_steps


def _solve(
    system, friction_fn, force, q0, qd0, z0, t0, t1, ts, options, solver, rtol, atol
) -> Solution:
    x0 = force_state0(force, q0, qd0)
    layout = StateLayout(system.n_dof, z0.shape[0], x0.shape[0])
    y0 = layout.join(q0, qd0, z0, x0)
    controller = step_controller(rtol, atol, options.dtmax, options.jump_ts)
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(rhs(system, force, friction_fn, layout)),
        solver,
        t0,
        t1,
        options.dt0,
        y0,
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=controller,
        max_steps=options.max_steps,
        adjoint=default_adjoint(options),
        throw=False,  # failures become `Solution.result`; `simulate` applies throw
    )
    fields = saved_outputs(system, friction_fn, layout, ts, sol.ys)
    num_steps = jnp.asarray(sol.stats["num_steps"])
    stats = dict(
        num_steps=num_steps,
        num_accepted_steps=jnp.asarray(sol.stats["num_accepted_steps"]),
        num_rejected_steps=jnp.asarray(sol.stats["num_rejected_steps"]),
        num_vf_evals=count_vf_evals(solver, num_steps),
        num_events=jnp.asarray(0),
    )
    return Solution(
        ts=ts,
        event_times=jnp.zeros((0,), dtype=ts.dtype),
        stats=stats,
        result=classify(sol.result),
        **fields,
    )


def simulate_smooth(
    system: AbstractSystem,
    friction: AbstractSmoothLaw,
    force: AbstractForce | None,
    q0: Vector,
    qd0: Vector,
    t0,
    t1,
    ts: Float[Array, " t"],
    options,
) -> Solution:
    """Simulate with a memoryless single-valued law (e.g. `Regularized`).

    State ``y = [q, q̇, x]``. Default solver `diffrax.Tsit5` (explicit, adaptive)
    with a `diffrax.PIDController` at ``rtol = atol = 1e-8``. An explicit solver
    pays for a small regularisation width: the law's slope ``fc/eps`` bounds the
    stable step in stick to a few ``eps·m`` (Farhat et al. 2010, Sec. 1).

    Args: as `jaxfric.simulate` (`options` is its ``Options``).

    Returns:
        A `Solution` with ``friction_state`` of shape ``(t, 0)``, ``modes =
        sign(s)`` and no events. ``result`` is diffrax's result code (e.g.
        ``max_steps_reached``) promoted to `jaxfric.simulate.RESULTS`;
        ``nonfinite_state`` when the state or the force became NaN or inf.
    """
    solver = diffrax.Tsit5() if options.solver is None else options.solver
    rtol = SMOOTH_RTOL if options.rtol is None else options.rtol
    atol = SMOOTH_ATOL if options.atol is None else options.atol
    z0 = jnp.zeros((0,), dtype=q0.dtype)
    return _solve(
        system,
        SmoothFriction(friction),
        force,
        q0,
        qd0,
        z0,
        t0,
        t1,
        ts,
        options,
        solver,
        rtol,
        atol,
    )


def default_dynamic_solver() -> diffrax.Kvaerno5:
    """`diffrax.Kvaerno5` with a Newton root finder at the step-size controller's
    tolerances (the default chord iteration gave NaN gradients through LuGre)."""
    newton = diffrax.with_stepsize_controller_tols(optx.Newton)()
    return diffrax.Kvaerno5(root_finder=newton)


def simulate_dynamic(
    system: AbstractSystem,
    friction: AbstractDynamicLaw,
    force: AbstractForce | None,
    q0: Vector,
    qd0: Vector,
    t0,
    t1,
    ts: Float[Array, " t"],
    options,
) -> Solution:
    """Simulate with a dynamic law (`LuGre`, `Dahl`): the bristle state joins the ODE.

    State ``y = [q, q̇, z, x]``. The bristle dynamics are stiff (time scale
    ``fc/(σ0·|v|)`` and presliding frequency ``√(σ0/m)``), so the default solver
    is `default_dynamic_solver()` (Kvaerno5, Newton) with a
    `diffrax.PIDController` at ``rtol = 1e-6``, ``atol = 1e-10``. The initial
    bristle state is `options.friction_state0` (shape ``(m,)``) or the law's
    `init_state` (relaxed, ``z = 0``).

    Args: as `jaxfric.simulate` (`options` is its ``Options``).

    Returns:
        A `Solution`; ``friction_state`` holds ``z`` (m or rad), ``modes =
        sign(s)``, no events. ``stats["num_vf_evals"]`` counts stage evaluations
        only (see `count_vf_evals`).
    """
    m = system.n_friction
    if options.friction_state0 is None:
        z0 = jnp.asarray(
            friction.init_state(system.slip_velocity(q0, qd0)), dtype=q0.dtype
        )
    else:
        z0 = state_vector("friction_state0", options.friction_state0, m)
    solver = default_dynamic_solver() if options.solver is None else options.solver
    rtol = DYNAMIC_RTOL if options.rtol is None else options.rtol
    atol = DYNAMIC_ATOL if options.atol is None else options.atol
    return _solve(
        system,
        DynamicFriction(friction),
        force,
        q0,
        qd0,
        z0,
        t0,
        t1,
        ts,
        options,
        solver,
        rtol,
        atol,
    )


__all__ = [
    "DynamicFriction",
    "SmoothFriction",
    "StateLayout",
    "applied_force",
    "count_vf_evals",
    "default_dynamic_solver",
    "force_state0",
    "rhs",
    "saved_outputs",
    "simulate_dynamic",
    "simulate_smooth",
]
