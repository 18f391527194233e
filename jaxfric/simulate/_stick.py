"""Stick forces and consistent stick/slip modes (Farhat et al. 2010, Sec. 4.2).

Shared by every path that has to hold elements stuck: the event-driven switch
path and the Karnopp band. Modes per friction element: ``+1`` slipping forward,
``-1`` slipping backward, ``0`` stuck. Delassus matrices may be semidefinite
(redundant elements, `psd_solve`); the mode choice at an event falls back on a
box-constrained LCP (`_lcp.box_lcp`), not on enumerating ``3^m`` mode sets.
"""

from collections.abc import Callable
from typing import NamedTuple

import equinox as eqx
import equinox.internal as eqxi
import jax
import jax.numpy as jnp
from jax.extend.core import Var

from .._linalg import (
    drop_null_part,
    null_vectors,
    pivot_solve,
    spd_solve,
    zero_pivot_tol,
)
from .._math import (
    block_dot,
    block_norm,
    element_index,
    element_sizes,
    element_starts,
    is_vector,
)
from .._types import Coordinates, Float, Int, SlipVector, Vector
from ..systems import AbstractSystem, Dynamics
from ._law import AbstractFrictionLaw
from ._lcp import box_lcp, disk_lcp
from ._loads import LoadCoupling, solve_load_coupling

STICK = 0
# The mode choice's box LCP: projected Gauss–Seidel to this relative natural
# residual (well below the 1e-9 of the slip-acceleration tolerance), and a
# force this close (relative) to a limit counts as at it. The disk problem of
# vector elements (`disk_lcp`) stops at this relative change per sweep (or 100
# machine epsilons, in single precision).
_LCP_RTOL = 1e-13
_LCP_MAX_SWEEPS = 2000
_LCP_FORCE_TOL = 1e-9
# Lawson's iteration towards the least largest utilisation of redundant stick
# forces (`psd_solve` with `limits`): steps, and the smallest relative weight.
_LAWSON_STEPS = 100
_LAWSON_FLOOR = 1e-6
# Gauss–Seidel sweeps over the elements slipping from rest in
# `isotropic_modes`: each takes the direction its slip accelerates in under the
# others' forces. The 3-PPRS's three balls released together from rest were
# 1.8e-2 (relative) off their acceleration directions after 2 sweeps and
# 1e-6 after 4 (both inconsistent, the run ending with stick_solve_failed);
# after 8 they are consistent.
_DIRECTION_SWEEPS = 8
# A redundant stuck element creeps (`creep_directions`) when the dependence of
# its row on the others changes along the motion by more than this fraction of
# the change of the rows it depends on (rounding: ~1e-12); a motion is one the
# stuck elements follow (`follows`) when their slips are below this fraction
# of its size.
_CREEP_RTOL = 1e-6


def psd_solve(
    a: jax.Array,
    b: jax.Array,
    least_norm: bool = True,
    limits: jax.Array | None = None,
    norm: Callable[[jax.Array], jax.Array] | None = None,
) -> jax.Array:
    """Solve ``a x = b`` for a symmetric positive semidefinite ``a`` and a ``b``
    in its range (shape ``(n,)`` or ``(n, k)``).

    For a definite ``a`` this is `spd_solve` (the same arithmetic,
    `pivot_solve`). A singular ``a`` (redundant friction elements: dependent rows
    of ``J_S``, e.g. two elements on one coordinate) has many solutions; this
    returns the one of least weighted norm ``Σ x_k² / w_k``: ``w = 1``, or
    with `limits` the `split_weights` of ``a``'s diagonal, so that elements
    whose rows are multiples of one another share their load at one
    fraction of their limits and reach them together, at the load their
    limits hold together. Lawson's iteration (Lawson 1961; Rice & Usow 1968)
    then reweights that split towards the least largest utilisation
    ``max_k |x_k| / L_k`` (or `norm`; 100 steps), for elements coupled through several
    coordinates, where no fixed weighting keeps every force inside its
    limit whenever some split would: measured on 24 random three-element,
    two-coordinate cases loaded to 97 % of the least largest utilisation (a
    linear programme), 21 released an element without it, none with it; at
    99 %, one did.
    Zero pivots are those below `zero_pivot_tol` of their diagonal
    entry; the least-norm correction runs only when some (batch member's)
    matrix has one.

    Args:
        a: symmetric positive semidefinite, shape ``(n, n)``.
        b: right-hand side(s), in the range of ``a``.
        least_norm: False: a basic solution (zero-pivot unknowns zero), no
            correction, for callers that need only ``a``'s image of ``x``
            (the accelerations) and for systems whose friction rows are
            independent (`AbstractSystem.independent_friction_rows`: no zero
            pivots); the correction's conditional at every such site made
            each switch-path compile 20–45 % longer.
        limits: positive limits ``L`` of a vector ``x`` (the static friction
            limits): the least-norm split weighted by `split_weights`, then
            Lawson's iteration; default none (weights one).
        norm: with `limits` and a vector ``b``, what each limit bounds, per
            row (default ``|x_k|``): for elements of several rows the norm
            of the element's force on each of its rows (``force_norm`` of
            `jaxfric.friction.IsotropicCoulomb`), so that Lawson balances
            the disks, not their rows (per row, a ball's force held inside
            every row's bound was up to √3 outside its disk). Lawson scales
            whole elements; inside an element the split is the least in the
            norm's own metric (`_element_weights`), so that the iteration
            reaches the least largest utilisation of the disks: rows ``J =
            [2, 1 | 1]`` on one coordinate, limits 1, hold ``F/(1 + √5)``
            (with each row's `split_weights` inside the disk, ``F/3.12``).

    Returns:
        ``x`` with the shape of ``b``.
    """
    n = a.shape[0]
    x, upper, singular = pivot_solve(a, b, zero_pivot_tol(a.dtype))
    if not least_norm:
        return x
    if limits is None:
        weights = jnp.ones(n, a.dtype)
    else:
        # The masked rows of `masked_solve` have unit diagonals and x = 0.
        weights = split_weights(limits, a)

    def least_norm(x, weights):
        null = null_vectors(upper, singular)
        if limits is not None and norm is not None:
            weights = _element_weights(weights, norm, a.dtype)

        def project(inverse_weights, x, null):
            return drop_null_part(x, null, singular, inverse_weights)

        if limits is None or x.ndim > 1:
            return project(1.0 / weights, x, null)
        # Lawson's factors are chosen without derivatives (the split of
        # redundant forces is a choice; a loop differentiated step by step
        # made gradient programs much longer to compile), and the split is
        # then differentiated at them. For elements whose rows are multiples
        # of one another that is the exact derivative; for three elements on
        # two coordinates the breakaway time under a ramp matched central
        # differences to 5e-6 relative in d/d(limits, rate) (the floor's
        # weight on the slack elements; a floor of 1e-12 gave 8 digits but
        # cost the splits of other stuck groups 1e-4 of their balance).
        x_c, null_c, weights_c, limits_c = jax.lax.stop_gradient(
            (x, null, weights, limits)
        )

        def lawson(_, factor):
            # Lawson's iteration: reweight each element by its utilisation;
            # elements whose factors reach the floor together keep the ratio
            # of `weights` (their split, where they are not the most used).
            split = project(factor / weights_c, x_c, null_c)
            # The norm's leaves (a law's arms) are traced: no derivative
            # through the loop from them either.
            size = (
                jnp.abs(split) if norm is None else jax.lax.stop_gradient(norm(split))
            )
            used = factor * size / limits_c
            top = jnp.max(used)
            # No load (x = 0): nothing to balance.
            used = jnp.where(top > 0, used / jnp.where(top > 0, top, 1.0), factor)
            return jnp.maximum(used, _LAWSON_FLOOR)

        factor = jax.lax.fori_loop(0, _LAWSON_STEPS, lawson, jnp.ones_like(weights_c))
        return project(factor / weights, x, null)

    # Only when some member of a batch needs it (under `vmap` a batched
    # predicate would run it for all).
    return jax.lax.cond(
        eqxi.unvmap_any(jnp.any(singular)), least_norm, lambda x, _: x, x, weights
    )


def _element_weights(
    weights: jax.Array, norm: Callable[[jax.Array], jax.Array], dtype
) -> jax.Array:
    """`psd_solve`'s weights for elements of several rows whose limits bound
    ``norm``: within each element proportional to the norm's metric, ``w_k ∝
    a_k²`` for ``|F| = |(f_k / a_k)_k|`` (a law's arms, ones without), scaled
    to the mean of the element's rows' `weights` over ``a_k²`` (one-row
    elements keep theirs).

    The least ``Σ f_k² / w_k`` of one element's share is then the least
    ``|F|``: its force along its rows' image, the split that Lawson's
    per-element factors turn into the least largest ``|F_e| / L_e``. Per row
    (`split_weights` inside a disk) the split bent the force away from it.
    """
    n = weights.shape[0]
    # Row k of `per_unit`: the norm of the unit force on row k, 1/a_k on the
    # rows of its element, 0 elsewhere; so it gives both the element of every
    # row and the arms.
    per_unit = jax.vmap(norm)(jnp.eye(n, dtype=dtype))
    same = per_unit > 0
    inverse_arm2 = jnp.diagonal(per_unit) ** 2
    scale = weights * inverse_arm2
    mean = jnp.sum(jnp.where(same, scale[None, :], 0.0), axis=1) / jnp.sum(same, axis=1)
    return mean / inverse_arm2


def masked_solve(
    matrix: jax.Array,
    rhs: jax.Array,
    mask: jax.Array,
    least_norm: bool = True,
    limits: jax.Array | None = None,
    norm: Callable[[jax.Array], jax.Array] | None = None,
) -> jax.Array:
    """Solve the rows and columns of `mask` of ``matrix x = rhs``; zero elsewhere
    (``rhs`` of shape ``(m,)`` or ``(m, k)``).

    Fixed shapes for `jit`/`vmap`: the unmasked rows and columns are replaced by
    identity rows, so the masked block is solved inside an ``m × m`` system.
    The block may be semidefinite (`psd_solve`, least weighted norm).
    """
    rows = mask if rhs.ndim == 1 else mask[:, None]
    matrix, rhs = _masked_block(matrix, mask), jnp.where(rows, rhs, 0.0)
    return psd_solve(matrix, rhs, least_norm, limits, norm)


def _masked_block(matrix: jax.Array, mask: jax.Array) -> jax.Array:
    """`matrix` with the rows and columns outside `mask` replaced by identity
    rows: the masked block inside a fixed-shape ``m × m`` system."""
    both = mask[:, None] & mask[None, :]
    return jnp.where(both, matrix, jnp.eye(mask.shape[0], dtype=matrix.dtype))


def free_acceleration(
    system: AbstractSystem,
    q: Coordinates,
    qd: Vector,
    rhs: Vector,
    dynamics: Dynamics | None = None,
):
    """Return ``(M⁻¹ rhs, M⁻¹ Jᵀ, J)`` with one factorisation of ``M(q)``
    (`dynamics`: `AbstractSystem.dynamics` at ``(q, q̇)`` when the caller has
    it)."""
    if dynamics is None:
        dynamics = system.dynamics(q, qd)
    jac = dynamics.jac
    both = spd_solve(dynamics.mass, jnp.concatenate([rhs[:, None], jac.T], axis=1))
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


def stick_parts(
    system: AbstractSystem,
    q: Coordinates,
    qd: Vector,
    net: Vector,
    dynamics: Dynamics | None = None,
):
    """The `StickParts` of the state ``(q, q̇)`` under ``net = τ − h``."""
    if dynamics is None:
        dynamics = system.dynamics(q, qd)
    acc_net, minv_jt, jac = free_acceleration(system, q, qd, net, dynamics)
    return StickParts(acc_net, minv_jt, jac, jac @ minv_jt, dynamics.jdot_qd)


def solve_stick(
    system: AbstractSystem,
    q: Coordinates,
    qd: Vector,
    net: Vector,
    slip_friction: SlipVector,
    stuck: jax.Array,
    parts: StickParts | None = None,
    split: bool = True,
    limits: SlipVector | None = None,
    norm: Callable[[SlipVector], SlipVector] | None = None,
) -> tuple[SlipVector, Vector]:
    """Friction forces and accelerations for a fixed set of stuck elements.

    The stick forces ``f_S`` make the stuck slip accelerations vanish,
    ``J_S q̈ + J̇_S q̇ = 0``, which is the Delassus system (Farhat et al. 2010,
    Eq. 7, generalised from joint coordinates to any ``J``):

        (J_S M⁻¹ J_Sᵀ) f_S = J_S M⁻¹ (τ − h − J_slipᵀ f_slip) + J̇_S q̇.

    Fixed shapes: the stuck block is solved inside an ``m × m`` system whose free
    rows are replaced by identity rows. With redundant stuck elements (a
    singular block) the stick forces are not unique; the one of least weighted
    norm is taken (`psd_solve`): the accelerations are the same for all. A
    system with `independent_friction_rows` has none, and the split is not
    compiled.

    Args:
        system: the mechanical system.
        q, qd: state.
        net: ``τ − h``, all forces but friction, shape ``(n,)``, N or N·m.
        slip_friction: friction of the slipping elements (entries of stuck
            elements are ignored), shape ``(m,)``.
        stuck: boolean mask of stuck elements, shape ``(m,)``.
        parts: `stick_parts` of this state, when several mode sets are tried
            at one state (computed here otherwise).
        split: False: any stick forces that hold the stuck elements (the
            accelerations are the same), for the segment vector field.
        limits, norm: the static limits that the split of redundant stick
            forces balances, and what they bound (`psd_solve`).

    Returns:
        ``(f, q̈)``: the friction of every element (stick forces in stuck
        entries) and the accelerations, shape ``(m,)`` and ``(n,)``.
    """
    if parts is None:
        parts = stick_parts(system, q, qd, net)
    f_slip = jnp.where(stuck, 0.0, slip_friction)
    acc_free = parts.acc_net - parts.minv_jt @ f_slip
    rhs = parts.jac @ acc_free + parts.jdot_qd
    least_norm = split and not system.independent_friction_rows
    f_stick = masked_solve(parts.delassus, rhs, stuck, least_norm, limits, norm)
    friction = jnp.where(stuck, f_stick, f_slip)
    acc = acc_free - parts.minv_jt @ jnp.where(stuck, f_stick, 0.0)
    return friction, acc


# Jitted: traced once per signature wherever it is called again (every stick
# solve of the switch path goes through here; shorter tracing of gradients).
@eqx.filter_jit
def friction_at_modes(
    system: AbstractSystem,
    law: AbstractFrictionLaw,
    q: Coordinates,
    qd: Vector,
    net: Vector,
    modes: Int[jax.Array, " m"],
    split: bool = True,
    dynamics: Dynamics | None = None,
    parts: StickParts | None = None,
    reference: SlipVector | None = None,
    slip: SlipVector | None = None,
) -> tuple[SlipVector, Vector, AbstractFrictionLaw]:
    """Friction, accelerations and the law's levels for fixed modes.

    Slipping elements take ``law.slip_force(s, mode)`` with the direction held
    by the mode (Farhat et al. 2010, Eq. 8), or, for vector elements
    (`AbstractFrictionLaw.rows_per_element` > 1, or per-element sizes), with
    the unit `reference` direction of each element's slip
    (`isotropic_modes`); stuck ones the Delassus solve, redundant ones
    sharing their load at the least largest fraction of their static limits
    (`split`, `psd_solve` with `limits`;
    without it the stick forces of redundant elements are any that hold
    them, and the accelerations the same). `dynamics`:
    `AbstractSystem.dynamics` at ``(q, q̇)`` when the caller has it; `parts`:
    its `stick_parts`, when several mode sets are tried at one state;
    `slip`: the slip velocities the slip forces take (default ``J q̇``; the
    mode choice passes them with the elements at rest exactly zero).

    A `load_dependent` law (reaction-load joint friction) has levels that
    depend on the accelerations, which depend on the friction: the friction
    is the solution of friction → accelerations → reactions → levels →
    friction (`solve_load_coupling`, Newton), differentiated implicitly; where
    that does not converge the result is non-finite, which the paths
    report as `RESULTS.load_coupling_failed` (`load_coupling_at_modes`).

    Returns:
        ``(f, q̈, law_at)``: the friction of every element, the accelerations
        and the law at this state (`AbstractFrictionLaw.at_reactions`: its static
        limits give the stick margins).
    """
    solve, law, coupling = _at_modes(
        system, law, q, qd, net, modes, split, dynamics, parts, reference, slip
    )
    if coupling is None:
        friction, acc = solve(law)
        return friction, acc, law
    friction, acc = solve(coupling.law_at)
    return (
        jnp.where(coupling.converged, friction, jnp.nan),
        jnp.where(coupling.converged, acc, jnp.nan),
        coupling.law_at,
    )


def load_coupling_at_modes(
    system: AbstractSystem,
    law: AbstractFrictionLaw,
    q: Coordinates,
    qd: Vector,
    net: Vector,
    modes: Int[jax.Array, " m"],
    dynamics: Dynamics | None = None,
    reference: SlipVector | None = None,
) -> LoadCoupling:
    """The load coupling of a `load_dependent` law that `friction_at_modes`
    solves at these modes (`solve_load_coupling`, with its `regularity`):
    whether it converges there, in how many steps, and how near singular."""
    _, _, coupling = _at_modes(
        system, law, q, qd, net, modes, True, dynamics, None, reference, None,
        regularity=True,
    )  # fmt: skip
    if coupling is None:
        raise TypeError(f"{type(law).__name__} has no load coupling to solve.")
    return coupling


def _at_modes(
    system, law, q, qd, net, modes, split, dynamics, parts, reference, slip,
    regularity=False,
):  # fmt: skip
    """``(solve, law, coupling)`` for `friction_at_modes`: ``solve(law_at)``,
    the friction and accelerations at these modes with the law's levels
    `law_at`; the law at the state; and for a `load_dependent` law its load
    coupling at these modes (`solve_load_coupling`), else `None`."""
    if dynamics is None:
        dynamics = system.dynamics(q, qd)
    if parts is None:
        parts = stick_parts(system, q, qd, net, dynamics)
    law = law.at_state(system, q, qd)
    if slip is None:
        slip = dynamics.jac @ qd
    direction = jnp.where(modes >= 0, 1.0, -1.0) if reference is None else reference
    stuck = modes == STICK

    def solve(law_at):
        f_slip = law_at.slip_force(slip, direction)
        scale = limit_scale(law_at, slip)[2]
        norm = law_at.force_norm if reference is not None else None
        return solve_stick(system, q, qd, net, f_slip, stuck, parts, split, scale, norm)

    if not law.load_dependent:
        return solve, law, None
    if split and not system.independent_friction_rows:
        # The least-norm split of stick forces that rows which may be
        # dependent ask for depends on the levels: the whole solve is the
        # coupling's map (whether or not any are redundant at this state).
        friction_of, then = (lambda law_at: solve(law_at)[0]), None
    else:
        # The stick solve is affine in the slip forces: the coupling applies
        # it as a matrix, formed once, instead of solving at every Newton step.
        def friction_of(law_at):
            # Masked here: the matrix's zero columns would not hide a NaN.
            return jnp.where(stuck, 0.0, law_at.slip_force(slip, direction))

        def then(f_slip):
            return solve_stick(system, q, qd, net, f_slip, stuck, parts, split=False)[0]

    coupling = solve_load_coupling(
        system,
        law,
        q,
        qd,
        net + dynamics.bias,
        parts.acc_net,
        parts.minv_jt,
        friction_of,
        dynamics,
        regularity,
        then=then,
    )
    return solve, law, coupling


def limit_scale(law: AbstractFrictionLaw, like: SlipVector):
    """``(breakaway(+1), breakaway(−1), scale)``: the static limits (Farhat et
    al. 2010, Eq. 5) and the larger of the two, at least ``1e-30``, the force
    scale of each element."""
    ones = jnp.ones_like(like)
    limit_pos = law.breakaway(ones)
    limit_neg = law.breakaway(-ones)
    scale = jnp.maximum(jnp.maximum(limit_pos, limit_neg), 1e-30)
    return limit_pos, limit_neg, scale


def split_weights(scale: SlipVector, delassus: jax.Array) -> SlipVector:
    """Weights of the least-norm split of redundant stick forces (`psd_solve`):
    each element's force scale over the square root of its Delassus diagonal,
    ``w_k = L_k / sqrt((J M⁻¹ Jᵀ)_kk)``.

    Elements whose rows are multiples of one another, ``J_k = a_k j`` (a
    pinion of radius ``r`` on a slider: ``a = 1/r``, rad/m), then carry
    ``f_k ∝ sign(a_k) L_k``: every one at the same fraction of its limit
    (least ``max_k |f_k|/L_k``), so the stuck set holds up to the load
    ``Σ |a_k| L_k`` that their limits hold together. The plain limits as
    weights are right only when every ``|a_k|`` is equal: with ``a = 0.01``
    or ``50`` the pinion reached its limit first, broke away alone, and the
    run spent its events at that false breakaway (0.52 s or 1.06 s instead of
    1.70 s, `tests/test_modes.py`). Invariant under a change of any element's
    force unit. An element with a zero row (no Delassus diagonal) keeps
    ``L_k``.
    """
    diagonal = jnp.abs(jnp.diagonal(delassus))
    return scale / jnp.sqrt(jnp.where(diagonal > 0, diagonal, 1.0))


def stick_margin(
    law: AbstractFrictionLaw, friction: SlipVector
) -> Float[jax.Array, " m"]:
    """Distance of a stick force from the static limits, ``>= 0`` inside them.

    ``min(breakaway(+1) − f, breakaway(−1) + f)``: reaches zero at breakaway
    (Farhat et al. 2010, Eq. 5); ``fs − |f|`` for a vector element (on each
    of its rows; ``|f|`` the contact force's norm,
    `jaxfric.friction.IsotropicCoulomb.force_norm`).

    Args:
        law: a set-valued friction law (its `breakaway` levels).
        friction: the friction force of each element, shape ``(m,)``, N or N·m
            (e.g. ``Solution.friction`` at a stuck state).

    Returns:
        The margin of each element, shape ``(m,)``, in the units of `friction`;
        negative where a force lies outside the static limits.
    """
    if law.load_dependent:
        raise TypeError(
            f"stick_margin needs the levels of {type(law).__name__} at a state: "
            "pass law.at_reactions(system.joint_reactions(q, qd, qdd, applied, "
            "friction))."
        )
    limit_pos, limit_neg, _ = limit_scale(law, friction)
    dims = law.rows_per_element
    if is_vector(dims):
        # A vector element breaks away when its force's norm reaches the limit.
        return limit_pos - law.force_norm(friction)
    return jnp.minimum(limit_pos - friction, limit_neg + friction)


@eqx.filter_jit
def load_coupling(
    system: AbstractSystem,
    law: AbstractFrictionLaw,
    q: Coordinates,
    qd: Vector,
    applied: Vector,
    modes: Int[jax.Array, " m"],
    reference: SlipVector | None = None,
) -> LoadCoupling:
    """The friction–reaction coupling of a reaction-load law (e.g.
    `jaxfric.friction.JointFriction`) at one state, solved as the switch path
    solves it at every evaluation: ``f = F(f)``, friction → accelerations →
    joint reactions → levels → friction, by Newton's method.

    What it reports (`LoadCoupling`): the friction, whether Newton converged
    and in how many steps, and ``|det(I − ∂F/∂f)|`` (1 where the friction
    does not feed its own loads; near 0 where the coupling is about to lose
    its solution, which a simulation reports as
    ``RESULTS.load_coupling_failed``). E.g. the steps at every saved state
    of a `Solution`: ``jax.vmap(lambda q, qd, tau, modes: load_coupling(system,
    law, q, qd, tau, modes))(sol.q, sol.qd, applied, sol.modes)``.

    Args:
        system: a system with `joint_reactions`.
        law: a `load_dependent` law.
        q, qd: the state.
        applied: the generalised applied forces at that state, N or N·m (e.g.
            ``force(t, q, qd)``).
        modes: each element's mode (`Solution.modes`: 0 stuck, ±1 slipping
            along ±).
        reference: needed for vector elements (cylindrical, spherical joints):
            the unit direction of each slipping element's slip, one entry per
            row (a `Solution` does not store it: e.g. the normalised slip
            velocity); default ±1 from `modes`, right for scalar elements.

    Returns:
        A `LoadCoupling`: the friction (N or N·m, shape ``(m,)``), the law at
        its reactions, whether Newton converged, its steps, and ``|det(I −
        ∂F/∂f)|``.
    """
    system.check_vectors(q=q, qd=qd, applied=applied)
    dynamics = system.dynamics(q, qd)
    return load_coupling_at_modes(
        system, law, q, qd, applied - dynamics.bias, modes, dynamics, reference
    )


def _depends_on(fn, x) -> bool:
    """Whether ``fn(x)`` depends on ``x`` in its traced program (static): every
    equation fed by ``x`` counts, so a constant result (a lumped system's or a
    robot's joint-friction ``J``) is found and anything else assumed to
    vary."""
    jaxpr = jax.make_jaxpr(fn)(x).jaxpr
    fed = set(jaxpr.invars)

    def any_fed(variables):
        return any(isinstance(v, Var) and v in fed for v in variables)

    for eqn in jaxpr.eqns:
        if any_fed(eqn.invars):
            fed.update(eqn.outvars)
    return any_fed(jaxpr.outvars)


def follows(jac: jax.Array, stuck: jax.Array, along: Vector) -> jax.Array:
    """Whether the motion `along` is one the stuck elements follow: a nonzero
    ``w`` with ``|J_k w| <= 1e-6 max_a |J_ka| max_a |w_a|`` for every stuck
    ``k`` (not the rounding of a state at rest, whose direction is noise)."""
    size = jnp.max(jnp.abs(jac), axis=1) * jnp.max(jnp.abs(along))
    followed = jnp.abs(jac @ along) <= _CREEP_RTOL * size
    return jnp.any(along != 0) & jnp.all(followed | ~stuck)


def creep_directions(
    delassus: jax.Array,
    jac: jax.Array,
    stuck: jax.Array,
    along: Vector,
    curvature: SlipVector,
) -> Int[jax.Array, " m"]:
    """Stuck elements that cannot stay stuck although their stick forces are
    finite here: rows redundant only at this configuration.

    A zero pivot of the stuck Delassus block (`pivot_solve`) is a null vector
    ``v`` with ``vᵀ J_S = 0``: element ``j`` of its set moves with the others
    held, ``s_j = J_j q̇ = (vᵀ J_S(q) q̇) / v_j``, which vanishes here. Along
    the motion ``w`` (the velocity, or the acceleration from rest) it grows
    like ``ρ = vᵀ (J̇_S(w) w)`` (`curvature` = ``J̇(q, w) w``): by ``t·ρ/v_j``,
    or ``t³ρ/(2 v_j)`` from rest. It stays zero when the redundancy holds at
    every configuration near this one (two elements on one coordinate; a
    closed chain's passive joints with its actuators stuck; then ``ρ`` is
    rounding), and grows when it holds only here: the 3-PPRS's pin whose row
    depends on a slipping slider through a lever that is zero in the
    symmetric pose it breaks away from. Kept stuck, such an element would
    need a stick force that grows like the inverse of the motion (the rigid
    model has no bounded one), and a solve that drops its row lets it creep
    instead; it slips from the event on, at its kinetic level. A motion that
    the stuck elements do not follow (`follows`: the rounding of a state at
    rest, whose direction is noise) counts as none. Of each null
    vector's elements the one whose row changes most (largest
    ``|v_j (J̇(w) w)_j|``) is released, in the direction of its slip
    ``sign(ρ v_j)``.

    Args:
        delassus: ``J M⁻¹ Jᵀ``, shape ``(m, m)``.
        jac: ``J``, shape ``(m, n)``.
        stuck: the stuck elements, shape ``(m,)``.
        along: the motion ``w``, shape ``(n,)``.
        curvature: ``J̇(q, w) w``, shape ``(m,)``.

    Returns:
        Per element, ``+1``/``−1``: stuck and creeping, slips that way; ``0``
        otherwise.
    """
    m = stuck.shape[0]
    dtype = delassus.dtype
    masked = _masked_block(delassus, stuck)
    _, upper, singular = pivot_solve(masked, jnp.zeros(m, dtype), zero_pivot_tol(dtype))
    # Column k: the null vector of zero pivot k (zero for the others).
    null = null_vectors(upper, singular)
    parts = null * jnp.where(stuck, curvature, 0.0)[:, None]
    rho = jnp.sum(parts, axis=0)
    creeps = singular & (jnp.abs(rho) > _CREEP_RTOL * jnp.sum(jnp.abs(parts), axis=0))
    creeps = creeps & follows(jac, stuck, along)
    element = jnp.argmax(jnp.abs(parts), axis=0)
    direction = jnp.sign(rho * null[element, jnp.arange(m)])
    chosen = (jnp.arange(m)[:, None] == element[None, :]) & creeps[None, :]
    return jnp.sign(chosen.astype(dtype) @ direction).astype(jnp.int32)


def consistent_modes(
    system: AbstractSystem,
    law: AbstractFrictionLaw,
    q: Coordinates,
    qd: Vector,
    net: Vector,
    modes: Int[jax.Array, " m"],
    at_zero: jax.Array,
    released: jax.Array | None = None,
    *,
    release_first: bool | jax.Array = True,
    dynamics: Dynamics | None = None,
    parts: StickParts | None = None,
    motion: Vector | None = None,
) -> tuple[Int[jax.Array, " m"], jax.Array]:
    """Choose modes for the elements at zero slip velocity (Farhat et al. 2010,
    Sec. 4.2 and Eq. 5–8).

    The modes must be consistent: every stuck element's force inside its static
    limits (Farhat Eq. 5), and every element at zero velocity that slips, with
    its slip force ``law.slip_force(0, mode)`` (below the static level for e.g.
    Stribeck), must accelerate the way it slips (``mode · s̈ >= 0``).

    First, as Farhat Sec. 4.2: all elements in `at_zero` are assumed stuck and
    their forces solved together (Delassus, Eq. 7). Then, one element per
    iteration: the stuck element furthest outside its limits is released to
    slip in the direction of its stick force; when none is outside, a slipping
    element at zero velocity that accelerates against its direction is turned
    round, and stuck if it was turned before. At most ``3m`` iterations.

    If these modes are inconsistent (coupled elements with near ties; a chain
    of releases longer than ``3m``), or leave an element of `at_zero` slipping
    without accelerating (then they may not be the set with the most stuck
    elements: one of two redundant elements slipping while the other holds
    their load), the modes come from the box-constrained LCP of the elements
    at zero velocity with their static limits as bounds (`box_lcp`; Cottle,
    Pang & Stone 1992; Acary & Brogliato 2008). Its slip accelerations are
    unique even for a semidefinite Delassus matrix (redundant elements);
    elements with zero slip acceleration stick, the others slip the way they
    accelerate. When the static and the kinetic level at zero velocity are
    equal (Coulomb, Farhat Eq. 4) the consistent mode sets are exactly the
    LCP's solutions, so this is the consistent set with the most stuck
    elements (which the 3^m enumeration it replaces chose). When the kinetic
    level is lower (Stribeck, ``fs > fc``), the slipping elements are then held
    at it and the LCP of the rest solved again, until no further element
    slips: a breakaway cascade, which keeps stuck what the static limits hold
    given the elements that must slip, not always the most-stuck consistent
    set. The modes are then checked as above, after up to ``3m`` more
    iterations of the first stage, and replace the first stage's unless
    those were consistent and these are not; `consistent` is that check,
    never assumed.
    Redundant stuck elements share their load by `psd_solve`'s least weighted
    norm with `split_weights`, refined by Lawson's iteration towards the least
    largest fraction of their limits (exactly one fraction when their rows
    are multiples of one another, whatever the ratios and units); within a
    percent of the load where no split holds, coupled through several
    coordinates, the iteration may not have found the split that holds, and
    an element is released early (a consistent set: it slips at its kinetic
    level without accelerating).
    With `motion`, a stuck element whose row is redundant only at this
    configuration (`creep_directions`) counts as outside its limits and is
    released first, in the direction it will slip.

    Args:
        at_zero: boolean mask of elements whose slip velocity is (numerically)
            zero whose mode is to be decided: stuck elements and elements whose
            velocity just reached zero.
        released: elements at zero velocity already released to slip (a
            breakaway), whose direction is checked but which are not stuck
            again; default none.
        release_first: whether to try the release iteration first (default);
            ``False`` goes to the LCP at once. A boolean array selects at run
            time (one compilation for both, e.g. in tests).
        dynamics: `AbstractSystem.dynamics` at ``(q, q̇)`` when the caller has
            it.
        parts: its `stick_parts`, when the caller has them.
        motion: the velocities after the event (the elements at zero velocity
            projected to exactly zero): with it, redundant stuck elements that
            would creep are released (`creep_directions`, along ``motion``, or
            along the accelerations where it is all zero); default none.

    Returns:
        ``(modes, consistent)``: the new modes (``int32``, shape ``(m,)``;
        elements in neither mask keep theirs) and whether they are consistent.
    """
    # The modes are discrete: no derivative flows through their choice, so
    # the inputs are held out of differentiation (no tangents in the loops).
    arrays, static = eqx.partition(
        (system, law, q, qd, net, dynamics, parts, motion), eqx.is_array
    )
    arrays = jax.lax.stop_gradient(arrays)
    system, law, q, qd, net, dynamics, parts, motion = eqx.combine(arrays, static)
    modes = jnp.where(at_zero, STICK, modes).astype(jnp.int32)
    if released is None:
        released = jnp.zeros_like(at_zero)
    checked = at_zero | released
    # One factorisation of M for every mode set tried below.
    if dynamics is None:
        dynamics = system.dynamics(q, qd)
    if parts is None:
        parts = stick_parts(system, q, qd, net, dynamics)
    slip = parts.jac @ qd
    ones = jnp.ones_like(slip)

    def levels_of(law_at):
        """The static limits (`limit_scale`: towards +, towards −, the force
        scale) and the slip forces (towards +, towards −) of `law_at`: per
        element, as scalar elements' are."""
        forward, backward = (
            law_at.slip_force(slip, ones),
            law_at.slip_force(slip, -ones),
        )
        return (*limit_scale(law_at, slip), forward, backward)

    # The levels the LCP below and the rate tolerance take: the law's at the
    # modes given. A load-dependent law's levels change with the modes
    # (through the accelerations), and every candidate is checked at its own
    # (`violations`); the modes given are the first candidate the loop below
    # checks, so their levels come from that check (its load coupling is then
    # compiled once), placeholders of their shapes and types until then. With
    # `release_first=False` that loop starts from the LCP's modes: solved here.
    def levels_at_modes():
        return levels_of(
            friction_at_modes(
                system, law, q, qd, net, modes, dynamics=dynamics, parts=parts
            )[2]
        )

    if not law.load_dependent:
        levels0 = levels_of(law)
    elif release_first is False:
        levels0 = levels_at_modes()
    else:
        levels0 = jax.tree.map(
            lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(levels_at_modes)
        )

    def rate_tolerance(levels0):
        # Slip accelerations against the slip direction smaller than this are
        # rounding (e.g. a breakaway with static = kinetic level releases at
        # zero acceleration; the event time is known to 1e-13 s): 1e-9 of the
        # slip acceleration that each element's static limit alone produces.
        return 1e-9 * jnp.abs(jnp.diagonal(parts.delassus)) * levels0[2]

    index = jnp.arange(modes.shape[0])
    # A constant J has no redundancy that holds at one configuration only
    # (and the check costs 2–9 % of a small program's compile time).
    if motion is not None and not _depends_on(system.friction_jacobian, q):
        motion = None
    if motion is not None:
        # ∂J/∂q once (the candidates' motions differ, the configuration not).
        jac_q = jax.jacfwd(system.friction_jacobian)(q)

        def curvature(w):
            # J̇(q, w) w = (∂J/∂q · q̇(w)) w.
            return jac_q @ system.coordinate_rate(q, w) @ w

    def violations(modes, levels0, fresh):
        """What makes `modes` inconsistent, and `levels0` (replaced by the
        levels at `modes` where `fresh`)."""
        direction = jnp.where(modes >= 0, 1.0, -1.0)
        stuck = modes == STICK
        if law.load_dependent:
            friction, acc, law_at = friction_at_modes(
                system, law, q, qd, net, modes, dynamics=dynamics, parts=parts
            )
            own = levels_of(law_at)
            levels0 = jax.tree.map(lambda a, b: jnp.where(fresh, a, b), own, levels0)
            upper, lower, size = own[:3]
        else:
            f_slip = law.slip_force(slip, direction)
            friction, acc = solve_stick(
                system, q, qd, net, f_slip, stuck, parts, limits=levels0[2]
            )
            upper, lower, size = levels0[:3]
        rate = parts.jac @ acc + parts.jdot_qd
        # Relative violation, so elements with different force scales compare.
        excess = jnp.maximum(friction - upper, -lower - friction) / size
        excess = jnp.where(stuck, excess, -jnp.inf)
        creep = jnp.zeros_like(modes)
        if motion is not None:
            # Along the velocities, or from rest along the accelerations.
            moving = follows(parts.jac, stuck, motion)
            along = jnp.where(moving, motion, acc)
            creep = creep_directions(
                parts.delassus, parts.jac, stuck, along, curvature(along)
            )
            excess = jnp.where(creep != 0, jnp.inf, excess)
        # Slip acceleration against the slip direction, beyond rounding.
        tol = rate_tolerance(levels0)
        tol = tol + 1e3 * jnp.finfo(rate.dtype).eps * jnp.max(jnp.abs(rate))
        against = jnp.where(checked & ~stuck, -direction * rate - tol, -jnp.inf)
        finite = jnp.all(jnp.isfinite(friction)) & jnp.all(jnp.isfinite(rate))
        # Elements just at zero velocity that slip without accelerating: the
        # modes may be consistent without the most stuck elements (e.g. one of
        # two redundant elements slipping while the other holds their load).
        idle = at_zero & ~stuck & (direction * rate <= tol)
        return friction, excess, against, finite, idle, creep, levels0

    steps = 3 * modes.shape[0]

    def release_and_check(modes, levels0, fresh):
        """The release iteration from `modes` (at most ``3m`` steps) and the
        check of its modes, ``(modes, consistent, idle, levels0)``: the check
        is one more step that changes nothing, so `violations` (for a
        load-dependent law a load coupling, Newton's loop) is compiled once
        here. Where `fresh`, `levels0` are replaced by those at `modes`. A
        step that changes nothing ends it: every later one would repeat it
        (for a load-dependent law each step is a load coupling: 784 of the
        3-PPRS run's 3379, 28 per mode choice)."""

        def iterate(i, carry):
            modes, turned, _, _, levels0 = carry
            friction, excess, against, finite, idle, creep, levels0 = violations(
                modes, levels0, fresh & (i == 0)
            )
            worst = jnp.argmax(excess)
            release = excess[worst] > 0
            wrong = jnp.argmax(against)
            turn = ~release & (against[wrong] > 0)
            target = jnp.where(release, worst, wrong)
            pushed = jnp.where(friction[worst] > 0, 1, -1)
            new_mode = jnp.where(
                release,
                jnp.where(creep[worst] != 0, creep[worst], pushed),
                jnp.where(turned[wrong] & ~released[wrong], STICK, -modes[wrong]),
            ).astype(modes.dtype)
            change = (release | turn) & (index == target) & (i < steps)
            consistent = finite & ~jnp.any(excess > 0) & ~jnp.any(against > 0)
            return (
                jnp.where(change, new_mode, modes),
                turned | (turn & (index == wrong) & (i < steps)),
                consistent,
                jnp.any(idle),
                levels0,
            ), jnp.any(change)

        def unchecked(carry):
            i, changed, _ = carry
            return (i <= steps) & changed

        def step(carry):
            i, _, inner = carry
            inner, changed = iterate(i, inner)
            return i + 1, changed, inner

        none = jnp.zeros_like(at_zero)
        carry = (modes, none, jnp.array(False), jnp.array(True), levels0)
        carry = (jnp.array(0), jnp.array(True), carry)
        _, _, (modes, _, consistent, idle, levels0) = jax.lax.while_loop(
            unchecked, step, carry
        )
        return modes, consistent, idle, levels0

    def complementarity(modes, levels0):
        """The modes of the LCP's breakaway cascade, from `modes` (the
        elements outside `at_zero` keep theirs), at the levels `levels0`."""
        delassus, rates_tol = parts.delassus, rate_tolerance(levels0)
        rate_free = parts.jac @ parts.acc_net + parts.jdot_qd
        limit_pos, limit_neg, sizes, slip_pos, slip_neg = levels0
        lower, upper = -limit_neg, limit_pos

        def cascade(carry):
            modes, fixed, f, _, rounds = carry
            direction = jnp.where(modes >= 0, 1.0, -1.0)
            given = jnp.where(fixed, jnp.where(direction > 0, slip_pos, slip_neg), 0.0)
            rhs = rate_free - delassus @ given
            start = jnp.where(fixed, 0.0, f)
            f, _, _ = box_lcp(
                delassus, rhs, lower, upper, ~fixed, start, sizes,
                rtol=_LCP_RTOL, max_sweeps=_LCP_MAX_SWEEPS,
            )  # fmt: skip
            rate = rhs - delassus @ f
            # At a bound and accelerating out of the box: slips that way.
            near = _LCP_FORCE_TOL * sizes
            up = (f >= upper - near) & (rate > rates_tol)
            down = (f <= lower + near) & (rate < -rates_tol)
            new = jnp.where(fixed, modes, jnp.where(up, 1, jnp.where(down, -1, STICK)))
            new = new.astype(modes.dtype)
            newly = ~fixed & (new != STICK)
            # Until no further element must slip.
            return new, fixed | newly, f, ~jnp.any(newly), rounds + 1

        def unfinished(carry):
            *_, done, rounds = carry
            return ~done & (rounds < modes.shape[0])

        start = jnp.where(at_zero, STICK, modes).astype(jnp.int32)
        zero = jnp.zeros_like(slip)
        carry = (start, ~at_zero, zero, jnp.array(False), jnp.array(0, jnp.int32))
        return jax.lax.while_loop(unfinished, cascade, carry)[0]

    # Two rounds of one loop, so that `release_and_check` is compiled once:
    # round 0 the release iteration from the given modes, round 1 from the
    # LCP's (`complementarity`), which replace round 0's only where this
    # member needed them and never with worse ones.
    first = jnp.asarray(release_first)

    def one_round(carry):
        k, modes, consistent, idle, levels0 = carry
        start = jax.lax.cond(
            k == 0, lambda m, _: m, complementarity, modes, levels0
        )  # fmt: skip
        chosen, ok, chosen_idle, levels0 = release_and_check(start, levels0, k == 0)
        needed = (~consistent | idle) & (ok | ~consistent)
        take = jnp.where(k == 0, first, needed)
        consistent = jnp.where(k == 0, first & ok, jnp.where(needed, ok, consistent))
        idle = jnp.where(k == 0, ~first | chosen_idle, idle)
        return k + 1, jnp.where(take, chosen, modes), consistent, idle, levels0

    def more(carry):
        k, _, consistent, idle, _ = carry
        # Round 1 only when some member of a batch needs it (under `vmap` a
        # batched predicate would run it for all).
        return (k == 0) | ((k == 1) & eqxi.unvmap_any(~consistent | idle))

    # `release_first=False` (static): straight to the LCP.
    k = 1 if release_first is False else 0
    carry = (jnp.array(k), modes, jnp.array(False), jnp.array(True), levels0)
    _, modes, consistent, _, _ = jax.lax.while_loop(more, one_round, carry)
    return modes, consistent


# Rounds of the mode choice of a load-dependent vector law at the levels of
# the previous round's friction (`isotropic_modes`): each gains about
# -log10(μ·r/ℓ) digits of the levels, and the check needs about six (the slip
# direction to 1e-6); one round (levels at the stuck state) failed the
# cylindrical test. A `fori_loop`: compiled once, differentiable.
_COUPLED_CHOICES = 10

# Bisection steps of the slip-direction problem of a vector element (its
# secular equation on [0, |a0|], to 2^-60 of the bracket, then one Newton
# step for the derivatives).
_DIRECTION_BISECTIONS = 60


def _slip_direction(a0: jax.Array, delassus: jax.Array, level: jax.Array):
    """The direction ``u`` (unit) of a vector element released from rest:
    with the element's force ``level·u``, its slip acceleration
    ``a = a0 − level·W u`` must point along ``u`` (``a = λu``, ``λ >= 0``:
    the element accelerates the way its friction opposes, the maximum
    dissipation of isotropic Coulomb friction), so

        u = (level·W + λI)⁻¹ a0,   |u| = 1,

    a secular equation in ``λ`` whose left side's norm decreases in ``λ >= 0``
    (``W`` positive semidefinite) and is at most ``|a0|/λ``: bisection on
    ``[0, |a0|]``, then one Newton step (without a gradient through the
    bracket, so the derivative is the implicit one). When no ``λ >= 0``
    solves it (the stick force ``W⁻¹a0`` is inside ``level``: the element
    cannot slip from rest) ``u`` is a0's direction, which `isotropic_modes`'
    consistency check then rejects.
    """
    d = a0.shape[0]
    eye = jnp.eye(d, dtype=a0.dtype)

    def excess(lam, a0=a0, delassus=delassus, level=level):
        x = spd_solve(level * delassus + lam * eye, a0)
        return x @ x - 1.0

    top = jnp.sqrt(a0 @ a0)
    a0_c, w_c, level_c = jax.lax.stop_gradient((a0, delassus, level))

    def halve(_, bracket):
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        above = excess(mid, a0_c, w_c, level_c) > 0
        return jnp.where(above, mid, lo), jnp.where(above, hi, mid)

    zero = jnp.zeros((), a0.dtype)
    lo, hi = jax.lax.fori_loop(
        0, _DIRECTION_BISECTIONS, halve, (zero, jax.lax.stop_gradient(top))
    )
    lam = jax.lax.stop_gradient(0.5 * (lo + hi))
    slope = jax.grad(lambda x: excess(x, a0_c, w_c, level_c))(lam)
    lam = lam - excess(lam) / jnp.where(slope != 0, slope, 1.0)
    x = spd_solve(level * delassus + lam * eye, a0)
    return x / jnp.sqrt(jnp.maximum(x @ x, 1e-300))


def isotropic_modes(
    system: AbstractSystem,
    law: AbstractFrictionLaw,
    q: Coordinates,
    qd: Vector,
    net: Vector,
    modes: Int[jax.Array, " m"],
    reference: SlipVector,
    at_zero: jax.Array,
    released: jax.Array,
    dynamics: Dynamics | None = None,
    parts: StickParts | None = None,
) -> tuple[Int[jax.Array, " m"], SlipVector, jax.Array]:
    """Modes and slip directions of vector elements (`rows_per_element` > 1,
    or per-element sizes: every element of such a law;
    `jaxfric.friction.IsotropicCoulomb`) at zero slip velocity: the vector
    form of Farhat et al. 2010, Sec. 4.2.

    The forces of the elements at rest (`at_zero` and `released`) solve the
    disk problem ``min ½ Fᵀ W F − a0ᵀ F``, ``|F_k| <= fs_k`` (`disk_lcp`;
    ``W`` the Delassus matrix of Eq. 7 in the contact's slip ``a s``, ``a0``
    the slip accelerations with the moving elements' slip forces and none at
    rest): its optimality conditions are isotropic Coulomb friction from rest
    (De Saxcé & Feng 1998; Acary & Brogliato 2008), an element
    inside its disk stuck (zero slip acceleration), one on its edge slipping
    the way its force points, so that its acceleration does (maximum
    dissipation). An element that slips is then held at its kinetic level
    and the problem solved again, until no further element slips (with
    ``fs > fc`` a breakaway cascade, as `consistent_modes`; elements in
    `released` slip at their kinetic level from the start). For
    ``fs = fc`` (at fixed levels) these modes are the consistent ones (the
    slip accelerations of the convex problem are unique, also for redundant
    elements). The
    slipping elements' directions are then refined together with the stuck
    forces re-solved (`_slip_direction` in the contact's slip, one element at
    a time with the others' forces held, swept `_DIRECTION_SWEEPS` times),
    which is also what their derivatives come from (the disk problem's loop
    is not differentiated). A `load_dependent` law
    (`jaxfric.friction.JointFriction` on a cylindrical or ball joint) takes
    its levels at the reactions of the last choice's friction
    (`friction_at_modes`, which solves the load coupling; redundant stuck
    elements at the least-norm split, as in the check and the event
    conditions, `split`; before 2026-11-29 any split), and the choice is
    made again at them, `_COUPLED_CHOICES` times: the levels change by about
    ``μ·r/ℓ`` per round (where they have not settled the check fails and the
    run ends with ``RESULTS.stick_solve_failed``). The result is checked,
    never assumed: every stuck force inside its disk (relative ``1e-9``),
    every element slipping from rest accelerating along its direction, at the
    levels of the final friction.

    Args:
        modes: per row, ``0`` stuck or ``1`` slipping (all rows of an element
            alike).
        reference: per row, the unit slip direction of each slipping element.
        at_zero: rows of elements at zero slip velocity whose mode is to be
            decided (every stuck one, and those whose slip just stopped: the
            elements outside `at_zero` and `released` are taken as slipping).
        released: rows of elements breaking away (slipping from rest).
        dynamics: `AbstractSystem.dynamics` at ``(q, q̇)`` when the caller has
            it; `parts`: its `stick_parts`, likewise.

    Returns:
        ``(modes, reference, consistent)``.
    """
    d = law.rows_per_element
    m = modes.shape[0]
    sizes = element_sizes(d, m)
    count, widest = len(sizes), max(sizes)
    starts = element_starts(d, m)
    if dynamics is None:
        dynamics = system.dynamics(q, qd)
    if parts is None:
        parts = stick_parts(system, q, qd, net, dynamics)
    element = jnp.asarray(element_index(d, m))
    rest = at_zero | released
    # The slip of the elements at rest is projected to zero after this.
    slip = jnp.where(rest, 0.0, parts.jac @ qd)
    initial = jnp.where(at_zero, STICK, jnp.where(released, 1, modes))
    initial = initial.astype(jnp.int32)

    def rates(f_slip, stuck):
        friction, acc = solve_stick(
            system, q, qd, net, f_slip, stuck, parts, split=False
        )
        return friction, parts.jac @ acc + parts.jdot_qd

    def levels(law_at):
        """The limits per row, as weights (kept positive), and the rounding
        tolerance of the slip acceleration: ``1e-9`` of what each limit
        produces (for the final check)."""
        limit = law_at.breakaway(slip)
        weights = jnp.maximum(limit, 1e-30)
        return limit, weights, 1e-9 * jnp.abs(jnp.diagonal(parts.delassus)) * weights

    def choose(law_at, modes, reference):
        limit, weights, _ = levels(law_at)
        # The contact's slip is ``a s`` (`IsotropicCoulomb.arms`): the
        # direction problem is solved there.
        arms = law_at.row_arms(slip)
        # The kinetic level per row: the norm of the contact force slipping
        # from rest along any unit direction (here each element's first row).
        first_rows = jnp.zeros_like(slip).at[starts].set(1.0)
        kinetic = law_at.force_norm(law_at.slip_force(jnp.zeros_like(slip), first_rows))

        def directions(modes, reference):
            stuck = modes == STICK
            moving = ~stuck & rest

            def one(k, reference):
                rows = element == k
                f_slip = jnp.where(rows, 0.0, law_at.slip_force(slip, reference))
                # Element k's rows, padded to the widest element's size (the
                # padding: index m, dropped; an identity block in the problem,
                # so its part of the direction is zero).
                start = jnp.asarray(starts)[k]
                valid = jnp.arange(widest) < jnp.asarray(sizes)[k]
                index = jnp.where(valid, start + jnp.arange(widest), m)
                safe = jnp.minimum(index, m - 1)
                eye = jnp.eye(widest, dtype=slip.dtype)
                basis = jnp.where(valid[:, None], jnp.eye(m, dtype=slip.dtype)[safe], 0)
                a0 = jnp.where(valid, rates(f_slip, stuck)[1][safe], 0.0)
                columns = jax.vmap(lambda e: rates(f_slip + e, stuck)[1])(basis)
                delassus = (a0[None, :] - columns[:, safe]).T
                delassus = jnp.where(valid[:, None] & valid[None, :], delassus, eye)
                arm = jnp.where(valid, arms[safe], 1.0)
                applies = jnp.any(rows & moving)
                # Elements that do not slip from rest get a harmless problem:
                # its value is discarded, and a singular one would make
                # gradients NaN.
                a0 = jnp.where(applies, arm * a0, eye[0])
                delassus = jnp.where(
                    applies, arm[:, None] * delassus * arm[None, :], eye
                )
                level = jnp.where(applies, kinetic[start], 1.0)
                u = _slip_direction(a0, delassus, level)
                if law_at.arms is not None:
                    # Back from the contact's slip to the rows.
                    u = u / arm
                    u = u / jnp.sqrt(u @ u)
                new = reference.at[index].set(u, mode="drop")
                return jnp.where(applies, new, reference)

            def sweep(_, reference):
                return jax.lax.fori_loop(0, count, one, reference)

            return jax.lax.fori_loop(0, _DIRECTION_SWEEPS, sweep, reference)

        # The disk problem of the elements at rest (`disk_lcp`) in the
        # contact's slip: the others' slip forces held, each at rest element's
        # force within its static disk; an element that slips (on its disk's
        # edge, accelerating) is held at its kinetic level and the problem
        # solved again, until no further element slips (the breakaway cascade
        # of `consistent_modes`, for ``fs > fc``). Elements breaking away
        # (`released`) slip at their kinetic level from the start.
        held = jnp.where(rest, 0.0, law_at.slip_force(slip, reference))
        a0 = arms * rates(held, jnp.zeros_like(rest))[1]
        delassus = arms[:, None] * parts.delassus * arms[None, :]
        # One tolerance per element (its rows' norm), so that all its rows
        # get one mode.
        contact_tol = block_norm(1e-9 * jnp.diagonal(delassus) * weights, d)[0]
        problem = jax.lax.stop_gradient((delassus, a0, weights))
        rtol = max(_LCP_RTOL, 100 * float(jnp.finfo(slip.dtype).eps))

        def solve(slipping):
            radius = jax.lax.stop_gradient(jnp.where(slipping, kinetic, limit))
            force = disk_lcp(
                problem[0], problem[1], radius, rest, sizes, problem[2],
                rtol=rtol, max_sweeps=_LCP_MAX_SWEEPS,
            )[0]  # fmt: skip
            rate = problem[1] - problem[0] @ force
            moving = rest & (block_norm(rate, d)[0] > contact_tol)
            return force, rate, moving | released

        def cascade(_, carry):
            held_kinetic = carry[0]
            force, rate, slipping = solve(held_kinetic)
            return held_kinetic | slipping, force, rate, slipping

        # ``count`` rounds reach the fixed point; the last one's solve is the
        # result (one traced copy of the solve).
        zeros = jnp.zeros_like(slip)
        _, force, rate, slipping = jax.lax.fori_loop(
            0, count + 1, cascade, (released, zeros, zeros, released)
        )
        # Slipping elements: along their force (= along their acceleration).
        toward = jnp.where(block_norm(force, d)[1], force, rate)
        u = toward / arms
        size, some = block_norm(u, d)
        u = jnp.where(some, u / jnp.where(some, size, 1.0), reference)
        reference = jnp.where(slipping, jax.lax.stop_gradient(u), reference)
        modes = jnp.where(rest, jnp.where(slipping, 1, STICK), modes)
        modes = modes.astype(initial.dtype)
        return modes, directions(modes, reference)

    def coupled(modes, reference):
        return friction_at_modes(
            system, law, q, qd, net, modes, True, dynamics, parts,
            reference=reference, slip=slip,
        )  # fmt: skip

    if law.load_dependent:
        # Choice i at the levels of choice i − 1's friction; the last round
        # only computes the friction the check takes (one traced copy of the
        # coupled solve, at the split of the segments' event conditions,
        # `_switch._element_conditions`).
        def again(i, carry):
            modes, reference, _ = carry
            at_modes = coupled(modes, reference)
            modes, reference = jax.lax.cond(
                i < _COUPLED_CHOICES,
                lambda: choose(at_modes[2], initial, reference),
                lambda: (modes, reference),
            )
            return modes, reference, at_modes

        shapes = eqx.filter_eval_shape(coupled, initial, reference)
        nothing = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)
        modes, reference, (friction, acc, law_at) = jax.lax.fori_loop(
            0, _COUPLED_CHOICES + 1, again, (initial, reference, nothing)
        )
    else:
        modes, reference = choose(law.at_state(system, q, qd), initial, reference)
        # Checked at the split of the segments' event conditions.
        friction, acc, law_at = coupled(modes, reference)
    rate = parts.jac @ acc + parts.jdot_qd
    stuck = modes == STICK
    limit, _, tol = levels(law_at)
    inside = law_at.force_norm(friction) <= limit * (1 + 1e-9) + 1e-300
    along = block_dot(rate, reference, d)
    speed = block_norm(rate, d)[0]
    across = jnp.sqrt(jnp.maximum(speed**2 - along**2, 0.0))
    aligned = (along >= -tol) & (across <= 1e-6 * speed + tol)
    finite = jnp.all(jnp.isfinite(friction)) & jnp.all(jnp.isfinite(rate))
    consistent = (
        finite
        & jnp.all(jnp.where(stuck, inside, True))
        & jnp.all(jnp.where(~stuck & rest, aligned, True))
    )
    return modes, reference, consistent
