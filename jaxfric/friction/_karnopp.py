"""Karnopp's zero-velocity band (D. Karnopp, "Computer simulation of stick-slip
friction in mechanical dynamic systems", ASME J. Dyn. Syst. Meas. Control 107(1),
100-103, 1985).
"""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike

from .._check import (
    AtLeast,
    InRange,
    as_float,
    as_optional_float,
    check_broadcastable,
)
from .._types import Float, SlipVector
from ..simulate import KARNOPP_PATH, AbstractPath
from ._base import AbstractFrictionLaw, AbstractSetValuedLaw


class Karnopp(AbstractFrictionLaw):
    """Karnopp's stick-slip friction with a zero-velocity band (Karnopp 1985,
    Sec. II, Fig. 1(c) and 2(c)).

    Outside the band, ``|v| >= dv``, the force is the slip law's
    ``slip_force(v, sign(v))``. Inside it, ``|v| < dv``, the element is taken as
    stuck: the force is the stick force (the force that keeps the slip velocity
    constant; for one mass the net force ``F``, Karnopp Eq. 3) limited to the
    breakaway levels ``±FH``. `jaxfric.simulate` computes the stick forces of all
    elements in the band together (the Delassus system) and, as in Karnopp's
    momentum band (Eq. 4–5), sets the velocity with which positions move to zero
    inside the band, so stuck elements do not creep.

    Args:
        dv: half-width ``DV`` of the zero-velocity band, m/s or rad/s, ``> 0``.
        breakaway: breakaway level ``FH`` (a magnitude, both directions), N or
            N·m, at least the slip law's level at zero velocity (static >=
            kinetic); `None` takes the slip law's own `breakaway`.
        slip_law: the law outside the band, any `AbstractSetValuedLaw`
            (`Coulomb`, `CoulombViscous`, `Stribeck`).
    """

    simulation_path: ClassVar[AbstractPath] = KARNOPP_PATH
    dv: Float[Array, "..."] = eqx.field(converter=as_float)
    breakaway: Float[Array, "..."] | None
    slip_law: AbstractSetValuedLaw

    def __init__(self, dv, breakaway, slip_law):
        if not isinstance(slip_law, AbstractSetValuedLaw):
            raise TypeError(
                "`slip_law` of Karnopp must be a set-valued law (Coulomb, "
                f"CoulombViscous, Stribeck); got {type(slip_law).__name__}."
            )
        self.dv = dv
        self.breakaway = as_optional_float(breakaway)
        self.slip_law = slip_law

    def __check_init__(self):
        if self.breakaway is not None:
            check_broadcastable({"dv": self.dv, "breakaway": self.breakaway})

    def parameter_checks(self):
        band = (InRange("dv", self.dv, lower=0.0, lower_open=True),)
        if self.breakaway is None:
            return band
        zero, one = jnp.zeros((1,)), jnp.ones((1,))
        kinetic = jnp.maximum(
            self.slip_law.slip_force(zero, one),
            -self.slip_law.slip_force(zero, -one),
        )
        return band + (
            InRange("breakaway", self.breakaway, lower=0.0),
            AtLeast(
                "breakaway", self.breakaway, "slip level at zero velocity", kinetic
            ),
        )

    def static_limit(self, direction: Float[ArrayLike, " m"]) -> SlipVector:
        """Breakaway level ``FH`` towards `direction` (``±1``), a magnitude, N or
        N·m: `breakaway`, or the slip law's `breakaway` when that is `None`."""
        direction = jnp.asarray(direction, dtype=float)
        if self.breakaway is None:
            return self.slip_law.breakaway(direction)
        return jnp.broadcast_to(self.breakaway, direction.shape) + 0.0 * direction

    def in_band(self, slip_velocity: Float[ArrayLike, " m"]) -> Array:
        """``|v| < dv``: the elements that Karnopp's law treats as stuck."""
        return jnp.abs(jnp.asarray(slip_velocity)) < self.dv

    def slip_force(self, slip_velocity: Float[ArrayLike, " m"]) -> SlipVector:
        """The slip law's force with direction ``sign(v)`` (``+1`` at ``v = 0``),
        N or N·m; used outside the band."""
        v = jnp.asarray(slip_velocity, dtype=float)
        return self.slip_law.slip_force(v, jnp.where(v >= 0, 1.0, -1.0))

    def force(
        self,
        slip_velocity: Float[ArrayLike, " m"],
        stick_force: Float[ArrayLike, " m"],
    ) -> SlipVector:
        """Karnopp 1985, Fig. 2(c), element by element.

        Args:
            slip_velocity: ``v``, m/s or rad/s.
            stick_force: the force that would keep ``v`` constant (for an
                isolated mass, the net force on it, Eq. 3), N or N·m.

        Returns:
            The friction force: ``stick_force`` clipped to ``[−FH, FH]`` inside
            the band, the slip force outside it.
        """
        v = jnp.asarray(slip_velocity, dtype=float)
        ones = jnp.ones_like(v)
        held = jnp.clip(
            jnp.asarray(stick_force), -self.static_limit(-ones), self.static_limit(ones)
        )
        return jnp.where(self.in_band(v), held, self.slip_force(v))


__all__ = ["Karnopp"]
