"""Elementary functions for the vector fields: ``sin`` and ``cos`` in float64.

XLA's CPU backend evaluates float64 ``sin``/``cos`` element by element, several
times slower than ``exp``. A batched simulation with a sinusoidal force or a
revolute joint evaluates them in every stage of every step, so they were a
large part of the forced-oscillator benchmark. The functions below are the same
computation written with plain arithmetic, which XLA fuses and vectorises
(timings: README, Performance).

Method (Sun fdlibm, ``k_sin.c``/``k_cos.c``/``e_rem_pio2.c``): ``k =
round(2x/π)``, ``r = x − k·π/2`` with π/2 split in three parts (Cody & Waite,
"Software Manual for the Elementary Functions", 1980, Ch. 8), so ``k·P1`` is
exact; then fdlibm's minimax polynomials for ``sin r`` and ``cos r`` on
``|r| ≤ π/4`` (error below 2^-58) and the quadrant ``k mod 4``.

Accuracy, measured against 80-bit ``numpy.longdouble`` on 5000 uniform
arguments per range (``tests/test_math.py``): at most 1.3 ulp of the result for
``|x| ≤ 1e3`` and 1.9 ulp for ``|x| ≤ 1e6`` (``numpy.sin``: 0.5 ulp); absolute
error below 2e-16 up to ``|x| = 2^40``, where the argument's own ulp is 1e-4.
Beyond ``|x| = 2^40`` (1.1e12 rad) the reduction loses
exactness, so the functions return NaN there rather than a wrong value; NaN and
±inf give NaN, as in libm.

Other dtypes (float32, where XLA's own polynomial is already vectorised) go to
`jax.numpy.sin`/`cos` unchanged. Derivatives are exact in the sense of a
`jax.custom_jvp`: ``d sin = cos dx``, ``d cos = −sin dx``, with this module's
values, to any order.
"""

import itertools
import operator

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float

# π/2 = P1 + P2 + P3 to 2^-140; P1 and P2 have 33 significant bits, so k·P1 and
# k·P2 are exact for |k| < 2^20 (fdlibm pio2_1, pio2_2, pio2_3).
_P1 = 1.57079632673412561417e00
_P2 = 6.07710050630396597660e-11
_P3 = 2.02226624871116645580e-21
_TWO_OVER_PI = 6.36619772367581382433e-01
_LIMIT = 2.0**40
# fdlibm __kernel_sin S1..S6 and __kernel_cos C1..C6.
_S = (
    -1.66666666666666324348e-01,
    8.33333333332248946124e-03,
    -1.98412698298579493134e-04,
    2.75573137070700676789e-06,
    -2.50507602534068634195e-08,
    1.58969099521155010221e-10,
)
_C = (
    4.16666666666666019037e-02,
    -1.38888888888741095749e-03,
    2.48015872894767294178e-05,
    -2.75573143513906633035e-07,
    2.08757232129817482790e-09,
    -1.13596475577881948265e-11,
)


def _sincos_float64(x):
    k = jnp.round(x * _TWO_OVER_PI)
    r = ((x - k * _P1) - k * _P2) - k * _P3
    quadrant = k - 4.0 * jnp.floor(0.25 * k)  # k mod 4, exact in float
    z = r * r
    poly_s = _S[1] + z * (_S[2] + z * (_S[3] + z * (_S[4] + z * _S[5])))
    sin_r = r + (z * r) * (_S[0] + z * poly_s)
    poly_c = _C[2] + z * (_C[3] + z * (_C[4] + z * _C[5]))
    poly_c = z * (_C[0] + z * (_C[1] + z * poly_c))
    half_z = 0.5 * z
    w = 1.0 - half_z
    # fdlibm: 1 − z/2 plus its own rounding error, then the polynomial.
    cos_r = w + (((1.0 - w) - half_z) + z * poly_c)
    odd = (quadrant == 1.0) | (quadrant == 3.0)
    sin = jnp.where(odd, cos_r, sin_r)
    cos = jnp.where(odd, sin_r, cos_r)
    # sin(x + kπ/2): quadrants 2, 3 negate sin; 1, 2 negate cos.
    sin = jnp.where(quadrant >= 2.0, -sin, sin)
    cos = jnp.where((quadrant == 1.0) | (quadrant == 2.0), -cos, cos)
    outside = ~(jnp.abs(x) <= _LIMIT)  # also NaN and ±inf
    return jnp.where(outside, jnp.nan, sin), jnp.where(outside, jnp.nan, cos)


@jax.custom_jvp
def sincos(x: ArrayLike) -> tuple[Float[Array, "*shape"], Float[Array, "*shape"]]:
    """``(sin x, cos x)`` elementwise, `x` in rad; vectorised float64 (module doc).

    Returns:
        Two arrays of the shape of `x`; float64 values within 2 ulp of the
        exact ones for ``|x| ≤ 1e6`` and 2e-16 up to ``2^40``, NaN beyond;
        other float dtypes are `jax.numpy.sin`/`cos`.
    """
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(float)
    if x.dtype != jnp.float64:
        return jnp.sin(x), jnp.cos(x)
    return _sincos_float64(x)


@sincos.defjvp
def _sincos_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    s, c = sincos(x)
    return (s, c), (c * dx, -s * dx)


def sin(x: ArrayLike) -> Float[Array, "*shape"]:
    """``sin x`` elementwise, `x` in rad: `sincos`'s first output (under `jit`,
    the cosine's arithmetic is dropped)."""
    return sincos(x)[0]


def cos(x: ArrayLike) -> Float[Array, "*shape"]:
    """``cos x`` elementwise, `x` in rad: `sincos`'s second output."""
    return sincos(x)[1]


def element_sizes(dims: int | tuple[int, ...], m: int) -> tuple[int, ...]:
    """The rows of each friction element (static) of `m` rows: `dims` rows
    each (an int), or the per-element sizes `dims` (a tuple, e.g. a
    revolute joint's one row beside a ball joint's three); raises unless they
    cover the `m` rows exactly."""
    if not isinstance(dims, tuple):
        dims = operator.index(dims)  # an int, or a numpy integer
        if m % dims:
            raise ValueError(
                f"blocks of {dims} rows need a vector whose length is a multiple "
                f"of {dims}; got {m} rows."
            )
        return (dims,) * (m // dims)
    if sum(dims) != m:
        raise ValueError(
            f"elements of {tuple(dims)} rows ({sum(dims)} in all) do not cover the "
            f"{m} rows of the vector."
        )
    return tuple(dims)


def element_index(dims: int | tuple[int, ...], m: int) -> np.ndarray:
    """The element of each of `m` rows (`element_sizes`), static."""
    sizes = element_sizes(dims, m)
    return np.repeat(np.arange(len(sizes)), sizes)


def element_starts(dims: int | tuple[int, ...], m: int) -> np.ndarray:
    """The first row of each element of `m` rows (`element_sizes`), static."""
    return np.cumsum((0,) + element_sizes(dims, m))[:-1]


def is_vector(dims: int | tuple[int, ...]) -> bool:
    """Whether a law with `rows_per_element` `dims` has elements of several
    rows (then every element, a one-row one too, takes the vector path)."""
    return max(dims) > 1 if isinstance(dims, tuple) else dims > 1


def block_sum(x: ArrayLike, dims: int | tuple[int, ...]) -> Float[Array, " m"]:
    """The sum of each element's entries of the vector `x` (blocks of
    `element_sizes`), repeated on every row of its element. Runs of elements
    of one size are summed as one reshaped block (static, exact)."""
    x = jnp.asarray(x)
    if x.ndim != 1:
        raise ValueError(f"block sums need a vector; got shape {x.shape}.")
    sizes = element_sizes(dims, x.shape[0])
    parts, start = [], 0
    for size, run in itertools.groupby(sizes):
        count = len(list(run))
        block = x[start : start + size * count].reshape(count, size)
        parts.append(jnp.repeat(jnp.sum(block, axis=1), size))
        start += size * count
    if not parts:
        return x
    return parts[0] if len(parts) == 1 else jnp.concatenate(parts)


def block_norm(
    x: ArrayLike, dims: int | tuple[int, ...]
) -> tuple[Float[Array, " m"], Bool[Array, " m"]]:
    """The Euclidean norm of each element's entries of the vector `x` (blocks
    of `dims` consecutive rows, or of the sizes `dims`: `element_sizes`),
    repeated on every row of its element, and whether it is positive; its
    gradient is finite at zero (where the norm itself has none). Friction
    elements of several rows (the two tangential rows of a contact) saturate
    and break away on this norm."""
    squared = block_sum(jnp.asarray(x) ** 2, dims)
    positive = squared > 0
    return jnp.where(
        positive, jnp.sqrt(jnp.where(positive, squared, 1.0)), 0.0
    ), positive


def block_dot(
    x: ArrayLike, y: ArrayLike, dims: int | tuple[int, ...]
) -> Float[Array, " m"]:
    """``x·y`` over each element's rows (`element_sizes`), repeated on every
    row of its element."""
    return block_sum(jnp.asarray(x) * jnp.asarray(y), dims)


def row_arms(arms: ArrayLike | None, like: ArrayLike) -> Float[Array, " m"]:
    """A vector law's `arms` (one per row, or one for all; `None`: ones)
    broadcast to the rows of `like`, in its dtype: the factors that turn each
    row's slip into the contact's (`jaxfric.friction.IsotropicCoulomb`,
    `jaxfric.friction.ContactLuGre`)."""
    like = jnp.asarray(like)
    if arms is None:
        return jnp.ones_like(like)
    return jnp.broadcast_to(arms, like.shape).astype(like.dtype)
