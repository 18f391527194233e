"""The "optimise through simulate" core shared by `jaxfric.identify.fit` and
`jaxfric.optimize.optimize`.

An objective ``fn(params, args) -> (value, (ok, aux))`` (``ok``: every solve
behind `value` succeeded; ``aux``: what to record per step) is minimised by
either

- an `optax.GradientTransformation` on its reverse-mode gradient (`optax_chunk`):
  a step whose solves failed or whose value or gradient is not finite is not
  taken (the iterate and the optimiser state stay), and the best iterate whose
  solves succeeded is kept; or
- an `optimistix.AbstractLeastSquaresSolver` on a residual function
  ``fn(y, args) -> (residuals, aux)`` (`least_squares_init`,
  `least_squares_chunk`, `least_squares_postprocess`: the solver's own
  init/step/terminate/postprocess protocol, as `optimistix.least_squares` runs
  it).

Both run `chunk` steps per compiled call (`lax.scan`; steps past the active
count are skipped by `lax.cond` and recorded as NaN), so one compiled function
serves every chunk, and a second call with the same structure reuses it;
`run_chunks` is the Python side: it stops at the step budget or when the solver
terminates and reports progress through a callback (the CLI draws any bar).
Both entry points return an `AbstractMinimiseResult`.
"""

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import optimistix as optx
from jaxtyping import Array, Bool, Float

from .simulate import SimulateOptions

__all__ = [
    "AbstractMinimiseResult",
    "Best",
    "check_options",
    "least_squares_chunk",
    "least_squares_init",
    "least_squares_postprocess",
    "optax_chunk",
    "host",
    "run_chunks",
    "strong",
]


class AbstractMinimiseResult(eqx.Module):
    """What `jaxfric.identify.fit` (`FitResult`) and `jaxfric.optimize.optimize`
    (`OptimizeResult`) return in common.

    Attributes:
        params: the returned iterate (fit: the free parameters, flattened;
            optimize: the decision variables).
        value: the minimised objective at `params`.
        value_history: the objective per step (see each result for the exact
            iterates it is recorded at).
        num_steps: optimiser steps taken.
        result: why the loop stopped, an `optimistix.RESULTS`: `successful`
            when a least-squares solver's stopping test passed or an optax run
            spent its budget (optax has no stopping test);
            `nonlinear_max_steps_reached` when a least-squares solver spent its
            budget; otherwise the solver's failure.
        seconds: wall time of the run, compilation included.
    """

    params: eqx.AbstractVar[Any]
    value: eqx.AbstractVar[Any]
    value_history: eqx.AbstractVar[np.ndarray]
    num_steps: eqx.AbstractVar[int]
    result: eqx.AbstractVar[optx.RESULTS]
    seconds: eqx.AbstractVar[float]

    @property
    def converged(self) -> bool:
        """``result == optimistix.RESULTS.successful``."""
        return bool(self.result == optx.RESULTS.successful)


def check_options(options: Any) -> SimulateOptions:
    """`options` (`SimulateOptions()` for `None`); anything else is a `TypeError`."""
    if options is None:
        return SimulateOptions()
    if not isinstance(options, SimulateOptions):
        raise TypeError(
            "`simulate_options` must be a jaxfric.simulate.SimulateOptions "
            f"(e.g. SimulateOptions(max_events=16)); got {type(options).__name__}."
        )
    return options


class Best(eqx.Module):
    """The best iterate seen so far (per batch member): the lowest value among
    the iterates whose solves succeeded; ``inf`` before the first."""

    value: Float[Array, "*batch"]
    params: Any


def _select(pred, new, old):
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), new, old)


def _all_finite(tree) -> Bool[Array, ""]:
    leaves = [jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.array(True)


def _skipped(record_struct):
    """The record of a skipped step: NaN floats, `True` flags, zero integers."""

    def fill(s):
        if jnp.issubdtype(s.dtype, jnp.inexact):
            return jnp.full(s.shape, jnp.nan, s.dtype)
        return jnp.full(s.shape, s.dtype == jnp.bool_, s.dtype)

    return jax.tree.map(fill, record_struct)


def _scan_active(step, carry, num_active, chunk, record_struct, stopped=None):
    """`chunk` applications of ``step(carry) -> (carry, record)``; those from
    `num_active` on, or once ``stopped(carry)``, are skipped (their records
    shaped as `record_struct`, given so that `step` is traced only once)."""

    def body(carry, i):
        active = i < num_active
        if stopped is not None:
            active = active & ~stopped(carry)
        return jax.lax.cond(
            active,
            step,
            lambda c: (c, _skipped(record_struct)),
            carry,
        )

    return jax.lax.scan(body, carry, jnp.arange(chunk))


def _optax_step(fn, args, optimizer, project, params, opt_state, best):
    (value, (ok, aux)), grads = eqx.filter_value_and_grad(fn, has_aux=True)(
        params, args
    )
    usable = ok & jnp.isfinite(value) & _all_finite(grads)
    if isinstance(optimizer, optax.GradientTransformationExtraArgs):
        # Line-search methods (optax.lbfgs, ...) re-evaluate the objective.
        updates, new_state = optimizer.update(
            grads,
            opt_state,
            params,
            value=value,
            grad=grads,
            value_fn=lambda p: fn(p, args)[0],
        )
    else:
        updates, new_state = optimizer.update(grads, opt_state, params)
    new_params = optax.apply_updates(params, updates)
    if project is not None:
        new_params = project(new_params)
    new_params = _select(usable, new_params, params)
    new_state = _select(usable, new_state, opt_state)
    better = usable & (value < best.value)
    best = Best(
        jnp.where(better, value, best.value), _select(better, params, best.params)
    )
    return (new_params, new_state, best), (value, ok, aux)


@eqx.filter_jit
def optax_chunk(fn, args, optimizer, project, carry, num_active, chunk, batched):
    """Up to `chunk` optax steps from ``carry = (params, opt_state, Best)``.

    With `batched`, `params`, `opt_state` and `Best` carry a leading batch axis
    (several starts, `jax.vmap`). `fn`, `optimizer` and `project` are hashed by
    identity: pass the same objects to reuse the compilation.

    Returns:
        ``(carry, (value, ok, aux))``, the records of each step at the iterate
        before its update, stacked along a leading axis of length `chunk`.
    """

    def step(carry):
        one = lambda p, s, b: _optax_step(fn, args, optimizer, project, p, s, b)
        return (eqx.filter_vmap(one) if batched else one)(*carry)

    # A step's record (value, ok, aux) is shaped like `fn`'s output: traced
    # forward only, not through the gradient and the update.
    value = lambda p: fn(p, args)
    value_struct, (ok_struct, aux_struct) = eqx.filter_eval_shape(
        eqx.filter_vmap(value) if batched else value, carry[0]
    )
    record_struct = (value_struct, ok_struct, aux_struct)
    return _scan_active(step, carry, num_active, chunk, record_struct)


@eqx.filter_jit
def least_squares_init(fn, args, solver, y, options):
    """``solver.init`` as `optimistix.least_squares` calls it.

    Returns:
        The state split into its arrays and its static part (which may hold
        jaxprs: returned as a static output it is the same object on every
        call, so passing it back to `least_squares_chunk` does not retrace).
    """
    f_struct, aux_struct = jax.eval_shape(lambda: fn(y, args))
    state = solver.init(fn, y, args, options, f_struct, aux_struct, frozenset())
    return eqx.partition(state, eqx.is_array)


@eqx.filter_jit
def least_squares_chunk(
    fn, args, solver, y, dynamic_state, static_state, num_active, chunk, options
):
    """Up to `chunk` steps of an optimistix least-squares solver from `y`, each
    followed by ``solver.terminate``; stops once it terminates.

    Returns:
        ``((y, dynamic_state, aux, terminated, result), (y, aux))``: the
        records hold each step's iterate and its aux.
    """

    def step(carry):
        y, dynamic_state, _, _, _ = carry
        state = eqx.combine(static_state, dynamic_state)
        new_y, new_state, aux = solver.step(fn, y, args, options, state, frozenset())
        terminate, result = solver.terminate(
            fn, y, args, options, new_state, frozenset()
        )
        result = optx.RESULTS.where(_all_finite(new_y), result, optx.RESULTS.nonfinite)
        stop = terminate | (result != optx.RESULTS.successful)
        new_dynamic = eqx.filter(new_state, eqx.is_array)
        return (new_y, new_dynamic, aux, stop, result), (new_y, aux)

    aux0 = jax.tree.map(
        lambda s: jnp.zeros(s.shape, s.dtype), eqx.filter_eval_shape(fn, y, args)[1]
    )
    carry = (y, dynamic_state, aux0, jnp.array(False), optx.RESULTS.successful)
    # A step's record (iterate, aux) is shaped like the carry's.
    record_struct = jax.eval_shape(lambda: (carry[0], carry[2]))
    return _scan_active(step, carry, num_active, chunk, record_struct, lambda c: c[3])


@eqx.filter_jit
def least_squares_postprocess(
    fn, args, solver, y, aux, dynamic_state, static_state, options, result
):
    """``solver.postprocess``: the solution, its aux and the solver's stats."""
    state = eqx.combine(static_state, dynamic_state)
    return solver.postprocess(fn, y, aux, args, options, state, frozenset(), result)


def run_chunks(
    advance: Callable[[int], tuple[Any, int, bool, float]],
    max_steps: int,
    chunk: int,
    callback: Callable[[int, float], None] | None = None,
) -> tuple[list, int, bool]:
    """The Python side of a chunked loop.

    Args:
        advance: ``advance(count) -> (records, taken, stopped, value)`` runs one
            compiled chunk with `count` active steps (passed to it as an array,
            so that a short last chunk does not compile again): `taken` of them ran
            (fewer once the solver terminated: then `stopped`), `records` their
            per-step records (host arrays, first axis trimmed to `taken`), and
            `value` the objective to report.
        max_steps: the step budget.
        chunk: steps per compiled call (the granularity of `callback`).
        callback: called as ``callback(steps_done, value)`` after each chunk.

    Returns:
        ``(records, steps_done, stopped)``: the records of every chunk.
    """
    if chunk < 1:
        raise ValueError(f"`chunk` must be >= 1; got {chunk}.")
    if max_steps < 0:
        raise ValueError(f"`max_steps` must be >= 0; got {max_steps}.")
    records, steps, stopped = [], 0, False
    while steps < max_steps and not stopped:
        chunk_records, taken, stopped, value = advance(min(chunk, max_steps - steps))
        records.append(chunk_records)
        steps += taken
        if callback is not None and taken:
            callback(steps, value)
    return records, steps, stopped


def strong(tree):
    """`tree` without weak types: the compiled chunks return
    strongly typed carries, and inputs that differed from them only in weak
    type would trace a chunk a second time."""
    return jax.tree.map(
        lambda x: jnp.asarray(x, dtype=x.dtype) if eqx.is_array(x) else x, tree
    )


def host(tree, count: int | None = None):
    """`tree`'s arrays on the host, the leading axis cut to `count`."""
    return jax.tree.map(lambda x: np.asarray(x)[:count], tree)
