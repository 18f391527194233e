"""Regularised ("normalised") Coulomb-type laws: the smooth baselines that the
switch algorithm is compared against (Farhat et al. 2010, Sec. 1, the
normalisation methods of Sextro and Quinn; their refs. 12, 13)."""

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike

from .._check import InRange, as_float, check_broadcastable
from .._types import Float, SlipVector
from ._base import AbstractSetValuedLaw, AbstractSmoothLaw

_KINDS = ("tanh", "linear")


class Regularized(AbstractSmoothLaw):
    """A set-valued law made single-valued by smoothing its sign function.

    The discontinuity at zero slip velocity is replaced by a smooth (``"tanh"``)
    or piecewise-linear (``"linear"``) curve of width `eps`:

    - ``"tanh"``: ``sign(v) -> tanh(v / eps)``;
    - ``"linear"``: ``sign(v) -> clip(v / eps, -1, 1)`` (linear saturation).

    For a law with different branches per direction (`CoulombViscous`), the two
    slip branches are blended,

        ``f(v) = w(v)·slip_force(v, +1) + (1 − w(v))·slip_force(v, −1)``,

    with ``w = (1 + tanh(v/eps))/2`` (``"tanh"``) or ``w = (1 + clip(v/eps, −1,
    1))/2`` (``"linear"``), so symmetric Coulomb gives exactly ``fc·tanh(v/eps)``
    and Stribeck gives ``tanh(v/eps)·g(v) + fv·v``. The static limit ``fs`` of the
    wrapped law plays no role: a regularised law has no stick state; elements
    creep at a speed of order ``eps`` instead of sticking (Farhat et al. 2010,
    Sec. 1). The smaller `eps`, the stiffer the ODE (slope ``fc/eps`` at zero).

    Args:
        law: the set-valued law to smooth (`Coulomb`, `CoulombViscous`,
            `Stribeck`).
        eps: regularisation velocity, m/s or rad/s, ``> 0`` (scalar or one per
            friction element).
        kind: ``"tanh"`` or ``"linear"``.
    """

    law: AbstractSetValuedLaw
    eps: Float[Array, "..."] = eqx.field(converter=as_float)
    kind: str = eqx.field(static=True, default="tanh")

    def __check_init__(self):
        if not isinstance(self.law, AbstractSetValuedLaw):
            raise TypeError(
                "`law` of Regularized must be a set-valued law (Coulomb, "
                f"CoulombViscous, Stribeck); got {type(self.law).__name__}."
            )
        if self.kind not in _KINDS:
            raise ValueError(f"`kind` must be one of {_KINDS}; got {self.kind!r}.")
        check_broadcastable({"eps": self.eps})

    def parameter_checks(self):
        # The wrapped law declares its own; `simulate` collects both.
        return (InRange("eps", self.eps, lower=0.0, lower_open=True),)

    def smoothed_sign(self, slip_velocity: Float[ArrayLike, " m"]) -> SlipVector:
        """The smooth replacement of ``sign(v)``, values in ``[-1, 1]``."""
        x = jnp.asarray(slip_velocity) / self.eps
        if self.kind == "tanh":
            return jnp.tanh(x)
        return jnp.clip(x, -1.0, 1.0)

    def force(self, slip_velocity: Float[ArrayLike, " m"]) -> SlipVector:
        v = jnp.asarray(slip_velocity)
        forward = self.law.slip_force(v, jnp.ones_like(v))
        backward = self.law.slip_force(v, -jnp.ones_like(v))
        # w·forward + (1 − w)·backward, written so that a symmetric law
        # (backward = −forward) gives smoothed_sign·forward with no rounding.
        mean = 0.5 * (forward + backward)
        return mean + self.smoothed_sign(v) * (0.5 * (forward - backward))


__all__ = ["Regularized"]
