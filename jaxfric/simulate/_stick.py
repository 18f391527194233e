"""Stick forces and consistent stick/slip modes (Farhat et al. 2010, Sec. 4.2).

Shared by every path that has to hold elements stuck: the event-driven switch
path and the Karnopp band. Modes per friction element: ``+1`` slipping forward,
``-1`` slipping backward, ``0`` stuck.
"""

import itertools
from typing import NamedTuple

import equinox.internal as eqxi
import jax
import jax.numpy as jnp
import numpy as np

from .._types import Float, Int, SlipVector, Vector
from ..friction._law import AbstractFrictionLaw
from ..systems._base import AbstractSystem

STICK = 0
# Mode combinations tried when the release iteration ends inconsistent: all
# 3^m of them up to m = 8 friction elements.
_ENUMERATE_MAX = 3**8
# Up to this size linear solves are unrolled: under `vmap` XLA on CPU calls
# LAPACK once per batch member for tiny matrices, which dominated run time
# (same results unrolled; timing in README, Performance).
_UNROLL_MAX = 8


def small_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    """Solve ``a x = b`` for a symmetric positive definite ``a`` (``b`` of shape
    ``(n,)`` or ``(n, k)``).

    Every matrix solved here is one: the mass matrix ``M``, Delassus blocks
    ``J_S M⁻¹ J_Sᵀ`` and Gram matrices ``J_S J_Sᵀ`` (with identity rows in
    place of masked ones). For those, Gaussian elimination without pivoting is
    backward stable (growth factor 1, Wilkinson 1961), so for ``n <= 8`` it is
    unrolled over the entries as scalars: no gathers or in-place updates, which
    under `vmap` on CPU cost more than the arithmetic. A singular ``a`` (e.g.
    redundant stuck rows) gives non-finite entries, as with pivoting;
    `jnp.linalg.solve` above ``n = 8``.
    """
    n = a.shape[0]
    if n > _UNROLL_MAX:
        return jnp.linalg.solve(a, b)
    rows = [[a[i, j] for j in range(n)] for i in range(n)]
    rhs = [b[i] for i in range(n)]
    for k in range(n):
        for i in range(k + 1, n):
            factor = rows[i][k] / rows[k][k]
            for j in range(k + 1, n):
                rows[i][j] = rows[i][j] - factor * rows[k][j]
            rhs[i] = rhs[i] - factor * rhs[k]
    x = [None] * n
    for k in reversed(range(n)):
        acc = rhs[k]
        for j in range(k + 1, n):
            acc = acc - rows[k][j] * x[j]
        x[k] = acc / rows[k][k]
    return jnp.stack(x)


def masked_solve(matrix: jax.Array, rhs: jax.Array, mask: jax.Array) -> jax.Array:
    """Solve the rows and columns of `mask` of ``matrix x = rhs``; zero elsewhere
    (``rhs`` of shape ``(m,)`` or ``(m, k)``).

    Fixed shapes for `jit`/`vmap`: the unmasked rows and columns are replaced by
    identity rows, so the masked block is solved inside an ``m × m`` system.
    """
    both = mask[:, None] & mask[None, :]
    eye = jnp.eye(mask.shape[0], dtype=matrix.dtype)
    rows = mask if rhs.ndim == 1 else mask[:, None]
    return small_solve(jnp.where(both, matrix, eye), jnp.where(rows, rhs, 0.0))


def free_acceleration(system: AbstractSystem, q: Vector, qd: Vector, rhs: Vector):
    """Return ``(M⁻¹ rhs, M⁻¹ Jᵀ, J)`` with one factorisation of ``M(q)``."""
    jac = system.friction_jacobian(q)
    both = small_solve(
        system.mass_matrix(q), jnp.concatenate([rhs[:, None], jac.T], axis=1)
    )
    return both[:, 0], both[:, 1:], jac


class StickParts(NamedTuple):
    """What every stick solve at one state shares (one factorisation of ``M``):
    ``M⁻¹(τ − h)``, ``M⁻¹Jᵀ``, ``J``, the Delassus matrix ``J M⁻¹ Jᵀ`` and
    ``J̇ q̇``."""

    acc_net: Vector
    minv_jt: jax.Array
    jac: jax.Array
    delassus: jax.Array
    jdot_qd: SlipVector


def stick_parts(system: AbstractSystem, q: Vector, qd: Vector, net: Vector):
    """The `StickParts` of the state ``(q, q̇)`` under ``net = τ − h``."""
    acc_net, minv_jt, jac = free_acceleration(system, q, qd, net)
    return StickParts(
        acc_net, minv_jt, jac, jac @ minv_jt, system.friction_jacobian_dot_qd(q, qd)
    )


def solve_stick(
    system: AbstractSystem,
    q: Vector,
    qd: Vector,
    net: Vector,
    slip_friction: SlipVector,
    stuck: jax.Array,
    parts: StickParts | None = None,
) -> tuple[SlipVector, Vector]:
    """Friction forces and accelerations for a fixed set of stuck elements.

    The stick forces ``f_S`` make the stuck slip accelerations vanish,
    ``J_S q̈ + J̇_S q̇ = 0``, which is the Delassus system (Farhat et al. 2010,
    Eq. 7, generalised from joint coordinates to any ``J``):

        (J_S M⁻¹ J_Sᵀ) f_S = J_S M⁻¹ (τ − h − J_slipᵀ f_slip) + J̇_S q̇.

    Fixed shapes: the stuck block is solved inside an ``m × m`` system whose free
    rows are replaced by identity rows.

    Args:
        system: the mechanical system.
        q, qd: state.
        net: ``τ − h``, all forces but friction, shape ``(n,)``, N or N·m.
        slip_friction: friction of the slipping elements (entries of stuck
            elements are ignored), shape ``(m,)``.
        stuck: boolean mask of stuck elements, shape ``(m,)``.
        parts: `stick_parts` of this state, when several mode sets are tried
            at one state (computed here otherwise).

    Returns:
        ``(f, q̈)``: the friction of every element (stick forces in stuck
        entries) and the accelerations, shape ``(m,)`` and ``(n,)``.
    """
    if parts is None:
        parts = stick_parts(system, q, qd, net)
    f_slip = jnp.where(stuck, 0.0, slip_friction)
    acc_free = parts.acc_net - parts.minv_jt @ f_slip
    rhs = parts.jac @ acc_free + parts.jdot_qd
    f_stick = masked_solve(parts.delassus, rhs, stuck)
    friction = jnp.where(stuck, f_stick, f_slip)
    acc = acc_free - parts.minv_jt @ jnp.where(stuck, f_stick, 0.0)
    return friction, acc


def friction_and_acceleration(
    system: AbstractSystem,
    law: AbstractFrictionLaw,
    q: Vector,
    qd: Vector,
    net: Vector,
    modes: Int[jax.Array, " m"],
) -> tuple[SlipVector, Vector]:
    """Friction and accelerations for fixed modes (the vector field of a segment).

    Slipping elements take ``law.slip_force(s, mode)`` with the direction held
    by the mode (Farhat et al. 2010, Eq. 8); stuck ones the Delassus solve.
    """
    slip = system.slip_velocity(q, qd)
    direction = jnp.where(modes >= 0, 1.0, -1.0)
    f_slip = law.slip_force(slip, direction)
    return solve_stick(system, q, qd, net, f_slip, modes == STICK)


def stick_margin(
    law: AbstractFrictionLaw, friction: SlipVector
) -> Float[jax.Array, " m"]:
    """Distance of a stick force from the static limits, ``>= 0`` inside them.

    ``min(breakaway(+1) − f, breakaway(−1) + f)``: reaches zero at breakaway
    (Farhat et al. 2010, Eq. 5).

    Args:
        law: a set-valued friction law (its `breakaway` levels).
        friction: the friction force of each element, shape ``(m,)``, N or N·m
            (e.g. ``Solution.friction`` at a stuck state).

    Returns:
        The margin of each element, shape ``(m,)``, in the units of `friction`;
        negative where a force lies outside the static limits.
    """
    ones = jnp.ones_like(friction)
    return jnp.minimum(law.breakaway(ones) - friction, law.breakaway(-ones) + friction)


def consistent_modes(
    system: AbstractSystem,
    law: AbstractFrictionLaw,
    q: Vector,
    qd: Vector,
    net: Vector,
    modes: Int[jax.Array, " m"],
    at_zero: jax.Array,
    released: jax.Array | None = None,
) -> tuple[Int[jax.Array, " m"], jax.Array]:
    """Choose modes for the elements at zero slip velocity (Farhat et al. 2010,
    Sec. 4.2 and Eq. 8).

    The modes must be consistent: every stuck element's force inside its static
    limits (Farhat Eq. 5), and every element at zero velocity that slips must
    accelerate the way it slips (``mode · s̈ >= 0``). All elements in `at_zero`
    are first assumed stuck and their forces solved together (Delassus, Eq. 7).
    Then, one element per iteration: the stuck element furthest outside its
    limits is released to slip in the direction of its stick force; when none
    is outside, a slipping element at zero velocity that accelerates against its
    direction is turned round, and stuck if it was turned before. With coupled
    elements (a non-diagonal ``J M⁻¹ Jᵀ``) the direction of a stick force is not
    always the direction of motion once another element slips: releasing alone
    chattered with zero-length segments (a two-link arm from rest). At most
    ``3m`` iterations; if the modes are still inconsistent (ties between
    elements), every combination of the elements' modes is tried (``3^m``
    stick solves, for ``m <= 8``) and the consistent one with the most stuck
    elements kept.

    Args:
        at_zero: boolean mask of elements whose slip velocity is (numerically)
            zero whose mode is to be decided: stuck elements and elements whose
            velocity just reached zero.
        released: elements at zero velocity already released to slip (a
            breakaway), whose direction is checked but which are not stuck
            again; default none.

    Returns:
        ``(modes, consistent)``: the new modes (``int32``, shape ``(m,)``;
        elements in neither mask keep theirs) and whether they are consistent.
    """
    modes = jnp.where(at_zero, STICK, modes).astype(jnp.int32)
    if released is None:
        released = jnp.zeros_like(at_zero)
    checked = at_zero | released
    slip = system.slip_velocity(q, qd)
    ones = jnp.ones_like(slip)
    limit_pos = law.breakaway(ones)
    limit_neg = law.breakaway(-ones)
    # Relative violation, so elements with different force scales compare.
    scale = jnp.maximum(jnp.maximum(limit_pos, limit_neg), 1e-30)
    index = jnp.arange(modes.shape[0])
    # Slip accelerations against the slip direction smaller than this are
    # rounding (e.g. a breakaway with static = kinetic level releases at zero
    # acceleration; the event time is known to 1e-13 s): 1e-9 of the slip
    # acceleration that each element's static limit alone produces.
    # One factorisation of M for every mode set tried below.
    parts = stick_parts(system, q, qd, net)
    rate_tol = 1e-9 * jnp.abs(jnp.diagonal(parts.delassus)) * scale

    def violations(modes):
        direction = jnp.where(modes >= 0, 1.0, -1.0)
        f_slip = law.slip_force(slip, direction)
        stuck = modes == STICK
        friction, acc = solve_stick(system, q, qd, net, f_slip, stuck, parts)
        rate = parts.jac @ acc + parts.jdot_qd
        excess = jnp.maximum(friction - limit_pos, -limit_neg - friction) / scale
        excess = jnp.where(stuck, excess, -jnp.inf)
        # Slip acceleration against the slip direction, beyond rounding.
        tol = rate_tol + 1e3 * jnp.finfo(rate.dtype).eps * jnp.max(jnp.abs(rate))
        against = jnp.where(checked & ~stuck, -direction * rate - tol, -jnp.inf)
        return friction, excess, against

    def iterate(_, carry):
        modes, turned = carry
        friction, excess, against = violations(modes)
        worst = jnp.argmax(excess)
        release = excess[worst] > 0
        wrong = jnp.argmax(against)
        turn = ~release & (against[wrong] > 0)
        target = jnp.where(release, worst, wrong)
        new_mode = jnp.where(
            release,
            jnp.where(friction[worst] > 0, 1, -1),
            jnp.where(turned[wrong] & ~released[wrong], STICK, -modes[wrong]),
        ).astype(modes.dtype)
        change = (release | turn) & (index == target)
        return jnp.where(change, new_mode, modes), turned | (turn & (index == wrong))

    def is_consistent(modes):
        _, excess, against = violations(modes)
        return ~jnp.any(excess > 0) & ~jnp.any(against > 0)

    turned = jnp.zeros_like(at_zero)
    modes, _ = jax.lax.fori_loop(0, 3 * modes.shape[0], iterate, (modes, turned))
    consistent = is_consistent(modes)
    m = modes.shape[0]
    if 3**m > _ENUMERATE_MAX:
        return modes, consistent

    def enumerate_modes(modes):
        # Every combination of the checked elements' modes (released ones
        # slip): the consistent one with the most stuck elements, the first of
        # those on a tie. Greedy release fails where relative excesses tie:
        # e.g. a two-link arm from rest under PD, both joints 4/3 of their
        # limits, where only (stuck, slip+) is consistent.
        grid = np.array(list(itertools.product((0, 1, -1), repeat=m)), np.int32)
        candidates = jnp.where(checked[None, :], grid, modes[None, :])
        allowed = jnp.all(~released[None, :] | (candidates != STICK), axis=1)
        ok = jax.vmap(is_consistent)(candidates) & allowed
        num_stuck = jnp.sum(candidates == STICK, axis=1)
        best = jnp.argmax(jnp.where(ok, num_stuck, -1))
        return jnp.where(ok[best], candidates[best], modes), ok[best]

    # Only when some member of a batch needs it (under `vmap` a batched
    # predicate would run it for all).
    return jax.lax.cond(
        eqxi.unvmap_any(~consistent),
        enumerate_modes,
        lambda modes: (modes, consistent),
        modes,
    )
