"""Parameter transforms: the optimiser works on unconstrained numbers ``u``; each
free parameter is ``θ = T(u)``, so every iterate is feasible (coefficients
positive, inside bounds, static level at least the kinetic one).

Each transform has a `scale` (units of ``θ``) so that ``u`` is of order one for
every parameter whatever its units; with ``scale=None`` `fit` sets it from the
initial value (its magnitude, or 1 where that is zero).
"""

import abc
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .._check import as_float, as_optional_float, check_range, is_concrete

# Smallest value of ``(θ - lower)/scale`` the inverse maps to; θ exactly on the
# boundary would need u = -inf.
_TINY = 1e-8


def _softplus_inverse(x):
    """``u`` with ``softplus(u) = x`` for ``x > 0``, stable for small and large x."""
    return x + jnp.log(-jnp.expm1(-x))


class AbstractTransform(eqx.Module):
    """Map between an unconstrained number ``u`` and a parameter ``θ``.

    `reference` is the (already transformed) value of another parameter that this
    one is bounded by (`AtLeast`), or `None`.
    """

    scale: eqx.AbstractVar[Any]

    @abc.abstractmethod
    def forward(self, u: Float[Array, "..."], reference: Any) -> Float[Array, "..."]:
        """``θ = T(u)``."""

    @abc.abstractmethod
    def inverse(
        self, theta: Float[ArrayLike, "..."], reference: Any
    ) -> Float[Array, "..."]:
        """``u = T⁻¹(θ)``; values on or beyond a boundary are pulled just inside."""

    def with_scale(self, theta0: Float[ArrayLike, "..."], reference: Any):
        """This transform with `scale` set from the initial value when it is None."""
        if self.scale is not None:
            return self
        return eqx.tree_at(
            lambda t: t.scale,
            self,
            _default_scale(self._offset(theta0, reference)),
            is_leaf=lambda x: x is None,
        )

    def _offset(self, theta0, reference):
        return jnp.asarray(theta0, dtype=float)


def _default_scale(x) -> Array:
    mag = jnp.abs(jnp.asarray(x, dtype=float))
    return jnp.where(mag > 0, mag, 1.0)


class Identity(AbstractTransform):
    """No constraint: ``θ = scale·u``.

    Args:
        scale: units of θ per unit of u (default: from the initial value).
    """

    scale: Float[Array, "..."] | None = eqx.field(
        default=None, converter=as_optional_float
    )

    def forward(self, u, reference):
        return self.scale * u

    def inverse(self, theta, reference):
        return jnp.asarray(theta, dtype=float) / self.scale


class Positive(AbstractTransform):
    """A coefficient ``θ > 0``: ``θ = scale·softplus(u)``.

    Args:
        scale: units of θ per unit of u (default: from the initial value).
    """

    scale: Float[Array, "..."] | None = eqx.field(
        default=None, converter=as_optional_float
    )

    def forward(self, u, reference):
        return self.scale * jax.nn.softplus(u)

    def inverse(self, theta, reference):
        x = jnp.asarray(theta, dtype=float) / self.scale
        return _softplus_inverse(jnp.maximum(x, _TINY))


class Bounded(AbstractTransform):
    """A parameter inside ``(lower, upper)``: ``θ = lower + (upper − lower)·σ(u)``
    with the logistic ``σ``.

    Args:
        lower: lower bound (units of θ), finite.
        upper: upper bound, ``> lower``.
    """

    lower: Float[Array, "..."] = eqx.field(converter=as_float)
    upper: Float[Array, "..."] = eqx.field(converter=as_float)
    scale: None = None

    def __check_init__(self):
        check_range("lower", self.lower)
        check_range("upper", self.upper)
        if (
            is_concrete(self.lower)
            and is_concrete(self.upper)
            and np.any(np.asarray(self.upper) <= np.asarray(self.lower))
        ):
            raise ValueError(
                f"`upper` must be > `lower`; got lower={self.lower}, "
                f"upper={self.upper}."
            )

    def with_scale(self, theta0, reference):
        return self

    def forward(self, u, reference):
        return self.lower + (self.upper - self.lower) * jax.nn.sigmoid(u)

    def inverse(self, theta, reference):
        x = (jnp.asarray(theta, dtype=float) - self.lower) / (self.upper - self.lower)
        x = jnp.clip(x, _TINY, 1.0 - _TINY)
        return jnp.log(x) - jnp.log1p(-x)


class AtLeast(AbstractTransform):
    """A parameter at least another one: ``θ = θ_ref + scale·softplus(u)``.

    The static-above-kinetic constraint of Coulomb-type laws, ``fs >= fc``
    (Karnopp 1985: breakaway ``FH`` above the slip level ``FC``), is
    ``AtLeast(lambda m: m.friction.fc)`` on ``fs``.

    Args:
        reference: ``where(model) -> leaf``, the parameter that bounds this one
            from below (free or fixed). `fit` replaces it by the leaf's index.
        scale: units of θ per unit of u (default: from ``θ0 − θ_ref0``).
    """

    reference: Callable | int = eqx.field(static=True)
    scale: Float[Array, "..."] | None = eqx.field(
        default=None, converter=as_optional_float
    )

    def _offset(self, theta0, reference):
        # Where θ0 equals its reference the gap carries no scale; use θ0's.
        gap = jnp.abs(jnp.asarray(theta0, dtype=float) - reference)
        return jnp.where(gap > 0, gap, jnp.asarray(theta0, dtype=float))

    def forward(self, u, reference):
        return reference + self.scale * jax.nn.softplus(u)

    def inverse(self, theta, reference):
        x = (jnp.asarray(theta, dtype=float) - reference) / self.scale
        return _softplus_inverse(jnp.maximum(x, _TINY))


__all__ = ["AbstractTransform", "AtLeast", "Bounded", "Identity", "Positive"]
