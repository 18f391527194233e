"""The optimisation loop: any `optax` transformation through the "optimise
through simulate" core that `jaxfric.identify.fit` uses too (`jaxfric._minimise`:
chunks of compiled steps, best iterate kept, failed solves not stepped from,
progress through a callback), batches of initial guesses with `vmap`,
projection."""

import time
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import optimistix as optx
from jaxtyping import Array, ArrayLike, Float, PyTree

from .._check import as_float, check_finite, is_concrete
from .._minimise import (
    AbstractMinimiseResult,
    Best,
    host,
    optax_chunk,
    run_chunks,
    strong,
)
from .._types import Scalar
from ..forces import AbstractForce
from ..simulate import Solution
from ._problem import Problem


class Box(eqx.Module):
    """Projection onto the box ``lower <= θ <= upper``, applied to every decision
    variable after each optimiser update (and to the initial guess).

    For the knot torques of a linearly interpolated `jaxfric.forces.Tabulated`
    force (or a zero-order hold) this enforces ``lower <= τ(t) <= upper`` at every
    time exactly, not only at saved times.

    Args:
        lower: lower bound (scalar, or broadcasting against every leaf).
        upper: upper bound, ``>= lower``.
    """

    lower: Float[Array, "..."] = eqx.field(converter=as_float)
    upper: Float[Array, "..."] = eqx.field(converter=as_float)

    def __check_init__(self):
        check_finite("lower", self.lower)
        check_finite("upper", self.upper)
        if not (is_concrete(self.lower) and is_concrete(self.upper)):
            return
        if not np.all(np.asarray(self.upper) >= np.asarray(self.lower)):
            raise ValueError(
                f"`upper` must be >= `lower`; got lower={np.asarray(self.lower)!r}, "
                f"upper={np.asarray(self.upper)!r}."
            )

    def __call__(self, params: PyTree[Float[Array, "..."]]):
        return jax.tree.map(lambda p: jnp.clip(p, self.lower, self.upper), params)


class OptimizeResult(AbstractMinimiseResult):
    """What `optimize` returns.

    Attributes:
        params: the best decision variables found (lowest objective among the
            iterates whose solve succeeded, over every batch member).
        value: the objective there, ``loss + penalty``.
        value_history: the objective at every iterate, shape
            ``(num_steps + 1,)`` (``(batch, num_steps + 1)`` for a batch; entry
            ``k`` is the value at the ``k``-th iterate, the last one at the
            final iterate); ``nan`` where the solve failed.
        aux_history: the same for ``loss``, ``penalty``, ``violation`` and
            ``success``.
        num_steps, result, seconds: as in `AbstractMinimiseResult` (an optax
            run spends its budget: `result` is `successful`).
        force: the applied force built from `params`.
        solution: the simulation at `params`.
        loss: the user loss there.
        penalty: the sum of the limit penalties there.
        violation: the largest excess over every `AbstractLimit` there (0 when
            the limits hold at the saved times).
        success: whether the simulation at `params` succeeded.
        final_params: the last iterate (batched for a batch).
        member_values: best objective of each batch member, shape ``(batch,)``;
            `None` for a single start.
        best_index: the batch member `params` comes from (`None` for a single
            start).
    """

    params: Any
    value: Float[Array, ""]
    value_history: np.ndarray
    aux_history: dict[str, np.ndarray]
    num_steps: int
    result: optx.RESULTS
    seconds: float
    force: AbstractForce
    solution: Solution
    loss: Float[Array, ""]
    penalty: Float[Array, ""]
    violation: Float[Array, ""]
    success: bool
    final_params: Any
    member_values: np.ndarray | None
    best_index: int | None


def _objective(params, problem: Problem):
    """`problem.objective` in the form the core takes."""
    value, aux = problem.objective(params)
    return value, (aux["success"], aux)


@eqx.filter_jit
def _evaluate(problem, params, batched=False):
    def one(params):
        value, (aux, sol) = problem.objective_and_solution(params)
        return value, aux, sol

    return (eqx.filter_vmap(one) if batched else one)(params)


def evaluate(
    problem: Problem, params: PyTree[Float[Array, "..."]] | None = None
) -> tuple[Scalar, dict[str, Array], Solution]:
    """The objective of `problem` at `params` (default: its initial decision
    variables), with its parts and the simulation (compiled once per problem
    structure).

    Returns:
        ``(value, aux, solution)``, `aux` as in `Problem.objective`.
    """
    params = problem.initial_params() if params is None else params
    return _evaluate(problem, params)


@eqx.filter_jit
def value_and_grad(
    problem: Problem, params: PyTree[Float[Array, "..."]]
) -> tuple[Scalar, Any, dict[str, Array], Solution]:
    """The objective of `problem` at `params` and its reverse-mode gradient
    (through the switch path's events for Coulomb-type laws), compiled once per
    problem structure.

    Returns:
        ``(value, grad, aux, solution)``: `grad` is structured as `params`; `aux`
        as in `Problem.objective`; `solution` is the simulation at `params`.
    """
    objective = problem.objective_and_solution
    (value, (aux, sol)), grads = jax.value_and_grad(objective, has_aux=True)(params)
    return value, grads, aux, sol


def _batch_size(params) -> int:
    sizes = {int(np.shape(x)[0]) if np.ndim(x) else -1 for x in jax.tree.leaves(params)}
    if len(sizes) != 1 or -1 in sizes:
        raise ValueError(
            "with `batched=True` every leaf of `params0` must have the same leading "
            f"(batch) axis; got leading sizes {sorted(sizes)}."
        )
    return sizes.pop()


def optimize(
    problem: Problem,
    optimizer: optax.GradientTransformation,
    params0: PyTree[Float[ArrayLike, "..."]] | None = None,
    *,
    max_steps: int,
    batched: bool = False,
    project: Callable[[Any], Any] | None = None,
    chunk: int = 10,
    callback: Callable[[int, float], None] | None = None,
) -> OptimizeResult:
    """Minimise ``problem.objective`` (loss + limit penalties) with an `optax`
    transformation.

    The steps (objective, reverse-mode gradient through the simulation,
    optimiser update, projection) run `chunk` at a time in one compiled call;
    it is traced once per problem structure, so iterations never recompile,
    and a later call with the same structure, `optimizer` object and
    projection type reuses it (a new ``optax.adam(...)`` object is a new
    function to JAX: reuse the object to avoid recompiling). Iterates whose
    simulation fails (`Solution.result`) or whose gradient is not finite are
    not accepted: the step leaves them unchanged. Line-search transformations
    (``optax.lbfgs()``, any `optax.GradientTransformationExtraArgs`) receive
    ``value``, ``grad`` and ``value_fn``.

    Args:
        problem: the `Problem`.
        optimizer: any `optax.GradientTransformation`.
        params0: initial decision variables, structured as
            ``problem.initial_params()``; default: those. With ``batched=True``
            every leaf has a leading batch axis: the starts are optimised
            together under `jax.vmap` and the best result over all of them is
            kept.
        max_steps: number of optimiser steps, ``>= 0`` (an optax
            transformation runs them all).
        batched: whether `params0` is a batch of initial guesses.
        project: applied to the decision variables after every update and to
            `params0`: a projection onto the feasible set, e.g. `Box` for torque
            limits on tabulated torques. An `eqx.Module` (like `Box`) keeps its
            bounds as traced inputs.
        chunk: optimiser steps per compiled call (progress granularity).
        callback: called as ``callback(step, value)`` after each chunk, with
            the objective at the latest iterate (the lowest over a batch); the
            CLI draws its progress bar with it.

    Returns:
        An `OptimizeResult`.
    """
    start = time.perf_counter()
    if not isinstance(problem, Problem):
        raise TypeError(f"`problem` must be a Problem; got {type(problem).__name__}.")
    if not isinstance(optimizer, optax.GradientTransformation):
        raise TypeError(
            "`optimizer` must be an optax.GradientTransformation; got "
            f"{type(optimizer).__name__}."
        )
    if params0 is None:
        if batched:
            raise ValueError("`batched=True` needs a batch of initial `params0`.")
        params0 = problem.initial_params()
    expected = jax.tree.map(np.shape, problem.initial_params())
    params = jax.tree.map(lambda x: jnp.asarray(x, dtype=float), params0)
    size = _batch_size(params) if batched else None
    shapes = jax.tree.map(lambda x: x.shape[1:] if batched else x.shape, params)
    if shapes != expected:
        raise ValueError(
            "`params0` must have the structure and shapes of "
            f"`problem.initial_params()` ({expected}"
            f"{', with a leading batch axis' if batched else ''}); got "
            f"{jax.tree.map(np.shape, params)}."
        )
    each = eqx.filter_vmap if batched else lambda fn: fn
    if project is not None:
        params = each(project)(params)
    opt_state = each(optimizer.init)(params)
    inf = jnp.full(() if size is None else (size,), jnp.inf, dtype=float)
    carry = strong((params, opt_state, Best(inf, params)))

    def advance(count):
        nonlocal carry
        carry, (values, _, aux) = optax_chunk(
            _objective,
            problem,
            optimizer,
            project,
            carry,
            jnp.asarray(count),
            chunk,
            batched,
        )
        values, aux = host((values, aux), count)
        return (values, aux), count, False, float(np.min(values[-1]))

    records, num_steps, _ = run_chunks(advance, max_steps, chunk, callback)
    params, _, best = carry
    # The final iterate's objective, then the simulation at the best iterate of
    # each member.
    value, aux, _ = _evaluate(problem, params, batched)
    records.append(jax.tree.map(lambda x: np.asarray(x)[None], (value, aux)))
    value, aux, sol = _evaluate(problem, best.params, batched)
    index = None
    member_values = None
    best_params = best.params
    if batched:
        member_values = np.asarray(best.value)
        finite = np.where(np.isfinite(member_values), member_values, np.inf)
        index = int(np.argmin(finite))
        pick = lambda tree: jax.tree.map(lambda x: x[index], tree)  # noqa: E731
        best_params, value, aux, sol = pick((best.params, value, aux, sol))

    history = _stack_history([r[0] for r in records], batched)
    aux_history = {k: _stack_history([r[1][k] for r in records], batched) for k in aux}
    return OptimizeResult(
        params=best_params,
        value=value,
        value_history=np.where(aux_history["success"], history, np.nan),
        aux_history=aux_history,
        num_steps=num_steps,
        result=optx.RESULTS.successful,
        seconds=time.perf_counter() - start,
        force=problem.build(best_params),
        solution=sol,
        loss=aux["loss"],
        penalty=aux["penalty"],
        violation=aux["violation"],
        success=bool(aux["success"]),
        final_params=params,
        member_values=member_values,
        best_index=index,
    )


def _stack_history(chunks, batched: bool) -> np.ndarray:
    out = np.concatenate([np.asarray(c) for c in chunks])
    return out.T if batched else out


def perturbed_starts(params, num_starts: int, noise: float, seed: int = 0):
    """A batch of `num_starts` initial guesses: `params` itself first, then copies
    perturbed by Gaussian noise of standard deviation `noise` (units of each
    parameter).

    Returns:
        `params` with a leading batch axis of size `num_starts` on every leaf.
    """
    leaves, treedef = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.PRNGKey(seed), len(leaves))
    out = []
    for key, leaf in zip(keys, leaves, strict=True):
        leaf = jnp.asarray(leaf, dtype=float)
        noise_ = noise * jax.random.normal(key, (num_starts - 1, *leaf.shape))
        out.append(jnp.concatenate([leaf[None], leaf[None] + noise_], axis=0))
    return jax.tree.unflatten(treedef, out)


__all__ = [
    "Box",
    "OptimizeResult",
    "evaluate",
    "optimize",
    "perturbed_starts",
    "value_and_grad",
]
