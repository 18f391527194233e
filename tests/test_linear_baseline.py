"""The classical baseline (jaxfric.identify._linear): Savitzky–Golay filtering
against scipy, and linear least squares on inverse dynamics recovering the
parameters of data built from an analytic trajectory (no simulation involved)."""

import numpy as np
import pytest
import scipy.signal

import jaxfric as jf
from jaxfric.identify import linear_least_squares, savgol
from jaxfric.identify._linear import linear_least_squares_record, savgol_coefficients

# scipy.signal.savgol_filter (mode="interp") is the reference; both are the same
# least-squares polynomial, so they agree to rounding.
SAVGOL_RTOL = 1e-11
# Exact inverse-dynamics data from a smooth trajectory: the only error is the
# Savitzky–Golay derivative error (window 31, cubic, 1 ms samples) and the
# samples kept near velocity reversals.
NOISELESS_RTOL = 2e-3
# 1e-5 m position noise (0.001 % of the 1 m amplitude).
NOISY_RTOL = 0.05


@pytest.mark.parametrize("deriv", [0, 1, 2])
@pytest.mark.parametrize(("window", "order"), [(7, 2), (31, 3), (15, 5)])
def test_savgol_matches_scipy(deriv, window, order):
    rng = np.random.default_rng(1)
    y = np.cumsum(rng.normal(size=(120, 2)), axis=0)
    ours = savgol(y, window, order, deriv, delta=0.01)
    ref = scipy.signal.savgol_filter(
        y, window, order, deriv, delta=0.01, axis=0, mode="interp"
    )
    np.testing.assert_allclose(
        ours, ref, rtol=SAVGOL_RTOL, atol=SAVGOL_RTOL * np.abs(ref).max()
    )


def test_savgol_coefficients_match_scipy():
    np.testing.assert_allclose(
        savgol_coefficients(11, 3, 1),
        scipy.signal.savgol_coeffs(11, 3, deriv=1, use="dot"),
        rtol=SAVGOL_RTOL,
        atol=1e-15,
    )


@pytest.mark.parametrize(
    ("window", "order", "deriv", "match"),
    [(4, 2, 0, "odd"), (5, 5, 0, "polyorder"), (5, 2, 3, "deriv")],
)
def test_savgol_rejects_bad_settings(window, order, deriv, match):
    with pytest.raises(ValueError, match=match):
        savgol(np.zeros(20), window, order, deriv)


def _trajectory(ts):
    """q(t) = sin(2t) + 0.3 sin(5t + 1): analytic q, q̇, q̈ (few zero crossings)."""
    q = np.sin(2 * ts) + 0.3 * np.sin(5 * ts + 1)
    qd = 2 * np.cos(2 * ts) + 1.5 * np.cos(5 * ts + 1)
    qdd = -4 * np.sin(2 * ts) - 7.5 * np.sin(5 * ts + 1)
    return q, qd, qdd


MASS, STIFF, FC_POS, FC_NEG, FV = 2.0, 3.0, 0.7, 0.5, 0.4


def _inverse_dynamics(ts):
    # u = m q̈ + k q + f(q̇), f = Farhat Eq. 4 (asymmetric Coulomb + viscous).
    q, qd, qdd = _trajectory(ts)
    friction = np.where(qd > 0, FC_POS, -FC_NEG) + FV * qd
    return q, MASS * qdd + STIFF * q + friction


def test_recovers_inertia_stiffness_asymmetric_coulomb_viscous():
    ts = np.arange(0.0, 10.0, 1e-3)
    q, u = _inverse_dynamics(ts)
    fit = linear_least_squares(ts, q, u, stiffness=True, asymmetric=True)
    expected = dict(inertia=MASS, stiffness=STIFF, fc_pos=FC_POS, fc_neg=FC_NEG, fv=FV)
    for name, value in expected.items():
        np.testing.assert_allclose(fit.params[name], value, rtol=NOISELESS_RTOL)


def test_noisy_positions():
    ts = np.arange(0.0, 10.0, 1e-3)
    q, u = _inverse_dynamics(ts)
    q = q + 1e-5 * np.random.default_rng(2).normal(size=q.shape)
    fit = linear_least_squares(ts, q, u, stiffness=True, asymmetric=True, window=101)
    for name, value in dict(
        inertia=MASS, stiffness=STIFF, fc_pos=FC_POS, fc_neg=FC_NEG, fv=FV
    ).items():
        np.testing.assert_allclose(fit.params[name], value, rtol=NOISY_RTOL)
    # The reported standard errors are of the size of the actual errors.
    err = abs(fit.params["fc_pos"][0] - FC_POS)
    assert err < 5 * fit.stderr["fc_pos"][0] + 1e-3


def test_known_system_regresses_friction_only():
    # With the Oscillator known, only Coulomb (symmetric) + viscous are fitted.
    ts = np.arange(0.0, 10.0, 1e-3)
    q, qd, qdd = _trajectory(ts)
    u = MASS * qdd + STIFF * q + 0.6 * np.sign(qd) + FV * qd
    system = jf.systems.Oscillator(mass=MASS, stiffness=STIFF)
    fit = linear_least_squares(ts, q, u, system=system)
    assert "inertia" not in fit.params
    np.testing.assert_allclose(fit.params["fc_pos"], 0.6, rtol=NOISELESS_RTOL)
    np.testing.assert_allclose(fit.params["fc_neg"], 0.6, rtol=NOISELESS_RTOL)
    np.testing.assert_allclose(fit.params["fv"], FV, rtol=NOISELESS_RTOL)


def test_record_and_errors():
    ts = np.arange(0.0, 2.0, 1e-2)
    q, u = _inverse_dynamics(ts)
    rec = jf.identify.Record(ts=ts, q=q, u=u)
    fit = linear_least_squares_record(rec, stiffness=True, window=11)
    assert fit.num_samples[0] > 0
    with pytest.raises(ValueError, match="'u'"):
        linear_least_squares_record(jf.identify.Record(ts=ts, q=q))
    with pytest.raises(ValueError, match="uniformly"):
        linear_least_squares(ts**2, q, u)
    with pytest.raises(ValueError, match="moving samples"):
        linear_least_squares(ts, q, u, velocity_threshold=1e9, window=11)
