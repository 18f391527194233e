"""Fitting a model to measured experiments by simulating and comparing.

`fit` minimises the weighted trajectory error of `_problem.py`,
``L(θ) = ‖r(θ)‖²/N``, over the chosen unknowns θ, with

- a least-squares solver on the residual vector (default the built-in
  `LevenbergMarquardt` with forward-mode Jacobians; or any `optimistix`
  least-squares solver), or
- any `optax.GradientTransformation` on ``∇L`` (reverse mode; e.g. Adam with a
  cosine-decayed learning rate, `default_adam`).

The optimiser works on unconstrained numbers ``u`` (`_transforms.py`), so every
iterate is feasible. Standard errors come from the Gauss–Newton approximation of
the covariance, ``σ̂² (J_uᵀJ_u)⁻¹`` with ``σ̂² = ‖r‖²/(N − P)``, carried to θ by
the delta method ``Cov θ = (∂θ/∂u) Cov u (∂θ/∂u)ᵀ``.

Both run through the "optimise through simulate" core that `jaxfric.optimize`
uses too (`jaxfric._minimise`): `chunk` steps per compiled call, progress
through a callback; the compiled functions are module-level `eqx.filter_jit`s
whose static inputs are hashable data, so a second identical `fit` call reuses
them.
"""

import functools
import time
from collections.abc import Callable, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import optimistix as optx
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Float

from .._minimise import (
    AbstractMinimiseResult,
    Best,
    check_options,
    host,
    least_squares_chunk,
    least_squares_init,
    least_squares_postprocess,
    optax_chunk,
    run_chunks,
    strong,
)
from ..friction import AbstractFrictionLaw
from ..simulate import SWITCH_PATH, SimulateOptions
from ..systems import AbstractSystem
from ._experiment import Experiment
from ._lm import LevenbergMarquardt
from ._problem import (
    Model,
    MultipleShooting,
    Problem,
    build_problem,
    decode,
    flat_theta,
    rebuild,
    residuals,
    simulate_window,
    stderr_model,
    transform_jacobian,
)
from ._transforms import AbstractTransform


class FitResult(AbstractMinimiseResult):
    """What `fit` returns.

    Attributes:
        model: the fitted `Model` (least squares: the last accepted iterate;
            optax: the best iterate seen).
        params: the fitted free parameters, flattened in the order of `names`,
            shape ``(p,)``.
        value: the loss ``‖r‖²/N`` at `model`.
        value_history: the loss per optimiser step, shape ``(num_steps,)``.
        params_history: the free parameters per step, shape
            ``(num_steps, p)``.
        names: names of the free parameters, e.g. ``".friction.fc"`` or
            ``".experiments.qd0[0, 0]"``.
        stderr: their standard errors (Gauss–Newton), shape ``(p,)``; `NaN` where
            the Jacobian is rank deficient.
        covariance: the covariance matrix of `params`, shape ``(p, p)``.
        stderr_model: standard errors as a tree like `model`, `None` at fixed
            leaves.
        num_steps, result, seconds: as in `AbstractMinimiseResult`.
        num_failed_solves: simulation windows that failed at `model`.
    """

    model: Model
    params: np.ndarray
    value: float
    value_history: np.ndarray
    params_history: np.ndarray
    names: tuple[str, ...]
    stderr: np.ndarray
    covariance: np.ndarray
    stderr_model: Model
    num_steps: int
    result: optx.RESULTS
    num_failed_solves: int
    seconds: float

    def table(self) -> dict[str, tuple[float, float]]:
        """``{name: (value, standard error)}``."""
        return {
            n: (float(v), float(s))
            for n, v, s in zip(self.names, self.params, self.stderr, strict=True)
        }


# --------------------------------------------------------------------------
# The objectives handed to the core (`args` is the `Problem`).


def _loss(u, problem):
    """Loss for optax: ``(‖r‖²/N, (every window solved, free parameters))``."""
    r, ok = residuals(problem, u, "bwd")
    return jnp.sum(r**2) / problem.num_residuals, (jnp.all(ok), flat_theta(problem, u))


def _scaled_residuals(u, args):
    """Residuals for least squares, scaled so that ``‖r‖² = L``; aux: the loss
    and the number of windows that failed."""
    problem, mode = args
    r, ok = residuals(problem, u, mode)
    r = r / jnp.sqrt(problem.num_residuals)
    return r, (jnp.sum(r**2), jnp.sum(jnp.where(ok, 0, 1)))


def _report(losses, oks, thetas, taken: int, stopped: bool, first: bool):
    """A chunk's records for `run_chunks`; a failed solve at the start raises."""
    if first and taken and not oks[0]:
        raise ValueError(
            "a simulation fails at the starting parameters; check them or "
            "`simulate_options` (e.g. `max_events`, `max_steps`)."
        )
    value = float(losses[taken - 1]) if taken else np.nan
    return (losses, thetas), taken, stopped, value


@eqx.filter_jit
def _thetas(problem, us):
    return jax.vmap(lambda u: flat_theta(problem, u))(us)


@eqx.filter_jit
def _final(problem, u, mode):
    """Per-window success, residuals and their Jacobian in the flattened
    unknowns ``u`` (for the standard errors when the solver has none)."""
    flat, unravel = ravel_pytree(u)

    def fn(x):
        r, ok = residuals(problem, unravel(x), mode)
        return r, (r, ok)

    jac_fn = jax.jacfwd if mode == "fwd" else jax.jacrev
    jacobian, (residual, ok) = jac_fn(fn, has_aux=True)(flat)
    return ok, residual, jacobian


@eqx.filter_jit
def _summary(problem, u):
    return flat_theta(problem, u), transform_jacobian(problem, u)


@functools.lru_cache(maxsize=16)
def default_adam(
    learning_rate: float = 0.05, max_steps: int = 1000
) -> optax.GradientTransformation:
    """Adam with a cosine decay of the learning rate to 1 % over `max_steps`.

    Cached, so that repeated `fit` calls reuse the same object and do not
    recompile (optax transformations are compared by identity).
    """
    schedule = optax.cosine_decay_schedule(learning_rate, max_steps, alpha=1e-2)
    return optax.adam(schedule)


def _covariance(residual, jac_u, dtheta_du, p: int, n_res: int) -> np.ndarray:
    """Gauss–Newton covariance of the first `p` unknowns (the parameters; the
    rest are shooting nodes): ``σ̂² A (J_uᵀJ_u)⁻¹ Aᵀ``, ``A = ∂θ/∂u``, with
    ``σ̂² = ‖r‖²/(n_res − unknowns)`` over the `n_res` counted residuals."""
    residual = np.asarray(residual, float)
    jac_u = np.asarray(jac_u, float)
    n_unknowns = jac_u.shape[1]
    sigma2 = residual @ residual / max(n_res - n_unknowns, 1)
    normal = jac_u.T @ jac_u
    if not np.all(np.isfinite(normal)) or np.linalg.matrix_rank(normal) < n_unknowns:
        return np.full((p, p), np.nan)
    a = np.asarray(dtheta_du, float)
    cov = a @ (sigma2 * np.linalg.inv(normal)) @ a.T
    return cov[:p, :p]


def fit(
    system: AbstractSystem,
    friction: AbstractFrictionLaw,
    experiments: Experiment | Sequence[Experiment],
    *,
    free: Callable[[Model], Any] | Any = None,
    transforms: Sequence[tuple[Callable[[Model], Any], AbstractTransform]] = (),
    optimizer: optx.AbstractLeastSquaresSolver
    | optax.GradientTransformation
    | str = "lm",
    max_steps: int | None = None,
    position_weight: Any = 1.0,
    velocity_weight: Any = 0.0,
    shooting: MultipleShooting | None = None,
    simulate_options: SimulateOptions | None = None,
    jac: str = "fwd",
    chunk: int = 10,
    callback: Callable[[int, float], None] | None = None,
    stderr: bool = True,
    batching: str | None = None,
) -> FitResult:
    """Fit parameters of a system, a friction law and the applied forces to
    measured experiments, by simulating them with `jaxfric.simulate`.

    Args:
        system: the mechanical system (its numbers are the fixed values or the
            starting guess).
        friction: the friction law (likewise); any law `simulate` accepts.
        experiments: one `Experiment` or a sequence with equal sample counts,
            simulated together with `jax.vmap`.
        free: the unknowns: ``where(model) -> leaves`` over a `Model` (e.g.
            ``lambda m: (m.friction.fc, m.friction.fs, m.experiments.qd0)``; a
            selected subtree frees all its leaves), or a boolean filter tree
            like `Model` (as for `eqx.partition`). Leaves of `experiments`
            (initial states, force parameters) are fitted per experiment.
            Default: every number of the friction law.
        transforms: ``(where, transform)`` pairs overriding the defaults:
            `Positive` for system and friction numbers, `Identity` for initial
            states and forces, and ``upper = lower + softplus(u)`` (`AtLeast`)
            for the pairs a law orders (``ordered_levels()``: ``fs >= fc`` of
            `Coulomb`, `Stribeck` and `LuGre`, also inside a wrapping law).
        optimizer: ``"lm"`` (default: the built-in `LevenbergMarquardt`; on
            ``experiments/bench_identify.py``'s Stribeck problem within 2 % in
            7 steps and 0.1 % at convergence, where Adam is 186 % off after
            400), any `optimistix` least-squares solver (the built-in
            `LevenbergMarquardt`, `optimistix.LevenbergMarquardt`, ...),
            ``"adam"`` (`default_adam`) or any `optax.GradientTransformation`
            (an optax step from an iterate where a window fails is not taken:
            the best iterate is returned). Pass the same object on repeated
            calls to avoid recompiling.
        max_steps: the step budget (default 100 for least squares, which stop
            earlier when converged; 1000 for optax, which runs them all).
        position_weight: weight ``w_q`` of position errors, 1/m (1/rad): a
            scalar, one per coordinate ``(n,)``, or one per experiment and
            coordinate ``(experiments, n)`` (or ``(experiments, 1)``). With
            ``1/σ`` of each record's noise the residuals are whitened: the fit
            is the maximum-likelihood one and the standard errors hold for
            records of different noise levels.
        velocity_weight: weight ``w_v`` of velocity errors, s/m, shaped like
            `position_weight`; needs measured velocities when nonzero.
        shooting: `MultipleShooting` settings, or `None` for single shooting.
        simulate_options: the numerical options of the solves, a
            `jaxfric.simulate.SimulateOptions` (`rtol`, `atol`, `dtmax`,
            `max_events`, `solver`, ...).
        jac: ``"fwd"`` (forward mode, `diffrax.ForwardMode` in the solves) or
            ``"bwd"`` (reverse mode): how the least-squares Jacobians and the
            standard errors are computed (the solver's ``jac`` option).
        chunk: optimiser steps per compiled call (progress granularity).
        callback: called as ``callback(step, loss)`` after each chunk.
        stderr: compute standard errors. The built-in `LevenbergMarquardt`
            has the Jacobian already; after other solvers it costs one more
            Jacobian pass (and its compilation), skipped with `False` (standard
            errors are then NaN).
        batching: how experiments (and shooting windows) are batched:
            ``"vmap"`` (`jax.vmap`, one batched solve) or ``"map"`` (a
            sequential `jax.lax.map`). Default: ``"map"`` for laws on the
            event-driven switch path (batched, every member steps until
            the slowest ends each segment; map was the faster on a few CPU
            cores, README, Performance; on many cores or a GPU vmap is the one
            to try), ``"vmap"`` for the smooth
            paths.

    Returns:
        A `FitResult`: the fitted model, loss history and standard errors.

    Raises:
        ValueError: bad inputs (named), a start outside a transform's feasible
            set, or a simulation that fails at the starting parameters.
    """
    start = time.perf_counter()
    if jac not in ("fwd", "bwd"):
        raise ValueError(f"`jac` must be 'fwd' or 'bwd'; got {jac!r}.")
    if isinstance(optimizer, str):
        if optimizer == "adam":
            optimizer = default_adam(max_steps=max_steps or 1000)
        elif optimizer == "lm":
            optimizer = LevenbergMarquardt()
        else:
            raise ValueError(f"`optimizer` must be 'adam' or 'lm'; got {optimizer!r}.")
    least_squares = isinstance(optimizer, optx.AbstractLeastSquaresSolver)
    if not least_squares and not isinstance(optimizer, optax.GradientTransformation):
        raise TypeError(
            "`optimizer` must be 'adam', 'lm', an optimistix least-squares solver "
            f"or an optax.GradientTransformation; got {type(optimizer).__name__}."
        )
    if max_steps is None:
        max_steps = 100 if least_squares else 1000
    if batching is None:
        # The switch path's segments run in lockstep under `vmap`: map its records.
        batching = "map" if friction.simulation_path is SWITCH_PATH else "vmap"
    problem, u, names, _ = build_problem(
        system,
        friction,
        experiments,
        free=free,
        transforms=transforms,
        position_weight=position_weight,
        velocity_weight=velocity_weight,
        shooting=shooting,
        simulate_options=simulate_options,
        batching=batching,
    )

    residual = jac_u = None
    if least_squares:
        args, options = (problem, jac), {"jac": jac}
        fn = _scaled_residuals
        dynamic, static = least_squares_init(fn, args, optimizer, u, options)
        carry = None

        def advance(count):
            nonlocal carry
            y, state = (u, dynamic) if carry is None else carry[:2]
            first = carry is None
            carry, (ys, (losses, failed)) = least_squares_chunk(
                fn,
                args,
                optimizer,
                y,
                state,
                static,
                jnp.asarray(count),
                chunk,
                options,
            )
            taken = int(np.sum(~np.isnan(np.asarray(losses))))
            records = host((losses, failed == 0, _thetas(problem, ys)), taken)
            return _report(*records, taken, bool(carry[3]), first)

        records, num_steps, stopped = run_chunks(advance, max_steps, chunk, callback)
        result = optx.RESULTS.nonlinear_max_steps_reached
        if carry is None:  # max_steps = 0
            best_u, final_loss, num_failed, stats = u, np.nan, 0, {}
        else:
            y, dynamic, aux, _, solver_result = carry
            best_u, (final_loss, num_failed), stats = least_squares_postprocess(
                fn, args, optimizer, y, aux, dynamic, static, options, solver_result
            )
            result = solver_result if stopped else result
        if "jacobian" in stats:
            # The solver's Jacobian at the solution gives the covariance directly.
            scale = np.sqrt(problem.num_residuals)
            residual = np.asarray(stats["residual"]) * scale
            jac_u = np.asarray(stats["jacobian"]) * scale
    else:
        start_carry = strong((u, optimizer.init(u), Best(jnp.array(jnp.inf), u)))
        carry = start_carry

        def advance(count):
            nonlocal carry
            first = carry is start_carry
            carry, records = optax_chunk(
                _loss, problem, optimizer, None, carry, jnp.asarray(count), chunk, False
            )
            return _report(*host(records, count), count, False, first)

        records, num_steps, _ = run_chunks(advance, max_steps, chunk, callback)
        best = carry[2]
        best_u, final_loss, num_failed = best.params, best.value, 0
        result = optx.RESULTS.successful
    if stderr and jac_u is None:
        ok, residual, jac_u = _final(problem, best_u, jac)
        num_failed = int(np.sum(~np.asarray(ok)))
        final_loss = float(np.sum(np.asarray(residual) ** 2) / problem.num_residuals)

    values, dtheta_du = _summary(problem, best_u)
    values = np.asarray(values)
    if jac_u is None:
        covariance = np.full((values.size, values.size), np.nan)
    else:
        covariance = _covariance(
            residual, jac_u, dtheta_du, values.size, problem.num_residuals
        )
    variance = np.diag(covariance)
    std = np.where(np.isfinite(variance), np.sqrt(np.abs(variance)), np.nan)
    return FitResult(
        model=rebuild(problem, decode(problem, best_u[0])),
        params=values,
        value=float(final_loss),
        value_history=np.concatenate([r[0] for r in records] or [np.zeros(0)]),
        params_history=np.concatenate(
            [r[1] for r in records] or [np.zeros((0, values.size))]
        ),
        names=names,
        stderr=std,
        covariance=covariance,
        stderr_model=stderr_model(problem, std),
        num_steps=num_steps,
        result=result,
        num_failed_solves=int(num_failed),
        seconds=time.perf_counter() - start,
    )


def predict(
    model: Model, simulate_options: SimulateOptions | None = None
) -> tuple[Float[Array, "b t dof"], Float[Array, "b t dof"]]:
    """Simulate every experiment of `model` over its whole record (single
    shooting), e.g. to plot measured against fitted trajectories.

    Args:
        model: a `Model` (e.g. `FitResult.model`).
        simulate_options: a `jaxfric.simulate.SimulateOptions`.

    Returns:
        Positions and velocities, shape ``(experiments, T, n)`` each.
    """
    return _predict(model, check_options(simulate_options))


@eqx.filter_jit
def _predict(model, options):
    exps = model.experiments

    def one(force, q0, qd0, ts):
        q, qd, _ = simulate_window(
            model.system, model.friction, force, q0, qd0, ts, options
        )
        return q, qd

    return eqx.filter_vmap(one)(exps.force, exps.q0, exps.qd0, exps.ts)


__all__ = [
    "FitResult",
    "LevenbergMarquardt",
    "Model",
    "MultipleShooting",
    "Problem",
    "default_adam",
    "fit",
    "predict",
]
