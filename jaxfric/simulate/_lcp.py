"""Box- and disk-constrained linear complementarity by projected Gauss–Seidel.

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
Theory Appl. 72(1)), which is what redundant elements give. `disk_lcp` is
the same for vector elements (isotropic friction): each element's force bounded
by a disk instead of a box.
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


def disk_lcp(
    matrix: Float[jax.Array, "m m"],
    rhs: SlipVector,
    limits: SlipVector,
    sizes: tuple[int, ...],
    free: Bool[jax.Array, " m"],
    start: SlipVector,
    scale: SlipVector,
    *,
    rtol: float,
    max_sweeps: int,
) -> tuple[SlipVector, Float[jax.Array, ""], Int[jax.Array, ""]]:
    """Solve ``min ½ gᵀ·matrix·g − rhsᵀ g`` subject to ``|g_k| <= L_k`` for
    every element ``k`` (consecutive rows of the static `sizes`), by block
    projected Gauss–Seidel: the isotropic (disk) form of `box_lcp`, the
    maximum-dissipation problem of elements at rest with isotropic Coulomb
    friction (Acary & Brogliato 2008, Ch. 13; Jean 1999, Comput. Methods Appl.
    Mech. Eng. 177). Its optimality conditions are the modes: where the slip
    acceleration ``w = rhs − matrix·g`` of an element is not zero, ``g_k`` is
    on its circle and ``w_k = λ g_k``, ``λ > 0`` (it slips the way its force
    points).

    Each element takes the projected gradient step ``g_k ← Π(g_k − (matrix·g −
    rhs)_k / c_k)`` with ``c_k`` the trace of its diagonal block (at least its
    largest eigenvalue, so each step decreases the objective; a block
    coordinate descent, convergent for a positive semidefinite matrix). The
    sweeps stop when the natural residual of every free element is at most
    ``rtol·scale`` or after `max_sweeps` (a `while_loop`; not
    differentiable).

    Args:
        matrix: symmetric positive semidefinite, shape ``(m, m)``.
        rhs: shape ``(m,)``.
        limits: per row, the radius ``L_k`` of its element (equal on an
            element's rows), ``>= 0``.
        sizes: rows per element (static), summing to ``m``.
        free: per row, the unknowns (all rows of an element alike); other
            elements (or with a zero diagonal block) stay at `start`.
        start: the first iterate (and the values of the other entries).
        scale: a positive size per row for the residual test.

    Returns:
        ``(g, residual, sweeps)``, as `box_lcp`.
    """
    bounds, first = [], 0
    for size in sizes:
        bounds.append((first, first + size))
        first += size
    trace = jnp.stack([jnp.trace(matrix[a:b, a:b]) for a, b in bounds])
    heads = jnp.asarray([a for a, _ in bounds])
    active = free[heads] & (trace > 0)
    inverse = jnp.where(active, 1.0 / jnp.where(active, trace, 1.0), 0.0)

    def project(k, x):
        # Onto element k's disk; inactive elements keep their entries.
        radius, norm = limits[bounds[k][0]], jnp.sqrt(x @ x)
        shrink = jnp.where(norm > radius, radius / jnp.where(norm > 0, norm, 1.0), 1.0)
        return jnp.where(active[k], x * shrink, x)

    def step(k, g, gradient):
        a, b = bounds[k]
        return jnp.where(active[k], project(k, g[a:b] - gradient * inverse[k]), g[a:b])

    def residual(g):
        gradient = matrix @ g - rhs
        out = []
        for k, (a, b) in enumerate(bounds):
            change = g[a:b] - step(k, g, gradient[a:b])
            out.append(jnp.sqrt(change @ change) / scale[a])
        return jnp.max(jnp.where(active, jnp.stack(out), 0.0))

    def sweep(carry):
        g, _, sweeps = carry
        # Unrolled: few elements (friction elements of one mechanism).
        for k, (a, b) in enumerate(bounds):
            g = g.at[a:b].set(step(k, g, matrix[a:b] @ g - rhs[a:b]))
        return g, residual(g), sweeps + 1

    def unfinished(carry):
        _, res, sweeps = carry
        return (res > rtol) & (sweeps < max_sweeps)

    # The first iterate inside the disks (`box_lcp` clips it to the box).
    g0 = start
    for k, (a, b) in enumerate(bounds):
        g0 = g0.at[a:b].set(project(k, start[a:b]))
    carry = (g0, residual(g0), jnp.array(0, jnp.int32))
    return jax.lax.while_loop(unfinished, sweep, carry)
