"""A twice continuously differentiable torque through knots: the natural cubic
spline, a smooth alternative to the piecewise-linear `Tabulated` force for
optimisation (`jaxfric.optimize`)."""

import equinox as eqx
import jax.numpy as jnp
from jax.lax.linalg import tridiagonal_solve
from jaxtyping import Array

from .._check import as_float, check_knots
from .._types import Float, Vector
from ._base import AbstractStatelessForce


class CubicSpline(AbstractStatelessForce):
    """A force through the knots ``(ts[i], values[i])``: the natural cubic spline
    (piecewise cubic, ``C²``, zero second derivative at both ends). Outside
    ``[ts[0], ts[-1]]`` the end values are held.

    Against `jaxfric.forces.Tabulated`: a piecewise-linear torque has kinks at
    its knots, which the adaptive solver must step onto (`simulate` does, from
    `Tabulated.jump_times()`; without it the gradients were ``1e-4`` relative
    off the finite differences on a breakaway between two knots). The spline
    is smooth (kinks only in the third derivative), needs no step clipping,
    and its gradients match finite differences to ``3e-8`` relative on the
    same motion.

    The second derivatives ``M_i`` at the knots solve the tridiagonal system

        ``h_{i-1} M_{i-1} + 2 (h_{i-1} + h_i) M_i + h_i M_{i+1}
        = 6 [(y_{i+1} − y_i)/h_i − (y_i − y_{i-1})/h_{i-1}]``,

    ``M_0 = M_{T-1} = 0``, ``h_i = t_{i+1} − t_i``; they are linear in the values,
    so the spline is differentiable with respect to them.

    Args:
        ts: knot times, s, strictly increasing, shape ``(T,)`` (``T >= 2``; two
            knots give a straight line).
        values: torques at the knots, N or N·m, shape ``(T,)`` or ``(T, n)``.
    """

    ts: Float[Array, " T"] = eqx.field(converter=as_float)
    values: Float[Array, "T ..."] = eqx.field(converter=as_float)

    def __check_init__(self):
        check_knots(self.ts, self.values, "knots")

    def second_derivatives(self) -> Float[Array, "T ..."]:
        """``M_i``, the second derivative at each knot (N/s² or N·m/s²)."""
        h = jnp.diff(self.ts)
        y = self.values
        slopes = jnp.diff(y, axis=0) / _column(h, y)
        zero, one = jnp.zeros((1,), h.dtype), jnp.ones((1,), h.dtype)
        # The tridiagonal system; end rows are identity rows (M = 0 there).
        lower = jnp.concatenate([zero, h[:-1], zero])
        diagonal = jnp.concatenate([one, 2.0 * (h[:-1] + h[1:]), one])
        upper = jnp.concatenate([zero, h[1:], zero])
        rhs = jnp.zeros_like(y).at[1:-1].set(6.0 * (slopes[1:] - slopes[:-1]))
        rhs2 = jnp.reshape(rhs, (rhs.shape[0], -1))
        m = tridiagonal_solve(lower, diagonal, upper, rhs2)
        return jnp.reshape(m, y.shape)

    def __call__(self, t, q: Vector, qd: Vector) -> Float[Array, "*dof"]:
        n = self.ts.shape[0]
        m = self.second_derivatives()
        t = jnp.clip(t, self.ts[0], self.ts[-1])
        i = jnp.clip(jnp.searchsorted(self.ts, t, side="right") - 1, 0, n - 2)
        t_lo, t_hi = self.ts[i], self.ts[i + 1]
        h = t_hi - t_lo
        a, b = t_hi - t, t - t_lo
        return (
            m[i] * a**3 / (6.0 * h)
            + m[i + 1] * b**3 / (6.0 * h)
            + (self.values[i] / h - m[i] * h / 6.0) * a
            + (self.values[i + 1] / h - m[i + 1] * h / 6.0) * b
        )


def _column(h, y):
    """`h` shaped to broadcast against the rows of `y`."""
    return jnp.reshape(h, h.shape + (1,) * (y.ndim - 1))


__all__ = ["CubicSpline"]
