"""Dynamic (bristle) friction laws: LuGre (Canudas de Wit et al. 1995) and Dahl.

The internal state ``z`` is the mean bristle deflection, m (or rad for
rotational elements); it joins the ODE state and is integrated by a stiff-capable
solver (`jaxfric.simulate` picks one).
"""

import abc

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike

from .._check import (
    AtLeast,
    InRange,
    as_float,
    as_optional_float,
    check_fields_broadcast,
    check_ge,
    check_range,
)
from .._math import block_norm, row_arms
from .._types import Float, SlipVector
from ._base import AbstractDynamicLaw


def _abs(v):
    # |v| as v·sign(v): derivative sign(v), i.e. 0 at v = 0 (jnp.abs gives +1
    # there), so a start from rest does not bias gradients towards one direction.
    return v * jnp.sign(v)


class _AbstractBristleLaw(AbstractDynamicLaw):
    """A bristle law (Canudas de Wit et al. 1995, Sec. 2; MotionSolve Comment 7
    for vector elements): the state ``z`` is the mean bristle deflection,
    relaxed at rest, and ``ż = v − σ0·|v|·z / g(v)`` with the final class's
    slip speed ``|v|`` and level ``g``."""

    sigma0: eqx.AbstractVar[Float[Array, "..."]]

    @abc.abstractmethod
    def slip_speed(self, slip_velocity: Float[ArrayLike, " m"]) -> SlipVector:
        """``|v|`` per row (a vector element's speed on each of its rows),
        m/s."""

    @abc.abstractmethod
    def stribeck_curve(self, slip_velocity: Float[ArrayLike, " m"]) -> SlipVector:
        """``g(v)``, the level the bristles settle at while slipping at ``v``
        (N or N·m; per unit normal force for contact laws)."""

    def init_state(self, slip_velocity: Float[ArrayLike, " m"]) -> SlipVector:
        """Relaxed bristles, ``z = 0``."""
        return jnp.zeros_like(jnp.asarray(slip_velocity, dtype=float))

    def state_derivative(
        self, state: Float[ArrayLike, " m"], slip_velocity: Float[ArrayLike, " m"]
    ) -> SlipVector:
        """``ż = v − σ0·|v|·z / g(v)``, m/s (Canudas de Wit et al. 1995)."""
        v = jnp.asarray(slip_velocity)
        z = jnp.asarray(state)
        return v - self.sigma0 * self.slip_speed(v) * z / self.stribeck_curve(v)


class LuGre(_AbstractBristleLaw):
    """The LuGre law, Canudas de Wit, Olsson, Åström & Lischinsky 1995, Sec. 2
    (their ``g`` is in length units: ``g_paper = g/σ0``):

        ``ż = v − σ0·|v|·z / g(v)``,
        ``g(v) = fc + (fs − fc)·exp(−(v/vs)²)``,
        ``f = σ0·z + σ1·ż + σ2·v``.

    At constant slip velocity ``z`` settles at ``g(v)·sign(v)/σ0`` and the force at
    the Stribeck curve ``g(v)·sign(v) + σ2·v``; below breakaway the bristles act
    as a spring of stiffness σ0 (presliding). The law is passive for
    ``σ1 <= σ2·fc/(fs − fc)`` (MotionSolve text, ``viscous_effects``); this is not
    enforced, as the classical parameter set (σ1 = √σ0) violates it.

    Args:
        sigma0: bristle stiffness σ0, N/m (N·m/rad), ``> 0``.
        sigma1: bristle damping σ1, N·s/m (N·m·s/rad), ``>= 0``.
        sigma2: viscous coefficient σ2, N·s/m (N·m·s/rad), ``>= 0``.
        fc: Coulomb level, N (N·m), ``> 0`` (``g`` divides the state equation).
        fs: static level, N (N·m), ``>= fc``.
        vs: Stribeck velocity, m/s (rad/s), ``> 0``.
    """

    sigma0: Float[Array, "..."] = eqx.field(converter=as_float)
    sigma1: Float[Array, "..."] = eqx.field(converter=as_float)
    sigma2: Float[Array, "..."] = eqx.field(converter=as_float)
    fc: Float[Array, "..."] = eqx.field(converter=as_float)
    fs: Float[Array, "..."] = eqx.field(converter=as_float)
    vs: Float[Array, "..."] = eqx.field(converter=as_float)

    def __check_init__(self):
        names = ("sigma0", "sigma1", "sigma2", "fc", "fs", "vs")
        check_fields_broadcast(self, names)

    def parameter_checks(self):
        return (
            InRange("sigma0", self.sigma0, lower=0.0, lower_open=True),
            InRange("sigma1", self.sigma1, lower=0.0),
            InRange("sigma2", self.sigma2, lower=0.0),
            InRange("fc", self.fc, lower=0.0, lower_open=True),
            InRange("fs", self.fs, lower=0.0, lower_open=True),
            AtLeast("fs", self.fs, "fc", self.fc),
            InRange("vs", self.vs, lower=0.0, lower_open=True),
        )

    def ordered_levels(self):
        return (("fs", "fc"),)

    @classmethod
    def from_friction_coefficients(
        cls, mu_s, mu_d, sigma0, sigma1, sigma2, vs, normal_load
    ) -> "LuGre":
        """The normal-load form of the MotionSolve ``Force_JointFriction`` text
        (Comment 3), mapped to the force form.

        MotionSolve writes, with ``g`` in friction-coefficient units,

            ``F = N·(σ0·z + σ1·ż) + σ2·v``,
            ``ż = v − σ0·|v|·z / g_μ(v)``,
            ``g_μ(v) = μd + (μs − μd)·exp(−(v/vs)²)``.

        Multiplying the state equation's fraction by ``N/N`` shows the same ``z``
        obeys the force form with

            ``σ0' = N·σ0``, ``σ1' = N·σ1``, ``σ2' = σ2``,
            ``fc = N·μd``, ``fs = N·μs``, ``vs' = vs``,

        since ``σ0'·|v|·z / g(v) = N·σ0·|v|·z / (N·g_μ(v))``. The mapping is exact
        for a constant normal load.

        Args:
            mu_s: static friction coefficient μs, ``>= mu_d``.
            mu_d: dynamic friction coefficient μd, ``> 0``.
            sigma0: bristle stiffness per unit normal load, 1/m, ``> 0``.
            sigma1: bristle damping per unit normal load, s/m, ``>= 0``.
            sigma2: viscous coefficient, N·s/m (not scaled by the load), ``>= 0``.
            vs: Stribeck (stiction transition) velocity, m/s, ``> 0``.
            normal_load: normal force N, N, ``> 0``.

        Returns:
            The equivalent `LuGre` law in force units.
        """
        check_range("mu_d", mu_d, lower=0.0, lower_open=True)
        check_range("mu_s", mu_s, lower=0.0, lower_open=True)
        check_ge("mu_s", mu_s, "mu_d", mu_d)
        check_range("sigma0", sigma0, lower=0.0, lower_open=True)
        check_range("sigma1", sigma1, lower=0.0)
        check_range("normal_load", normal_load, lower=0.0, lower_open=True)
        n = as_float(normal_load)
        return cls(
            sigma0=n * as_float(sigma0),
            sigma1=n * as_float(sigma1),
            sigma2=sigma2,
            fc=n * as_float(mu_d),
            fs=n * as_float(mu_s),
            vs=vs,
        )

    def slip_speed(self, slip_velocity: Float[ArrayLike, " m"]) -> SlipVector:
        """``|v|``, m/s (derivative 0 at rest)."""
        return _abs(jnp.asarray(slip_velocity))

    def stribeck_curve(self, slip_velocity: Float[ArrayLike, " m"]) -> SlipVector:
        """``g(v) = fc + (fs − fc)·exp(−(v/vs)²)``, N (N·m)."""
        x = jnp.asarray(slip_velocity) / self.vs
        return self.fc + (self.fs - self.fc) * jnp.exp(-(x**2))

    def force(
        self, state: Float[ArrayLike, " m"], slip_velocity: Float[ArrayLike, " m"]
    ) -> SlipVector:
        """``f = σ0·z + σ1·ż + σ2·v``, N (Canudas de Wit et al. 1995)."""
        v = jnp.asarray(slip_velocity)
        z = jnp.asarray(state)
        zdot = self.state_derivative(z, v)
        return self.sigma0 * z + self.sigma1 * zdot + self.sigma2 * v


class Dahl(_AbstractBristleLaw):
    """The Dahl law with exponent 1 (Dahl 1968; Canudas de Wit et al. 1995, Sec. 2):

        ``ż = v − σ0·|v|·z / fc``,   ``f = σ0·z``.

    It is LuGre with ``σ1 = σ2 = 0`` and ``fs = fc``: a rate-independent
    hysteresis whose force tends to ``fc·sign(v)`` after a slip of a few
    ``fc/σ0``. It has no static level above ``fc`` and no viscous part.

    Args:
        sigma0: rest stiffness σ0 (slope of force vs displacement at
            reversal), N/m (N·m/rad), ``> 0``.
        fc: Coulomb level, N (N·m), ``> 0``.
    """

    sigma0: Float[Array, "..."] = eqx.field(converter=as_float)
    fc: Float[Array, "..."] = eqx.field(converter=as_float)

    def __check_init__(self):
        check_fields_broadcast(self, ("sigma0", "fc"))

    def parameter_checks(self):
        return (
            InRange("sigma0", self.sigma0, lower=0.0, lower_open=True),
            InRange("fc", self.fc, lower=0.0, lower_open=True),
        )

    def slip_speed(self, slip_velocity: Float[ArrayLike, " m"]) -> SlipVector:
        """``|v|``, m/s (derivative 0 at rest)."""
        return _abs(jnp.asarray(slip_velocity))

    def stribeck_curve(self, slip_velocity: Float[ArrayLike, " m"]) -> SlipVector:
        """``g(v) = fc`` at every slip velocity, N (N·m): no Stribeck dip."""
        return self.fc * jnp.ones_like(jnp.asarray(slip_velocity))

    def force(
        self, state: Float[ArrayLike, " m"], slip_velocity: Float[ArrayLike, " m"]
    ) -> SlipVector:
        """``f = σ0·z``, N."""
        return self.sigma0 * jnp.asarray(state) + 0.0 * jnp.asarray(slip_velocity)


__all__ = ["Dahl", "LuGre"]


class ContactLuGre(_AbstractBristleLaw):
    """LuGre friction with a normal force on vector elements: MotionSolve's
    N-dimensional LuGre (Force_JointFriction text, Comment 7) with the friction
    ellipse of Comment 8 in the form MotionSolve cites, Velenis, Tsiotras &
    Canudas-de-Wit (2005)'s 2-D LuGre, for friction in a contact plane.

    Each element is `dims` consecutive slip rows ``v`` (the contact's
    tangential velocity, m/s) with one bristle state per row ``z``. With
    `arms` ``a`` (one per row; ``a_i = μ_i/μ``, the ellipse's coefficients
    along the rows over `mu_d`'s and `mu_s`'s), Velenis et al.'s matrices are
    ``M_k = μd·diag(a)``, ``M_s = μs·diag(a)`` and their state equation
    ``ż_i = v_i − λ·σ0·z_i/μ_ki²`` with ``λ = |M_k² v|/g_V`` and ``g_V =
    |M_k² v|/|M_k v| + (|M_s² v|/|M_s v| − |M_k² v|/|M_k v|)·exp(−(|v|/vs)²)
    = (|a² v|/|a v|)·g(|v|)`` reduces to

        ``ż_i = v_i − σ0·|a v|·z_i / (a_i²·g(|v|))``,
        ``g(|v|) = μd + (μs − μd)·exp(−(|v|/vs)²)``,
        ``F_i = N·(σ0·z_i + σ1·ż_i) + σ2·v_i``,

    ``N`` the contact's normal force at each evaluation
    (`jaxfric.systems.AbstractSystem.normal_forces`). Without `arms` (``a =
    1``) this is Comment 7 as written (``|a v| = |v|``). At a constant slip
    the bristles settle at ``z_i = a_i² g v_i/(σ0 |a v|)`` and the force at
    ``F = N·g·a² v/|a v| + σ2·v``: on the ellipse ``|F/a| = N·g`` and along
    the slip of maximum dissipation, the slip force of the exact
    `jaxfric.friction.IsotropicCoulomb` with the same `arms` (``μ = g``),
    reached through the bristles' presliding spring ``N·σ0``. The static and
    kinetic ellipses have the same shape here (Velenis et al. allow two).

    Args:
        mu_s: static friction coefficient μs, ``>= mu_d`` (one per row, equal
            on an element's rows).
        mu_d: dynamic friction coefficient μd, ``> 0`` (as `mu_s`).
        sigma0: bristle stiffness per unit normal force, 1/m, ``> 0``.
        sigma1: bristle damping per unit normal force, s/m, ``>= 0``.
        sigma2: viscous coefficient, N·s/m, ``>= 0``.
        vs: stiction transition velocity, m/s, ``> 0``.
        dims: rows per element (static), 2 or 3.
        normal: the normal force per row, N (set by `at_state`; `None` to
            take it from the system).
        arms: per row, ``> 0``: the ellipse's coefficient ratios ``μ_i/μ``
            (as `IsotropicCoulomb`'s on a contact); default 1 (a circle).
    """

    mu_s: Float[Array, "..."] = eqx.field(converter=as_float)
    mu_d: Float[Array, "..."] = eqx.field(converter=as_float)
    sigma0: Float[Array, "..."] = eqx.field(converter=as_float)
    sigma1: Float[Array, "..."] = eqx.field(converter=as_float)
    sigma2: Float[Array, "..."] = eqx.field(converter=as_float)
    vs: Float[Array, "..."] = eqx.field(converter=as_float)
    dims: int = eqx.field(static=True, default=2)
    normal: Float[Array, "..."] | None = eqx.field(
        converter=as_optional_float, default=None
    )
    arms: Float[Array, "..."] | None = eqx.field(
        converter=as_optional_float, default=None
    )

    def __check_init__(self):
        names = ("mu_s", "mu_d", "sigma0", "sigma1", "sigma2", "vs", "normal", "arms")
        check_fields_broadcast(self, names)
        if isinstance(self.dims, bool) or self.dims not in (2, 3):
            raise ValueError(
                f"`dims` must be 2 or 3 (rows per element); got {self.dims!r}."
            )

    def parameter_checks(self):
        arms = (
            () if self.arms is None else (InRange("arms", self.arms, lower=0.0,
                                                  lower_open=True),)
        )  # fmt: skip
        return arms + (
            InRange("mu_d", self.mu_d, lower=0.0, lower_open=True),
            InRange("mu_s", self.mu_s, lower=0.0, lower_open=True),
            AtLeast("mu_s", self.mu_s, "mu_d", self.mu_d),
            InRange("sigma0", self.sigma0, lower=0.0, lower_open=True),
            InRange("sigma1", self.sigma1, lower=0.0),
            InRange("sigma2", self.sigma2, lower=0.0),
            InRange("vs", self.vs, lower=0.0, lower_open=True),
        )

    def ordered_levels(self):
        return (("mu_s", "mu_d"),)

    @property
    def rows_per_element(self) -> int:
        return self.dims

    def at_state(self, system, q, qd) -> "ContactLuGre":
        """This law with the contact normal forces at ``(q, q̇)``, N."""
        return eqx.tree_at(
            lambda law: law.normal,
            self,
            system.normal_forces(q, qd),
            is_leaf=lambda x: x is None,
        )

    def slip_speed(self, slip_velocity: Float[ArrayLike, " m"]) -> SlipVector:
        """``|a v|`` on each row of the element (``|v|`` without `arms`),
        m/s: so ``ż_i = v_i − σ0·|a v|·z_i / (a_i² g)`` (Comment 7; Velenis
        et al. 2005 for the ellipse)."""
        v = jnp.asarray(slip_velocity)
        return block_norm(row_arms(self.arms, v) * v, self.dims)[0]

    def stribeck_curve(self, slip_velocity: Float[ArrayLike, " m"]) -> SlipVector:
        """``a_i²·g(|v|)``, ``g = μd + (μs − μd)·exp(−(|v|/vs)²)`` per row
        (dimensionless; ``g`` without `arms`): the settled force per unit
        normal force is ``g·a_i²·v_i/|a v|``."""
        v = jnp.asarray(slip_velocity)
        speed = block_norm(v, self.dims)[0]
        g = self.mu_d + (self.mu_s - self.mu_d) * jnp.exp(-((speed / self.vs) ** 2))
        return row_arms(self.arms, v) ** 2 * g

    def force(
        self, state: Float[ArrayLike, " m"], slip_velocity: Float[ArrayLike, " m"]
    ) -> SlipVector:
        """``F_i = N·(σ0·z_i + σ1·ż_i) + σ2·v_i``, N (Comment 7)."""
        if self.normal is None:
            raise ValueError(
                "ContactLuGre needs the normal force: take "
                "`law.at_state(system, q, qd)` first."
            )
        v = jnp.asarray(slip_velocity)
        z = jnp.asarray(state)
        zdot = self.state_derivative(z, v)
        return self.normal * (self.sigma0 * z + self.sigma1 * zdot) + self.sigma2 * v
