"""Fixed-step integration shared by the Kikuuwe and Karnopp paths: the
generalised RK4 of Kikuuwe & Yamamoto, Eq. 21 (`StageStepRK4`, which hands each
stage its step size through a `StageStepTerm`) and steps of exactly ``dt0``
(`FixedStep`)."""

from collections.abc import Callable
from typing import ClassVar

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import jax.tree_util as jtu

from .._types import ScalarLike

DEFAULT_DT = 1e-3
"""Default fixed step (s) of the Kikuuwe and Karnopp paths."""


class StageStepTerm(diffrax.AbstractTerm):
    """An ODE term whose vector field also takes the step size of the stage it
    is evaluated for: ``vector_field(t, y, args, stage_step)`` (Kikuuwe &
    Yamamoto, Eq. 21). `StageStepRK4` sets each stage's step; anywhere else the
    step is `stage_step` (default 0: the continuous-time limit).
    """

    vector_field: Callable
    stage_step: ScalarLike = 0.0

    def vf(self, t, y, args):
        field = self.vector_field
        step = self.stage_step
        return diffrax.ODETerm(lambda t, y, args: field(t, y, args, step)).vf(
            t, y, args
        )

    def contr(self, t0, t1, **kwargs):
        return t1 - t0

    def prod(self, vf, control):
        return diffrax.ODETerm(self.vector_field).prod(vf, control)


def _is_stage_step_term(node) -> bool:
    return isinstance(node, StageStepTerm)


def _at_stage_step(terms, stage_step):
    """`terms` with every `StageStepTerm` inside (diffrax wraps terms) set to
    `stage_step`."""

    def at(node):
        if _is_stage_step_term(node):
            return eqx.tree_at(lambda term: term.stage_step, node, stage_step)
        return node

    return jtu.tree_map(at, terms, is_leaf=_is_stage_step_term)


# Kikuuwe & Yamamoto, Eq. 21: stage r starts at offset T_{r-1} and gets τ = T_r,
# with {T0, ..., T4} = {0, T/2, T/2, T, T}.
_OFFSETS = (0.0, 0.5, 0.5, 1.0)
_STAGE_STEPS = (0.5, 0.5, 1.0, 1.0)
_WEIGHTS = (1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0)


class StageStepRK4(diffrax.AbstractSolver):
    """Fixed-step RK4 that hands each stage its step size (Kikuuwe & Yamamoto,
    Eq. 21).

    With a `StageStepTerm`, each stage calls ``vector_field(t, y, args, τ)``
    with its own ``τ``; any other ODE term (e.g. `diffrax.ODETerm`) gets the
    classical RK4. Stage ``r`` is evaluated at
    ``(t0 + T_{r−1}, y0 + T_{r−1} ξ_{r−1})`` with ``τ = T_r``, where
    ``{T0, ..., T4} = {0, h/2, h/2, h, h}``; the update is the classical
    ``y1 = y0 + h (ξ1 + 2 ξ2 + 2 ξ3 + ξ4) / 6``. Dense output is RK4's
    third-order continuous extension (the cubic Hermite polynomial through
    ``y0, y1`` with slopes ``ξ1, ξ4``).
    """

    term_structure: ClassVar = diffrax.AbstractTerm
    interpolation_cls: ClassVar[
        Callable[..., diffrax.ThirdOrderHermitePolynomialInterpolation]
    ] = diffrax.ThirdOrderHermitePolynomialInterpolation.from_k

    def order(self, terms):
        return 4

    def init(self, terms, t0, t1, y0, args):
        return None

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        del solver_state, made_jump
        h = t1 - t0

        def stage(k_prev, fractions):
            offset, tau = fractions
            y = jtu.tree_map(lambda yi, ki: yi + offset * ki, y0, k_prev)
            xi = _at_stage_step(terms, tau * h).vf(t0 + offset * h, y, args)
            k = terms.prod(xi, h)  # h ξ_r
            return k, k

        # One traced vector field for the four stages (a scan, not an unrolled
        # loop) keeps compile time down for expensive vector fields.
        zeros = jtu.tree_map(jnp.zeros_like, y0)
        fractions = (jnp.asarray(_OFFSETS), jnp.asarray(_STAGE_STEPS))
        _, ks = jax.lax.scan(stage, zeros, fractions)
        weights = jnp.asarray(_WEIGHTS)
        y1 = jtu.tree_map(
            lambda yi, ki: yi + jnp.tensordot(weights, ki, axes=1), y0, ks
        )
        dense_info = dict(y0=y0, y1=y1, k=ks)
        return y1, None, dense_info, None, diffrax.RESULTS.successful

    def func(self, terms, t0, y0, args):
        # τ -> 0 (a `StageStepTerm`'s own step): the continuous-time limit.
        return terms.vf(t0, y0, args)


def step_size(t0, t1) -> jax.Array:
    """The default fixed step, ``min(DEFAULT_DT, t1 − t0)`` (a given `dt0` must
    lie in ``(0, t1 − t0]``, checked by `simulate`)."""
    return jnp.minimum(DEFAULT_DT, jnp.asarray(t1) - t0)


class FixedStep(diffrax.AbstractStepSizeController):
    """Steps of exactly ``dt0`` from ``t0`` (step ``k`` ends at ``t0 + k·dt0``),
    the last one shorter so that it ends exactly on ``t1``.

    `diffrax.ConstantStepSize` spreads ``t1 − t0`` evenly over
    ``ceil((t1 − t0) / dt0)`` steps after a first step of ``dt0``, so when
    `dt0` does not divide the interval no step but the first has the length
    the user asked for (and the Kikuuwe law is evaluated at a step it was not
    given). A last step within diffrax's end tolerance (~100 ulp) of ``t1`` is
    merged into the one before.
    """

    def wrap(self, direction):
        return self

    def init(self, terms, t0, t1, y0, dt0, args, func, error_order):
        del terms, y0, args, func, error_order
        state = (jnp.asarray(1, dtype=jnp.int32), t0, dt0, t1)
        return jnp.minimum(t0 + dt0, t1), state

    def adapt_step_size(
        self, t0, t1, y0, y1_candidate, args, y_error, error_order, controller_state
    ):
        del t0, y0, y1_candidate, args, y_error, error_order
        steps, start, dt, end = controller_state
        steps = steps + 1
        # t0 + k·dt0, not a running sum of dt0 (no accumulated rounding).
        next_t1 = jnp.minimum(start + steps.astype(jnp.result_type(dt)) * dt, end)
        state = (steps, start, dt, end)
        return True, t1, next_t1, False, state, diffrax.RESULTS.successful


def solve_fixed_step(term, solver, t0, t1, y0, ts, options) -> diffrax.Solution:
    """One `diffrax.diffeqsolve` at the fixed step ``options.dt0`` (`FixedStep`),
    saving at `ts`, within ``options.max_steps``, with ``options.adjoint``;
    failures are left in the result (`simulate` applies ``throw``)."""
    return diffrax.diffeqsolve(
        term,
        solver,
        t0,
        t1,
        options.dt0,
        y0,
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=FixedStep(),
        max_steps=options.max_steps,
        adjoint=options.adjoint,
        throw=False,
    )
