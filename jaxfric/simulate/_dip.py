"""Events that begin and end inside one step: `DipGuard`.

An event condition that goes below zero and back inside one accepted step (a
stuck element whose required force exceeds its static limit only briefly, a
slip velocity that touches zero and turns back) has the same sign at both step
ends, so a sign test at step ends — diffrax's `Event` — never sees it, and the
trajectory goes on as if the event had not happened.

`DipGuard` wraps the solver of a segment and rejects every step whose dense
output dips below zero inside; the step-size controller then tries a shorter
step, until a step ends inside the dip (where the sign test sees it and the
root finder locates its first crossing) or stops short of it.

A dip is looked for in two stages:

1. Screening, once per step, one evaluation of the conditions (at the step's
   end): the parabola through each element's condition ``g_k`` at the last
   three step ends (the previous step's start and end, this step's end)
   predicts an interior minimum of ``g_k``; it is screened when that minimum
   lies within ``e`` of zero or below it, ``e`` being how far the previous
   parabola's extrapolation missed this step's end value (a measured bound of
   the parabola's error: where the cubic term ``c·t³`` of ``g_k`` dominates,
   the extrapolation misses by ``6c·h³`` and the interpolated minimum is off
   by at most ``0.39c·h³``).
2. Location, only in steps where some member of a `vmap` batch screens a dip:
   Brent's minimisation (golden section with parabolic steps) of the screened
   elements' conditions on the dense output, from the predicted vertex, ends
   at the first negative value.

A solve that continues another (the switch path's segments that end at save
times) carries the history over (`no_history`, `carried_history`); the first
two steps after an event have none and are not screened.
"""

from collections.abc import Callable

import diffrax
import equinox as eqx
import equinox.internal as eqxi
import jax
import jax.numpy as jnp

from ._unrolled import AbstractWrappedSolver

#: Brent iterations of the location stage.
_ITERATIONS = 12
#: A predicted minimum within this many extrapolation misses of zero is located.
_SAFETY = 1.0
_GOLDEN = 0.3819660112501051  # (3 − √5) / 2


def _brent(fn, lo, hi, x, fx, iterations):
    """Minimise the scalar `fn` on ``[lo, hi]`` from the point `x` (value `fx`)
    by Brent's method (parabolic steps through the three best points, golden
    section where they fail) with a fixed number of evaluations; stops moving
    at the first negative value. Returns the lowest point seen and its value."""

    def body(_, state):
        lo, hi, x, w, v, fx, fw, fv, prev = state
        mid = 0.5 * (lo + hi)
        tol = 1e-10 * (hi - lo)
        r = (x - w) * (fx - fv)
        q = (x - v) * (fx - fw)
        p = (x - v) * q - (x - w) * r
        q = 2 * (q - r)
        p = jnp.where(q > 0, -p, p)
        q = jnp.abs(q)
        safe_q = jnp.where(q == 0, 1.0, q)
        para = x + p / safe_q
        use_para = (
            (q != 0)
            & (jnp.abs(p) < jnp.abs(0.5 * q * prev))
            & (para > lo + tol)
            & (para < hi - tol)
        )
        golden = jnp.where(x < mid, x + _GOLDEN * (hi - x), x - _GOLDEN * (x - lo))
        u = jnp.where(use_para, para, golden)
        fu = fn(u)
        better = fu <= fx
        lo2 = jnp.where(better, jnp.where(u < x, lo, x), jnp.where(u < x, u, lo))
        hi2 = jnp.where(better, jnp.where(u < x, x, hi), jnp.where(u < x, hi, u))
        second = ~better & ((fu <= fw) | (w == x))
        third = ~better & ~second & ((fu <= fv) | (v == x) | (v == w))
        v2 = jnp.where(better | second, w, jnp.where(third, u, v))
        fv2 = jnp.where(better | second, fw, jnp.where(third, fu, fv))
        w2 = jnp.where(better, x, jnp.where(second, u, w))
        fw2 = jnp.where(better, fx, jnp.where(second, fu, fw))
        new = (lo2, hi2, jnp.where(better, u, x), w2, v2, jnp.where(better, fu, fx))
        new = (*new, fw2, fv2, u - x)
        return jax.tree.map(lambda a, b: jnp.where(fx < 0, a, b), state, new)

    state = (lo, hi, x, x, x, fx, fx, fx, hi - lo)
    state = jax.lax.fori_loop(0, iterations, body, state)
    return state[2], state[5]


class DipGuard(AbstractWrappedSolver):
    """`solver`, with steps whose dense output dips below zero rejected
    (module doc).

    Attributes:
        solver: the wrapped adaptive solver.
        conditions: ``(t, y, args) -> g``, one value per element, positive
            while the segment's modes hold; an event is a zero of ``min_k g_k``.
            Finite; zero at the start for an element that starts at its
            event boundary (a released element's slip velocity).
        prior: ``args -> history``: the two step ends before the start of the
            solve (`carried_history` of the solve it continues, or
            `no_history`).
    """

    solver: diffrax.AbstractAdaptiveSolver
    conditions: Callable = eqx.field(static=True)
    prior: Callable = eqx.field(static=True)

    def init(self, terms, t0, t1, y0, args):
        g0 = _nondifferentiable(self.conditions(t0, y0, args))
        t0 = _nondifferentiable(jnp.asarray(t0, g0.dtype))
        # (start of the last accepted step, its slope, the curvature over the
        # last two, this step's start and value); NaN: none yet.
        history = (*_nondifferentiable(self.prior(args)), t0, g0)
        return self.solver.init(terms, t0, t1, y0, args), history

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        inner_state, history = solver_state
        y1, y_error, dense_info, inner_state, result = self.solver.step(
            terms, t0, t1, y0, args, inner_state, made_jump
        )
        t_prev, slope_prev, curv_prev, t0_, g0 = history
        t1_, y1_, dense_, args_ = _nondifferentiable((t1, y1, dense_info, args))
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
        screened = inside & ends_up & (lowest < _SAFETY * miss) & ~made_jump
        any_screened = jnp.any(screened)

        def locate():
            interp = self.solver.interpolation_cls(t0=t0_, t1=t1_, **dense_)

            def lowest_at(theta):
                t = t0_ + theta * h
                g = self.conditions(t, interp.evaluate(t), args_)
                return jnp.min(jnp.where(screened, g, jnp.inf))

            back = slope_end / (2 * jnp.where(inside, curv, 1.0))  # t1 − vertex
            vertex = jnp.min(jnp.where(screened, 1 - back / h, 1.0))
            x = jnp.clip(vertex, 0.001, 0.999)
            theta, g_dip = _brent(lowest_at, 0.0, 1.0, x, lowest_at(x), _ITERATIONS)
            del theta
            scale = jnp.max(jnp.where(screened, jnp.abs(g0) + jnp.abs(g1), 0.0))
            return any_screened & (g_dip < -16 * jnp.finfo(g1.dtype).eps * scale)

        dip = jax.lax.cond(
            eqxi.unvmap_any(any_screened), locate, lambda: jnp.array(False)
        )
        y_error = jax.tree.map(lambda e: jnp.where(dip, jnp.inf, e), y_error)
        # History on accepting this step (diffrax keeps the old state on a
        # rejection); none across a jump.
        nan = jnp.full_like(g1, jnp.nan)
        history = (
            jnp.where(made_jump, jnp.nan, t0_),
            jnp.where(made_jump, nan, slope),
            jnp.where(made_jump, nan, curv),
            t1_,
            g1,
        )
        return y1, y_error, dense_info, (inner_state, history), result


def _nondifferentiable(tree):
    """`jax.lax.stop_gradient` of the arrays of `tree` (other leaves kept):
    where a step is rejected is a numerical choice, not part of the solution."""
    arrays, static = eqx.partition(tree, eqx.is_array)
    return eqx.combine(jax.lax.stop_gradient(arrays), static)


def no_history(m: int, dtype) -> tuple:
    """`DipGuard`'s history before a solve that continues none (after an event):
    NaN (no screening in its first two steps)."""
    nan = jnp.array(jnp.nan, dtype)
    return nan, jnp.full((m,), nan), jnp.full((m,), nan)


def carried_history(solver_state) -> tuple:
    """From the final solver state of a `DipGuard` solve, the history of a solve
    that continues it (from its end, with the same conditions)."""
    t_prev, slope, curv, _, _ = solver_state[1]
    return t_prev, slope, curv
