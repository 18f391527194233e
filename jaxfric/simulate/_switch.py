"""Exact event-driven stick–slip: the switch algorithm of Farhat et al. 2010, Sec. 4.

The trajectory is a chain of segments. Inside a segment every friction element
keeps its mode (``+1``/``-1`` slipping, ``0`` stuck; the slip direction held by
the mode is Farhat's ``DQ_Sgn``, Eq. 8), so the vector field is smooth and an
adaptive explicit solver integrates it. A segment ends at an event:

- a slipping element's slip velocity reaches zero (``mode·s ↓ 0``);
- a stuck element's stick force reaches its static limit (``stick_margin ↓ 0``,
  Farhat Eq. 5).

At an event the new modes are chosen by `_stick.consistent_modes` (Farhat Sec.
4.2: assume the elements at zero velocity stuck, solve the Delassus system,
release the one furthest outside its limits, repeat; then turn round any
element at zero velocity that accelerates against its slip direction). A stuck
element that hit its breakaway limit is released in the direction of its stick
force. Segments also end at every k-th save time (short save buffers, see
`SwitchPath.run`); the modes do not change there.

A one-row element whose slip crosses zero because its row of ``J`` does (a
dead point of a closed chain's passive joint: a four-bar's rocker at its
extremes) neither stops nor sticks there: its slip turns round and the
mechanism moves on (`_dead_points`).

Vector elements (several slip rows with a disk limit, e.g. friction in a
contact plane, `AbstractFrictionLaw.rows_per_element` > 1, and every
element of a law with per-element sizes) slip with a
reference direction ``u`` per segment instead of a sign: their condition is
``s·u`` (zero at the stop, or after a right-angle turn of the slip) and
`_stick.isotropic_modes` chooses their modes and the directions of elements
slipping from rest.

Gradients: the event time ``t_e(θ)`` is located with its implicit derivative,
and every segment starts from ``y(t_e) − f⁺(t_e, y(t_e))·δt_e`` at the time
``t_e`` without its gradient, ``f⁺`` being the vector field of the new modes:
the derivative of the state after the event is ``dy/dθ − f⁺·dt_e/dθ``, which
with the ``f⁻·dt_e/dθ`` carried by ``y(t_e)`` is the jump (saltation) term.
Diffrax's time steps inside a segment then carry no gradient.
"""

from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

import diffrax
import equinox as eqx
import equinox.internal as eqxi
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx

from .._math import block_dot, block_norm, element_index, element_sizes, is_vector
from .._types import Array, Bool, Coordinates, Float, Int, Vector
from ..forces import AbstractForce
from ..systems import AbstractSystem, Dynamics
from ._common import (
    classify,
    input_anchor,
    name_configuration_failure,
    name_load_coupling_failure,
    step_controller,
)
from ._dip import DipGuard, carried_history, no_history
from ._law import AbstractFrictionLaw
from ._path import (
    AbstractPath,
    applied_force,
    evals_per_step,
    force_state0,
    solve_stats,
)
from ._saves import StepSaves, inner_state, saved_states, step_saves_limit
from ._solution import RESULTS, Solution
from ._stick import (
    STICK,
    StickParts,
    consistent_modes,
    friction_at_modes,
    isotropic_modes,
    load_coupling_at_modes,
    masked_solve,
    stick_margin,
    stick_parts,
)
from ._unrolled import for_backend, stages_written_out

#: Default relative tolerance of the step-size controller (double precision;
#: ``100·eps`` in lower precision).
DEFAULT_RTOL = 1e-10
#: Default absolute tolerance of the step-size controller (``eps`` in lower
#: precision).
DEFAULT_ATOL = 1e-12
#: Default largest step: ``(t1 − t0) / DTMAX_DIVISIONS``.
DTMAX_DIVISIONS = 100
#: Checkpoints of each segment's reverse-mode solve (the default adjoint,
#: `diffrax.RecursiveCheckpointAdjoint`). diffrax's own choice, ~√(2·max_steps)
#: = 180 for max_steps 16384, is sized for one long solve; the switch path runs
#: many short ones (between events and save stops) and each allocates and fills
#: all its checkpoints under `jax.grad`. With 32, each step of a segment of up
#: to 561 steps is still computed at most twice (binomial checkpointing,
#: Griewank & Walther 2000), and the gradients are the same to the last bit
#: (the written-out stages' JVP recomputes exactly). Measured (README,
#: Performance): the 1000-oscillator `vmap` gradient of `bench_saving.py` 1.2–2.4×
#: faster, `branched.urdf`'s `grad` 7 % slower, segments of 1500 steps 1.4–1.6×
#: slower (pass `diffrax.RecursiveCheckpointAdjoint()` for diffrax's choice).
SEGMENT_CHECKPOINTS = 32
# Event times are located to this width (relative and absolute, s), or to 32
# machine epsilons in single precision.
_EVENT_TIME_TOL = 1e-13
# Segments also end at every k-th save time, k = ceil((len(ts) − 1) / _SAVE_SEGMENTS),
# so a segment holds k saves at most (see `_save_stops`).
_SAVE_SEGMENTS = 32
# An element whose slip the event's projection alone would zero only by
# moving q̇ by more than this many times max|q̈| times the event window (the
# most a true stop leaves), and by more than this fraction of max|q̇| (at a
# dead point it moves q̇ by about |q̇|; a stop through the geometry, J_k
# turning while q̈ ≈ 0, by |J̇_k q̇| δt / |J_k|), is at a dead point of its row
# (`_dead_points`).
_DEAD_POINT_FACTOR = 100.0
_DEAD_POINT_RTOL = 1e-3
_STEP_COUNTERS = ("num_steps", "num_accepted_steps", "num_rejected_steps")


class _EventRootState(eqx.Module):
    lower: Float[Array, ""]
    upper: Float[Array, ""]
    f_lower: Float[Array, ""]
    f_upper: Float[Array, ""]
    last: Int[Array, ""]  # which end moved last: +1 lower, -1 upper, 0 none
    count: Int[Array, ""]


class _EventRoot(optx.AbstractRootFinder):
    """The event time: a down-crossing (``fn > 0`` below the root, ``< 0`` above)
    bracketed by the last step, located to a bracket width of ``atol + rtol·|t|``.

    Illinois regula falsi (Dowell & Jarratt 1971): the secant point of the
    bracket, halving the kept end's value when the same end moves twice, each
    point at least half a tolerance inside the bracket so that it closes from
    both sides; every third point is the midpoint (worst case three times
    bisection). 12–20 condition evaluations to 1e-13 s on smooth and kinked
    test conditions, against 40 for bisection; each is a stick solve. Only
    the width is tested, not ``|fn|``, which mixes units (velocities, forces)
    with time. Under `vmap` diffrax root-finds ``t_end − t`` for members
    without an event: the first point is ``t_end`` itself, with value zero,
    which closes the bracket.
    Gradients do not depend on the iteration: diffrax differentiates the root
    implicitly. The value at the bracket's lower end is taken by the first
    step (``count = -1``), not by `init`, so that the condition (each
    evaluation a stick solve, for a load-dependent law a load coupling) is
    compiled at one place.
    """

    rtol: float
    atol: float
    norm: ClassVar[Callable] = jnp.abs

    def init(self, fn, y, args, options, f_struct, aux_struct, tags):
        return _EventRootState(
            lower=jnp.asarray(options["lower"], f_struct.dtype),
            upper=jnp.asarray(options["upper"], f_struct.dtype),
            f_lower=jnp.asarray(jnp.nan, f_struct.dtype),
            f_upper=jnp.asarray(-jnp.inf, f_struct.dtype),
            last=jnp.array(0),
            count=jnp.array(-1),
        )

    def step(self, fn, y, args, options, state, tags):
        first = state.count < 0
        value, aux = fn(jnp.where(first, state.lower, y), args)
        new_y, new_state = self._illinois(y, state, value)
        # The first step only takes the value at the lower end.
        start = eqx.tree_at(lambda s: (s.f_lower, s.count), state, (value, 0))
        keep = jax.tree.map(lambda a, b: jnp.where(first, a, b), start, new_state)
        return jnp.where(first, y, new_y), keep, aux

    def _illinois(self, y, state, value):
        """One Illinois step from the value at ``y``: ``(next y, state)``."""
        above = value > 0  # the root lies above y
        zero = value == 0
        lower = jnp.where(above | zero, y, state.lower)
        upper = jnp.where(above, state.upper, y)
        f_lower = jnp.where(above, value, state.f_lower)
        f_upper = jnp.where(above, state.f_upper, value)
        moved = jnp.where(above, 1, -1)
        # Illinois: the end that stayed twice has its value halved.
        f_upper = jnp.where(above & (state.last == 1), 0.5 * f_upper, f_upper)
        f_lower = jnp.where(~above & (state.last == -1), 0.5 * f_lower, f_lower)
        width = upper - lower
        secant = lower + width * f_lower / (f_lower - f_upper)
        secant = jnp.where(jnp.isfinite(secant), secant, lower + 0.5 * width)
        nudge = 0.5 * (self.atol + self.rtol * jnp.abs(y))
        inside = jnp.clip(secant, lower + nudge, upper - nudge)
        bisect = (state.count % 3 == 2) | (width <= 2 * nudge)
        new_y = jnp.where(bisect, lower + 0.5 * width, inside)
        new_state = _EventRootState(
            lower=lower,
            upper=upper,
            f_lower=f_lower,
            f_upper=f_upper,
            last=moved,
            count=state.count + 1,
        )
        return new_y, new_state

    def terminate(self, fn, y, args, options, state, tags):
        width = jnp.abs(state.upper - state.lower)
        return width < self.atol + self.rtol * jnp.abs(y), optx.RESULTS.successful

    def postprocess(self, fn, y, aux, args, options, state, tags, result):
        return y, aux, {}


class _Segment(eqx.Module):
    """Everything a segment's vector field and event condition need."""

    system: AbstractSystem
    law: AbstractFrictionLaw
    force: AbstractForce | None
    modes: Int[Array, " m"]
    # Coordinates held exactly still: stuck elements with one-entry J rows.
    hold: Bool[Array, " dof"]
    t_start: Float[Array, ""]
    # `DipGuard`'s history of the step ends before `t_start` (a segment that
    # continues another across a save time keeps screening from its start).
    dip_history: tuple
    # Vector elements (`is_vector(rows_per_element)`): the unit slip direction of
    # each slipping element at the segment's start, per row; `None` otherwise.
    reference: Float[Array, " m"] | None = None
    # The segment's save times written by `StepSaves` (`None`: none, or
    # diffrax's `SaveAt`).
    save_ts: Float[Array, " chunk"] | None = None


def _net_force(system, force, t, q, qd, x) -> tuple[Vector, Array, Dynamics]:
    """``(τ − h, ẋ, dynamics)``: every force on the coordinates but friction,
    the rate of the force's state, and the system's terms at ``(q, q̇)``
    (`AbstractSystem.dynamics`: evaluated once per state, which for a closed
    chain is one closure solve instead of five)."""
    applied, rate = applied_force(force, t, q, qd, x)
    dynamics = system.dynamics(q, qd)
    return applied - dynamics.bias, rate, dynamics


# Jitted: each is traced once per signature and reused wherever a
# transformation (the checkpointed adjoint's passes, the restart's JVP, the
# event's root find) traces it again: `jax.grad` of a 4-DoF robot's
# simulation traced in 11.7 s instead of 15.6 s. XLA inlines the calls.
@eqx.filter_jit
def _vector_field(t, y, seg: _Segment):
    q, qd, x = y
    net, rate, dynamics = _net_force(seg.system, seg.force, t, q, qd, x)
    # Accelerations only: how redundant stuck elements split their load is
    # not needed here (and its correction would be compiled at every stage).
    _, acc, _ = friction_at_modes(
        seg.system, seg.law, q, qd, net, seg.modes, False, dynamics,
        reference=seg.reference,
    )  # fmt: skip
    # Exact zeros keep a stuck joint's position constant to the last bit.
    dq = seg.system.coordinate_rate(q, jnp.where(seg.hold, 0.0, qd))
    held = seg.hold
    if seg.law.load_dependent:
        # A load coupling that did not converge leaves the accelerations NaN:
        # the step fails (and the run names the cause) instead of holding a
        # joint whose friction is not known, and whose breakaway then never
        # comes.
        held = held & jnp.isfinite(acc)
    dqd = jnp.where(held, 0.0, acc)
    return dq, dqd, rate


@eqx.filter_jit
def _element_conditions(t, y, seg: _Segment) -> Float[Array, " m"]:
    """Per element, a quantity positive inside the segment that reaches zero at
    the element's event (`_conditions`)."""
    q, qd, x = y
    net, _, dynamics = _net_force(seg.system, seg.force, t, q, qd, x)
    friction, acc, law_at = friction_at_modes(
        seg.system, seg.law, q, qd, net, seg.modes, dynamics=dynamics,
        reference=seg.reference,
    )  # fmt: skip
    slip = dynamics.jac @ qd
    slip_rate = dynamics.jac @ acc + dynamics.jdot_qd  # vector elements only
    # Right after the start a released element's slip is ~|ṡ|·(t − t_start):
    # the stop threshold stays below it there.
    threshold = jnp.minimum(_stop_threshold(t), 0.5 * (t - seg.t_start))
    return _conditions(
        seg.modes, seg.reference, slip, law_at, friction, slip_rate, threshold
    )


# A vector element's slip counts as stopped at its event when it is within
# this many seconds of its slip acceleration of zero. Where its rows'
# mobilities differ (a friction ellipse, `IsotropicCoulomb.arms`) the slip's
# direction swings as it stops, at a rate ~|ṡ|/|s| that no step resolves near
# zero, so the root of `s·u` lands where the direction happens to be
# perpendicular: measured 2e-9 m/s at |ṡ| = 5.4 m/s (0.4 ns) on a sphere with
# arms (1, 0.5), which the event-time window (1.5e-11 s) took for a turn,
# event after event. Isotropic stops land within 1e-13 s.
_VECTOR_STOP_WINDOW = 1e-8


def _time_tol(dtype) -> float:
    """The event times' tolerance, s: `_EVENT_TIME_TOL`, or 32 ulp of the
    dtype where that is coarser (float32)."""
    return max(_EVENT_TIME_TOL, 32 * float(jnp.finfo(dtype).eps))


def _stop_threshold(t) -> Float[Array, ""]:
    """How close (s) to its stop a vector element's slip counts as stopped in
    its event condition (`_conditions`): the event times' tolerance at `t`."""
    return _time_tol(jnp.result_type(t)) * (1 + jnp.abs(t))


def _conditions(
    modes, reference, slip, law_at, friction, slip_rate, threshold
) -> Float[Array, " m"]:
    """The stick margin of stuck elements (`stick_margin`); ``mode·s`` of
    slipping ones, or for a vector element ``s·u`` with ``u`` its slip
    direction at the segment's start: zero when its slip stops (``|s|`` has a
    kink there, ``s·u`` crosses smoothly, so the event time's derivative is
    right) or when it turns a right angle from ``u`` (then it slips on with a
    new ``u``, `_switch`).

    With the slip rate ``ṡ`` and a `threshold` ``T`` (s), a vector element's
    condition is also at most ``|s| − T|ṡ|``: zero within ``T`` of a stop
    however the slip comes to rest. Where its direction swings on the way
    (rows of different mobilities, a torque across the slip) it may come to
    rest beside the plane ``s·u = 0`` rather than through it. (A safeguard,
    not measured alone: the stall of a ball with inertias (0.05, 0.06, 0.012)
    kg·m² under a torque across its spin, 11695 rejected steps and no event,
    was the slip force's jump at a right-angle turn,
    `IsotropicCoulomb.slip_force`; this condition alone left it unchanged.)
    """
    if reference is None:
        moving = modes * slip
    else:
        dims = law_at.rows_per_element
        moving = block_dot(slip, reference, dims)
        speed = block_norm(slip, dims)[0] - threshold * block_norm(slip_rate, dims)[0]
        moving = jnp.minimum(moving, speed)
    return jnp.where(modes == STICK, stick_margin(law_at, friction), moving)


@eqx.filter_custom_jvp
def _restart(t, y, seg: _Segment):
    """The start state of a segment solved from ``stop_gradient(t)``: `y` in
    value; in derivatives the flow from ``(t, y)`` back to that fixed time,
    ``y − f·δ + ½(f_t + f_y f)·δ²`` with ``δ = t − stop_gradient(t)`` (zero in
    value, so only derivatives see it), ``f`` the segment's vector field.

    With a differentiated start time diffrax moves every step with it while
    steps clipped onto `jump_ts` stay put, and the gradient through a
    `Tabulated` breakaway was 2e-6 off (5e-6 relative; 2.5e-9 this way, against
    central differences and a converged run). The ``δ²`` term makes second
    derivatives right: without it ``∂²y/∂t²`` was ``−2f_t`` instead of
    ``−f_t + f_y f``, and the excitation-design gradient (a derivative of
    first-order sensitivities) was 0.38 off. As a custom JVP, a program that
    is not differentiated evaluates no vector field here (three fewer copies
    of the stick solve to compile).
    """
    del t, seg
    return y


@_restart.def_jvp
def _restart_jvp(primals, tangents):
    t, y, seg = primals
    t_dot, y_dot, seg_dot = tangents
    t_dot = jnp.zeros_like(t) if t_dot is None else t_dot
    y_dot = jax.tree.map(
        lambda d, v: jnp.zeros_like(v) if d is None else d,
        y_dot,
        y,
        is_leaf=lambda d: d is None,
    )
    rate, rate_dot = eqx.filter_jvp(_vector_field, (t, y, seg), (t_dot, y_dot, seg_dot))
    # f_t + f_y f, without a gradient: it multiplies δ².
    t_0, y_0, rate_0 = jax.lax.stop_gradient((t, y, rate))
    _, curvature = jax.jvp(
        lambda t_, y_: _vector_field(t_, y_, seg),
        (t_0, y_0),
        (jnp.ones_like(t_0), rate_0),
    )
    curvature = jax.lax.stop_gradient(curvature)
    # y − f·δ + ½c·δ² and its tangent (dδ = dt), δ kept as an expression: a
    # derivative of this rule (second derivatives, or an outer derivative of
    # a later segment that starts from this one's end) sees the flow too.
    shift = t - jax.lax.stop_gradient(t)
    out = jax.tree.map(
        lambda v, f, ddy: v - f * shift + 0.5 * ddy * shift**2, y, rate, curvature
    )
    out_dot = jax.tree.map(
        lambda dy, f, df, ddy: dy - f * t_dot + shift * (ddy * t_dot - df),
        y_dot,
        rate,
        rate_dot,
        curvature,
    )
    return out, out_dot


def _event_condition(t, y, args: _Segment, **kwargs):
    """One real condition for all elements, crossing zero downwards at the first
    element event.

    It is ``min_k g_k(t) / (t − t_start)``: the same zeros as ``min_k g_k`` after
    the start, but an element that starts the segment at zero (just released:
    ``s = 0``; just stuck on a grazing contact: margin ``≈ 0``) starts at the
    sign of its rate ``ġ_k`` instead of at zero, so it neither fires at once nor
    hides the down-crossing of another element in the first step. At
    ``t_start`` itself the condition is ``+1``. Events that begin and end inside
    one step are found by `DipGuard`, which rejects such steps.
    """
    if t is kwargs.get("t0"):
        # diffrax's first call, at the solve's start (`args.t_start`, for a
        # solve continued across a save time too), where the condition is +1:
        # returned without the stick solve (a load coupling), which is then
        # compiled at one place less.
        return jnp.ones((), y[1].dtype)
    g = jnp.min(_element_conditions(t, y, args))
    elapsed = t - args.t_start
    started = elapsed > 0
    return jnp.where(started, g / jnp.where(started, elapsed, 1.0), 1.0)


def _project_velocity(
    parts: StickParts, qd: Vector, zero: Bool[Array, " m"], least_norm: bool
) -> Vector:
    """Make the slip velocities of the `zero` elements vanish.

    The smallest change in kinetic-energy metric: ``q̇ ← q̇ − M⁻¹J_Zᵀ λ`` with
    ``(J_Z M⁻¹ J_Zᵀ) λ = J_Z q̇`` (a tiny impulse: the event left ``|J_Z q̇|`` at
    the root-finder's tolerance). Coordinates with a one-entry ``J`` row are then
    set to exactly ``0.0``. `parts`: `_stick.stick_parts` at the event state
    (only ``M⁻¹Jᵀ``, ``J`` and the Delassus matrix are read, which do not
    depend on the velocity). `least_norm`: False for a system with
    `independent_friction_rows` (no least-norm correction to compile).
    """
    lam = masked_solve(parts.delassus, parts.jac @ qd, zero, least_norm)
    qd = qd - parts.minv_jt @ jnp.where(zero, lam, 0.0)
    return jnp.where(_joint_coordinates(parts.jac, zero, least_norm), 0.0, qd)


def _joint_coordinates(jac, elements, least_norm: bool) -> Bool[Array, " dof"]:
    """Coordinates that the zero slip velocities of `elements` pin to zero.

    A coordinate ``k`` is pinned when ``e_k`` lies in the row space of the
    stuck rows ``J_S`` (its diagonal entry of the projector ``J_Sᵀ (J_S
    J_Sᵀ)⁻¹ J_S`` is 1): joint friction (a one-entry row), and e.g. a mass
    stuck to a stuck block (rows ``[1, −1]`` and ``[0, 1]``). Held coordinates
    keep their position to the last bit; a stuck relative element alone pins
    no coordinate, its slip velocity is held by the Delassus solve to rounding.
    `least_norm`: as in `_project_velocity`.
    """
    nonzero = jac != 0
    single = jnp.sum(nonzero, axis=1) == 1
    by_row = jnp.any(nonzero & (elements & single)[:, None], axis=0)
    rows = jnp.where(elements[:, None], jac, 0.0)
    # (J_S J_Sᵀ)⁻¹ J_S
    coef = masked_solve(rows @ rows.T, rows, elements, least_norm)
    projector_diagonal = jnp.sum(rows * coef, axis=0)
    pinned = jnp.abs(projector_diagonal - 1.0) < 1e-9
    return by_row | (pinned & jnp.isfinite(projector_diagonal))


class _Event(NamedTuple):
    """What `_switching_elements` finds at a segment's end, for `_switch`.

    Attributes:
        net: ``τ − h`` at the event.
        friction: the friction with the old modes (stick forces of the stuck
            elements).
        at_zero: elements at zero slip velocity whose mode is to be decided:
            stuck ones that stay candidates for sticking and slipping ones whose
            velocity just reached zero.
        breakaway: stuck elements whose stick force reached its static limit;
            released in the direction of their stick force.
        dynamics: `AbstractSystem.dynamics` at the event state (one closure
            solve of a closed chain serves the whole switch; the velocity
            projection changes ``q̇`` by a rounding-size impulse only).
        parts: `_stick.stick_parts` of it (one factorisation of ``M`` serves
            the projection, the mode choice and the new friction).
        modes: the old modes, elements at a dead point turned round
            (`_dead_points`).
        reference, turned: vector elements only (else `None`): the slip
            directions (turned round at a dead point), and the slipping
            elements whose slip turned a right angle from theirs (they slip
            on, from their slip's direction); modes and directions then come
            from `isotropic_modes`.
    """

    net: Vector
    friction: Float[Array, " m"]
    at_zero: Bool[Array, " m"]
    breakaway: Bool[Array, " m"]
    dynamics: Dynamics
    parts: StickParts
    modes: Int[Array, " m"]
    reference: Float[Array, " m"] | None
    turned: Bool[Array, " m"] | None


def _switch(
    system, law, q, qd, event: _Event
) -> tuple[Int[Array, " m"], Vector, Bool[Array, " dof"], Bool[Array, ""], Any]:
    """New modes at an event (Farhat et al. 2010, Sec. 4.2 and Eq. 8), from
    the `_Event` found at the state ``(q, q̇)``.

    Returns:
        ``(modes, q̇, hold, ok, reference)``: the new modes, the velocities with
        the zero elements' slip velocities set to zero, the coordinates held
        exactly in the next segment, whether the stick solve was finite (and
        the modes consistent), and the new slip directions (`None` for scalar
        elements).
    """
    net, friction, at_zero, breakaway, dynamics, parts, modes, reference, turned = event
    # The mode choice reads the velocities before the event's projection
    # (`isotropic_modes` its slip directions); the next segment starts from it.
    least_norm = not system.independent_friction_rows
    projected = _project_velocity(parts, qd, at_zero | breakaway, least_norm)
    if reference is not None:
        slip = parts.jac @ qd
        norm = block_norm(slip, law.rows_per_element)[0]
        reference = jnp.where(turned, slip / jnp.where(turned, norm, 1.0), reference)
        modes, reference, consistent = isotropic_modes(
            system, law, q, qd, net, modes, reference, at_zero, breakaway,
            dynamics, parts,
        )  # fmt: skip
    else:
        released = jnp.where(friction >= 0, 1, -1).astype(modes.dtype)
        modes = jnp.where(breakaway, released, modes)
        modes, consistent = consistent_modes(
            system,
            law,
            q,
            qd,
            net,
            modes,
            at_zero & ~breakaway,
            released=breakaway,
            dynamics=dynamics,
            parts=parts,
            motion=projected,
        )
    # The projection removes only the slip the event left (rounding). A larger
    # change means a slip crossed zero because its rows of J did, not because
    # the motion stopped, where `_dead_points` does not pass it through (an
    # element of several rows; several elements whose rows vanish only
    # together, each alone moving q̇ little): projecting
    # would stop the mechanism (measured: a four-bar's crank at 5 rad/s set
    # to 0.0 at its rocker's extreme, before `_dead_points`). Fail loudly.
    moved = jnp.max(jnp.abs(projected - qd), initial=0.0)
    passes = moved <= 1e-4 * (1.0 + jnp.max(jnp.abs(qd), initial=0.0))
    qd = projected
    stuck = modes == STICK
    hold = _joint_coordinates(dynamics.jac, stuck, least_norm)
    # `consistent` holds only where the friction and accelerations at the new
    # modes are finite (a stick solve or load coupling that failed is not), at
    # the velocities before the projection (which moves them by rounding).
    ok = jnp.all(jnp.isfinite(qd)) & consistent & passes
    return modes, qd, hold, ok, reference


class _Carry(eqx.Module):
    t: Float[Array, ""]
    q: Coordinates
    qd: Vector
    x: Float[Array, " c"]
    modes: Int[Array, " m"]
    hold: Bool[Array, " dof"]
    reference: Float[Array, " m"] | None  # vector elements' slip directions
    # The modes at `t` are still to be decided (`_switch` at the start of the
    # next segment): at the start, and after an event (then `num_events > 0`).
    pending: Bool[Array, ""]
    done: Bool[Array, ""]
    result: RESULTS
    num_events: Int[Array, ""]
    next_stop: Int[Array, ""]  # index in `stops` of the next segment end
    dip_history: tuple  # `DipGuard` history at `t` (none after an event)
    stats: dict


class _Write(NamedTuple):
    """What a segment writes into the save buffers (`_segment_write`). It is
    written outside the segment's conditionals, for every member: `take` and
    `at_end` are false for a member that was already done."""

    start: Int[Array, ""]  # first row of the window
    take: Bool[Array, " chunk"]  # rows of the window to overwrite
    rows: tuple  # (q, qd, x, modes[, reference]) rows, each (chunk, ...)
    at_end: Bool[Array, ""]  # whether the last row takes `ends`
    ends: tuple  # the end state and marks


def _save_stops(ts, t1) -> tuple[int, Float[Array, " k"]]:
    """``(chunk, stops)``: segment ends besides events, every `chunk`-th save
    time and `t1`.

    Under `vmap` a diffrax solve rewrites its whole save buffer at every step:
    one segment holding all of `ts` cost many times the solve itself. A few
    saves per segment cost a restart every `chunk` saves instead (about even on
    single solves; timings in README, Performance). With ``chunk == 1`` (a stop
    at every save time) every save time is a segment start (or `t1`): the start
    states are saved and diffrax saves no `ts` (its save loop costs 12-15 % of
    a step under `vmap`).
    """
    chunk = max(1, -(-(ts.shape[0] - 1) // _SAVE_SEGMENTS))
    stops = ts if chunk == 1 else ts[chunk::chunk]
    return chunk, jnp.concatenate([stops, t1[None]])


def _segment_save_times(ts, chunk: int, t_start, t_stop):
    """``(first, seg_ts)``: the index of the first save time of a segment from
    `t_start` to `t_stop` and its `chunk` save times, padded with `t_stop`
    (``(None, None)`` with ``chunk == 1``: the start states are saved)."""
    if chunk == 1:
        return None, None
    num_t = ts.shape[0]
    # First time to save: the last of any equal to `t_start` (copied to the
    # others at the end), else the first after it.
    right = jnp.searchsorted(ts, t_start, side="right")
    at_start = (right > 0) & (ts[jnp.maximum(right - 1, 0)] == t_start)
    first = jnp.where(at_start, right - 1, right)
    source = first + jnp.arange(chunk)
    seg_ts = ts[jnp.minimum(source, num_t - 1)]
    return first, jnp.minimum(jnp.where(source < num_t, seg_ts, t_stop), t_stop)


def _segment_saves(seg: _Segment) -> Float[Array, " chunk"]:
    """The save times `StepSaves` writes in a segment (its ``args``): one
    function for every solve, so that the solver's static field is the same
    object in every trace."""
    return seg.save_ts


def _marks(c: "_Carry") -> tuple:
    """What is saved besides the state: the modes, and the slip directions of
    vector elements."""
    return (c.modes,) if c.reference is None else (c.modes, c.reference)


def _segment_write(c: _Carry, ts, t1, chunk: int, first, t_start, t_e, y_e, at_seg_ts):
    """What this segment saves (`_write`): the times it spanned (with a stop at
    every save time: its start); a time equal to an event time is taken from
    the next segment (after the switch), as is the segment's stop; the last
    save time, when it is at or after the segment's end at `t1`, takes the end
    state `y_e` (equal save times are copied from the last of them afterwards).
    """
    num_t = ts.shape[0]
    if chunk == 1:
        # The last save time equal to the start (if any).
        start = jnp.clip(jnp.searchsorted(ts, t_start, side="right") - 1, 0, None)
        spanned = (ts[start] == t_start)[None] & (t_start < t1)
        inside = (c.q[None], c.qd[None], c.x[None])
    else:
        start = jnp.clip(first, 0, num_t - chunk)
        index = start + jnp.arange(chunk)
        spanned = (index >= first) & (index < first + chunk) & (ts[index] < t_e)
        back = jnp.clip(index - first, 0, chunk - 1)
        inside = tuple(y[back] for y in at_seg_ts)
    take = spanned & ~c.done
    marks = _marks(c)
    rows = (*inside, *(jnp.broadcast_to(a, (chunk, a.shape[0])) for a in marks))
    at_end = (ts[-1] >= t_e) & (t_e >= t1) & ~c.done
    return _Write(start, take, rows, at_end, (*y_e, *marks))


def _no_write(saved, chunk: int) -> _Write:
    """A `_Write` that changes nothing (a segment skipped by the whole batch)."""
    return _Write(
        start=jnp.array(0, jnp.int32),
        take=jnp.zeros((chunk,), bool),
        rows=tuple(jnp.zeros((chunk, *b.shape[1:]), b.dtype) for b in saved),
        at_end=jnp.array(False),
        ends=tuple(jnp.zeros(b.shape[1:], b.dtype) for b in saved),
    )


def _write(saved: tuple, w: _Write, chunk: int) -> tuple:
    """The save buffers with a segment's `_Write`.

    Only a window of `chunk` rows (and the last row) of the buffers is read
    and written, and outside the segment's conditionals: rewriting whole
    buffers in every segment made 1001 saved times cost 7× the final state
    alone on a `vmap` batch, and buffers passed through the conditionals were
    copied whole at every segment (README, Performance).
    """

    def update(buffer, row, end):
        old = jax.lax.dynamic_slice_in_dim(buffer, w.start, chunk)
        buffer = jax.lax.dynamic_update_slice_in_dim(
            buffer, jnp.where(w.take[:, None], row, old), w.start, axis=0
        )
        return buffer.at[-1].set(jnp.where(w.at_end, end, buffer[-1]))

    return tuple(map(update, saved, w.rows, w.ends))


def _dead_points(parts, qd, acc, window, candidates, dims) -> Bool[Array, " m"]:
    """The one-row elements of `candidates` whose slip crossed zero because
    their row of ``J`` did, not because the motion along it stopped.

    At a dead point of a closed chain's passive joint (a four-bar's rocker at
    its extremes, the crank and coupler in line) ``s_k = J_k(q) q̇`` crosses
    zero with ``J_k`` while the mechanism moves on: the element can neither
    stop the motion (its generalised force ``J_kᵀ f`` vanishes there, sticking
    would need an infinite impulse) nor stick, and its slip simply turns
    round. Such a row is told apart by the velocity change that would make
    its slip exactly zero, ``M⁻¹J_kᵀ s_k / (J_k M⁻¹ J_kᵀ)``: at a true stop
    the slip left is the event's residual, ``s_k ≈ ṡ_k δt`` with ``δt``
    within the `window` (s) that admitted the element, so the change is
    about ``|q̈| δt``; at a dead point it is about ``|q̇|`` whatever ``δt``.
    More than ``_DEAD_POINT_FACTOR·max|q̈|·window`` and than
    ``_DEAD_POINT_RTOL·max|q̇|`` (a stop through the geometry, the row turning
    away from ``q̇`` with ``q̈ ≈ 0``, changes ``q̇`` by ``|J̇_k q̇| δt / |J_k|``,
    small unless ``J_k`` itself vanishes within about a thousand windows), or
    a row exactly zero, is a dead point. A mechanism that stops at its dead
    point (``|q̇| ~ |q̈| δt``) is a true stop.
    Elements of several rows are never passed through (the projection guard
    of `_switch` names such a case).

    Args:
        parts: `_stick.stick_parts` at the event state.
        qd, acc: the velocities and the accelerations at the old modes.
        window: how far (s) from its zero a candidate's slip may be.
        candidates: rows of the slipping elements whose slip reached zero.
        dims: the law's `rows_per_element`.
    """
    rows = candidates.shape[0]
    sizes = np.asarray(element_sizes(dims, rows), dtype=int)
    one_row = sizes[element_index(dims, rows)] == 1
    diagonal = jnp.diagonal(parts.delassus)
    slip = parts.jac @ qd
    zero_row = diagonal <= 0
    impulse = jnp.abs(slip) * jnp.max(jnp.abs(parts.minv_jt), axis=0, initial=0.0)
    moved = impulse / jnp.where(zero_row, 1.0, diagonal)
    stop = _DEAD_POINT_FACTOR * jnp.max(jnp.abs(acc), initial=0.0) * window
    rounding = _DEAD_POINT_RTOL * jnp.max(jnp.abs(qd), initial=0.0)
    return candidates & one_row & (zero_row | (moved > jnp.maximum(stop, rounding)))


def _switching_elements(
    system, law, force, modes, reference, t_e, y_e, event_hit, time_tol
) -> _Event:
    """The `_Event` at a segment's end `t_e`: the net force and the friction of
    the old `modes`, the elements whose mode is to be decided, those breaking
    away, the system's terms, and the modes and slip directions with the
    elements at a dead point (`_dead_points`) turned round: their slip
    crossed zero with their row of ``J`` and goes on the way it accelerates.

    The elements that switch: the one that triggered, and any slipping one
    whose velocity reaches zero within a few event-time tolerances of it
    (simultaneous events, e.g. identical joints; a second breakaway that close
    costs one more, short, segment).
    """
    q_e, qd_e, x_e = y_e
    stuck = modes == STICK
    net, _, dynamics = _net_force(system, force, t_e, q_e, qd_e, x_e)
    parts = stick_parts(system, q_e, qd_e, net, dynamics)
    friction, acc, law_at = friction_at_modes(
        system, law, q_e, qd_e, net, modes, dynamics=dynamics, parts=parts,
        reference=reference,
    )  # fmt: skip
    slip = dynamics.jac @ qd_e
    slip_rate = dynamics.jac @ acc + dynamics.jdot_qd
    g = _conditions(
        modes, reference, slip, law_at, friction, slip_rate, _stop_threshold(t_e)
    )
    window = 100 * time_tol * (1 + jnp.abs(t_e))
    dims = law.rows_per_element
    element = jnp.asarray(element_index(dims, modes.shape[0]))
    if reference is None:
        soon = ~stuck & (g <= jnp.abs(slip_rate) * window)
    else:
        # Stopped: the slip is within `_VECTOR_STOP_WINDOW` of zero (a
        # right-angle turn leaves it finite).
        speed = block_norm(slip, dims)[0]
        stop_window = jnp.maximum(window, _VECTOR_STOP_WINDOW * (1 + jnp.abs(t_e)))
        soon = ~stuck & (speed <= block_norm(slip_rate, dims)[0] * stop_window)
    near = soon | (element == element[jnp.argmin(g)])
    hit = event_hit & near
    breakaway = hit & stuck
    if reference is None:
        stopped = hit & ~stuck
        passing = _dead_points(parts, qd_e, acc, window, stopped, dims)
    else:
        stopped = hit & ~stuck & soon
        passing = _dead_points(parts, qd_e, acc, stop_window, stopped, dims)
    # It slips on the way its slip accelerates (the old modes' friction; its
    # own barely acts through a vanishing row).
    at_zero = (stuck & ~breakaway) | (stopped & ~passing)
    # Comparisons, not `jnp.sign`: a NaN rate (a failed coupling) falls back.
    turn = jnp.where(slip_rate > 0, 1.0, jnp.where(slip_rate < 0, -1.0, 0.0))
    if reference is None:
        turn = jnp.where(turn != 0, turn, -modes)
        modes = jnp.where(passing, turn, modes).astype(modes.dtype)
        turned = None
    else:
        # One-row elements only: their direction is a sign (their modes stay 1).
        turn = jnp.where(turn != 0, turn, -reference)
        reference = jnp.where(passing, turn, reference).astype(reference.dtype)
        turned = hit & ~stuck & ~soon
    return _Event(
        net, friction, at_zero, breakaway, dynamics, parts, modes, reference, turned
    )


def _switch_pending(system, law, force, c: "_Carry", time_tol) -> "_Carry":
    """`c` with its modes decided where they are pending (the start of the
    simulation and every event; `_switch`), else unchanged.

    Run at the start of every segment, so that the switch is in the traced
    program once: the compile time of a simulation grows with every copy of
    the stick solve. A switch whose stick forces are not finite ends the
    simulation with ``RESULTS.stick_solve_failed`` at `c`'s state (for a
    load-dependent law, with the modes it tried).
    """
    y = (c.q, c.qd, c.x)
    after_event = c.pending & (c.num_events > 0)
    event = _switching_elements(
        system, law, force, c.modes, c.reference, c.t, y, after_event, time_tol
    )
    modes, qd, hold, ok, reference = _switch(system, law, c.q, c.qd, event)
    apply = c.pending & ~c.done
    failed = apply & ~ok
    if reference is not None:
        c = eqx.tree_at(
            lambda k: k.reference, c, jnp.where(apply & ok, reference, c.reference)
        )
    # A failed switch of a load-dependent law leaves the modes it tried, at
    # which `_solution` asks the load coupling (`name_load_coupling_failure`).
    return eqx.tree_at(
        lambda k: (k.qd, k.modes, k.hold, k.pending, k.done, k.result),
        c,
        (
            jnp.where(apply & ok, qd, c.qd),
            jnp.where(apply if law.load_dependent else apply & ok, modes, c.modes),
            jnp.where(apply & ok, hold, c.hold),
            c.pending & ~apply,
            c.done | failed,
            RESULTS.where(failed, RESULTS.stick_solve_failed, c.result),
        ),
    )


def _segment_result(solve_result, num_events, max_events) -> RESULTS:
    """The result after a segment: its solve's code (the modes after an event
    are decided at the start of the next segment, `_switch_pending`)."""
    event_hit = solve_result == diffrax.RESULTS.event_occurred
    reached = solve_result == diffrax.RESULTS.successful
    # With an explicit solver only the event's root find gives these; a
    # non-finite solve (a NaN state or force) is `classify`'s
    # `nonfinite_state`, not a step-size or root-finding problem.
    root_failed = (solve_result == diffrax.RESULTS.nonlinear_max_steps_reached) | (
        solve_result == diffrax.RESULTS.nonlinear_divergence
    )
    result = RESULTS.where(
        event_hit | reached,
        RESULTS.successful,
        RESULTS.where(
            root_failed, RESULTS.event_location_failed, classify(solve_result)
        ),
    )
    # The budget is spent at the event after the `max_events`-th: stop there
    # (the states after it stay NaN, never a silently short trajectory).
    return RESULTS.where(
        (result == RESULTS.successful) & (num_events > max_events),
        RESULTS.max_events_reached,
        result,
    )


def _events_first(event_times: Float[Array, " s"]) -> Float[Array, " s"]:
    """The segments' event times, s, in order, then ``inf`` (what ``jnp.sort``
    gives for them): segments that ended at a save time, or did not run,
    report ``inf``, and the events' times increase. A NaN time (none is
    expected: an event time comes from a root bracketed by finite times)
    keeps its place."""
    # A stable move of the events to the front, not a sort: XLA's CPU sort of
    # the (segments, batch) array was a tenth of a 1000-oscillator batch's run
    # (README, Performance). Every index is distinct (the others out of
    # range, dropped), so that the scatter's derivative is a plain scatter.
    s = event_times.shape[0]
    event = event_times != jnp.inf
    index = jnp.where(event, jnp.cumsum(event) - 1, s + jnp.arange(s))
    inf = jnp.full_like(event_times, jnp.inf)
    return inf.at[index].set(event_times, mode="drop", unique_indices=True)


def _solution(
    system, law, force, ts, final: _Carry, saved: tuple, event_times, num_vf_evals
):
    """The `Solution` from the last carry of the segment scan."""
    result = RESULTS.where(
        (final.result == RESULTS.successful) & ~final.done,
        RESULTS.max_events_reached,
        final.result,
    )
    # A failed segment left the carry at the last accepted state.
    result = name_configuration_failure(system, result, final.q)

    def coupling_at(system, law, force, c: _Carry):
        net, _, dynamics = _net_force(system, force, c.t, c.q, c.qd, c.x)
        return load_coupling_at_modes(
            system, law, c.q, c.qd, net, c.modes, dynamics, c.reference
        )

    result = name_load_coupling_failure(
        law, result, coupling_at, system, law, force, final
    )
    # Equal save times take the state saved at the last of them.
    same = jnp.searchsorted(ts, ts, side="right") - 1
    q_s, qd_s, x_s, modes_s, *reference_s = (a[same] for a in saved)

    def friction_at(t, q, qd, x, modes, *reference):
        net, _, dynamics = _net_force(system, force, t, q, qd, x)
        f, _, _ = friction_at_modes(
            system, law, q, qd, net, modes, dynamics=dynamics,
            reference=reference[0] if reference else None,
        )  # fmt: skip
        return f

    return Solution(
        ts=ts,
        q=q_s,
        qd=qd_s,
        friction=jax.vmap(friction_at)(ts, q_s, qd_s, x_s, modes_s, *reference_s),
        slip_velocity=jax.vmap(system.slip_velocity)(q_s, qd_s),
        friction_state=jnp.zeros((ts.shape[0], 0), q_s.dtype),
        force_state=x_s,
        modes=modes_s,
        event_times=event_times,
        stats=solve_stats(final.stats, num_vf_evals, final.num_events),
        result=result,
    )


class SwitchPath(AbstractPath):
    """Exact stick–slip by the switch algorithm (Farhat et al. 2010, Sec. 4).

    Stuck elements have slip velocity exactly ``0.0`` wherever the stuck rows
    of ``J`` pin coordinates (joint friction, a one-entry row; or e.g. a block
    stuck on a stuck block, rows ``[1, −1]`` and ``[0, 1]``): those coordinates'
    velocities and accelerations are exactly zero, so their positions are
    constant to the last bit. A stuck element whose rows pin no coordinate (a
    relative element between two moving bodies) has its slip velocity projected
    to zero at the start of the stick phase and held by the Delassus solve
    (Farhat Eq. 7), to rounding (~1e-16 relative). Stick forces of all stuck
    elements are solved together; static limits above kinetic (breakaway) are
    supported.

    Defaults (each `None` option, filled by `defaults`):

    - ``solver``: `diffrax.Tsit5()`;
    - ``rtol = 1e-10``, ``atol = 1e-12`` in double precision (the Quinn/Farhat
      oscillator sticks at ``x = −0.75`` to ``2e-11``), ``100·eps`` and ``eps``
      in lower precision;
    - ``dtmax = (t1 − t0) / 100``: in a stick phase the error estimate is zero,
      so without a cap the steps grow until a breakaway is stepped over; lower it
      when the applied force changes faster (e.g. ``dtmax`` ≤ 1/20 of the forcing
      period);
    - ``dt0``: `None`, diffrax's automatic initial step in every segment;
    - ``max_events``: the event budget. A segment runs to the next event, to
      ``t1``, or to every ``k``-th save time, ``k = ⌈(len(ts) − 1) / 32⌉``
      (short save buffers keep `vmap` cheap; with ``k = 1``, every save time
      is a segment start and its state is saved as it is, no interpolation),
      so at most ``max_events + 2 + (len(ts) − 1) // k`` segments are run
      (one more for ``k = 1``). A segment's ``k`` save times are interpolated
      from the dense output of the steps that span them: all at once per step
      (`StepSaves`) where ``k`` ≤ 64 under `diffrax.ForwardMode` or ≤ 4 under
      a reverse-mode adjoint, else by diffrax's save loop (the same values to
      rounding; `step_saves_limit`).

    Event times are located by Illinois regula falsi (`_EventRoot`) to a
    width of ``1e-13·(1 + |t|)`` s. ``stats["num_vf_evals"]`` is computed, not
    counted: per segment that ran, ``1 + 6·steps`` for Tsit5/Dopri5 (FSAL:
    stages − 1 per attempted step, one at the start), ``stages·steps`` for
    explicit Runge–Kutta without FSAL (`evals_per_step`); this matches the
    calls counted with a callback in the vector field. The event condition
    (once per step, plus 12–20 root-finder iterations per event; each a stick
    solve) is not included. It is ``-1`` for solvers that are not Runge–Kutta.

    Options: `solver`, `rtol`, `atol`, `dt0`, `dtmax`, `jump_ts`, `max_steps`,
    `max_events`, `adjoint` (of each segment's solve: `diffrax.ForwardMode()`
    for `jax.jacfwd`).

    Returns (`run`):
        a `Solution`; ``result`` is ``RESULTS.max_events_reached`` when `t1` was
        not reached within the event budget, ``RESULTS.event_location_failed``
        when an event's root find failed, ``RESULTS.stick_solve_failed`` when
        the stick forces were not finite, ``RESULTS.load_coupling_failed``
        when a load-dependent law's coupling did not converge where the
        solve stopped (`name_load_coupling_failure`), or the diffrax code of
        a failed segment (e.g. ``max_steps_reached``).
    """

    name: ClassVar[str] = "the switch path"
    coordinate_rates: ClassVar[bool] = True
    options: ClassVar[frozenset[str]] = frozenset(
        ("solver", "rtol", "atol", "dt0", "dtmax", "jump_ts", "max_steps")
        + ("max_events", "adjoint")
    )

    def defaults(self, options, t0, t1, dtype):
        eps = float(jnp.finfo(dtype).eps)
        span = jnp.asarray(t1, dtype=dtype) - jnp.asarray(t0, dtype=dtype)
        return options.with_defaults(
            solver=diffrax.Tsit5(),
            rtol=max(DEFAULT_RTOL, 100 * eps),
            atol=max(DEFAULT_ATOL, eps),
            dtmax=span / DTMAX_DIVISIONS,
            adjoint=diffrax.RecursiveCheckpointAdjoint(checkpoints=SEGMENT_CHECKPOINTS),
        )

    def run(self, system, law, force, q0, qd0, t0, t1, ts, options):
        n, m = system.n_dof, system.n_friction
        dtype = q0.dtype
        t0 = jnp.asarray(t0, dtype=dtype)
        t1 = jnp.asarray(t1, dtype=dtype)
        ts = jnp.asarray(ts, dtype=dtype)
        num_t = ts.shape[0]
        solver, adjoint = options.solver, options.adjoint
        controller = step_controller(
            options.rtol, options.atol, options.dtmax, options.jump_ts
        )
        time_tol = _time_tol(dtype)
        event = diffrax.Event(
            _event_condition,
            root_finder=_EventRoot(rtol=time_tol, atol=time_tol),
            direction=False,
        )
        per_step, evals_at_start = evals_per_step(solver) or (-1, 0)
        # What the segments run: events inside a step are found by `DipGuard`.
        stepper = DipGuard(
            for_backend(solver, adjoint, stages_written_out(system, law)),
            _element_conditions,
            lambda s: s.dip_history,
        )
        x0 = force_state0(force, q0, qd0)
        # The modes at the start are decided by the first segment's switch,
        # from the signs of the slip velocities (exact zeros: candidates);
        # vector elements slip along their slip, if any.
        slip0 = system.slip_velocity(q0, qd0)
        modes0 = jnp.sign(slip0).astype(jnp.int32)
        reference0 = None
        if is_vector(law.rows_per_element):
            speed, moving = block_norm(slip0, law.rows_per_element)
            modes0 = moving.astype(jnp.int32)
            reference0 = jnp.where(moving, slip0 / jnp.where(moving, speed, 1.0), 0.0)
        chunk, stops = _save_stops(ts, t1)
        num_stops = stops.shape[0]
        # A segment's save times: written by its steps (`StepSaves`) where they
        # are few, else by diffrax's `SaveAt` (none with a stop at each).
        step_saves = 1 < chunk <= step_saves_limit(adjoint)
        if step_saves:
            stepper = StepSaves(stepper, _segment_saves)

        zero = jnp.array(0, dtype=jnp.int32)
        # Make every float carry depend on the inputs (no change in value) so that
        # differentiating the segment scan needs one pass over its body, not a
        # fixed-point iteration that traces the whole diffrax solve again.
        anchor = input_anchor((system, law, force, q0, qd0))

        def tie(value):
            if anchor is None:
                return value
            return jnp.where(False, anchor, value).astype(value.dtype)

        saved0 = (
            tie(jnp.full((num_t, system.n_coord), jnp.nan, dtype)),
            tie(jnp.full((num_t, n), jnp.nan, dtype)),
            tie(jnp.full((num_t, x0.shape[0]), jnp.nan, dtype)),
            jnp.zeros((num_t, m), jnp.int32),
        ) + (() if reference0 is None else (jnp.zeros((num_t, m), dtype),))

        carry0 = _Carry(
            t=tie(t0),
            q=tie(q0),
            qd=tie(qd0),
            x=tie(x0),
            modes=modes0,
            hold=jnp.zeros((n,), dtype=bool),
            reference=reference0,
            pending=jnp.array(True),
            done=jnp.array(False),
            result=RESULTS.successful,
            num_events=zero,
            next_stop=jnp.searchsorted(stops, t0, side="right").astype(jnp.int32),
            dip_history=no_history(m, dtype),
            stats=dict.fromkeys((*_STEP_COUNTERS, "num_vf_evals"), zero),
        )

        def run_segment(c: _Carry):
            # The segment evaluates the system near its start, so its internal
            # solves start there (`AbstractSystem.near`): a four-bar whose
            # crank turns 4 s under a ramp (635 steps) ran in 137 ms instead of
            # 260 ms, its `grad` in 505 instead of 965 ms, when the closure
            # continued from the chain's guess at every evaluation.
            local = system.near(c.q)
            # Members of a batch that are done run a zero-length solve, then are
            # restored from `c` below.
            # Segments that start at a save time need no switch (under `vmap`:
            # unless some member does).
            c = jax.lax.cond(
                eqxi.unvmap_any(c.pending & ~c.done),
                lambda c: _switch_pending(local, law, force, c, time_tol),
                lambda c: c,
                c,
            )
            # The solve starts at the start time without its gradient; the start
            # state carries it instead (`_restart`).
            t_start = jnp.where(c.done, t1, c.t)
            t_fixed = jax.lax.stop_gradient(t_start)
            # The segment ends at the next stop (or an event).
            stop = jnp.minimum(c.next_stop, num_stops - 1)
            t_stop = jnp.where(c.done, t1, stops[stop])
            first, seg_ts = _segment_save_times(ts, chunk, t_fixed, t_stop)
            seg = _Segment(
                local, law, force, c.modes, c.hold, t_fixed, c.dip_history,
                c.reference, seg_ts if step_saves else None,
            )  # fmt: skip
            save_ts = (
                () if seg_ts is None or step_saves else (diffrax.SubSaveAt(ts=seg_ts),)
            )
            y_start = _restart(t_start, (c.q, c.qd, c.x), seg)
            t_start = t_fixed
            sol = diffrax.diffeqsolve(
                diffrax.ODETerm(_vector_field),
                stepper,
                t_start,
                t_stop,
                options.dt0,
                y_start,
                args=seg,
                saveat=diffrax.SaveAt(
                    subs=(diffrax.SubSaveAt(t1=True), *save_ts), solver_state=True
                ),
                stepsize_controller=controller,
                event=event,
                max_steps=options.max_steps,
                adjoint=adjoint,
                throw=False,
            )
            # The save times' states, and `DipGuard`'s part of the solver state.
            if step_saves:
                (at_end,) = sol.ys
                at_seg_ts = saved_states(sol.solver_state)
                dip_state = inner_state(sol.solver_state)
            else:
                at_end, *diffrax_saves = sol.ys
                at_seg_ts = diffrax_saves[0] if diffrax_saves else None
                dip_state = sol.solver_state
            t_e = sol.ts[0][-1]
            q_e, qd_e, x_e = (y[-1] for y in at_end)
            event_hit = sol.result == diffrax.RESULTS.event_occurred
            write = _segment_write(
                c, ts, t1, chunk, first, t_start, t_e, (q_e, qd_e, x_e), at_seg_ts
            )
            num_events = c.num_events + event_hit.astype(jnp.int32)
            result = _segment_result(sol.result, num_events, options.max_events)
            stats = {name: c.stats[name] + sol.stats[name] for name in _STEP_COUNTERS}
            evals = per_step * sol.stats["num_steps"] + evals_at_start
            stats["num_vf_evals"] = c.stats["num_vf_evals"] + evals
            new = _Carry(
                t=t_e,
                q=q_e,
                qd=qd_e,
                x=x_e,
                modes=c.modes,
                hold=c.hold,
                reference=c.reference,
                pending=event_hit,
                done=(result != RESULTS.successful) | (t_e >= t1),
                result=result,
                num_events=num_events,
                next_stop=jnp.searchsorted(stops, t_e, side="right").astype(jnp.int32),
                dip_history=jax.tree.map(
                    lambda fresh, kept: jnp.where(event_hit, fresh, kept),
                    no_history(m, dtype),
                    carried_history(dip_state),
                ),
                stats=stats,
            )
            new = jax.tree.map(lambda a, b: jnp.where(c.done, a, b), c, new)
            return new, write, jnp.where(event_hit & ~c.done, t_e, jnp.inf)

        no_write = _no_write(saved0, chunk)

        def skip_segment(c: _Carry):
            return c, no_write, jnp.asarray(jnp.inf, dtype)

        # Reverse mode recomputes each segment from its start (`jax.checkpoint`)
        # instead of keeping every intermediate of every segment: the gradient
        # of a `vmap` batch of 1000 oscillators (101 saves) peaked at 7.0 GB and
        # ran in 3.97 s, now 1.5 GB and 1.35 s; one robot's `jax.grad` compiles
        # ~3 s longer (31.5 -> 34.5 s, branched.urdf) and runs 7 % longer.
        run_checkpointed = jax.checkpoint(run_segment)

        def body(carry, _):
            c, saved = carry
            # Under vmap the predicate is unbatched: segments run while any member
            # of the batch is still going.
            c, write, event_time = jax.lax.cond(
                eqxi.unvmap_all(c.done), skip_segment, run_checkpointed, c
            )
            return (c, _write(saved, write, chunk)), event_time

        # Enough segments for `max_events` events (and the one that spends the
        # budget) and one per stop.
        num_segments = options.max_events + 1 + num_stops
        (final, saved), event_times = jax.lax.scan(
            body, (carry0, saved0), None, length=num_segments
        )
        event_times = _events_first(event_times)[: options.max_events]
        num_vf_evals = final.stats["num_vf_evals"] if per_step >= 0 else -1
        return _solution(
            system, law, force, ts, final, saved, event_times, num_vf_evals
        )


SWITCH_PATH = SwitchPath()
