"""Failures are reported honestly (issue 13, items 3 and 5): a failed solve has
NaN derivatives, a non-finite state or force is named as such, and invalid
options are rejected at the entry with the option and its range."""

from typing import ClassVar

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxfric as jf
from jaxfric.forces._base import AbstractStatelessForce

OSC = jf.systems.Oscillator(mass=1.0, stiffness=1.0)
# Quinn / Farhat et al. 2010, Sec. 5.1: from x0 = 2.75 at rest, fc = 1 slides
# to x = -(x0 - 2 fc) = -0.75 at t = pi and sticks there (|x| < fc): one event,
# q(10) = 2 fc - x0, so dq/dfc = 2 and dq/dx0 = -1. With fc = 0.1 it swings
# many times (several events).
X0 = 2.75
# Gradient through a located event vs the closed form.
GRAD_TOL = 1e-8


class NaNAfter(AbstractStatelessForce):
    """A constant force `level` until `t_bad`, NaN after (a force gone bad)."""

    level: jax.Array
    t_bad: jax.Array

    def __call__(self, t, q, qd):
        return jnp.where(t > self.t_bad, jnp.nan, self.level) * jnp.ones_like(q)


@pytest.fixture(scope="module")
def batch():
    """One vmapped switch-path solve with its gradient (one compile), three
    members: successful (fc = 1, one event), event budget spent (fc = 0.1,
    max_events = 2) and a NaN start (traced, so only the result can say)."""

    def end(fc, x0):
        sol = jf.simulate(
            OSC, jf.Coulomb(fc), x0, 0.0, 10.0, num_save=3, max_events=2, throw=False
        )
        return sol.q[-1, 0], sol.result

    value_and_grad = jax.value_and_grad(end, argnums=(0, 1), has_aux=True)
    (q_end, result), grads = jax.vmap(value_and_grad)(
        jnp.array([1.0, 0.1, 1.0]), jnp.array([X0, X0, jnp.nan])
    )
    return q_end, result, np.stack([np.asarray(g) for g in grads], axis=1)


def test_failed_solve_has_nan_gradient(batch):
    q_end, result, grads = batch
    assert (result == jf.RESULTS.successful)[0]
    assert (result == jf.RESULTS.max_events_reached)[1]
    # The successful member: value and gradient of the closed form.
    np.testing.assert_allclose(q_end[0], 2 * 1.0 - X0, atol=GRAD_TOL)
    np.testing.assert_allclose(grads[0], [2.0, -1.0], atol=GRAD_TOL)
    # The failed member: NaN value and NaN gradient (0.0 before: a flat loss).
    assert np.isnan(q_end[1]) and np.all(np.isnan(grads[1]))


def test_traced_nan_start_is_a_result_without_throw(batch):
    _, result, grads = batch
    assert (result == jf.RESULTS.nonfinite_state)[2]
    assert np.all(np.isnan(grads[2]))


def test_no_host_callbacks_without_throw():
    # A program with host callbacks is never written to JAX's persistent
    # compilation cache. With throw=False and at most 33 saved times (no
    # diffrax SubSaveAt, whose own checks are callbacks) the switch path has
    # none. The Kikuuwe and dynamic paths keep diffrax's own checks of `dt0`
    # and `SaveAt(ts)`; a traced `friction_state0` adds none to them.
    laws = {
        "Coulomb": lambda fc: jf.Coulomb(fc),
        "Kikuuwe": lambda fc: jf.Kikuuwe(k=1e3, b=60.0, f=fc),
        "LuGre": lambda fc: jf.LuGre(
            sigma0=1e4, sigma1=100.0, sigma2=0.0, fc=fc, fs=fc, vs=0.01
        ),
    }

    def callbacks(jaxpr):
        found = 0
        for eqn in jaxpr.eqns:
            found += "callback" in eqn.primitive.name
            found += sum(map(callbacks, jax.extend.core.jaxprs_in_params(eqn.params)))
        return found

    def count(name, with_state):
        def end(fc, x0):
            options = dict(friction_state0=0.0 * fc) if with_state else {}
            law = laws[name](fc)
            sol = jf.simulate(
                OSC, law, x0, 0.0, 10.0, num_save=33, throw=False, **options
            )
            return sol.q

        return callbacks(jax.make_jaxpr(end)(1.0, X0).jaxpr)

    assert count("Coulomb", False) == 0
    for name in ("Kikuuwe", "LuGre"):
        assert count(name, True) == count(name, False), name


def test_nan_force_is_named_not_max_steps():
    # Before: "maximum number of solver steps reached ... increase max_steps".
    force = NaNAfter(jnp.asarray(0.0), jnp.asarray(1.0))
    sol = jf.simulate(
        OSC, jf.Coulomb(1.0), X0, 0.0, 10.0, force=force, num_save=3, throw=False
    )
    assert sol.result == jf.RESULTS.nonfinite_state


def test_failed_solve_has_nan_forward_derivative():
    """Forward mode (`jax.jacfwd`, `diffrax.ForwardMode`) on a fixed-step path:
    a free mass (no friction level) under a unit force, q(T) = x0 + v0 T + T²/2
    exactly (RK4 is exact on a quadratic), so dq(T)/d(x0, v0) = (1, T)."""
    free = jf.systems.Oscillator(mass=1.0, stiffness=0.0)
    law = jf.Kikuuwe(k=1e3, b=60.0, f=0.0)
    horizon = 0.5

    def end(state, t_bad):
        sol = jf.simulate(
            free,
            law,
            state[0],
            state[1],
            horizon,
            force=NaNAfter(jnp.asarray(1.0), t_bad),
            dt0=0.01,
            num_save=2,
            adjoint=diffrax.ForwardMode(),
            throw=False,
        )
        return sol.q[-1, 0], sol.result

    state = jnp.array([0.2, 0.3])
    jac, result = jax.vmap(jax.jacfwd(end, has_aux=True), in_axes=(None, 0))(
        state, jnp.array([1.0, 0.2])
    )
    assert (result == jf.RESULTS.successful)[0]
    np.testing.assert_allclose(jac[0], [1.0, horizon], atol=1e-12)
    # Before: the NaN force gave a NaN state but a finite (stale) derivative.
    assert (result == jf.RESULTS.nonfinite_state)[1]
    assert np.all(np.isnan(jac[1]))


def test_jacfwd_with_default_adjoint_says_forward_mode():
    def end(mass):
        system = jf.systems.Oscillator(mass=mass, stiffness=1.0)
        return jf.simulate(system, jf.Coulomb(1.0), X0, 0.0, 1.0, num_save=2).q[-1, 0]

    # Before: "can't apply forward-mode autodiff (jvp) to a custom_vjp function."
    with pytest.raises(TypeError, match=r"adjoint=diffrax\.ForwardMode\(\)"):
        jax.jacfwd(end)(1.0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        # Before: rtol = 0 ran (or spent max_steps), rtol = nan spent max_steps.
        (dict(rtol=0.0), r"`rtol` must lie in \(0.0, inf\]"),
        (dict(rtol=float("nan")), "`rtol` must be finite"),
        (dict(rtol=-1e-6), r"`rtol` must lie in \(0.0"),
        (dict(atol=0.0), r"`atol` must lie in \(0.0, inf\]"),
        (dict(atol=float("inf")), "`atol` must be finite"),
        (dict(dt0=-1e-3), r"`dt0` must lie in \(0.0, inf\]"),
        (dict(dtmax=0.0), r"`dtmax` must lie in \(0.0, inf\]"),
        # Before: num_save 0 and 1 returned 0 or 1 saved times silently.
        (dict(num_save=0), "`num_save` must be an integer >= 2"),
        (dict(num_save=1), "`num_save` must be an integer >= 2"),
        (dict(num_save=-1), "`num_save` must be an integer >= 2"),
        # Before: ignored on the switch path.
        (
            dict(friction_state0=0.0),
            "`friction_state0` is not an option of the switch path, which "
            "simulates Coulomb",
        ),
    ],
)
def test_invalid_options_rejected_at_entry(kwargs, match):
    with pytest.raises(ValueError, match=match):
        jf.simulate(OSC, jf.Coulomb(1.0), X0, 0.0, 1.0, **kwargs)


def test_force_output_shape_checked_naming_the_force():
    two = jf.systems.TwoMass(1.0, 2.0)  # n_dof = 2

    def three_forces(t, q, qd):
        return jnp.ones(3)

    with pytest.raises(ValueError, match="force callable `.*three_forces` must"):
        jf.simulate(two, jf.Coulomb(1.0), 0.0, 0.0, 1.0, force=three_forces)
    with pytest.raises(ValueError, match=r"force `Constant` must .* shape \(2,\)"):
        jf.simulate(
            two,
            jf.Coulomb(1.0),
            0.0,
            0.0,
            1.0,
            force=jf.forces.Constant(np.ones((2, 2))),
        )


class _Toggle(jf.systems.AbstractSystem):
    """A unit mass pushed to +x whose quantities are NaN beyond ``x = 1`` and
    which reports a singular configuration from ``x = 0.9`` on (standing in
    for a closed chain driven into a toggle position)."""

    n_dof: ClassVar[int] = 1
    n_friction: ClassVar[int] = 1

    def configuration_status(self, q):
        singular = jf.systems.ConfigurationStatus.singular
        return jf.systems.ConfigurationStatus.where(
            q[0] > 0.9, singular, jf.systems.ConfigurationStatus.ok
        )

    def mass_matrix(self, q):
        return jnp.where(q[0] > 1.0, jnp.nan, 1.0) * jnp.ones((1, 1))

    def bias_force(self, q, qd):
        return -jnp.ones(1)

    def friction_jacobian(self, q):
        return jnp.ones((1, 1))

    def friction_jacobian_dot_qd(self, q, qd):
        return jnp.zeros(1)


@pytest.mark.parametrize(
    "law",
    [jf.Coulomb(0.1), jf.Regularized(jf.Coulomb(0.1), 1e-2)],
    ids=["switch", "smooth"],
)
def test_stop_at_a_singular_configuration_is_named(law):
    # Both kinds of path ask the system at the state where they stopped (the
    # switch path: the last accepted state; the smooth one: its t1 save).
    sol = jf.simulate(_Toggle(), law, 0.0, 0.0, 3.0, num_save=4, throw=False)
    assert sol.result == jf.RESULTS.singular_configuration
    finite = np.isfinite(np.asarray(sol.q[:, 0]))
    assert finite[0] and not finite[-1]
