"""Kikuuwe et al.'s discrete-time friction model and its RK4-integrable form.

R. Kikuuwe and M. Yamamoto, "A modular software architecture for simulating
mechanical systems involving Coulomb friction integrable by the Runge-Kutta
method", Proc. IEEE/RSJ IROS 2008, pp. 2277-2282. A Coulomb element of level
``F`` is coupled to the slip coordinate through a massless object and a
spring-damper ``K``, ``B`` (their Fig. 1); ``e`` is the spring's displacement.
Because the model is written with the integrator's step size in it, it sticks
with no drift and does not chatter, with no zero-velocity band.
"""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike

from .._check import InRange, as_float, as_optional_float, check_fields_broadcast
from .._math import block_norm
from .._types import Float, ScalarLike, SlipVector
from ..simulate import KIKUUWE_PATH, AbstractPath
from ._base import AbstractFrictionLaw


def gsat(
    limit: Float[ArrayLike, "..."], x: Float[ArrayLike, " m"], dims: int = 1
) -> Array:
    """Kikuuwe & Yamamoto, Eq. 15: ``gsat(X, x) = x`` if ``|x| <= X``, else
    ``X x / |x|``, a saturation at ``X >= 0`` of the Euclidean norm.

    Args:
        limit: ``X``, a scalar or one entry per row of `x` (the rows of one
            block share the block's first entry).
        x: the rows, shape ``(m,)``: ``m / dims`` consecutive blocks of `dims`
            rows, each saturated as one vector (Eq. 23c: the two tangential
            rows of a contact). With ``dims = 1`` this is ``clip(x, -X, X)``.
        dims: rows per block, a divisor of ``m``.
    """
    x = jnp.asarray(x)
    limit = jnp.asarray(limit)
    if dims == 1:
        return jnp.clip(x, -limit, limit)
    norm, _ = block_norm(x, dims)
    # The level of each block is its first row's.
    level = jnp.repeat(jnp.broadcast_to(limit, x.shape)[::dims], dims)
    return x * jnp.where(norm > level, level / jnp.where(norm > 0, norm, 1.0), 1.0)


class Kikuuwe(AbstractFrictionLaw):
    """Kikuuwe et al.'s friction model (Kikuuwe & Yamamoto, Eq. 14 and 19).

    Discrete form with step ``T`` (Eq. 14; the backward-Euler discretisation of
    ``f = F sgn(v − ė)``, ``f = K e + B ė``, Eq. 16–17):

        f(k) = gsat(F, (B + T K) v(k) + K e(k−1))
        e(k) = (B e(k−1) + T f(k)) / (B + T K)

    RK4-integrable form with the stage step size ``τ`` as an argument (Eq. 19):

        f = gsat(F, (B + τ K) v + K e),    ė = (f − K e) / (B + τ K).

    While the force is below ``F`` this gives ``ė = v`` exactly, so the massless
    object ``p = s − e`` does not move: a stuck element does not drift.
    `jaxfric.simulate` integrates it with the generalised RK4 of Eq. 21.

    **Friction with a normal force** (Eq. 22–24): with `mu` instead of `f`,
    the level is ``F = μ·N`` with ``N`` the system's contact normal force at
    each evaluation (`jaxfric.systems.AbstractSystem.normal_forces`, e.g. the
    penalty contact of `jaxfric.systems.FreeBodies`), and with ``dims = 2``
    the two tangential rows of each contact saturate together, on the
    friction disk ``|f| <= μN`` (Eq. 23c, `gsat` of a vector): isotropic
    Coulomb friction in the contact plane.

    Every parameter is a scalar or a vector with one entry per element (row).

    Args:
        k: stiffness ``K`` of the viscoelastic element, N/m (N·m/rad), ``> 0``;
            as high as the step size allows (the stick position is off by up to
            ``2 f / k``).
        b: viscosity ``B``, N·s/m (N·m·s/rad), ``> 0``.
        f: Coulomb (kinetic) level ``F``, N (N·m), ``>= 0``.
        mu: instead of `f`, the friction coefficient ``μ >= 0`` (``F = μ N``).
        dims: rows per friction element (static): 1, 2 for friction in a
            contact plane, or 3 (a contact patch's slip and spin,
            `jaxfric.systems.PlaneContact`).
    """

    simulation_path: ClassVar[AbstractPath] = KIKUUWE_PATH
    k: Float[Array, "..."] = eqx.field(converter=as_float)
    b: Float[Array, "..."] = eqx.field(converter=as_float)
    f: Float[Array, "..."] | None = eqx.field(converter=as_optional_float)
    mu: Float[Array, "..."] | None = eqx.field(converter=as_optional_float)
    dims: int = eqx.field(static=True)

    def __init__(self, k, b, f=None, mu=None, dims=1):
        if (f is None) == (mu is None):
            raise ValueError(
                "Kikuuwe needs the level `f` (N or N·m) or the friction "
                "coefficient `mu` (level mu·N), not both."
            )
        if isinstance(dims, bool) or dims not in (1, 2, 3):
            raise ValueError(
                f"`dims` must be 1, 2 or 3 (rows per element); got {dims!r}."
            )
        self.k, self.b, self.f, self.mu, self.dims = k, b, f, mu, dims

    def __check_init__(self):
        check_fields_broadcast(self, ("k", "b", "f", "mu"))

    def parameter_checks(self):
        level = (
            InRange("f", self.f, lower=0.0)
            if self.mu is None
            else InRange("mu", self.mu, lower=0.0)
        )
        return (
            InRange("k", self.k, lower=0.0, lower_open=True),
            InRange("b", self.b, lower=0.0, lower_open=True),
            level,
        )

    @property
    def rows_per_element(self) -> int:
        return self.dims

    def at_state(self, system, q, qd) -> "Kikuuwe":
        """With `mu`: this law at the level ``F = μ·N(q, q̇)`` (Kikuuwe &
        Yamamoto, Eq. 23b), ``N`` the system's contact normal forces, N.
        Otherwise the law itself."""
        if self.mu is None:
            return self
        level = self.mu * system.normal_forces(q, qd)
        return Kikuuwe(self.k, self.b, f=level, dims=self.dims)

    def init_state(self, slip_velocity: Float[ArrayLike, " m"]) -> SlipVector:
        """Initial spring displacement ``e``: zero (m or rad), one per element."""
        shape = jnp.broadcast_shapes(jnp.shape(slip_velocity), jnp.shape(self.k))
        return jnp.zeros(shape, dtype=self.k.dtype)

    def force_and_rate(
        self,
        state: Float[ArrayLike, " m"],
        slip_velocity: Float[ArrayLike, " m"],
        step: ScalarLike,
    ) -> tuple[SlipVector, SlipVector]:
        """The function ``Z`` of Kikuuwe & Yamamoto, Eq. 19.

        Args:
            state: spring displacement ``e``, m or rad.
            slip_velocity: ``v``, m/s or rad/s.
            step: the (stage) step size ``τ >= 0``, s.

        Returns:
            ``(f, ė)``: friction force (N or N·m) and ``de/dt`` (m/s or rad/s).
        """
        if self.f is None:
            raise ValueError(
                "this Kikuuwe law has a friction coefficient `mu`: take "
                "`law.at_state(system, q, qd)` first (its level is mu·N)."
            )
        e = jnp.asarray(state)
        v = jnp.asarray(slip_velocity)
        impedance = self.b + step * self.k
        f = gsat(self.f, impedance * v + self.k * e, self.dims)
        return f, (f - self.k * e) / impedance

    def force(
        self,
        state: Float[ArrayLike, " m"],
        slip_velocity: Float[ArrayLike, " m"],
        step: ScalarLike,
    ) -> SlipVector:
        """Friction force of Eq. 19b, N or N·m (see `force_and_rate`)."""
        return self.force_and_rate(state, slip_velocity, step)[0]

    def discrete_step(
        self,
        previous_state: Float[ArrayLike, " m"],
        slip_velocity: Float[ArrayLike, " m"],
        step: ScalarLike,
    ) -> tuple[SlipVector, SlipVector]:
        """One step of the discrete model, Kikuuwe & Yamamoto, Eq. 14.

        Args:
            previous_state: ``e(k−1)``, m or rad.
            slip_velocity: ``v(k)``, m/s or rad/s.
            step: the time step ``T > 0``, s.

        Returns:
            ``(f(k), e(k))``: force (N or N·m) and new displacement (m or rad).
        """
        e_prev = jnp.asarray(previous_state)
        # Eq. 14a is Eq. 19b with the stage step τ = T and e = e(k−1).
        f = self.force(e_prev, slip_velocity, step)
        return f, (self.b * e_prev + step * f) / (self.b + step * self.k)


__all__ = ["Kikuuwe", "gsat"]
