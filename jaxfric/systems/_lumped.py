"""Lumped-parameter systems: masses, springs and dampers with friction."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array

from .._check import InRange, as_float
from .._types import Float, Jacobian, Matrix, SlipVector, Vector
from ._base import AbstractSystem


def _check_scalars(module, names) -> None:
    for name in names:
        if jnp.ndim(getattr(module, name)) != 0:
            raise ValueError(f"`{name}` of {type(module).__name__} must be a scalar.")


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
    independent_friction_rows: ClassVar[bool] = True  # J = [1]

    def __check_init__(self):
        _check_scalars(self, ("mass", "stiffness", "damping"))

    def parameter_checks(self):
        return (
            InRange("mass", self.mass, lower=0.0, lower_open=True),
            InRange("stiffness", self.stiffness, lower=0.0),
            InRange("damping", self.damping, lower=0.0),
        )

    def mass_matrix(self, q: Vector) -> Matrix:
        self.check_vectors(q=q)
        return jnp.reshape(self.mass, (1, 1)) + 0.0 * q[:, None]

    def bias_force(self, q: Vector, qd: Vector) -> Vector:
        self.check_vectors(q=q, qd=qd)
        return self.stiffness * q + self.damping * qd

    def friction_jacobian(self, q: Vector) -> Jacobian:
        self.check_vectors(q=q)
        return jnp.ones((1, 1), dtype=q.dtype)

    def friction_jacobian_dot_qd(self, q: Vector, qd: Vector) -> SlipVector:
        self.check_vectors(q=q, qd=qd)
        return jnp.zeros((1,), dtype=q.dtype)


class _AbstractTwoBody(AbstractSystem):
    """Two masses ``q = (x1, x2)`` with springs and dampers to the ground
    (``k1, c1``; ``k2, c2``) and between the masses (``k12, c12``); the final
    classes place the friction elements: the constant rows of ``J``. All
    fields are declared here (the equinox pattern: fields in one class)."""

    m1: Float[Array, ""] = eqx.field(converter=as_float)
    m2: Float[Array, ""] = eqx.field(converter=as_float)
    k1: Float[Array, ""] = eqx.field(converter=as_float, default=0.0)
    c1: Float[Array, ""] = eqx.field(converter=as_float, default=0.0)
    k2: Float[Array, ""] = eqx.field(converter=as_float, default=0.0)
    c2: Float[Array, ""] = eqx.field(converter=as_float, default=0.0)
    k12: Float[Array, ""] = eqx.field(converter=as_float, default=0.0)
    c12: Float[Array, ""] = eqx.field(converter=as_float, default=0.0)

    n_dof: ClassVar[int] = 2
    # Both final classes' rows are independent.
    independent_friction_rows: ClassVar[bool] = True
    #: The constant friction Jacobian ``J``, one row per friction element.
    jacobian_rows: eqx.AbstractClassVar[tuple[tuple[float, float], ...]]

    def __check_init__(self):
        names = ("m1", "m2", "k1", "c1", "k2", "c2", "k12", "c12")
        _check_scalars(self, names)

    def parameter_checks(self):
        masses = tuple(
            InRange(n, getattr(self, n), lower=0.0, lower_open=True)
            for n in ("m1", "m2")
        )
        springs = ("k1", "c1", "k2", "c2", "k12", "c12")
        return masses + tuple(InRange(n, getattr(self, n), lower=0.0) for n in springs)

    def mass_matrix(self, q: Vector) -> Matrix:
        self.check_vectors(q=q)
        return jnp.diag(jnp.stack([self.m1, self.m2])).astype(q.dtype)

    def bias_force(self, q: Vector, qd: Vector) -> Vector:
        self.check_vectors(q=q, qd=qd)
        coupling = self.k12 * (q[0] - q[1]) + self.c12 * (qd[0] - qd[1])
        return jnp.stack(
            [
                self.k1 * q[0] + self.c1 * qd[0] + coupling,
                self.k2 * q[1] + self.c2 * qd[1] - coupling,
            ]
        )

    @property
    def n_friction(self) -> int:  # pyright: ignore[reportIncompatibleVariableOverride]
        return len(self.jacobian_rows)

    def friction_jacobian(self, q: Vector) -> Jacobian:
        self.check_vectors(q=q)
        return jnp.array(self.jacobian_rows, dtype=q.dtype)

    def friction_jacobian_dot_qd(self, q: Vector, qd: Vector) -> SlipVector:
        self.check_vectors(q=q, qd=qd)
        return jnp.zeros((self.n_friction,), dtype=q.dtype)


class TwoMass(_AbstractTwoBody):
    """Two masses with one friction element on their relative velocity.

    Karnopp 1985, Fig. 3 and Eq. 6–11. ``q = (x1, x2)``; the friction element acts
    on the relative slip velocity ``s = ẋ1 − ẋ2`` (``J = [1, −1]``), so

        m1 ẍ1 = τ1 − h1 − f,      m2 ẍ2 = τ2 − h2 + f,

    with ``h`` from springs and dampers between each mass and the ground
    (``k1, c1``; ``k2, c2``) and between the masses (``k12, c12``, in parallel
    with the friction). Karnopp's "forces not affected by stick or slip" map as
    ``F1 = τ1 − h1`` and ``F2 = −(τ2 − h2)`` (his Eq. 6–7 sign convention), and
    the stick force of Eq. 11 is ``f = (m2 F1 + m1 F2)/(m1 + m2)``.

    Args:
        m1, m2: masses, kg, ``> 0``.
        k1, k2: springs from m1, m2 to the ground, N/m, ``>= 0`` (default 0).
        c1, c2: dampers from m1, m2 to the ground, N·s/m, ``>= 0`` (default 0).
        k12, c12: spring and damper between the masses, ``>= 0`` (default 0).
    """

    jacobian_rows: ClassVar[tuple[tuple[float, float], ...]] = ((1.0, -1.0),)


class StackedBlocks(_AbstractTwoBody):
    """Block m1 sliding on block m2, which slides on the ground: two frictions
    that interact through m2.

    Karnopp 1985, Fig. 4 and Eq. 12–21. ``q = (x1, x2)``, absolute positions.
    Friction elements, in this order:

    1. m1 on m2, slip velocity ``s1 = ẋ1 − ẋ2`` (Karnopp's ``F_r``, ``V_r``);
    2. m2 on the ground, slip velocity ``s2 = ẋ2`` (Karnopp's ``F_f``, ``V_2``).

    So ``J = [[1, −1], [0, 1]]`` and

        m1 ẍ1 = τ1 − h1 − f1,      m2 ẍ2 = τ2 − h2 + f1 − f2,

    which is Karnopp's Eq. 12–13 with ``F1 − F_s = τ1 − h1`` and
    ``F_s − F2 = τ2 − h2``: his spring between the masses is ``k12`` (``F_s``),
    his drive spring on m1 is ``k1`` plus an applied force, his input force on m2
    is ``F2 = −τ2``.

    Args:
        m1: upper block mass, kg, ``> 0``.
        m2: lower block mass, kg, ``> 0``.
        k1, c1: spring and damper from m1 to the ground, ``>= 0`` (default 0).
        k2, c2: spring and damper from m2 to the ground, ``>= 0`` (default 0).
        k12, c12: spring and damper between the blocks, ``>= 0`` (default 0).
    """

    jacobian_rows: ClassVar[tuple[tuple[float, float], ...]] = ((1.0, -1.0), (0.0, 1.0))
