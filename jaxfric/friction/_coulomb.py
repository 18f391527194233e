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
    check_fields_broadcast,
)
from .._types import Float, SlipVector
from ._base import AbstractSetValuedLaw


def _positive_power(x, p):
    """``x**p`` for ``x >= 0`` whose gradient (also w.r.t. ``p``) is finite at 0."""
    positive = x > 0
    safe = jnp.where(positive, x, 1.0)  # ln(0) in d/dp x**p would give NaN
    return jnp.where(positive, safe**p, 0.0)


def _static_field(fc, fs, static_ratio):
    """The `fs` field: `fs`, or `fc` when neither `fs` nor `static_ratio` is
    given, or `None` (no leaf) when the static level is tied to `fc`."""
    if fs is not None and static_ratio is not None:
        raise ValueError("give `fs` or `static_ratio`, not both.")
    return fc if fs is None and static_ratio is None else fs


def _static_level(law) -> Float[Array, "..."]:
    """The static limit, N or N·m: `fs`, or ``static_ratio·fc``."""
    return law.fs if law.static_ratio is None else law.static_ratio * law.fc


def _static_checks(law) -> tuple:
    """The static level's ranges: ``fs >= fc >= 0``, or ``static_ratio >= 1``."""
    if law.static_ratio is not None:
        return (InRange("static_ratio", law.static_ratio, lower=1.0),)
    return (
        InRange("fs", law.fs, lower=0.0),
        AtLeast("fs", law.fs, "fc", law.fc),
    )


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
        static_ratio: instead of `fs`, the static limit as a multiple of the
            kinetic level, ``fs = static_ratio·fc``, ``>= 1`` (Karnopp's
            breakaway ``FH`` at a fixed ratio above ``FC``; 1 for a limit equal
            to it). The static limit then has no leaf of its own: it follows
            `fc` when `fc` is identified.
    """

    fc: Float[Array, "..."] = eqx.field(converter=as_float)
    fs: Float[Array, "..."] | None = eqx.field(converter=as_optional_float)
    fv: Float[Array, "..."] | None = eqx.field(converter=as_optional_float)
    static_ratio: Float[Array, "..."] | None = eqx.field(converter=as_optional_float)

    def __init__(self, fc, fs=None, fv=None, static_ratio=None):
        self.fc = fc
        self.fs = _static_field(fc, fs, static_ratio)
        self.fv = fv
        self.static_ratio = static_ratio

    def __check_init__(self):
        check_fields_broadcast(self, ("fc", "fs", "fv", "static_ratio"))

    def parameter_checks(self):
        viscous = () if self.fv is None else (InRange("fv", self.fv, lower=0.0),)
        return viscous + (InRange("fc", self.fc, lower=0.0),) + _static_checks(self)

    def ordered_levels(self):
        return () if self.fs is None else (("fs", "fc"),)

    def slip_force(self, slip_velocity, direction) -> SlipVector:
        v = jnp.asarray(slip_velocity)
        viscous = 0.0 * v if self.fv is None else self.fv * v
        return self.fc * jnp.asarray(direction) + viscous

    def breakaway(self, direction) -> SlipVector:
        level = _static_level(self)
        return jnp.broadcast_to(level, jnp.shape(direction)).astype(float)


_ASYMMETRIC = ("fc_pos", "fc_neg", "fv_pos", "fv_neg")


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
        check_fields_broadcast(self, _ASYMMETRIC)

    def parameter_checks(self):
        return tuple(InRange(n, getattr(self, n), lower=0.0) for n in _ASYMMETRIC)

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
        fs: static level, N or N·m, ``>= fc``; defaults to `fc`.
        vs: Stribeck velocity, m/s or rad/s, ``> 0``.
        fv: viscous coefficient, N·s/m or N·m·s/rad, ``>= 0``.
        delta: Stribeck shape exponent, ``> 0`` (2 is Gaussian).
        static_ratio: instead of `fs`, ``fs = static_ratio·fc``, ``>= 1`` (as
            for `Coulomb`: the static level follows `fc` when it is identified).
    """

    fc: Float[Array, "..."] = eqx.field(converter=as_float)
    fs: Float[Array, "..."] | None = eqx.field(converter=as_optional_float)
    vs: Float[Array, "..."] = eqx.field(converter=as_float)
    fv: Float[Array, "..."] = eqx.field(converter=as_float)
    delta: Float[Array, "..."] = eqx.field(converter=as_float)
    static_ratio: Float[Array, "..."] | None = eqx.field(converter=as_optional_float)

    def __init__(self, fc, fs=None, vs=None, fv=0.0, delta=2.0, static_ratio=None):
        if vs is None:
            raise TypeError("Stribeck needs the Stribeck velocity `vs`.")
        self.fc = fc
        self.fs = _static_field(fc, fs, static_ratio)
        self.vs = vs
        self.fv = fv
        self.delta = delta
        self.static_ratio = static_ratio

    def __check_init__(self):
        check_fields_broadcast(self, ("fc", "fs", "vs", "fv", "delta", "static_ratio"))

    def parameter_checks(self):
        return (
            (InRange("fc", self.fc, lower=0.0),)
            + _static_checks(self)
            + (
                InRange("vs", self.vs, lower=0.0, lower_open=True),
                InRange("fv", self.fv, lower=0.0),
                InRange("delta", self.delta, lower=0.0, lower_open=True),
            )
        )

    def ordered_levels(self):
        return () if self.fs is None else (("fs", "fc"),)

    def stribeck_curve(self, slip_velocity) -> SlipVector:
        """``g(v) = fc + (fs − fc)·exp(−|v/vs|^delta)``, N or N·m (>= 0)."""
        x = jnp.abs(jnp.asarray(slip_velocity) / self.vs)
        hump = _static_level(self) - self.fc
        return self.fc + hump * jnp.exp(-_positive_power(x, self.delta))

    def slip_force(self, slip_velocity, direction) -> SlipVector:
        v = jnp.asarray(slip_velocity)
        return jnp.asarray(direction) * self.stribeck_curve(v) + self.fv * v

    def breakaway(self, direction) -> SlipVector:
        level = _static_level(self)
        return jnp.broadcast_to(level, jnp.shape(direction)).astype(float)
