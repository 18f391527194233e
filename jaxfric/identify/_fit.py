"""Fitting a model to measured experiments by simulating and comparing.

`fit` minimises the weighted trajectory error of `_problem.py`,
``L(θ) = ‖r(θ)‖²/N``, over the chosen unknowns θ, with

- any `optax.GradientTransformation` on ``∇L`` (reverse mode; default Adam with
  a cosine-decayed learning rate), or
- Levenberg–Marquardt on the residual vector with forward-mode Jacobians
  (`LevenbergMarquardt`, built in; or any `optimistix` least-squares solver).

The optimiser works on unconstrained numbers ``u`` (`_transforms.py`), so every
iterate is feasible. Standard errors come from the Gauss–Newton approximation of
the covariance, ``σ̂² (J_uᵀJ_u)⁻¹`` with ``σ̂² = ‖r‖²/(N − P)``, carried to θ by
the delta method ``Cov θ = (∂θ/∂u) Cov u (∂θ/∂u)ᵀ``.

The loops run `chunk` steps per compiled call (`lax.scan`), so the Python side
sees progress; all compiled functions are module-level `eqx.filter_jit`s whose
static inputs are hashable data, so a second identical `fit` call reuses them.
"""

import dataclasses
import functools
import time
from collections.abc import Callable, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.tree_util as jtu
import numpy as np
import optax
import optimistix as optx
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Float

from ..friction._base import AbstractFrictionLaw, AbstractSetValuedLaw
from ..systems._base import AbstractSystem
from ._experiment import Experiment
from ._lm import LevenbergMarquardt, lm_init, lm_step
from ._problem import (
    SIMULATE_TAKES_ADJOINT,
    Model,
    MultipleShooting,
    Problem,
    build_problem,
    decode,
    flat_theta,
    rebuild,
    residuals,
    simulate_options_for,
    simulate_window,
    stderr_model,
    transform_jacobian,
)
from ._transforms import AbstractTransform


@dataclasses.dataclass(frozen=True)
class FitResult:
    """What `fit` returns.

    Attributes:
        model: the fitted `Model` (least squares: the last accepted iterate;
            optax: the best iterate seen).
        loss: the loss ``‖r‖²/N`` at `model`.
        loss_history: loss per optimiser step, shape ``(steps,)``.
        parameter_history: the free parameters (flattened, in the order of
            `names`) per step, shape ``(steps, p)``.
        names: names of the free parameters, e.g. ``".friction.fc"`` or
            ``".experiments.qd0[0, 0]"``.
        values: fitted free parameters, shape ``(p,)``.
        stderr: their standard errors (Gauss–Newton), shape ``(p,)``; `NaN` where
            the Jacobian is rank deficient.
        covariance: the covariance matrix of `values`, shape ``(p, p)``.
        stderr_model: standard errors as a tree like `model`, `None` at fixed
            leaves.
        num_steps: optimiser steps taken.
        converged: the least-squares stopping test passed (optax: `True` when
            all steps ran).
        num_failed_solves: simulation windows that failed at `model` (-1: some
            did, count unknown: optimistix run with `stderr=False`).
        seconds: wall time of the fit (including compilation).
    """

    model: Model
    loss: float
    loss_history: np.ndarray
    parameter_history: np.ndarray
    names: tuple[str, ...]
    values: np.ndarray
    stderr: np.ndarray
    covariance: np.ndarray
    stderr_model: Model
    num_steps: int
    converged: bool
    num_failed_solves: int
    seconds: float

    def table(self) -> dict[str, tuple[float, float]]:
        """``{name: (value, standard error)}``."""
        return {
            n: (float(v), float(s))
            for n, v, s in zip(self.names, self.values, self.stderr, strict=True)
        }


# --------------------------------------------------------------------------
# Compiled loops. Each step records (loss, every window solved, free parameters);
# steps past `num_active` (or after convergence) are skipped by `lax.cond`.


def _skip(problem, carry, u):
    nan = jnp.array(jnp.nan)
    return carry, (nan, jnp.array(True), nan * flat_theta(problem, u))


def _loss(u, problem):
    r, ok = residuals(problem, u, "bwd")
    return jnp.sum(r**2) / problem.num_residuals, jnp.all(ok)


@eqx.filter_jit
def _optax_init(optimizer, u):
    return optimizer.init(u)


@eqx.filter_jit
def _optax_chunk(problem, optimizer, u, state, best, num_active, chunk):
    def step(carry, i):
        def active(carry):
            u, state, best_u, best_loss = carry
            (loss, ok), grad = eqx.filter_value_and_grad(_loss, has_aux=True)(
                u, problem
            )
            # A non-finite gradient gives no usable step: drop those entries.
            grad = jtu.tree_map(lambda g: jnp.where(jnp.isfinite(g), g, 0.0), grad)
            updates, new_state = optimizer.update(grad, state, u)
            new_u = optax.apply_updates(u, updates)
            better = ok & (loss < best_loss)
            best_u = jtu.tree_map(lambda a, b: jnp.where(better, a, b), u, best_u)
            best_loss = jnp.where(better, loss, best_loss)
            record = (loss, ok, flat_theta(problem, u))
            return (new_u, new_state, best_u, best_loss), record

        return jax.lax.cond(
            i < num_active, active, lambda c: _skip(problem, c, c[0]), carry
        )

    carry, records = jax.lax.scan(step, (u, state, *best), jnp.arange(chunk))
    u, state, best_u, best_loss = carry
    return u, state, (best_u, best_loss), records


@eqx.filter_jit
def _lm_chunk(problem, settings, u_like, state, num_active, chunk):
    _, unravel = ravel_pytree(u_like)
    scale = jnp.sqrt(problem.num_residuals)

    def fn(x):
        r, ok = residuals(problem, unravel(x), settings.jac)
        return r / scale, jnp.sum(jnp.where(ok, 0, 1))

    def step(state, i):
        def active(state):
            new = lm_step(settings, fn, state)
            loss = jnp.sum(new.residual**2)
            return new, (loss, new.aux == 0, flat_theta(problem, unravel(new.x)))

        return jax.lax.cond(
            (i < num_active) & ~state.done,
            active,
            lambda s: _skip(problem, s, unravel(s.x)),
            state,
        )

    return jax.lax.scan(step, state, jnp.arange(chunk))


def _optx_fn(u, args):
    # optimistix solvers call `fn(y, args) -> (residuals, aux)`.
    problem, mode = args
    r, ok = residuals(problem, u, mode)
    return r / jnp.sqrt(problem.num_residuals), jnp.all(ok)


@eqx.filter_jit
def _optx_init(problem, solver, u, mode):
    args = (problem, mode)
    f_struct = jax.eval_shape(lambda: _optx_fn(u, args)[0])
    aux_struct = jax.ShapeDtypeStruct((), jnp.bool_)
    state = solver.init(
        _optx_fn, u, args, {"jac": mode}, f_struct, aux_struct, frozenset()
    )
    # The static part (holding jaxprs) comes back as a static output, the same
    # object on every call, so passing it to `_optx_chunk` does not retrace.
    return eqx.partition(state, eqx.is_array)


@eqx.filter_jit
def _optx_chunk(
    problem, solver, u, dynamic_state, static_state, num_active, chunk, mode
):
    args, options = (problem, mode), {"jac": mode}

    def step(carry, i):
        def active(carry):
            u, dynamic_state, done = carry
            state = eqx.combine(static_state, dynamic_state)
            new_u, new_state, ok = solver.step(
                _optx_fn, u, args, options, state, frozenset()
            )
            terminate, result = solver.terminate(
                _optx_fn, new_u, args, options, new_state, frozenset()
            )
            loss = jnp.sum(new_state.f_info.residual**2)
            done = terminate | (result != optx.RESULTS.successful)
            new_dynamic = eqx.filter(new_state, eqx.is_array)
            return (new_u, new_dynamic, done), (loss, ok, flat_theta(problem, new_u))

        return jax.lax.cond(
            (i < num_active) & ~carry[2],
            active,
            lambda c: _skip(problem, c, c[0]),
            carry,
        )

    init = (u, dynamic_state, jnp.array(False))
    return jax.lax.scan(step, init, jnp.arange(chunk))


@eqx.filter_jit
def _final(problem, u, mode):
    """Loss, per-window success, residuals and their Jacobian in the flattened
    unknowns ``u`` (for the standard errors after an optax or optimistix run)."""
    flat, unravel = ravel_pytree(u)

    def fn(x):
        r, ok = residuals(problem, unravel(x), mode)
        return r, (r, ok)

    jac_fn = jax.jacfwd if mode == "fwd" else jax.jacrev
    jacobian, (residual, ok) = jac_fn(fn, has_aux=True)(flat)
    return jnp.sum(residual**2) / problem.num_residuals, ok, residual, jacobian


@eqx.filter_jit
def _summary(problem, u):
    return flat_theta(problem, u), transform_jacobian(problem, u)


# --------------------------------------------------------------------------


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
    optimizer: optax.GradientTransformation
    | optx.AbstractLeastSquaresSolver
    | LevenbergMarquardt
    | str = "adam",
    max_steps: int | None = None,
    position_weight: Any = 1.0,
    velocity_weight: Any = 0.0,
    shooting: MultipleShooting | None = None,
    simulate_options: dict[str, Any] | None = None,
    jac: str | None = None,
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
            states and forces, and ``fs = fc + softplus(u)`` (`AtLeast`) for the
            static level of `Coulomb`, `Stribeck` and `LuGre` (also inside
            `Regularized`).
        optimizer: ``"adam"`` (`default_adam`), ``"lm"`` (the built-in
            `LevenbergMarquardt` with `jac`), a `LevenbergMarquardt`, an
            `optax.GradientTransformation`, or an `optimistix` least-squares
            solver (e.g. `optimistix.LevenbergMarquardt`). Pass the same object
            on repeated calls to avoid recompiling.
        max_steps: optimiser steps (default 1000 for optax, 100 for least
            squares; least-squares solvers stop earlier when converged).
        position_weight: weight ``w_q`` of position errors, 1/m (1/rad): a
            scalar, one per coordinate ``(n,)``, or one per experiment and
            coordinate ``(experiments, n)`` (or ``(experiments, 1)``). With
            ``1/σ`` of each record's noise the residuals are whitened: the fit
            is the maximum-likelihood one and the standard errors hold for
            records of different noise levels.
        velocity_weight: weight ``w_v`` of velocity errors, s/m, shaped like
            `position_weight`; needs measured velocities when nonzero.
        shooting: `MultipleShooting` settings, or `None` for single shooting.
        simulate_options: keywords for `jaxfric.simulate` (`rtol`, `atol`,
            `dtmax`, `max_events`, `solver`, ...); values must be hashable.
        jac: ``"fwd"`` (`jax.jacfwd`) or ``"bwd"`` (`jax.jacrev`): how the
            least-squares Jacobians and the standard errors are computed (a
            `LevenbergMarquardt` with its own `jac` overrides it). Default
            ``"fwd"`` when `jaxfric.simulate` takes an `adjoint` (forward mode
            needs `diffrax.ForwardMode` in the solves), else ``"bwd"``.
        chunk: optimiser steps per compiled call (progress granularity).
        callback: called as ``callback(step, loss)`` after each chunk.
        stderr: compute standard errors. The least-squares loop has the
            Jacobian already; after optax or optimistix it costs one more
            Jacobian pass (and its compilation), skipped with `False` (standard
            errors are then NaN).
        batching: how experiments (and shooting windows) are batched:
            ``"vmap"`` (`jax.vmap`, one batched solve) or ``"map"`` (a
            sequential `jax.lax.map`). Default: ``"map"`` for set-valued laws
            (the event-driven switch path: batched, every member steps until
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
    if jac is None:
        jac = "fwd" if SIMULATE_TAKES_ADJOINT else "bwd"
    if jac not in ("fwd", "bwd"):
        raise ValueError(f"`jac` must be 'fwd' or 'bwd'; got {jac!r}.")
    if chunk < 1:
        raise ValueError(f"`chunk` must be >= 1; got {chunk}.")
    if isinstance(optimizer, str):
        if optimizer == "adam":
            optimizer = default_adam(max_steps=max_steps or 1000)
        elif optimizer == "lm":
            optimizer = LevenbergMarquardt(jac=jac)
        else:
            raise ValueError(f"`optimizer` must be 'adam' or 'lm'; got {optimizer!r}.")
    if isinstance(optimizer, LevenbergMarquardt):
        if optimizer.jac is None:
            optimizer = dataclasses.replace(optimizer, jac=jac)
        kind, jac = "lm", optimizer.jac
    elif isinstance(optimizer, optx.AbstractLeastSquaresSolver):
        kind = "optimistix"
    elif isinstance(optimizer, optax.GradientTransformation):
        kind = "optax"
    else:
        raise TypeError(
            "`optimizer` must be 'adam', 'lm', a LevenbergMarquardt, an "
            "optax.GradientTransformation or an optimistix least-squares solver; "
            f"got {type(optimizer).__name__}."
        )
    if max_steps is None:
        max_steps = 1000 if kind == "optax" else 100
    if batching is None:
        batching = "map" if isinstance(friction, AbstractSetValuedLaw) else "vmap"
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

    records: list = []
    steps_done, converged = 0, False

    def after_chunk(chunk_records, count):
        nonlocal steps_done
        losses, oks, thetas = (np.asarray(x)[:count] for x in chunk_records)
        if steps_done == 0 and count and not oks[0]:
            raise ValueError(
                "a simulation fails at the starting parameters; check them or "
                "`simulate_options` (e.g. `max_events`, `max_steps`)."
            )
        records.append((losses, thetas))
        steps_done += count
        if callback is not None and count:
            callback(steps_done, float(losses[-1]))

    jac_u = residual = None
    if kind == "lm":
        flat0, unravel = ravel_pytree(u)
        state = lm_init(flat0, problem.residual_size)
        while steps_done < max_steps:
            active = jnp.asarray(min(chunk, max_steps - steps_done))
            state, chunk_records = _lm_chunk(
                problem, optimizer, u, state, active, chunk
            )
            after_chunk(chunk_records, int(np.sum(~np.isnan(chunk_records[0]))))
            if bool(state.done):
                converged = True
                break
        best_u = unravel(state.x)
        # The Jacobian at the accepted point gives the covariance directly.
        scale = np.sqrt(problem.num_residuals)
        residual = np.asarray(state.residual) * scale
        jac_u = np.asarray(state.jacobian) * scale
        final_loss = float(jnp.sum(state.residual**2))
        num_failed = int(state.aux)
    elif kind == "optimistix":
        dynamic, static = _optx_init(problem, optimizer, u, jac)
        while steps_done < max_steps:
            active = jnp.asarray(min(chunk, max_steps - steps_done))
            (u, dynamic, done), chunk_records = _optx_chunk(
                problem, optimizer, u, dynamic, static, active, chunk, jac
            )
            after_chunk(chunk_records, int(np.sum(~np.isnan(chunk_records[0]))))
            if bool(done):
                converged = True
                break
        best_u = u
        final_loss = float(records[-1][0][-1])
        num_failed = 0 if bool(np.asarray(chunk_records[1])[-1]) else -1
    else:
        state = _optax_init(optimizer, u)
        best = (u, jnp.asarray(jnp.inf))
        while steps_done < max_steps:
            count = min(chunk, max_steps - steps_done)
            u, state, best, chunk_records = _optax_chunk(
                problem, optimizer, u, state, best, jnp.asarray(count), chunk
            )
            after_chunk(chunk_records, count)
        best_u = best[0]
        converged = True
        # The best iterate is only taken where every window solved.
        final_loss, num_failed = float(best[1]), 0
    if jac_u is None and stderr:
        final_loss, ok, residual, jac_u = _final(problem, best_u, jac)
        final_loss = float(final_loss)
        num_failed = int(np.sum(~np.asarray(ok)))

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
        loss=final_loss,
        loss_history=np.concatenate([r[0] for r in records]),
        parameter_history=np.concatenate([r[1] for r in records]),
        names=names,
        values=values,
        stderr=std,
        covariance=covariance,
        stderr_model=stderr_model(problem, std),
        num_steps=steps_done,
        converged=converged,
        num_failed_solves=num_failed,
        seconds=time.perf_counter() - start,
    )


def predict(
    model: Model, simulate_options: dict[str, Any] | None = None
) -> tuple[Float[Array, "b t dof"], Float[Array, "b t dof"]]:
    """Simulate every experiment of `model` over its whole record (single
    shooting), e.g. to plot measured against fitted trajectories.

    Args:
        model: a `Model` (e.g. `FitResult.model`).
        simulate_options: keywords for `jaxfric.simulate`.

    Returns:
        Positions and velocities, shape ``(experiments, T, n)`` each.
    """
    options = tuple(sorted((simulate_options or {}).items()))
    return _predict(model, simulate_options_for(options, "eval"))


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
