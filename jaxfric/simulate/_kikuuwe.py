"""The Kikuuwe path: the generalised RK4 of Kikuuwe & Yamamoto, Eq. 21, as a
`diffrax` solver that hands each stage its step size."""

from collections.abc import Callable
from typing import ClassVar

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import jax.tree_util as jtu

from .._types import Float, Scalar, State, Vector
from ..forces._base import AbstractForce
from ..friction._kikuuwe import Kikuuwe
from ..systems._base import AbstractSystem
from ._common import classify, default_adjoint
from ._solution import RESULTS, Solution

DEFAULT_DT = 1e-3
"""Default fixed step (s) of the Kikuuwe and Karnopp paths."""

# Kikuuwe & Yamamoto, Eq. 21: stage r starts at offset T_{r-1} and gets τ = T_r,
# with {T0, ..., T4} = {0, T/2, T/2, T, T}.
_OFFSETS = (0.0, 0.5, 0.5, 1.0)
_STAGE_STEPS = (0.5, 0.5, 1.0, 1.0)
_WEIGHTS = (1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0)


class StageStepRK4(diffrax.AbstractSolver):
    """Fixed-step RK4 that hands each stage its step size (Kikuuwe & Yamamoto,
    Eq. 21).

    Use with `diffrax.ODETerm`, `diffrax.ConstantStepSize` and
    ``args=(τ, other_args)`` in `diffrax.diffeqsolve`: each stage calls
    ``vector_field(t, y, (τ, other_args))`` with its own ``τ``. Stage ``r`` is
    evaluated at
    ``(t0 + T_{r−1}, y0 + T_{r−1} ξ_{r−1})`` with ``τ = T_r``, where
    ``{T0, ..., T4} = {0, h/2, h/2, h, h}``; the update is the classical
    ``y1 = y0 + h (ξ1 + 2 ξ2 + 2 ξ3 + ξ4) / 6``. A vector field that ignores ``τ``
    gets the classical RK4. Dense output is RK4's third-order continuous
    extension (the cubic Hermite polynomial through ``y0, y1`` with slopes
    ``ξ1, ξ4``).
    """

    term_structure: ClassVar = diffrax.ODETerm
    interpolation_cls: ClassVar[
        Callable[..., diffrax.ThirdOrderHermitePolynomialInterpolation]
    ] = diffrax.ThirdOrderHermitePolynomialInterpolation.from_k

    def order(self, terms):
        return 4

    def init(self, terms, t0, t1, y0, args):
        return None

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        del solver_state, made_jump
        h = t1 - t0

        def stage(k_prev, fractions):
            offset, tau = fractions
            y = jtu.tree_map(lambda yi, ki: yi + offset * ki, y0, k_prev)
            xi = terms.vf(t0 + offset * h, y, (tau * h, args[1]))
            k = terms.prod(xi, h)  # h ξ_r
            return k, k

        # One traced vector field for the four stages (a scan, not an unrolled
        # loop) keeps compile time down for expensive vector fields.
        zeros = jtu.tree_map(jnp.zeros_like, y0)
        fractions = (jnp.asarray(_OFFSETS), jnp.asarray(_STAGE_STEPS))
        _, ks = jax.lax.scan(stage, zeros, fractions)
        weights = jnp.asarray(_WEIGHTS)
        y1 = jtu.tree_map(
            lambda yi, ki: yi + jnp.tensordot(weights, ki, axes=1), y0, ks
        )
        dense_info = dict(y0=y0, y1=y1, k=ks)
        return y1, None, dense_info, None, diffrax.RESULTS.successful

    def func(self, terms, t0, y0, args):
        # τ -> 0: the continuous-time limit of the law.
        return terms.vf(t0, y0, (0.0, args[1]))


def applied_force(
    force: AbstractForce | None, t: Scalar, q: Vector, qd: Vector, state: State
) -> tuple[Vector, State]:
    """``(τ(t, q, q̇, x), ẋ)`` with a scalar force broadcast to every coordinate."""
    if force is None:
        return jnp.zeros_like(q), state
    tau = jnp.broadcast_to(force.force(t, q, qd, state), q.shape).astype(q.dtype)
    return tau, force.state_derivative(t, q, qd, state)


def initial_force_state(force: AbstractForce | None, q0: Vector, qd0: Vector) -> State:
    if force is None:
        return jnp.zeros((0,), dtype=q0.dtype)
    return jnp.asarray(force.init_state(q0, qd0), dtype=q0.dtype)


def step_size(dt0, t0, t1) -> float | jax.Array:
    """The fixed step of the path: `dt0` (``0 < dt0 <= t1 − t0``, checked by
    `simulate`), default ``min(DEFAULT_DT, t1 − t0)``."""
    if dt0 is None:
        return jnp.minimum(DEFAULT_DT, jnp.asarray(t1) - t0)
    return dt0


class FixedStep(diffrax.AbstractStepSizeController):
    """Steps of exactly ``dt0`` from ``t0`` (step ``k`` ends at ``t0 + k·dt0``),
    the last one shorter so that it ends exactly on ``t1``.

    `diffrax.ConstantStepSize` spreads ``t1 − t0`` evenly over
    ``ceil((t1 − t0) / dt0)`` steps after a first step of ``dt0``, so when
    `dt0` does not divide the interval no step but the first has the length
    the user asked for (and the Kikuuwe law is evaluated at a step it was not
    given). A last step within diffrax's end tolerance (~100 ulp) of ``t1`` is
    merged into the one before.
    """

    def wrap(self, direction):
        return self

    def init(self, terms, t0, t1, y0, dt0, args, func, error_order):
        del terms, y0, args, func, error_order
        state = (jnp.asarray(1, dtype=jnp.int32), t0, dt0, t1)
        return jnp.minimum(t0 + dt0, t1), state

    def adapt_step_size(
        self, t0, t1, y0, y1_candidate, args, y_error, error_order, controller_state
    ):
        del t0, y0, y1_candidate, args, y_error, error_order
        steps, start, dt, end = controller_state
        steps = steps + 1
        # t0 + k·dt0, not a running sum of dt0 (no accumulated rounding).
        next_t1 = jnp.minimum(start + steps.astype(jnp.result_type(dt)) * dt, end)
        state = (steps, start, dt, end)
        return True, t1, next_t1, False, state, diffrax.RESULTS.successful


def finish_result(sol: diffrax.Solution, *arrays) -> RESULTS:
    """diffrax's result code, or `RESULTS.nonfinite_state` when a saved value is
    NaN or inf (a fixed step accepts every step, so a NaN runs on to `t1`)."""
    result = classify(sol.result)
    finite = jnp.array(True)
    for a in arrays:
        finite = finite & jnp.all(jnp.isfinite(a))
    return RESULTS.where(
        (result == RESULTS.successful) & ~finite, RESULTS.nonfinite_state, result
    )


def fixed_step_stats(sol: diffrax.Solution, evals_per_step: int, extra: int = 0):
    """The `Solution.stats` dict of a fixed-step path."""
    steps = jnp.asarray(sol.stats["num_steps"], dtype=jnp.int32)
    return dict(
        num_steps=steps,
        num_accepted_steps=jnp.asarray(
            sol.stats["num_accepted_steps"], dtype=jnp.int32
        ),
        num_rejected_steps=jnp.asarray(
            sol.stats["num_rejected_steps"], dtype=jnp.int32
        ),
        num_vf_evals=evals_per_step * steps + extra,
        num_events=jnp.zeros((), dtype=jnp.int32),
    )


class _KikuuweField(eqx.Module):
    """Vector field of the Kikuuwe path; a Module (not a closure) so that repeated
    `simulate` calls with the same structure reuse the compiled solve."""

    system: AbstractSystem
    friction: Kikuuwe
    force: AbstractForce | None

    def __call__(self, t, y, args):
        tau_step, _ = args
        q, qd, e, x = y
        v = self.system.slip_velocity(q, qd)
        f, e_dot = self.friction.force_and_rate(e, v, tau_step)
        applied, x_dot = applied_force(self.force, t, q, qd, x)
        return qd, self.system.acceleration(q, qd, applied, f), e_dot, x_dot


def simulate_kikuuwe(
    system: AbstractSystem,
    friction: Kikuuwe,
    force: AbstractForce | None,
    q0: Vector,
    qd0: Vector,
    t0,
    t1,
    ts: Float[jax.Array, " t"],
    options,
) -> Solution:
    """Simulate with Kikuuwe et al.'s friction, integrated by `StageStepRK4`.

    State ``(q, q̇, e, x)`` with the law's spring displacement ``e`` (Eq. 19) and
    the applied force's state ``x``. Each stage evaluates
    ``f, ė = Z(J q̇, e; τ)`` (Eq. 19) and ``q̈ = M⁻¹(τ − h − Jᵀ f)``
    (Kikuuwe & Yamamoto, Eq. 13 and 22).

    Options used: `dt0` (the fixed step, ``0 < dt0 <= t1 − t0``, default
    ``min(1e-3, t1 − t0)`` s; the last step is shorter and ends on ``t1`` when
    `dt0` does not divide the interval (`FixedStep`); stability needs roughly
    ``dt0 < 2 √(m / K)`` for an element of inertia ``m``), `max_steps` (the
    number of steps ``ceil((t1 − t0) / dt0)`` must not exceed it: otherwise
    `RESULTS.max_steps_reached`), `friction_state0` (initial ``e``, default 0).
    `solver` must be `None`; `rtol`, `atol`, `dtmax` are not used.

    Returns:
        A `Solution` with `friction` the force of Eq. 19 at the saved states with
        ``τ = dt0`` (Eq. 20a), `friction_state` = ``e``, `modes` = ``sign(s)``,
        no events, and ``num_vf_evals = 4 num_steps``.
    """
    if options.solver is not None:
        raise ValueError(
            "the Kikuuwe path integrates with its own generalised RK4 "
            "(Kikuuwe & Yamamoto, Eq. 21); `solver` must be None."
        )
    dt = step_size(options.dt0, t0, t1)
    m = system.n_friction
    if options.friction_state0 is None:
        e0 = friction.init_state(system.slip_velocity(q0, qd0))
    else:
        e0 = jnp.asarray(options.friction_state0, dtype=q0.dtype)
    e0 = jnp.broadcast_to(e0, (m,)) if e0.ndim == 0 else e0
    if e0.shape != (m,):
        raise ValueError(
            f"`friction_state0` must be a scalar or have shape ({m},); got shape "
            f"{e0.shape}."
        )
    y0 = (q0, qd0, e0, initial_force_state(force, q0, qd0))

    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(_KikuuweField(system, friction, force)),
        StageStepRK4(),
        t0,
        t1,
        dt,
        y0,
        args=(0.0, None),
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=FixedStep(),
        max_steps=options.max_steps,
        adjoint=default_adjoint(options),
        throw=False,
    )
    q, qd, e, x = sol.ys
    slip = jax.vmap(system.slip_velocity)(q, qd)
    f = jax.vmap(lambda ei, si: friction.force(ei, si, dt))(e, slip)
    return Solution(
        ts=ts,
        q=q,
        qd=qd,
        friction=f,
        slip_velocity=slip,
        friction_state=e,
        force_state=x,
        modes=jnp.sign(slip).astype(jnp.int32),
        event_times=jnp.zeros((0,), dtype=ts.dtype),
        stats=fixed_step_stats(sol, 4),
        result=finish_result(sol, q, qd, e),
    )
