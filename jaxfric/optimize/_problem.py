"""What is optimised: a simulation whose applied force (or controller reference)
depends on decision variables, a loss on the simulated motion, and limits.

The decision variables are a pytree of arrays inside the applied force, picked by
a `where` function as in `equinox.tree_at`: the knot torques of a
`jaxfric.forces.Tabulated` (``where=lambda f: f.values``), the Fourier
coefficients of a `FourierSeries` force (``lambda f: (f.a, f.b)``) or of the
reference trajectory of a controller (``lambda f: (f.reference.a,
f.reference.b)``).
"""

import abc
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PyTree

from .._check import as_float, check_range
from .._minimise import check_options
from .._types import Scalar
from ..forces import AbstractForce
from ..friction import AbstractFrictionLaw
from ..simulate import RESULTS, SimulateOptions, Solution, save_times, simulate
from ..systems import AbstractSystem


def applied_force(sol: Solution, force: AbstractForce) -> Float[Array, "t dof"]:
    """The applied force ``τ(t_i, q_i, q̇_i, x_i)`` at the saved times of `sol`.

    Args:
        sol: a simulated trajectory.
        force: the force it was simulated with.

    Returns:
        ``τ`` per saved time and coordinate, N or N·m, shape ``(t, n_dof)``.
    """

    def at(t, q, qd, x):
        tau = jnp.asarray(force.force(t, q, qd, x), dtype=q.dtype)
        return jnp.broadcast_to(tau, q.shape)

    return jax.vmap(at)(sol.ts, sol.q, sol.qd, sol.force_state)


def time_integral(values: Float[Array, "t ..."], ts: Float[Array, " t"]) -> Array:
    """``∫ values dt`` over the saved times by the trapezoidal rule (per trailing
    entry); exact for piecewise-linear ``values`` with kinks on the saved times."""
    dt = jnp.diff(ts).reshape((-1,) + (1,) * (values.ndim - 1))
    return jnp.sum(0.5 * dt * (values[1:] + values[:-1]), axis=0)


def effort(sol: Solution, force: AbstractForce) -> Scalar:
    """Actuation effort ``∫ Σ_i τ_i(t)² dt`` over the saved times (trapezoidal
    rule), N²·s (or (N·m)²·s).

    The quadrature error is ``O(Δt²)`` in the saved-time spacing ``Δt``; save
    densely (`Problem` `ts`) when the effort is the objective.
    """
    tau = applied_force(sol, force)
    return jnp.sum(time_integral(tau**2, sol.ts))


class AbstractLimit(eqx.Module):
    """A limit on the simulated motion, enforced by a quadratic penalty.

    Subclasses give `excess`, how far each saved sample lies beyond the limit
    (``>= 0``, zero when respected). The penalty added to the loss is
    ``weight · mean(excess²)`` over the saved times (times the duration, so it
    approximates ``weight · ∫ excess² dt``). Samples between saved times are not
    checked: save densely, or for a torque that is interpolated linearly from its
    parameters use a projection (`Box`) instead, which is exact.
    """

    weight: eqx.AbstractVar[Float[Array, ""]]

    @abc.abstractmethod
    def excess(self, sol: Solution, force: AbstractForce) -> Float[Array, "t ..."]:
        """Amount beyond the limit at each saved time, ``>= 0``."""

    def penalty(self, sol: Solution, force: AbstractForce) -> Scalar:
        """``weight · ∫ excess² dt`` (trapezoidal rule on the saved times)."""
        excess = self.excess(sol, force)
        flat = jnp.reshape(excess**2, (excess.shape[0], -1))
        return self.weight * jnp.sum(time_integral(flat, sol.ts))

    def violation(self, sol: Solution, force: AbstractForce) -> Scalar:
        """The largest excess over the saved times (0 when the limit holds)."""
        return jnp.max(self.excess(sol, force), initial=0.0)


def _check_limit(cls_name: str, limit, weight) -> None:
    check_range(f"limit ({cls_name})", limit, lower=0.0, lower_open=True)
    check_range(f"weight ({cls_name})", weight, lower=0.0)
    if jnp.ndim(limit) > 1:
        raise ValueError(
            f"`limit` of {cls_name} must be a scalar or one value per coordinate; "
            f"got shape {jnp.shape(limit)}."
        )


class TorqueLimit(AbstractLimit):
    """``|τ_i(t)| <= limit_i`` on the applied force at the saved times.

    Args:
        limit: largest applied force magnitude, N or N·m, ``> 0`` (scalar or one
            per coordinate).
        weight: penalty weight, 1/(N²·s) or 1/((N·m)²·s), ``>= 0``.
    """

    limit: Float[Array, "..."] = eqx.field(converter=as_float)
    weight: Float[Array, ""] = eqx.field(converter=as_float, default=1e3)

    def __check_init__(self):
        _check_limit("TorqueLimit", self.limit, self.weight)

    def excess(self, sol: Solution, force: AbstractForce) -> Float[Array, "t dof"]:
        return jax.nn.relu(jnp.abs(applied_force(sol, force)) - self.limit)


class VelocityLimit(AbstractLimit):
    """``|q̇_i(t)| <= limit_i`` on the simulated velocities at the saved times.

    Args:
        limit: largest speed, m/s or rad/s, ``> 0`` (scalar or one per
            coordinate).
        weight: penalty weight, s/m² or s/rad², ``>= 0``.
    """

    limit: Float[Array, "..."] = eqx.field(converter=as_float)
    weight: Float[Array, ""] = eqx.field(converter=as_float, default=1e3)

    def __check_init__(self):
        _check_limit("VelocityLimit", self.limit, self.weight)

    def excess(self, sol: Solution, force: AbstractForce) -> Float[Array, "t dof"]:
        return jax.nn.relu(jnp.abs(sol.qd) - self.limit)


class PointToPoint(eqx.Module):
    """Loss of a rest-to-rest (point-to-point) motion:

        ``effort_weight·∫|τ|² dt + position_weight·|q(t1) − target_q|²
        + velocity_weight·|q̇(t1) − target_qd|²``.

    With large terminal weights its minimiser approaches the minimum-effort
    motion that reaches the target exactly (a quadratic penalty of the terminal
    constraint).

    Args:
        target_q: final position, m or rad (scalar or one per coordinate).
        target_qd: final velocity, m/s or rad/s (default 0: arrive at rest).
        position_weight: weight of the final position error, ``>= 0``.
        velocity_weight: weight of the final velocity error, ``>= 0``.
        effort_weight: weight of the effort `effort`, ``>= 0``.
    """

    target_q: Float[Array, "..."] = eqx.field(converter=as_float)
    target_qd: Float[Array, "..."] = eqx.field(converter=as_float, default=0.0)
    position_weight: Float[Array, ""] = eqx.field(converter=as_float, default=1e3)
    velocity_weight: Float[Array, ""] = eqx.field(converter=as_float, default=1e3)
    effort_weight: Float[Array, ""] = eqx.field(converter=as_float, default=1.0)

    def __check_init__(self):
        for name in ("position_weight", "velocity_weight", "effort_weight"):
            check_range(name, getattr(self, name), lower=0.0)

    def __call__(self, sol: Solution, force: AbstractForce) -> Scalar:
        position = jnp.sum((sol.q[-1] - self.target_q) ** 2)
        velocity = jnp.sum((sol.qd[-1] - self.target_qd) ** 2)
        return (
            self.effort_weight * effort(sol, force)
            + self.position_weight * position
            + self.velocity_weight * velocity
        )


class Problem(eqx.Module):
    """A trajectory-optimisation problem: minimise
    ``loss(sol(θ), force(θ)) + Σ limit penalties`` over the decision variables
    ``θ = where(force)``, where ``sol(θ)`` is `jaxfric.simulate` of the system
    under ``force(θ)``.

    Every law works; with a Coulomb-type law the gradient goes through the exact
    switch path, stick phases and switch times included (Farhat et al. 2010,
    Sec. 4). Failed solves (`Solution.result` not successful) are reported by
    `objective` and skipped by `optimize`.

    Args:
        system: the mechanical system.
        friction: the friction law.
        force: the applied force (or controller) holding the initial decision
            variables.
        loss: ``loss(sol, force) -> scalar``: any JAX function of the `Solution`
            and the force (e.g. `PointToPoint`, or a function using `effort`).
            An `eqx.Module` loss keeps its arrays as traced inputs, so changing
            them does not recompile.
        where: ``where(force) -> pytree of arrays``: the decision variables (as
            for `equinox.tree_at`), e.g. ``lambda f: f.values`` for the knot
            torques of a `Tabulated` force.
        q0: initial positions, shape ``(n_dof,)`` or scalar; or a function
            ``q0(force)`` of the force built from the decision variables, e.g.
            ``lambda f: f.reference.position(0.0)`` to start on a controller's
            reference.
        qd0: initial velocities, or a function ``qd0(force)`` (e.g.
            ``lambda f: f.reference.velocity(0.0)``).
        t1: final time, s.
        t0: initial time, s.
        ts: saved times (where the loss sees the motion); default `num_save`
            uniform times.
        num_save: number of uniform saved times when `ts` is `None`.
        limits: `AbstractLimit` penalties (`TorqueLimit`, `VelocityLimit`).
        simulate_options: the numerical options of the solve, a
            `jaxfric.simulate.SimulateOptions` (``rtol``, ``atol``, ``dtmax``,
            ``jump_ts``, ``max_events``, ``max_steps``, ``solver``, ...).
    """

    system: AbstractSystem
    friction: AbstractFrictionLaw
    force: AbstractForce
    loss: Callable[[Solution, AbstractForce], Any]
    where: Callable[[AbstractForce], Any]
    q0: Float[Array, "..."] | Callable[[AbstractForce], Any]
    qd0: Float[Array, "..."] | Callable[[AbstractForce], Any]
    t1: float
    t0: float
    ts: Float[Array, " t"]
    limits: tuple[AbstractLimit, ...]
    simulate_options: SimulateOptions

    def __init__(
        self,
        system: AbstractSystem,
        friction: AbstractFrictionLaw,
        force: AbstractForce,
        loss: Callable[[Solution, AbstractForce], Any],
        *,
        where: Callable[[AbstractForce], Any],
        q0: ArrayLike | Callable[[AbstractForce], Any] = 0.0,
        qd0: ArrayLike | Callable[[AbstractForce], Any] = 0.0,
        t1: float,
        t0: float = 0.0,
        ts: ArrayLike | None = None,
        num_save: int = 201,
        limits: tuple[AbstractLimit, ...] | list[AbstractLimit] = (),
        simulate_options: SimulateOptions | None = None,
    ):
        if not isinstance(force, AbstractForce):
            raise TypeError(
                "`force` must be a jaxfric.forces force holding the decision "
                f"variables; got {type(force).__name__}."
            )
        for limit in limits:
            if not isinstance(limit, AbstractLimit):
                raise TypeError(
                    "`limits` must hold AbstractLimit objects (TorqueLimit, "
                    f"VelocityLimit); got {type(limit).__name__}."
                )
        self.system = system
        self.friction = friction
        self.force = force
        self.loss = loss
        self.where = where
        self.q0 = q0 if callable(q0) else as_float(q0)
        self.qd0 = qd0 if callable(qd0) else as_float(qd0)
        # Python floats: static under jit, as `simulate` needs for its checks.
        self.t1 = float(t1)
        self.t0 = float(t0)
        self.ts = save_times(self.t0, self.t1, ts, num_save)
        self.limits = tuple(limits)
        self.simulate_options = check_options(simulate_options)
        leaves = jax.tree.leaves(self.initial_params())
        if not leaves or not all(eqx.is_inexact_array(x) for x in leaves):
            raise ValueError(
                "`where(force)` must pick a non-empty pytree of floating-point "
                "arrays of the force (the decision variables)."
            )

    def initial_params(self) -> PyTree[Float[Array, "..."]]:
        """The decision variables held by `force`, ``where(force)``."""
        return self.where(self.force)

    def build(self, params: PyTree[Float[Array, "..."]]) -> AbstractForce:
        """The force with its decision variables replaced by `params`."""
        return eqx.tree_at(self.where, self.force, params)

    def initial_state(self, force: AbstractForce) -> tuple[Array, Array]:
        """``(q0, qd0)`` for `force` (evaluating `q0`/`qd0` where they are
        functions of the force)."""
        q0 = self.q0(force) if callable(self.q0) else self.q0
        qd0 = self.qd0(force) if callable(self.qd0) else self.qd0
        return jnp.asarray(q0, dtype=float), jnp.asarray(qd0, dtype=float)

    def simulate(self, params: PyTree[Float[Array, "..."]]) -> Solution:
        """`jaxfric.simulate` under ``force(params)`` (``throw=False``: check
        `Solution.result`)."""
        force = self.build(params)
        q0, qd0 = self.initial_state(force)
        return simulate(
            self.system,
            self.friction,
            q0,
            qd0,
            self.t1,
            t0=self.t0,
            force=force,
            ts=self.ts,
            throw=False,
            options=self.simulate_options,
        )

    def objective(
        self, params: PyTree[Float[Array, "..."]]
    ) -> tuple[Scalar, dict[str, Array]]:
        """The minimised value and its parts.

        Returns:
            ``(value, aux)``: ``value = loss + Σ penalties``; `aux` holds
            ``loss``, ``penalty``, ``violation`` (largest excess over all limits,
            0 when every limit holds) and ``success`` (the solve reached `t1`).
        """
        value, (aux, _) = self.objective_and_solution(params)
        return value, aux

    def objective_and_solution(
        self, params: PyTree[Float[Array, "..."]]
    ) -> tuple[Scalar, tuple[dict[str, Array], Solution]]:
        """``(value, (aux, solution))``: `objective` and the simulation it saw
        (the form `jax.value_and_grad(..., has_aux=True)` takes)."""
        force = self.build(params)
        sol = self.simulate(params)
        loss = jnp.asarray(self.loss(sol, force), dtype=sol.q.dtype)
        if jnp.shape(loss) != ():
            raise ValueError(
                f"`loss` must return a scalar; got shape {jnp.shape(loss)}."
            )
        zero = jnp.zeros((), sol.q.dtype)
        penalty = sum((lim.penalty(sol, force) for lim in self.limits), zero)
        violation = jnp.max(
            jnp.stack([zero] + [lim.violation(sol, force) for lim in self.limits])
        )
        aux = {
            "loss": loss,
            "penalty": penalty,
            "violation": violation,
            "success": sol.result == RESULTS.successful,
        }
        return loss + penalty, (aux, sol)


__all__ = [
    "AbstractLimit",
    "PointToPoint",
    "Problem",
    "TorqueLimit",
    "VelocityLimit",
    "applied_force",
    "effort",
    "time_integral",
]
