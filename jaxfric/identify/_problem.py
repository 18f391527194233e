"""The identification problem: the model tree, the unknowns inside it, their
transforms, and the weighted residuals of simulating every experiment.

The unknowns are leaves of ``Model(system, friction, experiments)``. The residual
vector stacks, over experiments, windows and samples,

    r = [ w_q ⊙ (q_sim − q_meas),  w_v ⊙ (q̇_sim − q̇_meas) ],

so the loss is ``L(θ) = ‖r‖²/N``. With multiple shooting (Bock & Plitt 1984) each
record is cut into windows, each simulated from its own start: a node that is an
extra unknown tied to the previous window's end by a continuity penalty, or reset
to the data. Experiments and windows are simulated together with `jax.vmap`.
"""

import dataclasses
from typing import Any

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import jax.tree_util as jtu
import numpy as np
from jax.flatten_util import ravel_pytree
from jaxtyping import Array

from .._minimise import check_options
from ..friction import AbstractFrictionLaw
from ..simulate import RESULTS, SimulateOptions, simulate
from ..systems import AbstractSystem
from ._experiment import Experiment, stack_experiments
from ._linear import savgol
from ._transforms import AbstractTransform, AtLeast, Bounded, Identity, Positive

# Residual given to a window whose simulation failed: large, so that a
# least-squares step into a region where the solver fails is rejected, and
# constant, so that it contributes no gradient.
_FAILED_RESIDUAL = 1e3


class Model(eqx.Module):
    """The tree `fit` picks unknowns from.

    Attributes:
        system: the mechanical system.
        friction: the friction law.
        experiments: the experiments, stacked along a leading axis (one entry per
            experiment in every array, see `stack_experiments`).
    """

    system: AbstractSystem
    friction: AbstractFrictionLaw
    experiments: Experiment


class MultipleShooting(eqx.Module):
    """Split each record into `num_windows` windows of equal length, each
    simulated from its own start (Bock & Plitt 1984).

    ``(T − 1)`` must be divisible by `num_windows`; window ``w`` covers samples
    ``w·L … (w+1)·L`` with ``L = (T − 1)/num_windows``. The first window starts at
    the experiment's ``q0, qd0``.

    Args:
        num_windows: number of windows per experiment.
        free_nodes: `True`: the later window starts are extra unknowns
            (initialised from the data) tied to the previous window's end by the
            penalty ``continuity_weight·w_q·(Δq, Δq̇·window_duration)``; `False`:
            they are reset to the data (positions as measured, velocities as
            measured or from a Savitzky–Golay derivative).
        continuity_weight: weight of the continuity penalty (dimensionless).
    """

    num_windows: int = eqx.field(static=True)
    free_nodes: bool = eqx.field(static=True, default=True)
    continuity_weight: float = 10.0

    def __check_init__(self):
        if self.num_windows < 1:
            raise ValueError(f"`num_windows` must be >= 1; got {self.num_windows}.")


class Problem(eqx.Module):
    """Everything the compiled loops need: the model's tree structure (static),
    its fixed leaves, the free leaves' positions and transforms, the weights and
    the shooting layout. Built once per `fit` call by `build_problem`."""

    treedef: Any = eqx.field(static=True)
    free_index: tuple[int, ...] = eqx.field(static=True)
    order: tuple[int, ...] = eqx.field(static=True)  # decode order (into free_index)
    fixed_leaves: list
    transforms: tuple
    position_weight: Array  # (B, n)
    velocity_weight: Array  # (B, n)
    use_velocity: bool = eqx.field(static=True)
    num_windows: int = eqx.field(static=True)
    free_nodes: bool = eqx.field(static=True)
    continuity_weight: Array
    node_data: Any  # (q, qd) of shape (B, W-1, n) for data-reset nodes, else None
    num_residuals: int = eqx.field(static=True)  # counted entries (the loss's N)
    simulate_options: SimulateOptions
    free_shapes: tuple = eqx.field(static=True)
    batching: str = eqx.field(static=True)


def _reference(problem: Problem, transform, theta, position):
    """The value an `AtLeast` transform is bounded by (`None` for others): the
    referenced parameter (free: from `theta`; fixed: its leaf)."""
    if not isinstance(transform, AtLeast):
        return None
    ref = transform.reference
    return theta[position[ref]] if ref in position else problem.fixed_leaves[ref]


def decode(problem: Problem, u_params) -> list:
    """Unconstrained -> constrained free parameters, in `free_index` order."""
    theta: list = [None] * len(problem.free_index)
    position = {leaf: k for k, leaf in enumerate(problem.free_index)}
    for k in problem.order:  # references first
        t = problem.transforms[k]
        theta[k] = t.forward(u_params[k], _reference(problem, t, theta, position))
    return theta


def encode(problem: Problem, theta) -> tuple:
    position = {leaf: k for k, leaf in enumerate(problem.free_index)}
    return tuple(
        t.inverse(theta[k], _reference(problem, t, theta, position))
        for k, t in enumerate(problem.transforms)
    )


def rebuild(problem: Problem, theta) -> Model:
    leaves = list(problem.fixed_leaves)
    for k, index in enumerate(problem.free_index):
        leaves[index] = theta[k]
    return jtu.tree_unflatten(problem.treedef, leaves)


def _window_index(num_samples: int, num_windows: int) -> np.ndarray:
    length = (num_samples - 1) // num_windows
    return np.arange(num_windows)[:, None] * length + np.arange(length + 1)[None, :]


def simulate_options_for(options: SimulateOptions, mode: str) -> SimulateOptions:
    """The options of a pass in `mode` (``"fwd"``: forward-mode derivatives;
    ``"bwd"``/``"eval"``: reverse mode or none)."""
    # Forward-mode Jacobians need `diffrax.ForwardMode` inside the solves.
    if mode == "fwd" and options.adjoint is None:
        return dataclasses.replace(options, adjoint=diffrax.ForwardMode())
    return options


def simulate_window(system, friction, force, q0, qd0, ts, options):
    sol = simulate(
        system,
        friction,
        q0,
        qd0,
        ts[-1],
        t0=ts[0],
        force=force,
        ts=ts,
        throw=False,
        options=options,
    )
    return sol.q, sol.qd, sol.result == RESULTS.successful


def _map(fn, args, batching: str):
    """Map `fn` over the leading axis: `eqx.filter_vmap` (``"vmap"``) or a
    sequential `jax.lax.map` (``"map"``). A batch of one is called directly
    (batching the event-driven solve costs compile time for nothing)."""
    size = jtu.tree_leaves(args)[0].shape[0]
    if size == 1:
        out = fn(*jtu.tree_map(lambda x: x[0], args))
        return jtu.tree_map(lambda x: x[None], out)
    if batching == "map":
        return jax.lax.map(lambda a: fn(*a), args)
    return eqx.filter_vmap(fn)(*args)


def residuals_theta(problem: Problem, theta, nodes, mode: str = "bwd"):
    """Weighted residual vector (unnormalised) and per-window success flags, for
    constrained parameters `theta` (list in `free_index` order) and `nodes`."""
    model = rebuild(problem, theta)
    exps = model.experiments
    num_samples = exps.ts.shape[-1]
    index = _window_index(num_samples, problem.num_windows)  # (W, L+1), static
    ts_w = exps.ts[:, index]  # (B, W, L+1)
    q_meas = exps.q[:, index]  # (B, W, L+1, n)
    if problem.num_windows > 1:
        if problem.free_nodes:
            q_nodes, qd_nodes = nodes
        else:
            q_nodes, qd_nodes = problem.node_data
        q_start = jnp.concatenate([exps.q0[:, None], q_nodes], axis=1)
        qd_start = jnp.concatenate([exps.qd0[:, None], qd_nodes], axis=1)
    else:
        q_start, qd_start = exps.q0[:, None], exps.qd0[:, None]

    options = simulate_options_for(problem.simulate_options, mode)

    def one_experiment(force, q0s, qd0s, tss):
        run = lambda q0, qd0, ts: simulate_window(
            model.system, model.friction, force, q0, qd0, ts, options
        )
        return _map(run, (q0s, qd0s, tss), problem.batching)

    q_sim, qd_sim, ok = _map(
        one_experiment, (exps.force, q_start, qd_start, ts_w), problem.batching
    )
    # Window w > 0 starts on the previous window's last sample: count it once.
    mask = np.ones(index.shape)
    mask[1:, 0] = 0.0
    mask = jnp.asarray(mask)[None, :, :, None]
    w_q = problem.position_weight[:, None, None, :]  # (B, 1, 1, n)
    parts = [(q_sim - q_meas) * w_q * mask]
    if problem.use_velocity:
        qd_meas = exps.qd[:, index]
        w_v = problem.velocity_weight[:, None, None, :]
        parts.append((qd_sim - qd_meas) * w_v * mask)
    failed = ~ok[:, :, None, None]
    parts = [jnp.where(failed, _FAILED_RESIDUAL, p) for p in parts]
    flat = [p.reshape(-1) for p in parts]
    if problem.num_windows > 1 and problem.free_nodes:
        duration = ts_w[:, :-1, -1] - ts_w[:, :-1, 0]  # (B, W-1)
        c = problem.continuity_weight * problem.position_weight[:, None, :]
        dq = (q_sim[:, :-1, -1] - q_nodes) * c
        dqd = (qd_sim[:, :-1, -1] - qd_nodes) * c * duration[..., None]
        flat += [dq.reshape(-1), dqd.reshape(-1)]
    return jnp.concatenate(flat), ok


def residuals(problem: Problem, u, mode: str = "bwd"):
    """`residuals_theta` at unconstrained ``u = (u_params, nodes)``."""
    u_params, nodes = u
    return residuals_theta(problem, decode(problem, u_params), nodes, mode)


def flat_theta(problem: Problem, u) -> Array:
    """The free parameters at `u`, flattened (the order of `FitResult.names`)."""
    return jnp.concatenate([jnp.ravel(t) for t in decode(problem, u[0])])


def transform_jacobian(problem: Problem, u) -> Array:
    """``∂θ/∂u`` for the flattened unknowns (parameters then nodes; identity on
    the nodes), for the delta-method covariance of the parameters."""
    flat, unravel = ravel_pytree(u)

    def theta_and_nodes(x):
        params, nodes = unravel(x)
        theta = jnp.concatenate([jnp.ravel(t) for t in decode(problem, params)])
        return jnp.concatenate([theta, ravel_pytree(nodes)[0]])

    return jax.jacfwd(theta_and_nodes)(flat)


def _leaf_indices(where, treedef, num_leaves: int, what: str) -> list[int]:
    """Indices of the leaves `where(model)` selects (a leaf, a sequence of leaves
    or a subtree)."""
    index_model = jtu.tree_unflatten(treedef, list(range(num_leaves)))
    try:
        selected = where(index_model)
    except Exception as e:
        raise ValueError(
            f"could not apply the `{what}` selector to the model: {e}"
        ) from e
    indices = jtu.tree_leaves(selected)
    if not indices or not all(isinstance(i, int) for i in indices):
        raise ValueError(
            f"`{what}` must select leaves (arrays) of the model, e.g. "
            "`lambda m: (m.friction.fc, m.friction.fs)`."
        )
    return list(dict.fromkeys(indices))


def _free_indices(free, model, treedef, leaves, paths) -> list[int]:
    if free is None:
        n_sys = len(jtu.tree_leaves(model.system))
        n_fric = len(jtu.tree_leaves(model.friction))
        indices = list(range(n_sys, n_sys + n_fric))
    elif callable(free):
        indices = _leaf_indices(free, treedef, len(leaves), "free")
    else:
        index_model = jtu.tree_unflatten(treedef, list(range(len(leaves))))
        chosen, _ = eqx.partition(index_model, free, is_leaf=lambda x: x is None)
        indices = [i for i in jtu.tree_leaves(chosen) if isinstance(i, int)]
    if not indices:
        raise ValueError("no free parameter selected.")
    data_paths = (".experiments.ts", ".experiments.q", ".experiments.qd")
    for i in indices:
        if paths[i] in data_paths:
            raise ValueError(
                f"`{paths[i]}` is measured data and cannot be fitted; free "
                "parameters live in the system, the friction law, the forces and "
                "the initial states (`q0`, `qd0`)."
            )
        if not jnp.issubdtype(jnp.result_type(leaves[i]), jnp.inexact):
            raise ValueError(f"`{paths[i]}` is not a floating-point array.")
    return indices


def _nested_laws(where, law):
    """``(where, law)`` for `law` and every law held in its fields (the law
    inside `Regularized` or `Karnopp`), `where` selecting it in a `Model`."""
    yield where, law
    for field in dataclasses.fields(law):
        inner = getattr(law, field.name)
        if isinstance(inner, AbstractFrictionLaw):
            select = lambda m, w=where, n=field.name: getattr(w(m), n)
            yield from _nested_laws(select, inner)


def _default_transforms(model, free_index, treedef, n_leaves) -> dict:
    n_physical = len(jtu.tree_leaves((model.system, model.friction)))
    transforms: dict[int, AbstractTransform] = {
        i: Positive() if i < n_physical else Identity() for i in free_index
    }
    # The orders the laws declare (a static limit above the kinetic level).
    for where, law in _nested_laws(lambda m: m.friction, model.friction):
        for upper, lower in law.ordered_levels():
            select = lambda name, w=where: lambda m: getattr(w(m), name)
            (hi,) = _leaf_indices(select(upper), treedef, n_leaves, upper)
            (lo,) = _leaf_indices(select(lower), treedef, n_leaves, lower)
            if hi in transforms and hi != lo:
                transforms[hi] = AtLeast(reference=lo)
    return transforms


def _resolve_transforms(user, model, free_index, leaves, paths, treedef):
    transforms = _default_transforms(model, free_index, treedef, len(leaves))
    for where, transform in user or ():
        if not isinstance(transform, AbstractTransform):
            raise TypeError(
                "`transforms` entries must be (where, transform) pairs with a "
                f"jaxfric.identify transform; got {type(transform).__name__}."
            )
        for i in _leaf_indices(where, treedef, len(leaves), "transforms"):
            if i not in transforms:
                raise ValueError(f"a transform is given for `{paths[i]}`, not free.")
            if isinstance(transform, AtLeast) and callable(transform.reference):
                (ref,) = _leaf_indices(
                    transform.reference, treedef, len(leaves), "AtLeast.reference"
                )
                transform = AtLeast(reference=ref, scale=transform.scale)
            transforms[i] = transform
    for i, t in transforms.items():
        if isinstance(t, AtLeast):
            ref = t.reference
            if isinstance(transforms.get(ref), AtLeast):
                raise ValueError(
                    f"`{paths[i]}` is bounded by `{paths[ref]}`, itself bounded by "
                    "another parameter; chains of AtLeast are not supported."
                )
    # Scales from the initial values; reject starts outside the feasible set.
    resolved = []
    for i in free_index:
        t = transforms[i]
        theta0 = np.asarray(leaves[i], dtype=float)
        ref0 = (
            np.asarray(leaves[t.reference], dtype=float)
            if isinstance(t, AtLeast)
            else None
        )
        _check_start(paths[i], t, theta0, ref0, paths)
        resolved.append(t.with_scale(theta0, ref0))
    return tuple(resolved)


def _check_start(path, t, theta0, ref0, paths) -> None:
    if isinstance(t, Positive) and np.any(theta0 <= 0):
        raise ValueError(
            f"the start of `{path}` is {theta0!r}, but its transform (Positive) "
            "keeps it > 0; start from a positive value or give another transform."
        )
    if isinstance(t, AtLeast) and np.any(theta0 <= ref0):
        raise ValueError(
            f"the start of `{path}` is {theta0!r}, not above `{paths[t.reference]}`"
            f" = {ref0!r} as its transform (AtLeast) needs; start it strictly above."
        )
    if isinstance(t, Bounded) and (
        np.any(theta0 <= np.asarray(t.lower)) or np.any(theta0 >= np.asarray(t.upper))
    ):
        raise ValueError(
            f"the start of `{path}` is {theta0!r}, outside its bounds "
            f"({np.asarray(t.lower)!r}, {np.asarray(t.upper)!r})."
        )


def _node_start(exps: Experiment, num_windows: int):
    """Data at the window starts w >= 1: measured q, measured or estimated q̇."""
    q = np.asarray(exps.q)
    index = _window_index(q.shape[1], num_windows)[1:, 0]
    if exps.qd is not None:
        qd = np.asarray(exps.qd)
    else:
        ts = np.asarray(exps.ts)
        window = min(15, q.shape[1] - (1 - q.shape[1] % 2))
        window = window if window % 2 else window - 1
        dts = np.diff(ts, axis=1).mean(axis=1)
        order = min(3, window - 1)
        qd = np.stack(
            [savgol(q[b], window, order, 1, float(dts[b])) for b in range(len(q))]
        )
    return jnp.asarray(q[:, index]), jnp.asarray(qd[:, index])


def _expand_names(paths, free_index, leaves) -> tuple[str, ...]:
    names = []
    for i in free_index:
        shape = np.shape(leaves[i])
        if shape == ():
            names.append(paths[i])
        else:
            for idx in np.ndindex(*shape):
                names.append(f"{paths[i]}[{', '.join(map(str, idx))}]")
    return tuple(names)


def _weights(name: str, value, batch: int, n: int) -> Array:
    """Weights of shape ``(batch, n)``: a scalar or ``(n,)`` (per coordinate,
    the same for every experiment) or ``(batch, n)`` / ``(batch, 1)`` (per
    experiment, e.g. the inverse noise level of each record)."""
    w = np.asarray(value, dtype=float)
    if w.ndim <= 1:
        w = w[None] if w.ndim == 1 else w
        shape_ok = w.ndim == 0 or w.shape[-1] in (1, n)
    else:
        shape_ok = w.ndim == 2 and w.shape[0] in (1, batch) and w.shape[1] in (1, n)
    if not shape_ok:
        raise ValueError(
            f"`{name}` must be a scalar, shape ({n},) (per coordinate) or "
            f"({batch}, {n}) (per experiment and coordinate); got {np.shape(value)}."
        )
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"`{name}` must be finite and >= 0; got {value!r}.")
    return jnp.asarray(np.broadcast_to(w, (batch, n)))


def build_problem(
    system,
    friction,
    experiments,
    *,
    free,
    transforms,
    position_weight,
    velocity_weight,
    shooting: MultipleShooting | None,
    simulate_options: SimulateOptions | None,
    batching: str = "vmap",
):
    """Check the inputs and build the `Problem` and the starting unknowns.

    Returns:
        ``(problem, u0, names, model)``: the problem, the unconstrained start
        ``(u_params, nodes)``, the names of the flattened free parameters and
        the starting `Model` (experiments stacked).
    """
    if isinstance(experiments, Experiment) and experiments.ts.ndim == 1:
        experiments = [experiments]
    if not isinstance(experiments, Experiment):
        experiments = stack_experiments(experiments)
    if not isinstance(system, AbstractSystem):
        raise TypeError(f"`system` must be a jaxfric system; got {type(system)}.")
    if not isinstance(friction, AbstractFrictionLaw):
        raise TypeError(f"`friction` must be a friction law; got {type(friction)}.")
    if experiments.n_dof != system.n_dof:
        raise ValueError(
            f"experiments have {experiments.n_dof} coordinates but the system has "
            f"n_dof={system.n_dof}."
        )
    if batching not in ("vmap", "map"):
        raise ValueError(f"`batching` must be 'vmap' or 'map'; got {batching!r}.")
    shooting = shooting or MultipleShooting(1)
    num_samples = experiments.num_samples
    if (num_samples - 1) % shooting.num_windows:
        raise ValueError(
            f"(samples - 1) = {num_samples - 1} is not divisible by num_windows = "
            f"{shooting.num_windows}."
        )
    n, batch = experiments.n_dof, experiments.ts.shape[0]
    w_q = _weights("position_weight", position_weight, batch, n)
    w_v = _weights("velocity_weight", velocity_weight, batch, n)
    use_velocity = bool(np.any(np.asarray(w_v) != 0))
    if use_velocity and experiments.qd is None:
        raise ValueError(
            "`velocity_weight` is nonzero but no velocities were measured."
        )
    model = Model(system, friction, experiments)
    path_leaves, treedef = jtu.tree_flatten_with_path(model)
    paths = [jtu.keystr(p) for p, _ in path_leaves]
    leaves = [leaf for _, leaf in path_leaves]
    free_index = _free_indices(free, model, treedef, leaves, paths)
    resolved = _resolve_transforms(
        transforms, model, free_index, leaves, paths, treedef
    )
    order = tuple(
        k for k, t in enumerate(resolved) if not isinstance(t, AtLeast)
    ) + tuple(k for k, t in enumerate(resolved) if isinstance(t, AtLeast))
    fixed_leaves = [None if i in free_index else leaf for i, leaf in enumerate(leaves)]

    windows = shooting.num_windows
    length = (num_samples - 1) // windows
    channels = 2 if use_velocity else 1
    num_residuals = batch * n * (windows * length + 1) * channels
    node_data, nodes = None, None
    if windows > 1:
        node_q, node_qd = _node_start(experiments, windows)
        if shooting.free_nodes:
            nodes = (node_q, node_qd)
            num_residuals += 2 * batch * (windows - 1) * n
        else:
            node_data = (node_q, node_qd)
    names = _expand_names(paths, free_index, leaves)
    problem = Problem(
        treedef=treedef,
        free_index=tuple(free_index),
        order=order,
        fixed_leaves=fixed_leaves,
        transforms=resolved,
        position_weight=w_q,
        velocity_weight=w_v,
        use_velocity=use_velocity,
        num_windows=windows,
        free_nodes=shooting.free_nodes,
        continuity_weight=jnp.asarray(shooting.continuity_weight, float),
        node_data=node_data,
        num_residuals=num_residuals,
        simulate_options=check_options(simulate_options),
        free_shapes=tuple(tuple(np.shape(leaves[i])) for i in free_index),
        batching=batching,
    )
    theta0 = [jnp.asarray(leaves[i], float) for i in free_index]
    return problem, (encode(problem, theta0), nodes), names, model


def stderr_model(problem: Problem, stderr: np.ndarray):
    """Flat standard errors -> a tree like `Model`, `None` at fixed leaves."""
    leaves: list = [None] * len(problem.fixed_leaves)
    offset = 0
    for i, shape in zip(problem.free_index, problem.free_shapes, strict=True):
        size = int(np.prod(shape, dtype=int))
        leaves[i] = jnp.asarray(stderr[offset : offset + size].reshape(shape))
        offset += size
    return jtu.tree_unflatten(problem.treedef, leaves)
