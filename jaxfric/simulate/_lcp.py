"""Box-constrained linear complementarity by projected Gauss–Seidel.

With the static friction limits as bounds, the forces of the elements at zero
slip velocity at an event solve a box-constrained (mixed) LCP: the optimality
conditions of the convex quadratic programme

    min ½ fᵀ D f − bᵀ f   subject to   lower <= f <= upper,

``D`` the positive semidefinite Delassus matrix (Farhat et al. 2010, Eq. 5–7
as a complementarity problem; Acary & Brogliato 2008, Numerical Methods for
Nonsmooth Dynamical Systems, on the LCP form of Coulomb friction). Projected
Gauss–Seidel (projected SOR with unit relaxation; Cottle, Pang & Stone 1992,
Ch. 5) is coordinate descent on it; it converges, linearly, also for a
semidefinite ``D`` with a positive diagonal (Luo & Tseng 1992, J. Optim.
Theory Appl. 72(1)), which is what redundant elements give.
"""

import jax
import jax.numpy as jnp

from .._types import Bool, Float, Int, SlipVector


def _projected_step(matrix, rhs, lower, upper, f):
    """The Gauss–Seidel map restricted to the box, applied to all entries at
    once (used for the residual)."""
    diag = jnp.diagonal(matrix)
    safe = jnp.where(diag > 0, diag, 1.0)
    return jnp.clip(f - (matrix @ f - rhs) / safe, lower, upper)


def box_lcp(
    matrix: Float[jax.Array, "m m"],
    rhs: SlipVector,
    lower: SlipVector,
    upper: SlipVector,
    free: Bool[jax.Array, " m"],
    start: SlipVector,
    scale: SlipVector,
    *,
    rtol: float,
    max_sweeps: int,
) -> tuple[SlipVector, Float[jax.Array, ""], Int[jax.Array, ""]]:
    """Solve the box LCP ``w = matrix·f − rhs``, ``lower <= f <= upper``,
    ``f_i = lower_i ⇒ w_i >= 0``, ``f_i = upper_i ⇒ w_i <= 0``, ``w_i = 0``
    otherwise, for the `free` entries, by projected Gauss–Seidel.

    Entries that are not free (or have a zero diagonal) stay at `start`. The
    sweeps stop when the natural residual ``|f − Π(f − w / diag)|`` of every
    free entry is at most ``rtol·scale`` (its fixed point is a solution) or after
    `max_sweeps`.

    Args:
        matrix: symmetric positive semidefinite, shape ``(m, m)``.
        rhs, lower, upper: shape ``(m,)``; ``lower <= upper``.
        free: the unknowns, shape ``(m,)``.
        start: the first iterate (and the values of the other entries).
        scale: a positive size per entry for the residual test.
        rtol: relative residual at which the sweeps stop.
        max_sweeps: bound on the sweeps (a `while_loop`; not differentiable).

    Returns:
        ``(f, residual, sweeps)``: the iterate, its largest relative natural
        residual over the free entries, and the sweeps done.
    """
    m = rhs.shape[0]
    diag = jnp.diagonal(matrix)
    active = free & (diag > 0)
    inverse = jnp.where(active, 1.0 / jnp.where(active, diag, 1.0), 0.0)
    lower = jnp.where(active, lower, start)
    upper = jnp.where(active, upper, start)

    def residual(f):
        step = _projected_step(matrix, rhs, lower, upper, f)
        return jnp.max(jnp.where(active, jnp.abs(f - step) / scale, 0.0))

    def sweep(carry):
        f, _, sweeps = carry
        # Unrolled: m is small (friction elements of one mechanism).
        for i in range(m):
            new = jnp.clip(
                f[i] - (matrix[i] @ f - rhs[i]) * inverse[i], lower[i], upper[i]
            )
            f = f.at[i].set(new)
        return f, residual(f), sweeps + 1

    def unfinished(carry):
        _, res, sweeps = carry
        return (res > rtol) & (sweeps < max_sweeps)

    f0 = jnp.clip(start, lower, upper)
    carry = (f0, residual(f0), jnp.array(0, jnp.int32))
    return jax.lax.while_loop(unfinished, sweep, carry)
