"""Open-loop inputs: sine, finite Fourier series (also a reference trajectory) and
tabulated signals.

Every number is an `eqx.Module` field, so a simulation is differentiable with
respect to it. Values are scalars (broadcast to every coordinate by `simulate`)
or vectors with one entry per generalised coordinate.
"""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .._check import Increasing, InRange, as_float, check_knots
from .._math import sin, sincos
from .._types import Float, ScalarLike, Vector
from ._base import AbstractStatelessForce

_TABULATED_KINDS = ("linear", "previous")


def _check_coordinate_shape(cls_name: str, names_values: dict) -> None:
    """Parameters broadcast together and are scalars or one entry per coordinate."""
    shapes = {k: np.shape(v) for k, v in names_values.items()}
    desc = ", ".join(f"{k}: {s}" for k, s in shapes.items())
    try:
        shape = np.broadcast_shapes(*shapes.values())
    except ValueError as e:
        raise ValueError(
            f"{cls_name} parameter shapes do not broadcast ({desc})."
        ) from e
    if len(shape) > 1:
        raise ValueError(
            f"{cls_name} parameters must be scalars or vectors with one entry per "
            f"coordinate; got shapes {desc}."
        )


class Sine(AbstractStatelessForce):
    """A sinusoidal force ``τ(t) = offset + amplitude·sin(omega·t + phase)``.

    Args:
        amplitude: amplitude, N or N·m (scalar or one per coordinate), finite.
        omega: angular frequency, rad/s, ``>= 0``.
        phase: phase at ``t = 0``, rad (default 0).
        offset: constant part, N or N·m (default 0).
    """

    amplitude: Float[Array, "..."] = eqx.field(converter=as_float)
    omega: Float[Array, "..."] = eqx.field(converter=as_float)
    phase: Float[Array, "..."] = eqx.field(converter=as_float, default=0.0)
    offset: Float[Array, "..."] = eqx.field(converter=as_float, default=0.0)

    def __check_init__(self):
        names = ("amplitude", "omega", "phase", "offset")
        _check_coordinate_shape("Sine", {n: getattr(self, n) for n in names})

    def parameter_checks(self):
        return (
            InRange("amplitude", self.amplitude),
            InRange("omega", self.omega, lower=0.0),
            InRange("phase", self.phase),
            InRange("offset", self.offset),
        )

    def __call__(self, t, q: Vector, qd: Vector) -> Float[Array, "*dof"]:
        return self.offset + self.amplitude * sin(self.omega * t + self.phase)


class FourierSeries(AbstractStatelessForce):
    """A finite Fourier series: the exciting trajectory used for identification
    (Farhat et al. 2010, Sec. 5.4, Fig. 15; the parametrisation of Swevers et al.
    1997, "Optimal robot excitation and identification"):

        q(t)  = offset + Σ_l [ a_l/(l ω) sin(l ω t) − b_l/(l ω) cos(l ω t) ],
        q̇(t) = Σ_l [ a_l cos(l ω t) + b_l sin(l ω t) ],
        q̈(t) = Σ_l l ω [ −a_l sin(l ω t) + b_l cos(l ω t) ],

    for harmonics ``l = 1..L`` of the base frequency ``ω``; the signal is periodic
    with period ``2π/ω``. As a force, ``τ(t) = q(t)`` (N or N·m); as a reference
    trajectory for a controller use `position`, `velocity` and `acceleration`.

    Args:
        a: sine-velocity coefficients ``a_l``, shape ``(L,)`` or ``(L, n)`` (one
            column per coordinate), units of the signal times rad/s.
        b: cosine-velocity coefficients ``b_l``, same shape as `a`.
        omega: base angular frequency ``ω``, rad/s, ``> 0``.
        offset: constant part ``q_0`` (scalar or one per coordinate), default 0.
    """

    a: Float[Array, "..."] = eqx.field(converter=as_float)
    b: Float[Array, "..."] = eqx.field(converter=as_float)
    omega: Float[Array, ""] = eqx.field(converter=as_float)
    offset: Float[Array, "..."] = eqx.field(converter=as_float, default=0.0)

    def __check_init__(self):
        if self.a.ndim not in (1, 2) or self.a.shape[0] < 1:
            raise ValueError(
                "`a` of FourierSeries must have shape (L,) or (L, n) with L >= 1; "
                f"got shape {self.a.shape}."
            )
        if self.b.shape != self.a.shape:
            raise ValueError(
                f"`b` must have the shape of `a`, {self.a.shape}; got {self.b.shape}."
            )
        if self.omega.ndim != 0:
            raise ValueError("`omega` of FourierSeries must be a scalar.")
        _check_coordinate_shape(
            "FourierSeries", {"a[0]": self.a[0], "offset": self.offset}
        )

    def parameter_checks(self):
        return (
            InRange("a", self.a),
            InRange("b", self.b),
            InRange("omega", self.omega, lower=0.0, lower_open=True),
            InRange("offset", self.offset),
        )

    def _harmonics(self, t):
        """``(l ω, sin(l ω t), cos(l ω t))`` shaped to broadcast against `a`."""
        n_harm = self.a.shape[0]
        freq = self.omega * jnp.arange(1, n_harm + 1, dtype=self.a.dtype)
        freq = jnp.reshape(freq, (n_harm,) + (1,) * (self.a.ndim - 1))
        return freq, *sincos(freq * t)

    def position(self, t: ScalarLike) -> Float[Array, "*dof"]:
        """``q(t)``, units of the signal."""
        freq, sin, cos = self._harmonics(t)
        return self.offset + jnp.sum((self.a * sin - self.b * cos) / freq, axis=0)

    def velocity(self, t: ScalarLike) -> Float[Array, "*dof"]:
        """``q̇(t)``, units of the signal per second."""
        _, sin, cos = self._harmonics(t)
        return jnp.sum(self.a * cos + self.b * sin, axis=0)

    def acceleration(self, t: ScalarLike) -> Float[Array, "*dof"]:
        """``q̈(t)``, units of the signal per second squared."""
        freq, sin, cos = self._harmonics(t)
        return jnp.sum(freq * (self.b * cos - self.a * sin), axis=0)

    def __call__(self, t, q: Vector, qd: Vector) -> Float[Array, "*dof"]:
        return self.position(t)


class Tabulated(AbstractStatelessForce):
    """A force interpolated from samples ``(ts[i], values[i])``.

    ``kind="linear"``: piecewise-linear interpolation (as `numpy.interp`);
    ``kind="previous"``: zero-order hold (the last sample at or before ``t``, as a
    sampled controller output). Outside ``[ts[0], ts[-1]]`` the end values are
    held. The samples are differentiable parameters.

    Args:
        ts: sample times, s, strictly increasing, shape ``(T,)`` (``T >= 2``).
        values: samples, N or N·m, shape ``(T,)`` or ``(T, n)``, finite.
        kind: ``"linear"`` or ``"previous"``.
    """

    ts: Float[Array, " T"] = eqx.field(converter=as_float)
    values: Float[Array, "T ..."] = eqx.field(converter=as_float)
    # `str`, not `Literal`: a bad kind gets the ValueError below, not a type error.
    kind: str = eqx.field(static=True, default="linear")

    def __check_init__(self):
        if self.kind not in _TABULATED_KINDS:
            raise ValueError(
                f"`kind` must be one of {_TABULATED_KINDS}; got {self.kind!r}."
            )
        check_knots(self.ts, self.values, "samples")

    def parameter_checks(self):
        return (Increasing("ts", self.ts), InRange("values", self.values))

    def __call__(self, t, q: Vector, qd: Vector) -> Float[Array, "*dof"]:
        n = self.ts.shape[0]
        right = jnp.searchsorted(self.ts, t, side="right")
        if self.kind == "previous":
            return self.values[jnp.clip(right - 1, 0, n - 1)]
        i = jnp.clip(right - 1, 0, n - 2)
        t_lo, t_hi = self.ts[i], self.ts[i + 1]
        weight = jnp.clip((t - t_lo) / (t_hi - t_lo), 0.0, 1.0)
        return self.values[i] + weight * (self.values[i + 1] - self.values[i])

    def jump_times(self) -> Float[Array, " T"]:
        """The sample times: the force (``"previous"``) or its slope jumps there."""
        return self.ts


__all__ = ["FourierSeries", "Sine", "Tabulated"]
