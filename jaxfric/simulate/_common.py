"""Input checks and conversions shared by the simulation paths."""

from collections.abc import Callable

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .._check import check_finite, is_concrete
from ..forces._base import AbstractForce, FunctionForce
from ..friction._base import AbstractFrictionLaw
from ..systems._base import AbstractSystem
from ._solution import RESULTS


def as_force(force) -> AbstractForce | None:
    """`None`, an `AbstractForce`, or a callable ``fn(t, q, qd)`` -> a force."""
    if force is None or isinstance(force, AbstractForce):
        return force
    if isinstance(force, Callable):
        return FunctionForce(force)
    raise TypeError(
        "`force` must be None, a jaxfric.forces force, or a callable "
        f"fn(t, q, qd); got {type(force).__name__}."
    )


def state_vector(name: str, value, n: int):
    """Convert an initial position/velocity to shape ``(n,)``, checking it."""
    arr = jnp.asarray(value, dtype=float)
    if arr.ndim == 0:
        arr = jnp.broadcast_to(arr, (n,))
    if arr.shape != (n,):
        raise ValueError(
            f"`{name}` must have shape ({n},) for a system with n_dof={n}; got "
            f"shape {arr.shape}."
        )
    check_finite(name, arr)
    return eqx.error_if(arr, ~jnp.all(jnp.isfinite(arr)), f"`{name}` is not finite.")


def check_law_size(friction: AbstractFrictionLaw, m: int) -> None:
    """Each array inside the law must be a scalar or have one entry per element."""
    import jax

    for path, leaf in jax.tree_util.tree_leaves_with_path(friction):
        shape = np.shape(leaf)
        if shape not in ((), (m,)):
            name = jax.tree_util.keystr(path)
            raise ValueError(
                f"friction parameter `{type(friction).__name__}{name}` has shape "
                f"{shape}; the system has n_friction={m} elements, so it must be a "
                f"scalar or have shape ({m},)."
            )


def save_times(t0, t1, ts, num_save: int):
    """The saved times: `ts` if given (checked), else `num_save` uniform points."""
    if ts is None:
        return jnp.linspace(t0, t1, num_save)
    ts = jnp.asarray(ts, dtype=float)
    if ts.ndim != 1 or ts.shape[0] < 1:
        raise ValueError(f"`ts` must be a non-empty 1-D array; got shape {ts.shape}.")
    if is_concrete(ts) and is_concrete(t0) and is_concrete(t1):
        arr, lo, hi = np.asarray(ts), float(t0), float(t1)
        if not np.all(np.isfinite(arr)):
            raise ValueError("`ts` must be finite.")
        if np.any(np.diff(arr) < 0):
            raise ValueError("`ts` must be non-decreasing.")
        if arr[0] < lo or arr[-1] > hi:
            raise ValueError(f"`ts` must lie in [t0, t1] = [{lo}, {hi}].")
    return ts


def check_interval(t0, t1) -> None:
    if is_concrete(t0) and is_concrete(t1):
        check_finite("t0", t0)
        check_finite("t1", t1)
        if not float(t1) > float(t0):
            raise ValueError(f"`t1` must be greater than `t0`; got t0={t0}, t1={t1}.")


def check_jump_times(force, jump_ts):
    """`jump_ts` if given (checked), else ``force.jump_times()``; `None` if empty.

    Sorted, finite and 1-D, as `diffrax.ClipStepSizeController` needs.
    """
    if jump_ts is None:
        jump_ts = None if force is None else force.jump_times()
        if jump_ts is None:
            return None
    jump_ts = jnp.asarray(jump_ts, dtype=float)
    if jump_ts.ndim != 1:
        raise ValueError(f"`jump_ts` must be 1-D; got shape {jump_ts.shape}.")
    if jump_ts.shape[0] == 0:
        return None
    if is_concrete(jump_ts):
        arr = np.asarray(jump_ts)
        if not np.all(np.isfinite(arr)):
            raise ValueError("`jump_ts` must be finite.")
        if np.any(np.diff(arr) < 0):
            raise ValueError("`jump_ts` must be non-decreasing.")
    return jump_ts


def step_controller(rtol, atol, dtmax, jump_ts, norm=None):
    """The adaptive step-size controller of the switch and smooth paths.

    A PID controller on (``rtol``, ``atol``), steps at most ``dtmax``, clipped
    to step exactly onto the force's jump times (`check_jump_times`). The jump
    times are not differentiated: where a step lands is a numerical choice,
    not part of the solution. `norm` is the error norm (default diffrax's RMS
    norm over the whole state).
    """
    import diffrax
    import jax
    import optimistix as optx

    norm = optx.rms_norm if norm is None else norm
    controller = diffrax.PIDController(rtol=rtol, atol=atol, dtmax=dtmax, norm=norm)
    if jump_ts is None:
        return controller
    return diffrax.ClipStepSizeController(
        controller, jump_ts=jax.lax.stop_gradient(jump_ts)
    )


def check_system(system) -> None:
    if not isinstance(system, AbstractSystem):
        raise TypeError(
            "`system` must be a jaxfric.systems system (an AbstractSystem); got "
            f"{type(system).__name__}."
        )


def default_adjoint(options):
    """The diffrax adjoint of a path's solves: `options.adjoint`, else
    `diffrax.RecursiveCheckpointAdjoint` (reverse mode, `jax.grad`)."""
    import diffrax

    if options.adjoint is None:
        return diffrax.RecursiveCheckpointAdjoint()
    return options.adjoint


def finish(solution, throw: bool):
    """Raise on a failed result when `throw`, as `diffrax.diffeqsolve` does."""
    if throw:
        solution = solution.result.error_if(
            solution, solution.result != RESULTS.successful
        )
    return solution
