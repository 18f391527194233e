"""An experiment to fit: measured samples, the known input, the initial state;
and synthetic noisy records simulated from a known model."""

import math
from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .._check import check_finite, is_concrete
from ..forces import AbstractForce, Tabulated
from ..friction import AbstractFrictionLaw
from ..simulate import SimulateOptions, simulate
from ..systems import AbstractSystem
from ._record import Record


def _as_matrix(name: str, value) -> Array:
    arr = jnp.asarray(value, dtype=float)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"`{name}` must have shape (T,) or (T, n); got {arr.shape}.")
    check_finite(name, arr)
    return arr


class Experiment(eqx.Module):
    """One measured experiment: positions (and optionally velocities) sampled at
    `ts` while the known applied force `force` drove the system from the state
    (`q0`, `qd0`).

    Every array is a leaf of the model tree that `fit` sees, so `q0`, `qd0` and
    the numbers inside `force` can be chosen as unknowns (fitted per experiment);
    the samples `ts`, `q`, `qd` are data and never fitted.

    Args:
        ts: sample times, s, strictly increasing, shape ``(T,)``.
        q: measured positions, m or rad, shape ``(T, n)`` (``(T,)`` for n = 1).
        qd: measured velocities, shape ``(T, n)``, or `None`.
        force: the known applied force (a `jaxfric.forces` force), or `None`.
        q0: initial positions, shape ``(n,)``; default the first sample of `q`.
        qd0: initial velocities, shape ``(n,)``; default the first sample of `qd`,
            or zero (start at rest) when `qd` is not measured.
    """

    ts: Float[Array, " t"]
    q: Float[Array, "t dof"]
    qd: Float[Array, "t dof"] | None
    force: AbstractForce | None
    q0: Float[Array, " dof"]
    qd0: Float[Array, " dof"]

    def __init__(self, ts, q, qd=None, *, force=None, q0=None, qd0=None):
        ts = jnp.asarray(ts, dtype=float)
        if ts.ndim != 1 or ts.shape[0] < 2:
            raise ValueError(f"`ts` must be 1-D with >= 2 samples; got {ts.shape}.")
        check_finite("ts", ts)
        if is_concrete(ts) and np.any(np.diff(np.asarray(ts)) <= 0):
            raise ValueError("`ts` must be strictly increasing.")
        q = _as_matrix("q", q)
        if q.shape[0] != ts.shape[0]:
            raise ValueError(
                f"`q` has {q.shape[0]} samples but `ts` has {ts.shape[0]}."
            )
        if qd is not None:
            qd = _as_matrix("qd", qd)
            if qd.shape != q.shape:
                raise ValueError(
                    f"`qd` must have the shape of `q`, {q.shape}; got {qd.shape}."
                )
        if force is not None and not isinstance(force, AbstractForce):
            raise TypeError(
                f"`force` must be a jaxfric.forces force; got {type(force).__name__}."
            )
        n = q.shape[1]
        q0 = q[0] if q0 is None else jnp.broadcast_to(jnp.asarray(q0, float), (n,))
        if qd0 is None:
            qd0 = jnp.zeros((n,)) if qd is None else qd[0]
        qd0 = jnp.broadcast_to(jnp.asarray(qd0, float), (n,))
        self.ts, self.q, self.qd, self.force = ts, q, qd, force
        self.q0, self.qd0 = q0, qd0

    @property
    def n_dof(self) -> int:
        return self.q.shape[-1]

    @property
    def num_samples(self) -> int:
        return self.ts.shape[-1]


def from_record(
    record: Record, *, force: AbstractForce | None = None, kind: str = "linear", **kw
) -> Experiment:
    """An `Experiment` from a measured `Record`.

    Args:
        record: the measured record (`jaxfric.io.load_record`).
        force: the applied force; default: the record's inputs ``u`` interpolated
            (`jaxfric.forces.Tabulated` with `kind`), or none if it has no ``u``.
        kind: interpolation of the inputs, ``"linear"`` or ``"previous"``.
        **kw: `q0`, `qd0` (see `Experiment`).

    Returns:
        The `Experiment`.
    """
    if force is None and record.u is not None:
        values = record.u[:, 0] if record.u.shape[1] == 1 else record.u
        force = Tabulated(record.ts, values, kind=kind)
    return Experiment(record.ts, record.q, record.qd, force=force, **kw)


def stack_experiments(experiments: Sequence[Experiment]) -> Experiment:
    """Stack experiments along a new leading axis (for `jax.vmap`).

    They must share the number of samples, the number of coordinates, whether
    velocities were measured, and the type and shapes of their forces.
    """
    experiments = list(experiments)
    if not experiments:
        raise ValueError("at least one experiment is needed.")
    for i, e in enumerate(experiments):
        if not isinstance(e, Experiment):
            raise TypeError(f"experiment {i} is a {type(e).__name__}, not Experiment.")
    first = experiments[0]
    structure = jax.tree_util.tree_structure(first)
    for i, e in enumerate(experiments[1:], start=1):
        if jax.tree_util.tree_structure(e) != structure:
            raise ValueError(
                f"experiment {i} differs in structure from experiment 0 (velocities "
                "measured in one only, or a different force type); they cannot be "
                "batched together."
            )
        shapes = [np.shape(x) for x in jax.tree_util.tree_leaves(e)]
        shapes0 = [np.shape(x) for x in jax.tree_util.tree_leaves(first)]
        if shapes != shapes0:
            raise ValueError(
                f"experiment {i} has arrays of other shapes than experiment 0 "
                f"(samples: {e.num_samples} vs {first.num_samples}); batched "
                "experiments must have the same number of samples."
            )
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *experiments)


def synthesize_record(
    system: AbstractSystem,
    friction: AbstractFrictionLaw,
    ts: Float[ArrayLike, " T"],
    *,
    force: AbstractForce,
    q0: Any = 0.0,
    qd0: Any = 0.0,
    noise: float = 0.0,
    seed: int | Sequence[int] | np.random.Generator = 0,
    simulate_options: SimulateOptions | None = None,
    source: str = "synthetic record",
) -> Record:
    """A record simulated from a known model, with Gaussian position noise of
    standard deviation ``noise · RMS(q)`` (relative to the record's
    root-mean-square position), e.g. to test an identification.

    Args:
        system, friction, force: the true model and its input.
        ts: sample times, s, strictly increasing, starting at the initial time.
        q0, qd0: initial state (m or rad, m/s or rad/s).
        noise: relative noise level, ``>= 0``.
        seed: for `numpy.random.default_rng` (an int, a sequence such as
            ``[seed, record_index]``, or a `Generator`, which is drawn from).
        simulate_options: a `jaxfric.simulate.SimulateOptions`.
        source: the record's name in error messages.

    Returns:
        A `Record` with `ts` and the noisy positions (no velocities, no inputs).
    """
    if not noise >= 0:
        raise ValueError(f"`noise` must be >= 0; got {noise}.")
    ts = np.asarray(ts, dtype=float)
    sol = simulate(
        system,
        friction,
        q0,
        qd0,
        float(ts[-1]),
        t0=float(ts[0]),
        ts=ts,
        force=force,
        options=simulate_options,
    )
    q = np.asarray(sol.q)
    rng = np.random.default_rng(seed)
    q = q + noise * math.sqrt(float(np.mean(q**2))) * rng.normal(size=q.shape)
    return Record(ts=ts, q=q, source=source)


__all__ = ["Experiment", "from_record", "stack_experiments", "synthesize_record"]
