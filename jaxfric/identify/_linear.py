"""The classical baseline: linear least squares on inverse dynamics.

What robotics identification does today (e.g. Swevers et al. 1997; the
Coulomb + viscous law of Farhat et al. 2010, Eq. 4): differentiate the measured
positions with a Savitzky–Golay filter, then, per coordinate ``j``, regress the
known input on the model that is linear in its parameters,

    u_j = I_j q̈_j + k_j q_j + fc_j⁺ [q̇_j > 0] − fc_j⁻ [q̇_j < 0] + fv_j q̇_j + b_j,

on the samples where the coordinate is clearly moving (``|q̇_j|`` above a
threshold: in stick the friction force is not a function of velocity). With a
known `system` the rigid-body part ``M(q) q̈ + h(q, q̇)`` is subtracted instead
of regressed. Pure numpy; no simulation and no iteration.
"""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

from ..systems import AbstractSystem
from ._record import Record


def savgol_coefficients(window: int, polyorder: int, deriv: int = 0) -> np.ndarray:
    """Savitzky–Golay weights for the `deriv`-th derivative at a window's centre
    (unit sample spacing): least-squares polynomial of degree `polyorder` over
    `window` samples (Savitzky & Golay 1964).
    """
    _check_savgol(window, polyorder, deriv)
    half = window // 2
    x = np.arange(-half, half + 1, dtype=float)
    vander = np.vander(x, polyorder + 1, increasing=True)
    return np.linalg.pinv(vander)[deriv] * math.factorial(deriv)


def _check_savgol(window: int, polyorder: int, deriv: int) -> None:
    if window < 3 or window % 2 == 0:
        raise ValueError(f"`window` must be an odd integer >= 3; got {window}.")
    if not 0 <= polyorder < window:
        raise ValueError(
            f"`polyorder` must lie in [0, window - 1] = [0, {window - 1}]; got "
            f"{polyorder}."
        )
    if not 0 <= deriv <= polyorder:
        raise ValueError(
            f"`deriv` must lie in [0, polyorder] = [0, {polyorder}]; got {deriv}."
        )


def savgol(
    y, window: int, polyorder: int, deriv: int = 0, delta: float = 1.0
) -> np.ndarray:
    """Savitzky–Golay smoothing or differentiation along axis 0.

    Interior samples use the centred weights; the first and last ``window // 2``
    samples use the polynomial fitted to the first/last window, evaluated there
    (the ``mode="interp"`` edge rule of `scipy.signal.savgol_filter`).

    Args:
        y: samples at uniform spacing, shape ``(T,)`` or ``(T, n)``, ``T >= window``.
        window: odd window length (samples).
        polyorder: polynomial degree, ``< window``.
        deriv: derivative order, ``<= polyorder``.
        delta: sample spacing (s) for derivatives.

    Returns:
        The filtered signal or derivative, same shape as `y`.
    """
    _check_savgol(window, polyorder, deriv)
    y = np.asarray(y, dtype=float)
    if y.shape[0] < window:
        raise ValueError(
            f"`window` ({window}) is longer than the signal ({y.shape[0]} samples)."
        )
    half = window // 2
    coeffs = savgol_coefficients(window, polyorder, deriv)
    out = np.empty_like(y)
    windows = np.lib.stride_tricks.sliding_window_view(y, window, axis=0)
    out[half : y.shape[0] - half] = windows @ coeffs
    # Edges: the polynomial of the end windows, differentiated `deriv` times.
    x = np.arange(window, dtype=float)
    vander = np.vander(x, polyorder + 1, increasing=True)
    powers = np.arange(polyorder + 1)
    falling = np.array(
        [math.perm(int(p), deriv) if p >= deriv else 0 for p in powers], float
    )
    for rows, block in (
        (np.arange(half), y[:window]),
        (np.arange(window - half, window), y[-window:]),
    ):
        poly = np.linalg.lstsq(vander, block, rcond=None)[0]
        basis = falling * np.where(
            powers >= deriv, rows[:, None] ** np.maximum(powers - deriv, 0), 0.0
        )
        values = basis @ poly
        if rows[0] == 0:
            out[:half] = values
        else:
            out[y.shape[0] - half :] = values
    return out / delta**deriv


@dataclasses.dataclass(frozen=True)
class LinearFit:
    """Result of `linear_least_squares`, one entry per coordinate.

    Attributes:
        params: name -> array ``(n,)``: ``inertia`` (kg or kg·m², absent with a
            known system), ``stiffness`` (N/m, if asked), ``fc_pos``, ``fc_neg``
            (Coulomb levels, magnitudes; equal when not `asymmetric`), ``fv``
            (viscous, N·s/m, includes any passive damping), ``offset`` (if asked).
        stderr: name -> array ``(n,)``, ordinary least-squares standard errors.
        residual_rms: RMS of the regression residual per coordinate, N or N·m.
        num_samples: samples used per coordinate (moving, away from the edges).
    """

    params: dict[str, np.ndarray]
    stderr: dict[str, np.ndarray]
    residual_rms: np.ndarray
    num_samples: np.ndarray


def linear_least_squares(
    ts,
    q,
    u,
    *,
    system: AbstractSystem | None = None,
    window: int = 31,
    polyorder: int = 3,
    velocity_threshold: float | None = None,
    stiffness: bool = False,
    asymmetric: bool = False,
    offset: bool = False,
) -> LinearFit:
    """Coulomb + viscous friction (and inertia) by linear least squares.

    Velocities and accelerations come from a Savitzky–Golay filter of the
    positions (`window`, `polyorder`); samples within ``window // 2`` of the
    ends and samples with ``|q̇_j| <= velocity_threshold`` are left out.

    Args:
        ts: uniform sample times, s, shape ``(T,)``.
        q: measured positions, shape ``(T, n)`` or ``(T,)``.
        u: known applied forces per coordinate, N or N·m, same shape as `q`.
        system: a known system (friction on each coordinate, ``J = I``): its
            ``M(q) q̈ + h(q, q̇)`` is subtracted and only friction is regressed.
            Default `None`: regress inertia (and stiffness) per coordinate.
        window, polyorder: Savitzky–Golay settings.
        velocity_threshold: speed below which samples are dropped; default 5 %
            of the largest filtered speed of that coordinate.
        stiffness: also regress a spring ``k_j q_j`` (without `system`).
        asymmetric: separate Coulomb levels for the two directions (Farhat Eq. 4).
        offset: also regress a constant ``b_j`` (gravity, sensor bias).

    Returns:
        A `LinearFit`.
    """
    ts = np.asarray(ts, dtype=float)
    q = np.asarray(q, dtype=float)
    u = np.asarray(u, dtype=float)
    q = q[:, None] if q.ndim == 1 else q
    u = u[:, None] if u.ndim == 1 else u
    if u.shape != q.shape or ts.shape != (q.shape[0],):
        raise ValueError(
            f"`ts` {ts.shape}, `q` {q.shape} and `u` {u.shape} must have T samples "
            "and `u` one column per coordinate."
        )
    dt = np.diff(ts)
    if np.any(dt <= 0) or np.ptp(dt) > 1e-6 * np.mean(dt):
        raise ValueError("`ts` must be uniformly spaced and increasing.")
    delta = float(np.mean(dt))
    qd = savgol(q, window, polyorder, 1, delta)
    qdd = savgol(q, window, polyorder, 2, delta)
    target = u
    if system is not None:
        if stiffness:
            raise ValueError("`stiffness` is part of a known `system`; drop one.")
        jac = np.asarray(system.friction_jacobian(jnp.asarray(q[0])))
        if jac.shape != (system.n_dof,) * 2 or not np.array_equal(
            jac, np.eye(system.n_dof)
        ):
            raise ValueError(
                "`system` must have friction on each coordinate (J = I: one "
                "friction element per joint, no ball joints); its friction "
                f"Jacobian has shape {jac.shape} and is not the identity."
            )
        rigid = jax.vmap(
            lambda qi, qdi, qddi: (
                system.mass_matrix(qi) @ qddi + system.bias_force(qi, qdi)
            )
        )(jnp.asarray(q), jnp.asarray(qd), jnp.asarray(qdd))
        target = u - np.asarray(rigid)
    half = window // 2
    names: list[str] = []
    if system is None:
        names.append("inertia")
        if stiffness:
            names.append("stiffness")
    names += ["fc_pos", "fc_neg"] if asymmetric else ["fc"]
    names.append("fv")
    if offset:
        names.append("offset")
    n = q.shape[1]
    params = {k: np.zeros(n) for k in names}
    stderr = {k: np.zeros(n) for k in names}
    rms, used = np.zeros(n), np.zeros(n, dtype=int)
    for j in range(n):
        v = qd[:, j]
        threshold = (
            0.05 * np.max(np.abs(v[half:-half]))
            if velocity_threshold is None
            else velocity_threshold
        )
        keep = np.zeros(q.shape[0], bool)
        keep[half:-half] = np.abs(v[half:-half]) > threshold
        columns = {
            "inertia": qdd[:, j],
            "stiffness": q[:, j],
            "fc": np.sign(v),
            "fc_pos": (v > 0).astype(float),
            "fc_neg": -(v < 0).astype(float),
            "fv": v,
            "offset": np.ones_like(v),
        }
        x = np.stack([columns[k][keep] for k in names], axis=1)
        y = target[keep, j]
        if x.shape[0] <= x.shape[1]:
            raise ValueError(
                f"coordinate {j}: only {x.shape[0]} moving samples for "
                f"{x.shape[1]} parameters; lower `velocity_threshold`."
            )
        coef, *_ = np.linalg.lstsq(x, y, rcond=None)
        resid = y - x @ coef
        sigma2 = resid @ resid / (x.shape[0] - x.shape[1])
        cov = sigma2 * np.linalg.pinv(x.T @ x)
        for k, name in enumerate(names):
            params[name][j] = coef[k]
            stderr[name][j] = np.sqrt(max(cov[k, k], 0.0))
        rms[j] = np.sqrt(np.mean(resid**2))
        used[j] = x.shape[0]
    if not asymmetric:
        params["fc_pos"] = params["fc_neg"] = params.pop("fc")
        stderr["fc_pos"] = stderr["fc_neg"] = stderr.pop("fc")
    return LinearFit(params, stderr, rms, used)


def linear_least_squares_record(record: Record, **kw) -> LinearFit:
    """`linear_least_squares` on a measured `Record` (its ``u`` is the input)."""
    if record.u is None:
        raise ValueError(f"{record.source or '<record>'}: column 'u' is missing.")
    return linear_least_squares(record.ts, record.q, record.u, **kw)


__all__ = [
    "LinearFit",
    "linear_least_squares",
    "linear_least_squares_record",
    "savgol",
    "savgol_coefficients",
]
