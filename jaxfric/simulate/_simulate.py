"""`jaxfric.simulate`: one entry point; the friction law's family declares the
path (``simulation_path``)."""

import dataclasses
from typing import Any

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import ArrayLike

from .._check import check_finite
from .._types import ScalarLike
from ..forces import AbstractForce
from ..systems import AbstractSystem
from ._common import (
    as_force,
    check_fixed_step,
    check_force_output,
    check_force_start,
    check_interval,
    check_jump_times,
    check_law_elements,
    check_law_size,
    check_system,
    finish,
    input_checks,
    invalid_parameters,
    raise_invalid_parameters,
    save_times,
    state_vector,
)
from ._law import AbstractFrictionLaw
from ._options import DEFAULTS, SimulateOptions
from ._solution import Solution


def simulate(
    system: AbstractSystem,
    friction: AbstractFrictionLaw,
    q0: ArrayLike,
    qd0: ArrayLike,
    t1: ScalarLike,
    *,
    t0: ScalarLike = 0.0,
    force: AbstractForce | Any = None,
    ts: ArrayLike | None = None,
    num_save: int = 1001,
    solver: Any = None,
    rtol: float | None = None,
    atol: float | None = None,
    dt0: float | None = None,
    dtmax: float | None = None,
    jump_ts: ArrayLike | None = None,
    max_steps: int | None = None,
    max_events: int | None = None,
    friction_state0: ArrayLike | None = None,
    adjoint: Any = None,
    throw: bool = True,
    options: SimulateOptions | None = None,
) -> Solution:
    """Simulate ``M(q) q̈ = τ(t, q, q̇) − h(q, q̇) − J(q)ᵀ f`` from ``t0`` to ``t1``.

    The friction law's family picks the path (its ``simulation_path``):

    - Coulomb-type laws (`Coulomb`, `CoulombViscous`, `Stribeck`): the exact
      event-driven switch algorithm (Farhat et al. 2010, Sec. 4): stuck elements
      have slip velocity exactly zero; switch times are located as events.
    - `Regularized`: an adaptive explicit solver on the smoothed law.
    - `LuGre`, `Dahl`: the bristle state joins the ODE, stiff-capable solver.
    - `Kikuuwe`: RK4 with the step size handed to the law (Kikuuwe & Yamamoto,
      Eq. 21); `dt0` is the fixed step.
    - `Karnopp`: fixed-step integration with the zero-velocity band (Karnopp 1985).

    `simulate` is `jit`-, `vmap`- and `grad`-compatible with respect to every array
    inside `system`, `friction` and `force`, and to `q0`, `qd0`.

    Args:
        system: the mechanical system (`jaxfric.systems`).
        friction: the friction law (`jaxfric.friction`), one entry per element.
        q0: initial positions, shape ``(n_dof,)`` (a scalar broadcasts), m or rad.
        qd0: initial velocities, shape ``(n_dof,)``, m/s or rad/s.
        t1: final time, s.
        t0: initial time, s.
        force: applied force: a `jaxfric.forces` force, a callable
            ``fn(t, q, qd)``, or `None` for no applied force.
        ts: times to save at, in ``[t0, t1]``; default `num_save` uniform times.
        num_save: number of uniform save times when `ts` is `None`.
        solver: a `diffrax` solver; default depends on the path.
        rtol, atol: step-size controller tolerances; default depends on the path.
        dt0: initial (or, for fixed-step paths, the) step size, s.
        dtmax: largest step, s (the switch path caps steps so that breakaways
            are not stepped over).
        jump_ts: times, s, where the applied force or its time derivative jumps;
            the adaptive paths (switch, `Regularized`, `LuGre`/`Dahl`) step
            exactly onto them. Default: ``force.jump_times()`` (the knots of a
            `Tabulated` force; none for smooth forces). Give it for a callable
            force with kinks. Not an option of the fixed-step paths (`Kikuuwe`,
            `Karnopp`), which do not use the force's jump times.
        max_steps: step budget (per segment on the switch path); default 16384.
        max_events: event budget of the switch path; default 64.
        friction_state0: initial internal state of a dynamic law (default zero).
        adjoint: the `diffrax` adjoint of the solves: default
            `diffrax.RecursiveCheckpointAdjoint()` for reverse mode (`jax.grad`;
            on the switch path with 32 checkpoints per segment);
            `diffrax.ForwardMode()` for forward mode (`jax.jacfwd`, `jax.jvp`).
        throw: raise on failure (default); with `False` inspect `Solution.result`.
        options: the numerical options (`solver` to `adjoint`) as one
            `SimulateOptions`, instead of (not with) those keywords.

    An option that the law's path does not use (e.g. `rtol` for `Kikuuwe`,
    `max_events` for `LuGre`) is a `ValueError` naming it and the path.

    Returns:
        A `Solution`.
    """
    check_system(system)
    if not isinstance(friction, AbstractFrictionLaw):
        raise TypeError(
            f"`friction` must be a jaxfric friction law; got {type(friction).__name__}."
        )
    check_interval(t0, t1)
    check_law_size(friction, system.n_friction)
    check_law_elements(friction, system)
    keywords = dict(solver=solver, rtol=rtol, atol=atol, dt0=dt0, dtmax=dtmax)
    keywords.update(jump_ts=jump_ts, max_steps=max_steps, max_events=max_events)
    keywords.update(friction_state0=friction_state0, adjoint=adjoint)
    if options is None:
        options = SimulateOptions(**keywords)
    elif any(value is not None for value in keywords.values()):
        given = [name for name, value in keywords.items() if value is not None]
        raise TypeError(
            f"`simulate` got `options` and the option keywords {given}: pass one."
        )
    path = friction.simulation_path
    path.check_used(friction, options)
    if path.fixed_step:
        check_fixed_step(options.dt0, t0, t1)
    if system.n_coord != system.n_dof and not path.coordinate_rates:
        raise ValueError(
            f"{type(system).__name__} has n_coord={system.n_coord} position "
            f"coordinates for n_dof={system.n_dof} velocities (unit quaternions), "
            f"which {path.name} does not integrate yet; use a law of the Kikuuwe, "
            "smooth or dynamic paths (e.g. Kikuuwe, Regularized, LuGre)."
        )
    n_dof, n_coord = system.n_dof, system.n_coord
    size = f"n_dof={n_dof}" if n_coord == n_dof else f"n_coord={n_coord}"
    q0 = state_vector("q0", q0, n_coord, f"a system with {size}", throw)
    qd0 = state_vector("qd0", qd0, n_dof, f"a system with n_dof={n_dof}", throw)
    ts = save_times(t0, t1, ts, num_save)
    if options.friction_state0 is not None:
        check_finite("friction_state0", options.friction_state0)
    force = as_force(force, t0, q0, qd0)
    if throw:
        # Before `_solve`: under an eager vmap or grad, fails without compiling.
        checks = input_checks(system, friction, force, ts, t0, t1)
        q0 = raise_invalid_parameters(q0, checks)
    check_force_output(force, t0, q0, qd0)
    if "jump_ts" in path.options:
        jump_ts = check_jump_times(force, options.jump_ts)
        options = dataclasses.replace(options, jump_ts=jump_ts)
    try:
        return _solve(system, friction, force, q0, qd0, t0, t1, ts, options, throw)
    except TypeError as e:
        # JAX's words when `jax.jvp` meets the reverse-mode adjoint's custom_vjp.
        if "forward-mode" not in str(e) or "custom_vjp" not in str(e):
            raise
        adjoint_name = type(options.adjoint or DEFAULTS["adjoint"]).__name__
        if adjoint_name == "ForwardMode":
            raise TypeError(
                "`simulate` was differentiated in forward mode with "
                "`adjoint=diffrax.ForwardMode()`, yet a loop inside supports "
                "reverse mode only: a bug in jaxfric (the solver's loops are "
                "chosen for the adjoint in `for_backend`); please report it."
            ) from e
        raise TypeError(
            "`simulate` was differentiated in forward mode (`jax.jvp`, "
            f"`jax.jacfwd`), but its adjoint `diffrax.{adjoint_name}` supports "
            "reverse mode only: pass `adjoint=diffrax.ForwardMode()`."
        ) from e


@eqx.filter_jit
def _solve(system, friction, force, q0, qd0, t0, t1, ts, options, throw):
    # Compiled once per structure: a second call with new numbers (same shapes,
    # law type and options) reuses the compiled solve instead of retracing.
    # Parameter ranges, once per solve (not per step): a module built under
    # jit/vmap/grad skipped them at construction. `simulate` raised already
    # with `throw`; here they give the result code.
    invalid = invalid_parameters(input_checks(system, friction, force, ts, t0, t1))
    q0, nonfinite = check_force_start(q0, force, t0, q0, qd0, throw)
    # Without `throw`, a traced non-finite start state is reported the same way.
    nonfinite = nonfinite | ~jnp.all(jnp.isfinite(jnp.concatenate([q0, qd0])))
    path = friction.simulation_path
    cap = options.dtmax is None and "dtmax" in path.options
    options = path.defaults(options, t0, t1, q0.dtype)
    limit = system.step_limit()
    if cap and limit is not None:
        # A stiff mode at rest shows no error, so the step-size controller
        # would step past its stability limit; its sensitivities would then
        # grow from rounding (`AbstractSystem.step_limit`).
        dtmax = limit if options.dtmax is None else jnp.minimum(options.dtmax, limit)
        options = dataclasses.replace(options, dtmax=dtmax)
    args = (system, friction, force, q0, qd0, t0, t1, ts)
    sol = path.run(*args, options)
    return finish(sol, throw, invalid, nonfinite_start=nonfinite, differentiated=args)
