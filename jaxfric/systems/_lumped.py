"""Lumped-parameter systems: masses, springs and dampers with friction."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array

from .._check import as_float, check_range
from .._types import Float, Jacobian, Matrix, SlipVector, Vector
from ._base import AbstractSystem


class Oscillator(AbstractSystem):
    """A mass on a linear spring and damper with friction on its velocity.

    ``m ẍ + c ẋ + k x = τ − f`` (the Quinn/Farhat benchmark is ``m = k = 1``,
    ``c = 0``; Farhat et al. 2010, Sec. 5.1).

    Args:
        mass: mass ``m``, kg, ``> 0``.
        stiffness: spring constant ``k``, N/m, ``>= 0``.
        damping: viscous damping ``c``, N·s/m, ``>= 0``.
    """

    mass: Float[Array, ""] = eqx.field(converter=as_float)
    stiffness: Float[Array, ""] = eqx.field(converter=as_float)
    damping: Float[Array, ""] = eqx.field(converter=as_float, default=0.0)

    n_dof: ClassVar[int] = 1
    n_friction: ClassVar[int] = 1

    def __check_init__(self):
        check_range("mass", self.mass, lower=0.0, lower_open=True)
        check_range("stiffness", self.stiffness, lower=0.0)
        check_range("damping", self.damping, lower=0.0)
        for name in ("mass", "stiffness", "damping"):
            if jnp.ndim(getattr(self, name)) != 0:
                raise ValueError(f"`{name}` of Oscillator must be a scalar.")

    def mass_matrix(self, q: Vector) -> Matrix:
        return jnp.reshape(self.mass, (1, 1)) + 0.0 * q[:, None]

    def bias_force(self, q: Vector, qd: Vector) -> Vector:
        return self.stiffness * q + self.damping * qd

    def friction_jacobian(self, q: Vector) -> Jacobian:
        return jnp.ones((1, 1), dtype=q.dtype)

    def friction_jacobian_dot_qd(self, q: Vector, qd: Vector) -> SlipVector:
        return jnp.zeros((1,), dtype=q.dtype)
