"""Validation helpers shared by every constructor and entry point.

The `check_*` helpers run on concrete values only: a value that is a JAX tracer
(a module built inside `jit`, `vmap` or `grad`) cannot be inspected, so it is
passed through. Laws, systems and forces therefore *declare* their parameter
ranges once, as `InRange`, `AtLeast` and `Increasing` objects returned by their
``parameter_checks()`` method; the same declaration raises the `ValueError` at
construction (`raise_if_invalid`, through the helpers) and gives the traced
boolean (`invalid`) that `jaxfric.simulate` turns into an `eqx.error_if` or a
`RESULTS.invalid_parameters` code.
"""

import abc
import dataclasses

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


def as_vector(name: str, value, n: int, why: str) -> jax.Array:
    """`value` as a float array of shape ``(n,)``: a scalar is broadcast, any
    other shape raises `ValueError` naming `name` (`why`: where ``n`` comes
    from, as in `check_shape`)."""
    arr = jnp.asarray(value, dtype=float)
    if arr.ndim == 0:
        arr = jnp.broadcast_to(arr, (n,))
    check_shape(name, arr, (n,), why)
    return arr


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
    allowed = _allowed_range(lower, upper, lower_open)
    if lower is not None:
        bad = arr <= lower if lower_open else arr < lower
        if np.any(bad):
            raise ValueError(f"`{name}` must lie in {allowed}, got {arr!r}.")
    if upper is not None and np.any(arr > upper):
        raise ValueError(f"`{name}` must lie in {allowed}, got {arr!r}.")


def _allowed_range(lower, upper, lower_open: bool) -> str:
    """The interval `check_range` allows, as its messages write it."""
    lo = "-inf" if lower is None else repr(float(lower))
    hi = "inf" if upper is None else repr(float(upper))
    return f"{'(' if lower_open or lower is None else '['}{lo}, {hi}]"


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
        got = f"got {name}={a!r}, {other_name}={b!r}"
        raise ValueError(f"{_ge_requirement(name, other_name)}, {got}.")


def _ge_requirement(name: str, other_name: str) -> str:
    return (
        f"`{name}` must be >= `{other_name}` (static limit at least the kinetic level)"
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


def check_fields_broadcast(module, names) -> tuple[int, ...]:
    """`check_broadcastable` over the fields `names` of `module` (an unset
    optional field, `None`, counts as a scalar)."""
    return check_broadcastable({name: getattr(module, name) for name in names})


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
    check_increasing("ts", ts)


def check_increasing(name: str, value) -> None:
    """Raise `ValueError` naming `name` unless the 1-D `value` strictly increases."""
    if is_concrete(value) and np.any(np.diff(np.asarray(value)) <= 0):
        raise ValueError(f"`{name}` must be strictly increasing.")


class AbstractCheck(abc.ABC):
    """One declared parameter check: a name, its (possibly traced) value and the
    allowed range or relation."""

    @abc.abstractmethod
    def raise_if_invalid(self) -> None:
        """Raise `ValueError` on a concrete violation; a tracer passes."""

    @abc.abstractmethod
    def invalid(self) -> jax.Array:
        """A boolean scalar, traceable: True if any entry violates the check
        (a NaN always does)."""

    @abc.abstractmethod
    def requirement(self) -> str:
        """The rule in words, naming the parameter (static text)."""

    def is_traced(self) -> bool:
        """True if a value is a tracer, so `raise_if_invalid` could not check it."""
        values = [getattr(self, f.name) for f in dataclasses.fields(self)]
        return not all(is_concrete(v) for v in jax.tree_util.tree_leaves(values))


@dataclasses.dataclass(frozen=True)
class InRange(AbstractCheck):
    """`value` finite and in ``[lower, upper]`` (``(lower, upper]`` with
    `lower_open`); with no bounds, only finite. As `check_range`."""

    name: str
    value: object
    lower: float | None = None
    upper: float | None = None
    lower_open: bool = False

    def raise_if_invalid(self) -> None:
        if self.lower is None and self.upper is None:
            check_finite(self.name, self.value)
        else:
            check_range(
                self.name,
                self.value,
                lower=self.lower,
                upper=self.upper,
                lower_open=self.lower_open,
            )

    def invalid(self) -> jax.Array:
        v = jnp.asarray(self.value)
        bad = ~jnp.isfinite(v)
        if self.lower is not None:
            bad = bad | ((v <= self.lower) if self.lower_open else (v < self.lower))
        if self.upper is not None:
            bad = bad | (v > self.upper)
        return jnp.any(bad)

    def requirement(self) -> str:
        if self.lower is None and self.upper is None:
            return f"`{self.name}` must be finite"
        allowed = _allowed_range(self.lower, self.upper, self.lower_open)
        return f"`{self.name}` must lie in {allowed}"


@dataclasses.dataclass(frozen=True)
class AtLeast(AbstractCheck):
    """``value >= other`` elementwise (a static limit at least the kinetic
    level, e.g. ``fs >= fc``). As `check_ge`."""

    name: str
    value: object
    other_name: str
    other: object

    def raise_if_invalid(self) -> None:
        check_ge(self.name, self.value, self.other_name, self.other)

    def invalid(self) -> jax.Array:
        # ~(a >= b), not a < b: a NaN on either side is a violation.
        return jnp.any(~(jnp.asarray(self.value) >= jnp.asarray(self.other)))

    def requirement(self) -> str:
        return _ge_requirement(self.name, self.other_name)


@dataclasses.dataclass(frozen=True)
class Increasing(AbstractCheck):
    """A 1-D `value` (sample times) finite and strictly increasing. As
    `check_finite` and `check_increasing`."""

    name: str
    value: object

    def raise_if_invalid(self) -> None:
        check_finite(self.name, self.value)
        check_increasing(self.name, self.value)

    def invalid(self) -> jax.Array:
        v = jnp.asarray(self.value)
        return jnp.any(~jnp.isfinite(v)) | jnp.any(~(jnp.diff(v) > 0))

    def requirement(self) -> str:
        return f"`{self.name}` must be finite and strictly increasing"


@dataclasses.dataclass(frozen=True)
class SaveTimes(AbstractCheck):
    """Save times `value` (1-D) finite, non-decreasing and inside
    ``[t0, t1]``."""

    name: str
    value: object
    t0: object
    t1: object

    def raise_if_invalid(self) -> None:
        check_finite(self.name, self.value)
        values = (self.value, self.t0, self.t1)
        if not all(is_concrete(v) for v in values):
            return
        arr, lo, hi = np.asarray(self.value), float(self.t0), float(self.t1)
        if np.any(np.diff(arr) < 0):
            raise ValueError(f"`{self.name}` must be non-decreasing.")
        if arr[0] < lo or arr[-1] > hi:
            raise ValueError(f"`{self.name}` must lie in [t0, t1] = [{lo}, {hi}].")

    def invalid(self) -> jax.Array:
        v = jnp.asarray(self.value)
        inside = (v >= self.t0) & (v <= self.t1)  # False for a NaN
        return jnp.any(~inside) | jnp.any(~(jnp.diff(v) >= 0))

    def requirement(self) -> str:
        return f"`{self.name}` must be finite, non-decreasing and lie in [t0, t1]"


def raise_if_invalid(checks) -> None:
    """Run declared checks on concrete values (`__check_init__`), in order."""
    for check in checks:
        check.raise_if_invalid()
