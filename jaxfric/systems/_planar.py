"""A planar two-link arm in closed form (the example of Kikuuwe & Yamamoto,
Sec. IV-B)."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from .._check import InRange, as_float
from .._math import cos, sin, sincos
from .._types import Array, Float, Jacobian, Matrix, SlipVector, Vector
from ._base import AbstractSystem
from ._lumped import _check_scalars

_NAMES = ("m1", "m2", "l1", "l2", "lc1", "lc2", "I1", "I2", "gravity", "damping")


class TwoLinkArm(AbstractSystem):
    """Planar two-link arm with revolute joints and friction in both joints.

    ``q = (q1, q2)``: ``q1`` is link 1's angle from the x axis, ``q2`` the angle
    of link 2 relative to link 1; gravity (if any) acts along −y in the plane of
    motion. The textbook closed form (Spong, Hutchinson & Vidyasagar, "Robot
    Modeling and Control", Sec. 7.4.1), with ``c2 = cos q2``, ``s2 = sin q2``:

        M11 = m1 lc1² + m2 (l1² + lc2² + 2 l1 lc2 c2) + I1 + I2
        M12 = m2 (lc2² + l1 lc2 c2) + I2,     M22 = m2 lc2² + I2
        h1  = −m2 l1 lc2 s2 (2 q̇1 q̇2 + q̇2²) + (m1 lc1 + m2 l1) g cos q1
              + m2 lc2 g cos(q1 + q2) + d q̇1
        h2  = m2 l1 lc2 s2 q̇1² + m2 lc2 g cos(q1 + q2) + d q̇2

    Args:
        m1, m2: link masses, kg, ``> 0``.
        l1, l2: link lengths, m, ``> 0`` (``l2`` only places the tip).
        lc1, lc2: distances from each joint to its link's centre of mass, m,
            ``>= 0``.
        I1, I2: link inertias about their centres of mass, normal to the plane,
            kg·m², ``>= 0``.
        gravity: gravity acceleration along −y, m/s², ``>= 0`` (0: horizontal
            plane).
        damping: viscous joint damping ``d``, N·m·s/rad, ``>= 0``.
    """

    m1: Float[Array, ""] = eqx.field(converter=as_float)
    m2: Float[Array, ""] = eqx.field(converter=as_float)
    l1: Float[Array, ""] = eqx.field(converter=as_float)
    l2: Float[Array, ""] = eqx.field(converter=as_float)
    lc1: Float[Array, ""] = eqx.field(converter=as_float)
    lc2: Float[Array, ""] = eqx.field(converter=as_float)
    I1: Float[Array, ""] = eqx.field(converter=as_float)
    I2: Float[Array, ""] = eqx.field(converter=as_float)
    gravity: Float[Array, ""] = eqx.field(converter=as_float, default=9.81)
    damping: Float[Array, ""] = eqx.field(converter=as_float, default=0.0)

    n_dof: ClassVar[int] = 2
    n_friction: ClassVar[int] = 2
    independent_friction_rows: ClassVar[bool] = True  # J = I

    def __check_init__(self):
        _check_scalars(self, _NAMES)

    def parameter_checks(self):
        positive = ("m1", "m2", "l1", "l2")
        nonnegative = ("lc1", "lc2", "I1", "I2", "gravity", "damping")
        return tuple(
            InRange(n, getattr(self, n), lower=0.0, lower_open=True) for n in positive
        ) + tuple(InRange(n, getattr(self, n), lower=0.0) for n in nonnegative)

    def mass_matrix(self, q: Vector) -> Matrix:
        self.check_vectors(q=q)
        c2 = cos(q[1])
        m22 = self.m2 * self.lc2**2 + self.I2
        m12 = m22 + self.m2 * self.l1 * self.lc2 * c2
        m11 = (
            self.m1 * self.lc1**2
            + self.m2 * (self.l1**2 + self.lc2**2 + 2 * self.l1 * self.lc2 * c2)
            + self.I1
            + self.I2
        )
        return jnp.stack([jnp.stack([m11, m12]), jnp.stack([m12, m22])])

    def bias_force(self, q: Vector, qd: Vector) -> Vector:
        self.check_vectors(q=q, qd=qd)
        k = self.m2 * self.l1 * self.lc2 * sin(q[1])
        g12 = self.m2 * self.lc2 * self.gravity * cos(q[0] + q[1])
        g1 = (self.m1 * self.lc1 + self.m2 * self.l1) * self.gravity * cos(q[0])
        h1 = -k * (2 * qd[0] * qd[1] + qd[1] ** 2) + g1 + g12
        h2 = k * qd[0] ** 2 + g12
        return jnp.stack([h1, h2]) + self.damping * qd

    def friction_jacobian(self, q: Vector) -> Jacobian:
        self.check_vectors(q=q)
        return jnp.eye(2, dtype=q.dtype)

    def friction_jacobian_dot_qd(self, q: Vector, qd: Vector) -> SlipVector:
        self.check_vectors(q=q, qd=qd)
        return jnp.zeros((2,), dtype=q.dtype)

    def positions(self, q: Vector) -> Float[Array, "2 2"]:
        """Planar positions (m) of the elbow (row 0) and the tip (row 1)."""
        self.check_vectors(q=q)
        s1, c1 = sincos(q[0])
        s12, c12 = sincos(q[0] + q[1])
        elbow = self.l1 * jnp.stack([c1, s1])
        return jnp.stack([elbow, elbow + self.l2 * jnp.stack([c12, s12])])
