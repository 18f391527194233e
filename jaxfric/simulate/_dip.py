"""Events that begin and end inside one step: `DipGuard`.

An event condition that goes below zero and back inside one accepted step (a
stuck element whose required force exceeds its static limit only briefly, a
slip velocity that touches zero and turns back) has the same sign at both step
ends, so a sign test at step ends — diffrax's `Event` — never sees it, and the
trajectory goes on as if the event had not happened.

`DipGuard` wraps the solver of a segment and rejects every step inside which a
condition may dip below zero; the step-size controller then tries a shorter
step, until a step ends inside the dip (where the sign test sees it and the
root finder locates its first crossing) or stops short of it.

A dip is looked for once per step, from one evaluation of the conditions (at
the step's end, where a first-same-as-last solver's last stage evaluates the
same forces, so XLA computes them once): the parabola through each element's
condition ``g_k`` at the last three step ends (the previous step's start and
end, this step's end) predicts an interior minimum of ``g_k``. The step is
rejected when that minimum lies below ``e`` less a rounding floor (64·eps times
the largest ``|g_k|`` of the solve: at a tangency, a minimum exactly at zero,
the prediction's error shrinks with the step as fast as the minimum, and
without the floor the steps would shrink onto the tangency until rounding made
``g_k ≤ 0`` there), ``e`` being how far the previous parabola's
extrapolation missed this step's end value: a measured bound of the parabola's
error (where the cubic term ``c·t³`` of ``g_k`` dominates, the extrapolation
misses by ``6c·h³`` and the interpolated minimum is off by at most
``0.39c·h³``). A shorter step either ends inside the dip, where the sign test
sees it and the root finder locates its first crossing, or shows that there is
none: ``e`` shrinks with the step (as ``h``, the curvatures' difference with
``h²``), so a minimum above zero stops being flagged. No condition is evaluated
inside the step: on the tests' dips (excess over the static limit 1e-3 to
1e-9) confirming the prediction on the dense output first (Brent's
minimisation, inside a `jax.lax.cond`) rejected exactly the same steps, at a
higher cost per step (the README's Performance section).

A solve that continues another (the switch path's segments that end at save
times) carries the history over (`no_history`, `carried_history`); the first
two steps after an event have none and are not screened.
"""

from collections.abc import Callable

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp

from ._common import nondifferentiable
from ._unrolled import AbstractWrappedSolver

#: A predicted minimum within this many extrapolation misses of zero is a dip.
_SAFETY = 1.0
#: A predicted minimum less than this many ``eps·max|g_k|`` below the miss is
#: a tangency (rounding), not a dip.
_ROUNDING = 64


class DipGuard(AbstractWrappedSolver):
    """`solver`, with every step inside which a condition is predicted to dip
    below zero rejected (module doc).

    Attributes:
        solver: the wrapped adaptive solver.
        conditions: ``(t, y, args) -> g``, one value per element, positive
            while the segment's modes hold; an event is a zero of ``min_k g_k``.
            Finite; zero at the start for an element that starts at its
            event boundary (a released element's slip velocity).
        prior: ``args -> history``: the two step ends before the start of the
            solve and the largest ``|g_k|`` seen (`carried_history` of the
            solve it continues, or `no_history`).
    """

    solver: diffrax.AbstractAdaptiveSolver
    conditions: Callable = eqx.field(static=True)
    prior: Callable = eqx.field(static=True)

    def init(self, terms, t0, t1, y0, args):
        # Where a step is rejected is a numerical choice, not part of the
        # solution: the screening is not differentiated.
        g0 = nondifferentiable(self.conditions(t0, y0, args))
        t0 = nondifferentiable(jnp.asarray(t0, g0.dtype))
        # (start of the last accepted step, its slope, the curvature over the
        # last two, the largest |g| seen, this step's start and value); NaN:
        # none yet.
        t_prev, slope, curv, scale = nondifferentiable(self.prior(args))
        scale = jnp.fmax(scale, jnp.abs(g0))
        history = (t_prev, slope, curv, scale, t0, g0)
        return self.solver.init(terms, t0, t1, y0, args), history

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        inner_state, history = solver_state
        y1, y_error, dense_info, inner_state, result = self.solver.step(
            terms, t0, t1, y0, args, inner_state, made_jump
        )
        t_prev, slope_prev, curv_prev, scale, t0_, g0 = history
        t1_, y1_, args_ = nondifferentiable((t1, y1, args))
        # For a first-same-as-last solver XLA merges this with the vector
        # field's last stage, which evaluates the same forces at (t1, y1).
        g1 = self.conditions(t1_, y1_, args_)
        # Divided differences over the last three step ends (t_prev, t0, t1).
        h = t1_ - t0_
        slope = (g1 - g0) / h
        span = t1_ - t_prev
        curv = (slope - slope_prev) / span
        # The previous parabola's miss at t1, ``g[t_−2, t_prev, t0, t1]·(t1 −
        # t_−2)(t1 − t_prev)(t1 − t0)``: the error scale of this one.
        miss = jnp.abs(curv - curv_prev) * span * h
        # This parabola's slope at t1 and its minimum inside the step.
        slope_end = slope + curv * h
        inside = (slope_end > 0) & (slope_end < 2 * curv * h)
        lowest = g1 - slope_end * slope_end / (4 * jnp.where(inside, curv, 1.0))
        # NaN history (none yet) compares False. After a jump of the force
        # (`jump_ts`) the history belongs to the left limit: not used.
        ends_up = (g0 > 0) & (g1 > 0)
        # A tangency (a minimum at zero) is no dip: the prediction's rounding
        # error, relative to the largest |g_k| of the solve (near a tangency
        # g0, g1 and the miss all shrink with the step; without this floor the
        # steps shrink onto the tangency until rounding makes g_k <= 0).
        scale = jnp.maximum(scale, jnp.abs(g1))
        tol = _ROUNDING * jnp.finfo(g1.dtype).eps * scale
        # `made_jump` can be a Python bool (diffrax's first step), whose `~`
        # is an integer's.
        screened = inside & ends_up & (lowest < _SAFETY * miss - tol)
        screened = screened & jnp.logical_not(made_jump)
        dip = jnp.any(screened)
        y_error = jax.tree.map(lambda e: jnp.where(dip, jnp.inf, e), y_error)
        # History on accepting this step (diffrax keeps the old state on a
        # rejection); none across a jump.
        nan = jnp.full_like(g1, jnp.nan)
        history = (
            jnp.where(made_jump, jnp.nan, t0_),
            jnp.where(made_jump, nan, slope),
            jnp.where(made_jump, nan, curv),
            scale,
            t1_,
            g1,
        )
        return y1, y_error, dense_info, (inner_state, history), result


def no_history(m: int, dtype) -> tuple:
    """`DipGuard`'s history before a solve that continues none (after an event):
    NaN (no screening in its first two steps)."""
    nan = jnp.array(jnp.nan, dtype)
    return nan, jnp.full((m,), nan), jnp.full((m,), nan), jnp.full((m,), nan)


def carried_history(solver_state) -> tuple:
    """From the final solver state of a `DipGuard` solve, the history of a solve
    that continues it (from its end, with the same conditions)."""
    t_prev, slope, curv, scale, _, _ = solver_state[1]
    return t_prev, slope, curv, scale
