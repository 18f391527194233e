"""Abstract friction laws.

Sign convention used everywhere in jaxfric: a friction element acts on a slip
coordinate ``s = J(q) q̇`` and its force ``f`` enters the equations of motion as

    M(q) q̈ = τ − h(q, q̇) − J(q)ᵀ f,

so ``f`` has the sign of the slip velocity when slipping (it opposes motion).
Units: forces in N (or N·m for rotational elements), velocities in m/s (or
rad/s). Every parameter is a scalar or a vector with one entry per friction
element; scalars broadcast.
"""

import abc
from typing import ClassVar

import jax.numpy as jnp
from jaxtyping import ArrayLike

from .._types import Float, SlipVector
from ..simulate import (
    DYNAMIC_PATH,
    SMOOTH_PATH,
    SWITCH_PATH,
    AbstractFrictionLaw,
    AbstractPath,
)


class AbstractSetValuedLaw(AbstractFrictionLaw):
    """A memoryless law whose force is set-valued at zero slip velocity.

    Coulomb-type laws (Farhat et al. 2010, Eq. 4 and 8): in slip the force is a
    smooth function of the slip velocity for a fixed direction of motion; at zero
    velocity any force in ``[-breakaway(-1), breakaway(+1)]`` can hold the element
    stuck. These laws are simulated exactly by the event-driven switch path.
    """

    simulation_path: ClassVar[AbstractPath] = SWITCH_PATH

    @abc.abstractmethod
    def slip_force(
        self, slip_velocity: Float[ArrayLike, " m"], direction: Float[ArrayLike, " m"]
    ) -> SlipVector:
        """Friction force while slipping in `direction` (``+1`` or ``-1``).

        Farhat et al. 2010, Eq. 8: the direction is held by the element's mode
        (``DQ_Sgn``), not read from the sign of the velocity, so the force is
        smooth in `slip_velocity` inside a segment.

        Args:
            slip_velocity: slip velocities, m/s or rad/s.
            direction: direction of slip per element, ``+1.0`` or ``-1.0``.

        Returns:
            The friction force per element (N or N·m), with the sign of `direction`.
        """

    @abc.abstractmethod
    def breakaway(self, direction: Float[ArrayLike, " m"]) -> SlipVector:
        """Static (breakaway) limit, a magnitude >= 0, towards `direction`.

        A stuck element stays stuck while its required stick force ``f`` obeys
        ``-breakaway(-1) <= f <= breakaway(+1)`` (Farhat et al. 2010, Eq. 5).

        Args:
            direction: ``+1.0`` or ``-1.0`` per element.

        Returns:
            The largest stick force magnitude towards `direction` (N or N·m).
        """

    def force(self, slip_velocity: Float[ArrayLike, " m"]) -> SlipVector:
        """The single-valued part of the law: ``slip_force(v, sign(v))``.

        At ``v == 0`` this returns the law's value with direction 0 (the stick
        force is not a function of velocity; the switch path computes it).
        """
        v = jnp.asarray(slip_velocity)
        direction = jnp.sign(v)
        # At v == 0 both branches are evaluated with direction +/-1 and averaged.
        fp = self.slip_force(v, jnp.ones_like(v))
        fm = self.slip_force(v, -jnp.ones_like(v))
        return jnp.where(
            direction > 0, fp, jnp.where(direction < 0, fm, 0.5 * (fp + fm))
        )


class AbstractSmoothLaw(AbstractFrictionLaw):
    """A memoryless, single-valued, (piecewise) smooth law ``f = φ(v)``.

    The regularised baselines belong here; they are integrated by an ordinary
    adaptive ODE solver.
    """

    simulation_path: ClassVar[AbstractPath] = SMOOTH_PATH

    @abc.abstractmethod
    def force(self, slip_velocity: Float[ArrayLike, " m"]) -> SlipVector:
        """Friction force (N or N·m) as a function of slip velocity (m/s, rad/s)."""


class AbstractDynamicLaw(AbstractFrictionLaw):
    """A law with internal state ``z`` per element (LuGre, Dahl): ``ż = g(z, v)``
    and ``f = φ(z, ż, v)``. The state joins the ODE state, integrated by a
    stiff-capable solver.
    """

    simulation_path: ClassVar[AbstractPath] = DYNAMIC_PATH

    @abc.abstractmethod
    def init_state(self, slip_velocity: Float[ArrayLike, " m"]) -> SlipVector:
        """Initial internal state for the given initial slip velocities."""

    @abc.abstractmethod
    def state_derivative(
        self, state: Float[ArrayLike, " m"], slip_velocity: Float[ArrayLike, " m"]
    ) -> SlipVector:
        """Time derivative of the internal state."""

    @abc.abstractmethod
    def force(
        self, state: Float[ArrayLike, " m"], slip_velocity: Float[ArrayLike, " m"]
    ) -> SlipVector:
        """Friction force (N or N·m) from internal state and slip velocity."""


__all__ = [
    "AbstractDynamicLaw",
    "AbstractFrictionLaw",
    "AbstractSetValuedLaw",
    "AbstractSmoothLaw",
]
