"""Events that begin and end inside one step: `DipGuard`.

An event condition that goes below zero and back inside one accepted step (a
stuck element whose required force exceeds its static limit only briefly, a
slip velocity that touches zero and turns back) has the same sign at both step
ends, so a sign test at step ends — diffrax's `Event` — never sees it, and the
trajectory goes on as if the event had not happened.

`DipGuard` wraps the solver of a segment. After each step it looks for an
interior minimum of every element's condition ``g_k`` from the step's dense
output: the parabola through ``g_k`` at the step's start, middle and end
screens for a minimum inside the step that lies below the parabola's depth
(the second difference); where one is screened, Brent's minimisation
(golden section with parabolic steps) on the dense output locates it. A
negative interior value at ``t_dip`` is handed to the event condition through a
marker leaf of the state, ``(t_dip, g(t_dip))``, which the dense output keeps
constant over the step: the condition reads ``min(g(t), g(t_dip))`` from
``t_dip`` on, so the step end shows the sign change and the root finder
locates the first crossing in ``[t0, t_dip]``. No step is rejected or
repeated.

Cost per step: the conditions at the step's middle and end (the start's are
carried from the previous step); the minimisation only in steps where some
member of a `vmap` batch screens a dip.
"""

from collections.abc import Callable
from typing import ClassVar

import diffrax
import equinox as eqx
import equinox.internal as eqxi
import jax
import jax.numpy as jnp

#: Brent iterations after the screening evaluations.
_ITERATIONS = 10
_GOLDEN = 0.3819660112501051  # (3 − √5) / 2


def no_dip(dtype) -> jax.Array:
    """The marker of a step without a dip: ``(t_dip, g(t_dip)) = (max, 0)``."""
    return jnp.array([jnp.finfo(dtype).max, 0.0], dtype=dtype)


def after_dip(t, marker):
    """``(t >= t_dip, g(t_dip))`` for the event condition (module doc)."""
    return t >= marker[0], marker[1]


def _parabola(g0, gm, g1):
    """Vertex ``(θ, value)`` and second difference of the parabola through
    ``(0, g0)``, ``(½, gm)``, ``(1, g1)``."""
    d = g0 - 2 * gm + g1
    a = 2 * d
    b = g1 - g0 - a
    safe = jnp.where(a > 0, a, 1.0)
    theta = -b / (2 * safe)
    value = g0 - b * b / (4 * safe)
    return theta, value, d


def _brent(fn, lo, hi, x, fx, iterations):
    """Minimise the scalar `fn` on ``[lo, hi]`` from the point `x` (value `fx`):
    Brent's method (parabolic steps through the three best points, a golden
    section step where they fail), a fixed number of evaluations. Returns the
    lowest point seen and its value. Stops early at a negative value."""

    def body(_, state):
        lo, hi, x, w, v, fx, fw, fv, step, prev = state
        mid = 0.5 * (lo + hi)
        tol = 1e-10 * (hi - lo) + 1e-300
        # Parabola through (x, w, v).
        r = (x - w) * (fx - fv)
        q = (x - v) * (fx - fw)
        p = (x - v) * q - (x - w) * r
        q = 2 * (q - r)
        p = jnp.where(q > 0, -p, p)
        q = jnp.abs(q)
        para = x + p / jnp.where(q == 0, 1.0, q)
        use_para = (
            (q != 0)
            & (jnp.abs(p) < jnp.abs(0.5 * q * prev))
            & (para > lo + tol)
            & (para < hi - tol)
        )
        golden = jnp.where(x < mid, x + _GOLDEN * (hi - x), x - _GOLDEN * (x - lo))
        u = jnp.where(use_para, para, golden)
        new_step = jnp.where(use_para, p / jnp.where(q == 0, 1.0, q), u - x)
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
        x2 = jnp.where(better, u, x)
        fx2 = jnp.where(better, fu, fx)
        new = (lo2, hi2, x2, w2, v2, fx2, fw2, fv2, step, new_step)
        # A negative value is all that is asked: keep it.
        return jax.tree.map(lambda a, b: jnp.where(fx < 0, a, b), state, new)

    init = (lo, hi, x, x, x, fx, fx, fx, hi - lo, hi - lo)
    state = jax.lax.fori_loop(0, iterations, body, init)
    return state[2], state[5]


class DipGuard(diffrax.AbstractAdaptiveSolver):
    """`solver` with events inside a step found (module doc).

    The state is a tuple whose last leaf is the marker ``(t_dip, g(t_dip))``
    (`no_dip` at the start of a solve), with zero derivative; the wrapped
    solver's dense output must interpolate a leaf with zero stages as its
    ``y0`` (true of diffrax's Runge–Kutta interpolations). The error norm of
    the step-size controller must leave the marker out.

    Attributes:
        solver: the wrapped adaptive solver.
        conditions: ``(t, y, args) -> g``, one value per element, positive
            while the segment's modes hold; an event is a zero of ``min_k g_k``.
            It must be finite for ``t`` inside a step; at the solve's start it
            may be ``+inf`` (no screening in the first step, only a negative
            value at its middle).
    """

    solver: diffrax.AbstractAdaptiveSolver
    conditions: Callable = eqx.field(static=True)
    term_structure: ClassVar = diffrax.AbstractTerm

    @property
    def interpolation_cls(self):
        return self.solver.interpolation_cls

    def order(self, terms):
        return self.solver.order(terms)

    def error_order(self, terms):
        return self.solver.error_order(terms)

    def func(self, terms, t0, y0, args):
        return self.solver.func(terms, t0, y0, args)

    def init(self, terms, t0, t1, y0, args):
        g0 = jax.lax.stop_gradient(self.conditions(t0, y0, args))
        return self.solver.init(terms, t0, t1, y0, args), g0

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        inner_state, g0 = solver_state
        y1, y_error, dense_info, inner_state, result = self.solver.step(
            terms, t0, t1, y0, args, inner_state, made_jump
        )
        t0_, t1_, y0_, y1_, dense_, args_ = jax.lax.stop_gradient(
            (t0, t1, y0, y1, dense_info, args)
        )
        # After a jump of the force (`jump_ts`) the previous step's end values
        # belong to the left limit.
        g0 = jax.lax.cond(
            eqxi.unvmap_any(made_jump),
            lambda: self.conditions(t0_, y0_, args_),
            lambda: g0,
        )
        interp = self.solver.interpolation_cls(t0=t0_, t1=t1_, **dense_)
        dt = t1_ - t0_

        def g_at(theta):
            t = t0_ + theta * dt
            return self.conditions(t, interp.evaluate(t), args_)

        gm = g_at(0.5)
        g1 = self.conditions(t1_, y1_, args_)
        theta_v, value_v, depth = _parabola(g0, gm, g1)
        inside = (depth > 0) & (theta_v > 0) & (theta_v < 1)
        # Ends below zero are the sign test's; an interior minimum is screened
        # when the parabola dips below its own depth (its error is far smaller
        # where the step resolves g), or when the middle is already negative.
        ends_up = (g0 > 0) & (g1 > 0)
        screened = ends_up & ((inside & (value_v < depth)) | (gm < 0))
        any_screened = jnp.any(screened)

        def locate():
            def lowest(theta):
                return jnp.min(jnp.where(screened, g_at(theta), jnp.inf))

            # Start from the middle or the lowest screened vertex, whichever is
            # lower, in the bracket of its neighbours.
            vertex = jnp.min(jnp.where(screened & inside, theta_v, 0.5))
            vertex = jnp.clip(vertex, 0.01, 0.99)
            f_mid = jnp.min(jnp.where(screened, gm, jnp.inf))
            f_vertex = lowest(vertex)
            from_vertex = f_vertex < f_mid
            x = jnp.where(from_vertex, vertex, 0.5)
            fx = jnp.where(from_vertex, f_vertex, f_mid)
            other = jnp.where(from_vertex, 0.5, vertex)
            lo = jnp.where(other < x, other, 0.0)
            hi = jnp.where(other > x, other, 1.0)
            theta, value = _brent(lowest, lo, hi, x, fx, _ITERATIONS)
            return t0_ + theta * dt, value

        def skip():
            return t1_, jnp.zeros((), g0.dtype)

        t_dip, g_dip = jax.lax.cond(eqxi.unvmap_any(any_screened), locate, skip)
        found = any_screened & (g_dip < 0)
        marker = jnp.where(found, jnp.stack([t_dip, g_dip]), no_dip(g0.dtype))
        y1 = (*y1[:-1], marker)
        # The dense output carries the marker as a constant over this step.
        dense_info = dict(dense_info)
        for key in ("y0", "y1"):
            if key in dense_info:
                dense_info[key] = (*dense_info[key][:-1], marker)
        return y1, y_error, dense_info, (inner_state, g1), result


def marker_free_norm(norm: Callable) -> Callable:
    """`norm` of a `DipGuard` state without its marker leaf (the step-size
    controller's error norm)."""

    def wrapped(y):
        return norm(y[:-1])

    return wrapped
