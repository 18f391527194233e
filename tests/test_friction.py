"""Force maps and validation of the friction laws: Coulomb, CoulombViscous,
Stribeck (jaxfric/friction/_coulomb.py), Regularized (_regularized.py), LuGre and
Dahl (_lugre.py). Kikuuwe and Karnopp are tested in their own files.

References are the laws' formulas written out again here in NumPy, closed-form
solutions, and scipy integrations of the bristle equations.
"""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import jaxfric as jf

# Formula re-evaluated in NumPy: only rounding differs.
FORMULA_RTOL = 1e-13
# scipy integration at rtol 1e-11 of the bristle ODE to steady state.
STEADY_RTOL = 1e-8
# Dahl transient vs its closed form, scipy at rtol 1e-11.
DAHL_RTOL = 1e-7

V = np.array([-2.0, -0.3, -1e-3, 0.0, 1e-3, 0.05, 0.7, 3.0])


def _close(actual, expected, rtol=FORMULA_RTOL, atol=1e-15):
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=rtol, atol=atol)


def _raises(match):
    return pytest.raises(ValueError, match=re.escape(match))


# ----------------------------------------------------------------------------------
# Coulomb family (Farhat et al. 2010, Eq. 4 and 8)


def test_coulomb_force_map():
    law = jf.Coulomb(fc=1.2, fs=1.5)
    d = np.sign(V) + (V == 0)  # a direction for every entry, +1 at v = 0
    _close(law.slip_force(V, d), 1.2 * d)
    _close(law.breakaway(d), np.full_like(V, 1.5))
    # single-valued part: fc·sign(v), and 0 at v = 0 (mean of the two branches)
    _close(law.force(V), 1.2 * np.sign(V))
    _close(jf.Coulomb(0.7).breakaway(np.array([1.0, -1.0])), [0.7, 0.7])


def test_coulomb_with_viscous_term_force_map():
    law = jf.Coulomb(fc=1.2, fs=1.5, fv=0.4)
    d = np.sign(V) + (V == 0)
    _close(law.slip_force(V, d), 1.2 * d + 0.4 * V)
    _close(law.breakaway(d), np.full_like(V, 1.5))
    # The symmetric case of CoulombViscous (Farhat Eq. 4), slip branches equal.
    both = jf.CoulombViscous(fc_pos=1.2, fc_neg=1.2, fv_pos=0.4, fv_neg=0.4)
    _close(law.slip_force(V, d), both.slip_force(V, d))
    # No viscous term, no `fv` leaf: identification does not fit one.
    assert len(jax.tree.leaves(jf.Coulomb(1.0))) == 2
    assert len(jax.tree.leaves(law)) == 3


def test_coulomb_viscous_force_map():
    law = jf.CoulombViscous(fc_pos=1.0, fc_neg=0.6, fv_pos=0.3, fv_neg=0.5)
    fwd = np.ones_like(V)
    _close(law.slip_force(V, fwd), 1.0 + 0.3 * V)
    _close(law.slip_force(V, -fwd), -0.6 + 0.5 * V)
    _close(law.breakaway(np.array([1.0, -1.0])), [1.0, 0.6])
    expected = np.where(V > 0, 1.0 + 0.3 * V, np.where(V < 0, -0.6 + 0.5 * V, 0.2))
    _close(law.force(V), expected)


@pytest.mark.parametrize("delta", [1.0, 2.0])
def test_stribeck_force_map(delta):
    law = jf.Stribeck(fc=1.0, fs=1.5, vs=0.1, fv=0.4, delta=delta)
    g = 1.0 + 0.5 * np.exp(-(np.abs(V / 0.1) ** delta))
    d = np.sign(V) + (V == 0)
    _close(law.stribeck_curve(V), g)
    _close(law.slip_force(V, d), d * g + 0.4 * V)
    _close(law.breakaway(d), np.full_like(V, 1.5))
    _close(law.force(V), np.sign(V) * g + 0.4 * V)


def test_stribeck_gradient_finite_at_zero():
    # |v/vs|**delta at v = 0: the delta-derivative contains ln(0); it must be 0.
    def f(delta):
        return jf.Stribeck(1.0, 1.5, 0.1, delta=delta).stribeck_curve(jnp.zeros(1))[0]

    assert float(jax.grad(f)(2.0)) == 0.0


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: jf.Coulomb(-1.0), "`fc` must lie in [0.0, inf]"),
        (lambda: jf.Coulomb(1.0, fs=-1.0), "`fs` must lie in [0.0, inf]"),
        (lambda: jf.Coulomb(1.0, fs=0.5), "`fs` must be >= `fc`"),
        (lambda: jf.Coulomb(np.nan), "`fc` must be finite"),
        (lambda: jf.Coulomb(np.ones(2), np.ones(3)), "do not broadcast"),
        (lambda: jf.Coulomb(np.ones((2, 2))), "scalars or vectors"),
        (lambda: jf.Coulomb(1.0, fv=-0.1), "`fv` must lie in [0.0, inf]"),
        (lambda: jf.Coulomb(np.ones(2), fv=np.ones(3)), "do not broadcast"),
        (lambda: jf.CoulombViscous(-1.0, 1.0), "`fc_pos` must lie"),
        (lambda: jf.CoulombViscous(1.0, -1.0), "`fc_neg` must lie"),
        (lambda: jf.CoulombViscous(1.0, 1.0, -0.1), "`fv_pos` must lie"),
        (lambda: jf.CoulombViscous(1.0, 1.0, 0.1, -0.1), "`fv_neg` must lie"),
        (lambda: jf.Stribeck(-1.0, 1.0, 0.1), "`fc` must lie"),
        (lambda: jf.Stribeck(1.0, 0.5, 0.1), "`fs` must be >= `fc`"),
        (lambda: jf.Stribeck(1.0, 1.5, 0.0), "`vs` must lie in (0.0, inf]"),
        (lambda: jf.Stribeck(1.0, 1.5, 0.1, fv=-1.0), "`fv` must lie"),
        (lambda: jf.Stribeck(1.0, 1.5, 0.1, delta=0.0), "`delta` must lie in (0.0"),
        (lambda: jf.Coulomb(1.0, static_ratio=0.9), "`static_ratio` must lie in [1.0"),
        (lambda: jf.Coulomb(1.0, 1.5, static_ratio=1.5), "`fs` or `static_ratio`"),
        (lambda: jf.Stribeck(1.0, vs=0.1, static_ratio=np.nan), "`static_ratio` must"),
    ],
)
def test_coulomb_family_validation(make, match):
    with _raises(match):
        make()


@pytest.mark.parametrize(
    ("tied", "free"),
    [
        (
            jf.Coulomb([1.0, 2.0], fv=0.3, static_ratio=1.5),
            jf.Coulomb([1.0, 2.0], [1.5, 3.0], 0.3),
        ),
        (
            jf.Stribeck([1.0, 2.0], vs=0.1, fv=0.3, static_ratio=1.5),
            jf.Stribeck([1.0, 2.0], [1.5, 3.0], 0.1, fv=0.3),
        ),
    ],
)
def test_static_ratio_ties_the_static_level(tied, free):
    # The law with fs = static_ratio·fc written out is the reference.
    v, d = jnp.array([0.05, -0.2]), jnp.array([1.0, -1.0])
    np.testing.assert_allclose(tied.breakaway(d), free.breakaway(d), rtol=FORMULA_RTOL)
    np.testing.assert_allclose(
        tied.slip_force(v, d), free.slip_force(v, d), rtol=FORMULA_RTOL
    )
    # No leaf of its own: the static level follows fc under differentiation.
    assert tied.fs is None and tied.ordered_levels() == ()
    grad = jax.grad(lambda fc: jnp.sum(jf.Coulomb(fc, static_ratio=1.5).breakaway(d)))
    np.testing.assert_allclose(grad(1.0), 3.0, rtol=FORMULA_RTOL)


# ----------------------------------------------------------------------------------
# Regularized (the normalisation baselines of Farhat et al. 2010, Sec. 1)


def test_regularized_symmetric_coulomb_is_tanh():
    law = jf.Regularized(jf.Coulomb(1.3), eps=0.01)
    np.testing.assert_array_equal(law.force(V), 1.3 * np.tanh(V / 0.01))
    lin = jf.Regularized(jf.Coulomb(1.3), eps=0.01, kind="linear")
    np.testing.assert_array_equal(lin.force(V), 1.3 * np.clip(V / 0.01, -1, 1))


@pytest.mark.parametrize("kind", ["tanh", "linear"])
def test_regularized_blends_asymmetric_branches(kind):
    eps = 0.05
    law = jf.CoulombViscous(fc_pos=1.0, fc_neg=0.6, fv_pos=0.3, fv_neg=0.5)
    sigma = np.tanh(V / eps) if kind == "tanh" else np.clip(V / eps, -1, 1)
    w = 0.5 * (1 + sigma)
    expected = w * (1.0 + 0.3 * V) + (1 - w) * (-0.6 + 0.5 * V)
    _close(jf.Regularized(law, eps, kind).force(V), expected)


def test_regularized_stribeck_and_limit():
    law = jf.Stribeck(fc=1.0, fs=1.5, vs=0.1, fv=0.4)
    g = 1.0 + 0.5 * np.exp(-((V / 0.1) ** 2))
    _close(jf.Regularized(law, 1e-3).force(V), np.tanh(V / 1e-3) * g + 0.4 * V)
    # far outside the band the set-valued law's slip branch is recovered
    fast = np.array([-3.0, -0.7, 0.7, 3.0])
    _close(jf.Regularized(law, 1e-3, "linear").force(fast), law.force(fast))


def test_regularized_per_element_eps():
    law = jf.Regularized(jf.Coulomb(jnp.array([1.0, 2.0])), eps=jnp.array([0.1, 0.2]))
    v = np.array([0.05, 0.05])
    _close(law.force(v), [np.tanh(0.5), 2 * np.tanh(0.25)])


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: jf.Regularized(jf.Coulomb(1.0), 0.0), "`eps` must lie in (0.0, inf]"),
        (lambda: jf.Regularized(jf.Coulomb(1.0), -1.0), "`eps` must lie in (0.0"),
        (lambda: jf.Regularized(jf.Coulomb(1.0), np.nan), "`eps` must be finite"),
        (lambda: jf.Regularized(jf.Coulomb(1.0), 0.1, "cubic"), "`kind` must be one"),
        (lambda: jf.Regularized(jf.Coulomb(1.0), np.ones((2, 2))), "scalars or"),
    ],
)
def test_regularized_validation(make, match):
    with _raises(match):
        make()


def test_regularized_rejects_non_set_valued_law():
    # TypeError from __check_init__ (or from the runtime type checker in tests)
    with pytest.raises(TypeError):
        jf.Regularized(jf.Dahl(1e3, 1.0), 0.1)


# ----------------------------------------------------------------------------------
# LuGre (Canudas de Wit et al. 1995) and Dahl

LUGRE = dict(sigma0=1e5, sigma1=np.sqrt(1e5), sigma2=0.4, fc=1.0, fs=1.5, vs=0.001)


def _g(v, fc=1.0, fs=1.5, vs=0.001):
    return fc + (fs - fc) * np.exp(-((v / vs) ** 2))


def test_lugre_state_equation_and_force():
    law = jf.LuGre(**LUGRE)
    z = np.linspace(-2e-5, 2e-5, V.size)
    zdot = V - 1e5 * np.abs(V) * z / _g(V)
    _close(law.stribeck_curve(V), _g(V))
    _close(law.state_derivative(z, V), zdot)
    _close(law.force(z, V), 1e5 * z + np.sqrt(1e5) * zdot + 0.4 * V, atol=1e-12)
    _close(law.init_state(V), np.zeros_like(V))


def test_lugre_steady_state_is_stribeck_curve():
    """At constant slip velocity z settles where ż = 0 and the force equals
    ``g(v)·sign(v) + σ2·v`` (Canudas de Wit et al. 1995, Sec. 2)."""
    law = jf.LuGre(**LUGRE)
    v = np.array([-0.1, -0.003, -0.001, -2e-4, 2e-4, 5e-4, 0.001, 0.003, 0.1])
    # integrate ż(z, v) from relaxed bristles for many time constants fc/(σ0|v|)
    t_end = 50 * 1.5 / (1e5 * np.abs(v).min())
    zdot = jax.jit(lambda z: law.state_derivative(z, v))
    jac = jax.jit(jax.jacfwd(lambda z: law.state_derivative(z, v)))
    ref = solve_ivp(
        lambda t, z: np.asarray(zdot(z)),
        (0.0, t_end),
        np.zeros_like(v),
        method="Radau",
        jac=lambda t, z: np.asarray(jac(z)),
        rtol=1e-11,
        atol=1e-16,
    )
    z_ss = ref.y[:, -1]
    expected = _g(v) * np.sign(v) + 0.4 * v
    _close(law.force(z_ss, v), expected, rtol=STEADY_RTOL)


def test_lugre_abs_guard_gradient_at_rest():
    # d|v|/dv at v = 0 is taken as 0 (symmetric), so dż/dv = 1 there for any z.
    law = jf.LuGre(**LUGRE)
    dzdot = jax.grad(lambda v: law.state_derivative(jnp.full(1, 1e-5), v)[0])
    assert float(dzdot(jnp.zeros(1))[0]) == 1.0


def test_lugre_from_friction_coefficients():
    """The MotionSolve normal-load form (Comment 3) written out in NumPy equals
    the mapped force form."""
    mu_s, mu_d, s0, s1, s2, vs, load = 0.5, 0.3, 200.0, 0.5, 0.02, 0.01, 40.0
    law = jf.LuGre.from_friction_coefficients(mu_s, mu_d, s0, s1, s2, vs, load)
    z = np.linspace(-1e-3, 1e-3, V.size)
    g_mu = mu_d + (mu_s - mu_d) * np.exp(-((V / vs) ** 2))
    zdot = V - s0 * np.abs(V) * z / g_mu
    force = load * (s0 * z + s1 * zdot) + s2 * V
    _close(law.state_derivative(z, V), zdot)
    _close(law.force(z, V), force, atol=1e-12)
    _close([law.fc, law.fs, law.sigma0, law.sigma1, law.sigma2], [12, 20, 8e3, 20, s2])


def test_dahl_force_map_and_lugre_special_case():
    law = jf.Dahl(sigma0=1e4, fc=2.0)
    z = np.linspace(-2e-4, 2e-4, V.size)
    _close(law.state_derivative(z, V), V - 1e4 * np.abs(V) * z / 2.0)
    _close(law.force(z, V), 1e4 * z)
    _close(law.init_state(V), np.zeros_like(V))
    lugre = jf.LuGre(sigma0=1e4, sigma1=0.0, sigma2=0.0, fc=2.0, fs=2.0, vs=1.0)
    _close(law.force(z, V), lugre.force(z, V))


def test_dahl_transient_closed_form():
    """At constant v > 0 from z = 0, Dahl's force is ``fc·(1 − exp(−σ0·x/fc))``
    with x = v·t the displacement (Dahl 1968, exponent 1)."""
    law = jf.Dahl(sigma0=1e4, fc=2.0)
    v = np.array([0.01])
    ts = np.linspace(0.0, 0.05, 11)
    zdot = jax.jit(lambda z: law.state_derivative(z, v))
    ref = solve_ivp(
        lambda t, z: np.asarray(zdot(z)),
        (0.0, ts[-1]),
        np.zeros(1),
        t_eval=ts,
        method="Radau",
        rtol=1e-11,
        atol=1e-14,
    )
    force = np.asarray(jax.vmap(law.force, (0, None))(jnp.asarray(ref.y.T), v))[:, 0]
    _close(force, 2.0 * (1 - np.exp(-1e4 * v * ts / 2.0)), rtol=DAHL_RTOL, atol=1e-9)


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(sigma0=0.0), "`sigma0` must lie in (0.0, inf]"),
        (dict(sigma1=-1.0), "`sigma1` must lie in [0.0, inf]"),
        (dict(sigma2=-1.0), "`sigma2` must lie in [0.0, inf]"),
        (dict(fc=0.0), "`fc` must lie in (0.0, inf]"),
        (dict(fs=0.5), "`fs` must be >= `fc`"),
        (dict(vs=0.0), "`vs` must lie in (0.0, inf]"),
        (dict(vs=-1e-3), "`vs` must lie in (0.0, inf]"),
        (dict(sigma1=np.nan), "`sigma1` must be finite"),
        (dict(fc=np.ones(2), fs=np.full(3, 2.0)), "do not broadcast"),
    ],
)
def test_lugre_validation(change, match):
    with _raises(match):
        jf.LuGre(**{**LUGRE, **change})


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(mu_d=0.0), "`mu_d` must lie in (0.0, inf]"),
        (dict(mu_s=0.2), "`mu_s` must be >= `mu_d`"),
        (dict(sigma0=-1.0), "`sigma0` must lie in (0.0, inf]"),
        (dict(sigma1=-1.0), "`sigma1` must lie in [0.0, inf]"),
        (dict(sigma2=-1.0), "`sigma2` must lie in [0.0, inf]"),
        (dict(vs=0.0), "`vs` must lie in (0.0, inf]"),
        (dict(normal_load=0.0), "`normal_load` must lie in (0.0, inf]"),
    ],
)
def test_lugre_from_friction_coefficients_validation(change, match):
    args = dict(
        mu_s=0.5,
        mu_d=0.3,
        sigma0=200.0,
        sigma1=0.5,
        sigma2=0.0,
        vs=0.01,
        normal_load=10.0,
    )
    with _raises(match):
        jf.LuGre.from_friction_coefficients(**{**args, **change})


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(sigma0=0.0, fc=1.0), "`sigma0` must lie in (0.0, inf]"),
        (dict(sigma0=1e3, fc=0.0), "`fc` must lie in (0.0, inf]"),
        (dict(sigma0=1e3, fc=-1.0), "`fc` must lie in (0.0, inf]"),
        (dict(sigma0=np.inf, fc=1.0), "`sigma0` must be finite"),
    ],
)
def test_dahl_validation(kwargs, match):
    with _raises(match):
        jf.Dahl(**kwargs)
