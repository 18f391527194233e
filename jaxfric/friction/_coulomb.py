"""Coulomb-type laws: set-valued at zero velocity, simulated exactly by the switch
path (Farhat et al. 2010, Sec. 4)."""

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array

from .._check import (
    AtLeast,
    InRange,
    as_float,
    as_optional_float,
    check_broadcastable,
)
from .._types import Float, SlipVector
from ._base import AbstractSetValuedLaw


def _positive_power(x, p):
    """``x**p`` for ``x >= 0`` whose gradient (also w.r.t. ``p``) is finite at 0."""
    positive = x > 0
    safe = jnp.where(positive, x, 1.0)  # ln(0) in d/dp x**p would give NaN
    return jnp.where(positive, safe**p, 0.0)


class Coulomb(AbstractSetValuedLaw):
    """Coulomb friction with an optional static (breakaway) level and an
    optional viscous term.

    ``f = fc·d + fv·v`` while slipping at slip velocity ``v`` in direction
    ``d = ±1``; a stuck element holds any force in ``[-fs, fs]`` (Farhat et al.
    2010, Eq. 4 with ``F_c^+ = F_c^- = fc`` and ``F_v^+ = F_v^- = fv``; Karnopp
    1985, breakaway ``FH`` above the slip level ``FC``). For different levels
    in the two directions use `CoulombViscous`.

    Args:
        fc: kinetic (slip) Coulomb level, N or N·m, ``>= 0``.
        fs: static limit, N or N·m, ``>= fc``; defaults to `fc`.
        fv: viscous coefficient, N·s/m or N·m·s/rad, ``>= 0``; default `None`,
            no viscous term (and no `fv` leaf, so identification does not fit
            one).
    """

    fc: Float[Array, "..."] = eqx.field(converter=as_float)
    fs: Float[Array, "..."] = eqx.field(converter=as_float)
    fv: Float[Array, "..."] | None = eqx.field(converter=as_optional_float)

    def __init__(self, fc, fs=None, fv=None):
        self.fc = fc
        self.fs = fc if fs is None else fs
        self.fv = fv

    def __check_init__(self):
        levels = {"fc": self.fc, "fs": self.fs}
        if self.fv is not None:
            levels["fv"] = self.fv
        check_broadcastable(levels)

    def parameter_checks(self):
        viscous = () if self.fv is None else (InRange("fv", self.fv, lower=0.0),)
        return viscous + (
            InRange("fc", self.fc, lower=0.0),
            InRange("fs", self.fs, lower=0.0),
            AtLeast("fs", self.fs, "fc", self.fc),
        )

    def ordered_levels(self):
        return (("fs", "fc"),)

    def slip_force(self, slip_velocity, direction) -> SlipVector:
        v = jnp.asarray(slip_velocity)
        viscous = 0.0 * v if self.fv is None else self.fv * v
        return self.fc * jnp.asarray(direction) + viscous

    def breakaway(self, direction) -> SlipVector:
        return jnp.broadcast_to(self.fs, jnp.shape(direction)).astype(float)


class CoulombViscous(AbstractSetValuedLaw):
    """Asymmetric Coulomb + viscous friction, Farhat et al. 2010, Eq. 4 and 8.

    ``f = fc_pos + fv_pos·v`` while slipping forward, ``f = −fc_neg + fv_neg·v``
    while slipping backward; stuck elements hold ``−fc_neg <= f <= fc_pos``.

    Args:
        fc_pos: Coulomb level for positive motion ``F_c^+``, N or N·m, ``>= 0``.
        fc_neg: Coulomb level for negative motion ``F_c^-`` (a magnitude), ``>= 0``.
        fv_pos: viscous coefficient for positive motion, N·s/m or N·m·s/rad, ``>= 0``.
        fv_neg: viscous coefficient for negative motion, ``>= 0``.
    """

    fc_pos: Float[Array, "..."] = eqx.field(converter=as_float)
    fc_neg: Float[Array, "..."] = eqx.field(converter=as_float)
    fv_pos: Float[Array, "..."] = eqx.field(converter=as_float, default=0.0)
    fv_neg: Float[Array, "..."] = eqx.field(converter=as_float, default=0.0)

    def __check_init__(self):
        check_broadcastable(
            {
                "fc_pos": self.fc_pos,
                "fc_neg": self.fc_neg,
                "fv_pos": self.fv_pos,
                "fv_neg": self.fv_neg,
            }
        )

    def parameter_checks(self):
        names = ("fc_pos", "fc_neg", "fv_pos", "fv_neg")
        return tuple(InRange(n, getattr(self, n), lower=0.0) for n in names)

    def slip_force(self, slip_velocity, direction) -> SlipVector:
        v = jnp.asarray(slip_velocity)
        forward = jnp.asarray(direction) > 0
        return jnp.where(
            forward, self.fc_pos + self.fv_pos * v, -self.fc_neg + self.fv_neg * v
        )

    def breakaway(self, direction) -> SlipVector:
        forward = jnp.asarray(direction) > 0
        return jnp.where(forward, self.fc_pos, self.fc_neg) + 0.0 * jnp.asarray(
            direction, dtype=float
        )


class Stribeck(AbstractSetValuedLaw):
    """Coulomb + Stribeck + viscous friction (Armstrong-Hélouvry; the static map
    ``g(v)`` of LuGre, Canudas de Wit et al. 1995, and of the MotionSolve text).

    ``f = d·(fc + (fs − fc)·exp(−|v/vs|^delta)) + fv·v`` while slipping in
    direction ``d``; a stuck element holds any force in ``[−fs, fs]``.

    Args:
        fc: Coulomb (kinetic) level, N or N·m, ``>= 0``.
        fs: static level, N or N·m, ``>= fc``.
        vs: Stribeck velocity, m/s or rad/s, ``> 0``.
        fv: viscous coefficient, N·s/m or N·m·s/rad, ``>= 0``.
        delta: Stribeck shape exponent, ``> 0`` (2 is Gaussian).
    """

    fc: Float[Array, "..."] = eqx.field(converter=as_float)
    fs: Float[Array, "..."] = eqx.field(converter=as_float)
    vs: Float[Array, "..."] = eqx.field(converter=as_float)
    fv: Float[Array, "..."] = eqx.field(converter=as_float, default=0.0)
    delta: Float[Array, "..."] = eqx.field(converter=as_float, default=2.0)

    def __check_init__(self):
        check_broadcastable(
            {
                "fc": self.fc,
                "fs": self.fs,
                "vs": self.vs,
                "fv": self.fv,
                "delta": self.delta,
            }
        )

    def parameter_checks(self):
        return (
            InRange("fc", self.fc, lower=0.0),
            InRange("fs", self.fs, lower=0.0),
            AtLeast("fs", self.fs, "fc", self.fc),
            InRange("vs", self.vs, lower=0.0, lower_open=True),
            InRange("fv", self.fv, lower=0.0),
            InRange("delta", self.delta, lower=0.0, lower_open=True),
        )

    def ordered_levels(self):
        return (("fs", "fc"),)

    def stribeck_curve(self, slip_velocity) -> SlipVector:
        """``g(v) = fc + (fs − fc)·exp(−|v/vs|^delta)``, N or N·m (>= 0)."""
        x = jnp.abs(jnp.asarray(slip_velocity) / self.vs)
        return self.fc + (self.fs - self.fc) * jnp.exp(-_positive_power(x, self.delta))

    def slip_force(self, slip_velocity, direction) -> SlipVector:
        v = jnp.asarray(slip_velocity)
        return jnp.asarray(direction) * self.stribeck_curve(v) + self.fv * v

    def breakaway(self, direction) -> SlipVector:
        return jnp.broadcast_to(self.fs, jnp.shape(direction)).astype(float)
