"""Box- and disk-constrained complementarity by projected Gauss–Seidel.

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

Vector elements (a contact's two tangential rows, a ball joint's three) bound
the norm of each element's force instead: the same programme over disks,
solved by block Gauss–Seidel with exact block steps (`disk_lcp`).
"""

import jax
import jax.numpy as jnp

from .._linalg import symmetric_eigen
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


# Bisection steps of a block's disk subproblem (its secular equation in λ, to
# 2^-60 of the bracket).
_DISK_BISECTIONS = 60


def _disk_minimum(
    values: Float[jax.Array, " d"],
    vectors: Float[jax.Array, "d d"],
    rhs: Float[jax.Array, " d"],
    radius,
) -> Float[jax.Array, " d"]:
    """``argmin ½ xᵀ W x − rᵀ x`` subject to ``|x| <= radius``, ``W``
    symmetric positive semidefinite with eigenvalues `values` (clipped at 0)
    and eigenvectors `vectors`: the trust-region subproblem (Moré & Sorensen
    1983, SIAM J. Sci. Stat. Comput. 4(3)), solved in ``W``'s eigenbasis.
    Inside the disk ``W x = r``; on its edge ``(W + λI) x = r`` with the
    ``λ >= 0`` (found by bisection) at which ``|x| = radius``."""
    g = vectors.T @ rhs
    tiny = jnp.finfo(rhs.dtype).tiny

    def squared(lam):
        return jnp.sum((g / jnp.maximum(values + lam, tiny)) ** 2)

    inside = squared(0.0) <= radius**2

    def halve(_, bracket):
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        above = squared(mid) > radius**2
        return jnp.where(above, mid, lo), jnp.where(above, hi, mid)

    top = jnp.sqrt(g @ g) / jnp.maximum(radius, tiny)
    lo, hi = jax.lax.fori_loop(0, _DISK_BISECTIONS, halve, (jnp.zeros_like(top), top))
    lam = jnp.where(inside, 0.0, hi)
    return vectors @ (g / jnp.maximum(values + lam, tiny))


def disk_lcp(
    matrix: Float[jax.Array, "m m"],
    rhs: SlipVector,
    radius: SlipVector,
    free: Bool[jax.Array, " m"],
    sizes: tuple[int, ...],
    scale: SlipVector,
    *,
    rtol: float,
    max_sweeps: int,
) -> tuple[SlipVector, Float[jax.Array, ""], Int[jax.Array, ""]]:
    """Solve ``min ½ fᵀ D f − bᵀ f`` subject to ``|f_k| <= radius_k`` for every
    element ``k`` (consecutive rows of `sizes`) of the `free` ones: isotropic
    Coulomb friction's disks as a second-order cone complementarity problem
    (De Saxcé & Feng 1998; Acary & Brogliato 2008). Its optimality
    conditions are those of friction from rest: with ``a = b − D f``, an
    element inside its disk has ``a_k = 0`` (stuck), one on its edge has
    ``a_k = 2μ_k f_k``, ``μ_k >= 0`` (slipping the way its force points).

    Block Gauss–Seidel with each element's block minimised exactly
    (`_disk_minimum`): coordinate descent on a convex programme with separable
    constraints, convergent for a positive semidefinite ``D`` (Tseng 2001,
    J. Optim. Theory Appl. 109(3)). The sweeps stop when no
    free element's force changed by more than ``rtol·scale`` in a sweep (a
    fixed point is a solution) or after `max_sweeps`.

    Args:
        matrix: ``D``, symmetric positive semidefinite, shape ``(m, m)``.
        rhs: ``b``, shape ``(m,)``.
        radius: each element's radius on its rows, ``>= 0``, shape ``(m,)``.
        free: the unknown elements, on their rows; the others' forces are zero.
        sizes: the rows of each element (static), summing to ``m``.
        scale: a positive size per row for the stopping test.
        rtol: relative change at which the sweeps stop.
        max_sweeps: bound on the sweeps (a `while_loop`; not differentiable).

    Returns:
        ``(f, change, sweeps)``: the iterate, the largest relative change of
        the last sweep and the sweeps done.
    """
    starts = [sum(sizes[:k]) for k in range(len(sizes))]
    # The blocks do not change between sweeps: one eigendecomposition each
    # (Jacobi rotations: LAPACK's under `vmap` can hang a CPU batch,
    # `jaxfric._linalg`).
    eigen = []
    for start, size in zip(starts, sizes, strict=True):
        values, vectors = symmetric_eigen(
            matrix[start : start + size, start : start + size]
        )
        eigen.append((jnp.maximum(values, 0.0), vectors))

    def sweep(carry):
        f, _, sweeps = carry
        change = jnp.zeros((), f.dtype)
        # Unrolled: the elements of one mechanism are few.
        for start, size, (values, vectors) in zip(starts, sizes, eigen, strict=True):
            rows = slice(start, start + size)
            r = rhs[rows] - matrix[rows] @ f + matrix[rows, rows] @ f[rows]
            x = _disk_minimum(values, vectors, r, radius[start])
            x = jnp.where(free[start], x, 0.0)
            change = jnp.maximum(change, jnp.max(jnp.abs(x - f[rows]) / scale[rows]))
            f = f.at[rows].set(x)
        return f, change, sweeps + 1

    def unfinished(carry):
        _, change, sweeps = carry
        return (change > rtol) & (sweeps < max_sweeps)

    inf = jnp.array(jnp.inf, rhs.dtype)
    carry = (jnp.zeros_like(rhs), inf, jnp.array(0, jnp.int32))
    return jax.lax.while_loop(unfinished, sweep, carry)
