"""Validation helpers shared by every constructor and entry point.

Checks run on concrete values only: a value that is a JAX tracer (a module built
inside `jit`/`vmap`) cannot be inspected, so it is passed through; traced values
are checked at run time with `eqx.error_if` where the entry point needs it.
"""

import jax
import jax.numpy as jnp
import numpy as np


def as_float(value) -> jax.Array:
    """Converter for parameter fields: a float array of JAX's default float dtype."""
    return jnp.asarray(value, dtype=float)


def as_optional_float(value) -> jax.Array | None:
    """`as_float` for optional parameter fields: `None` stays `None` (no leaf)."""
    return None if value is None else as_float(value)


def is_concrete(value) -> bool:
    """True when `value` can be read on the host (not a tracer)."""
    return not isinstance(value, jax.core.Tracer)


def check_finite(name: str, value) -> None:
    """Raise `ValueError` naming `name` if any entry is NaN or infinite."""
    if is_concrete(value) and not np.all(np.isfinite(np.asarray(value))):
        raise ValueError(f"`{name}` must be finite, got {np.asarray(value)!r}.")


def check_shape(name: str, value, shape: tuple[int, ...], why: str) -> None:
    """Raise `ValueError` unless `value` has exactly `shape`.

    Shapes are static under `jit`/`vmap`, so this works on tracers too and costs
    nothing at run time. A wrong length must not be broadcast silently (a length-1
    velocity on a 2-DoF robot would be).

    Args:
        name: the argument's name, e.g. ``"qd"``.
        value: an array (or anything `jnp.shape` accepts).
        shape: the required shape.
        why: where the shape comes from, e.g. ``"a system with n_dof=2"``.
    """
    got = jnp.shape(value)
    if got != shape:
        raise ValueError(
            f"`{name}` must have shape {shape} for {why}; got shape {got}."
        )


def check_range(
    name: str,
    value,
    *,
    lower: float | None = None,
    upper: float | None = None,
    lower_open: bool = False,
) -> None:
    """Raise `ValueError` if `value` is not finite or leaves `[lower, upper]`.

    With `lower_open=True` the lower bound is excluded (e.g. a positive velocity
    scale). The message names the parameter and the allowed range.
    """
    if not is_concrete(value):
        return
    check_finite(name, value)
    arr = np.asarray(value)
    lo = "-inf" if lower is None else repr(float(lower))
    hi = "inf" if upper is None else repr(float(upper))
    allowed = f"{'(' if lower_open or lower is None else '['}{lo}, {hi}]"
    if lower is not None:
        bad = arr <= lower if lower_open else arr < lower
        if np.any(bad):
            raise ValueError(f"`{name}` must lie in {allowed}, got {arr!r}.")
    if upper is not None and np.any(arr > upper):
        raise ValueError(f"`{name}` must lie in {allowed}, got {arr!r}.")


def check_ge(name: str, value, other_name: str, other) -> None:
    """Raise `ValueError` unless `value >= other` elementwise (e.g. `fs >= fc`)."""
    if not (is_concrete(value) and is_concrete(other)):
        return
    a, b = np.asarray(value), np.asarray(other)
    try:
        ok = np.all(a >= b)
    except ValueError as e:  # shapes that do not broadcast
        raise ValueError(
            f"`{name}` (shape {a.shape}) and `{other_name}` (shape {b.shape}) "
            "do not broadcast."
        ) from e
    if not ok:
        raise ValueError(
            f"`{name}` must be >= `{other_name}` (static limit at least the kinetic "
            f"level), got {name}={a!r}, {other_name}={b!r}."
        )


def check_broadcastable(names_values: dict) -> tuple[int, ...]:
    """Raise `ValueError` if the parameters' shapes do not broadcast together.

    Returns the common shape. Parameters of a law are scalars or vectors with one
    entry per friction element.
    """
    shapes = {k: np.shape(v) for k, v in names_values.items()}
    try:
        shape = np.broadcast_shapes(*shapes.values())
    except ValueError as e:
        desc = ", ".join(f"{k}: {s}" for k, s in shapes.items())
        raise ValueError(f"parameter shapes do not broadcast ({desc}).") from e
    if len(shape) > 1:
        desc = ", ".join(f"{k}: {s}" for k, s in shapes.items())
        raise ValueError(
            "friction parameters must be scalars or vectors with one entry per "
            f"friction element; got shapes {desc}."
        )
    return shape


def check_knots(ts, values, noun: str = "samples") -> None:
    """Raise `ValueError` unless ``(ts, values)`` are valid knots of a signal
    sampled in time (`Tabulated`, `CubicSpline`): `ts` 1-D with at least two
    entries, finite and strictly increasing; `values` of shape ``(T,)`` or
    ``(T, n)`` with ``T = len(ts)``, finite. Messages name `ts` and `values`.

    Args:
        ts: sample times, s.
        values: samples (any unit).
        noun: what the entries are called in messages (``"samples"``,
            ``"knots"``).
    """
    ts_shape, values_shape = np.shape(ts), np.shape(values)
    if len(ts_shape) != 1 or ts_shape[0] < 2:
        raise ValueError(
            f"`ts` must be 1-D with at least 2 {noun}; got shape {ts_shape}."
        )
    if len(values_shape) not in (1, 2) or values_shape[0] != ts_shape[0]:
        raise ValueError(
            "`values` must have shape (T,) or (T, n) with T = len(ts) = "
            f"{ts_shape[0]}; got shape {values_shape}."
        )
    check_finite("ts", ts)
    check_finite("values", values)
    if is_concrete(ts) and np.any(np.diff(np.asarray(ts)) <= 0):
        raise ValueError("`ts` must be strictly increasing.")
