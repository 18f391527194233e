"""Parameter ranges under `jit`, `vmap` and `grad` (issue 13, item 2).

Every law, system and force declares its ranges once (``parameter_checks``);
the constructors check them on concrete values and `jaxfric.simulate` on traced
ones: it raises naming the parameter (``throw=True``) or flags the batch member
`RESULTS.invalid_parameters` with NaN states (``throw=False``).
"""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxfric as jf
from jaxfric.simulate._common import (
    input_checks,
    invalid_parameters,
    parameter_checks,
    raise_invalid_parameters,
)
from jaxfric.simulate._solution import RESULTS

# The same solve batched or not: vmap changes only how the arithmetic is laid
# out, so the trajectories agree to rounding.
_TOLERANCE = 1e-12

_FOURIER = dict(a=[0.5, 0.1], b=[0.0, 0.2], omega=1.5)
_OSC = dict(mass=1.0, stiffness=1.0)

# (build from one value, a valid value, an invalid value, owner, parameter):
# the invalid value is the first check that fails.
_CASES = [
    (lambda v: jf.Coulomb(v), 1.0, -1.0, "Coulomb", "fc"),
    (lambda v: jf.Coulomb(v), 1.0, np.nan, "Coulomb", "fc"),
    (lambda v: jf.Coulomb(1.0, fs=v), 1.5, 0.5, "Coulomb", "fs"),
    (lambda v: jf.Coulomb(1.0, fv=v), 0.1, -0.1, "Coulomb", "fv"),
    (lambda v: jf.CoulombViscous(1.0, v), 1.0, -1.0, "CoulombViscous", "fc_neg"),
    (lambda v: jf.Stribeck(1.0, 1.5, v), 0.1, 0.0, "Stribeck", "vs"),
    (lambda v: jf.Stribeck(1.0, 1.5, 0.1, delta=v), 2.0, -1.0, "Stribeck", "delta"),
    (lambda v: jf.Karnopp(v, None, jf.Coulomb(1.0)), 0.01, 0.0, "Karnopp", "dv"),
    (lambda v: jf.Karnopp(0.01, v, jf.Coulomb(1.0)), 1.5, 0.5, "Karnopp", "breakaway"),
    (lambda v: jf.Karnopp(0.01, None, jf.Coulomb(v)), 1.0, -1.0, "Coulomb", "fc"),
    (lambda v: jf.Kikuuwe(v, 1.0, 1.0), 1e4, 0.0, "Kikuuwe", "k"),
    (lambda v: jf.LuGre(1e4, 100.0, 0.4, 1.0, v, 0.01), 1.5, 0.5, "LuGre", "fs"),
    (lambda v: jf.Dahl(v, 1.0), 1e4, -1.0, "Dahl", "sigma0"),
    (lambda v: jf.Regularized(jf.Coulomb(1.0), v), 0.01, 0.0, "Regularized", "eps"),
    (lambda v: jf.Regularized(jf.Coulomb(v), 0.01), 1.0, -1.0, "Coulomb", "fc"),
    (lambda v: jf.systems.Oscillator(v, 1.0), 1.0, 0.0, "Oscillator", "mass"),
    (lambda v: jf.systems.Oscillator(1.0, 1.0, v), 0.1, -0.1, "Oscillator", "damping"),
    (lambda v: jf.systems.TwoMass(1.0, v), 1.0, -1.0, "TwoMass", "m2"),
    (
        lambda v: jf.systems.StackedBlocks(1.0, 1.0, k12=v),
        1.0,
        -1.0,
        "StackedBlocks",
        "k12",
    ),
    (
        lambda v: jf.systems.TwoLinkArm(1.0, 1.0, v, 1.0, 0.5, 0.5, 0.1, 0.1),
        1.0,
        0.0,
        "TwoLinkArm",
        "l1",
    ),
    (
        lambda v: jf.systems.rigid.RigidBodyTree(
            [-1],
            ["revolute"],
            [[0.0, 0.0, 1.0]],
            [[0.0, 0.0, 0.0]],
            mass=[1.0],
            com=[[0.5, 0.0, 0.0]],
            inertia=[np.eye(3) * 0.01],
            damping=v,
        ),
        0.1,
        -0.1,
        "RigidBodyTree",
        "damping",
    ),
    (lambda v: jf.forces.Constant(v), 1.0, np.inf, "Constant", "value"),
    (lambda v: jf.forces.Sine(1.0, v), 2.0, -2.0, "Sine", "omega"),
    (lambda v: jf.forces.Sine(v, 2.0), 1.0, np.nan, "Sine", "amplitude"),
    (
        lambda v: jf.forces.FourierSeries([0.5], [0.1], omega=v),
        1.0,
        0.0,
        "FourierSeries",
        "omega",
    ),
    (
        lambda v: jf.forces.Tabulated(jnp.stack([0.0, v, 2.0]), [0.0, 1.0, 0.0]),
        1.0,
        3.0,
        "Tabulated",
        "ts",
    ),
    (
        lambda v: jf.forces.Tabulated([0.0, 1.0], jnp.stack([0.0, v])),
        1.0,
        np.nan,
        "Tabulated",
        "values",
    ),
    (
        lambda v: jf.forces.PD(jf.forces.FourierSeries(**_FOURIER), v, 1.0),
        2.0,
        -2.0,
        "PD",
        "kp",
    ),
    (
        lambda v: jf.forces.PID(jf.forces.FourierSeries(**_FOURIER), 1.0, v, 1.0),
        0.5,
        -0.5,
        "PID",
        "ki",
    ),
    # Nested: a controller's reference, a computed-torque controller's model.
    (
        lambda v: jf.forces.PD(jf.forces.FourierSeries([0.5], [0.1], v), 1.0, 1.0),
        1.5,
        -1.5,
        "FourierSeries",
        "omega",
    ),
    (
        lambda v: jf.forces.ComputedTorque(
            jf.systems.Oscillator(v, 1.0), jf.forces.FourierSeries(**_FOURIER), 4.0, 4.0
        ),
        1.0,
        -1.0,
        "Oscillator",
        "mass",
    ),
]


@pytest.mark.parametrize(
    ("make", "good", "bad", "owner", "name"),
    _CASES,
    ids=[f"{c[3]}.{c[4]}" for c in _CASES],
)
def test_declared_checks_hold_concrete_and_traced(make, good, bad, owner, name):
    """One declaration: the constructor's ValueError on the concrete value, and
    on the traced value (a batch member under `vmap`) an error naming the owner
    and the parameter, while valid members pass."""
    with pytest.raises(ValueError, match=f"`{name}`"):
        make(bad)

    @eqx.filter_jit
    @jax.vmap
    def check(v):
        checks = parameter_checks(make(v))
        return raise_invalid_parameters(jnp.zeros(1), checks), invalid_parameters(
            checks
        )

    _, flags = check(jnp.array([good, good]))
    assert not np.any(np.asarray(flags))
    with pytest.raises(
        eqx.EquinoxRuntimeError, match=f"Invalid parameter of {owner}: `{name}`"
    ):
        check(jnp.array([good, bad]))


def _final_fc(fc, throw):
    """The issue's example: the Farhat oscillator from 2.75 under `Coulomb(fc)`."""
    osc = jf.systems.Oscillator(**_OSC)
    return jf.simulate(osc, jf.Coulomb(fc), 2.75, 0.0, 10.0, num_save=21, throw=throw)


_FCS = jnp.array([1.0, -1.0, jnp.nan])


def test_vmap_example_raises_naming_fc():
    with pytest.raises(
        eqx.EquinoxRuntimeError,
        match=r"Invalid parameter of Coulomb: `fc` must lie in \[0.0, inf\]",
    ):
        jax.vmap(lambda fc: _final_fc(fc, True).q[-1, 0])(_FCS)


@pytest.fixture(scope="module")
def jitted():
    """One compiled unbatched solve (``throw=True``) over `(mass, fc)`."""

    def run(mass, fc):
        osc = jf.systems.Oscillator(mass, _OSC["stiffness"])
        return jf.simulate(osc, jf.Coulomb(fc), 2.75, 0.0, 10.0, num_save=21)

    return eqx.filter_jit(run)


def test_vmap_example_without_throw_flags_members(jitted):
    """The valid member is the unbatched run; the others are flagged, all NaN."""
    sol = jax.vmap(functools.partial(_final_fc, throw=False))(_FCS)
    np.testing.assert_array_equal(
        np.asarray(sol.result == RESULTS.successful), [True, False, False]
    )
    np.testing.assert_array_equal(
        np.asarray(sol.result == RESULTS.invalid_parameters), [False, True, True]
    )
    assert np.all(np.isnan(np.asarray(sol.q[1:])))
    assert np.all(np.isnan(np.asarray(sol.qd[1:])))
    reference = jitted(jnp.asarray(1.0), jnp.asarray(1.0))
    for field in ("q", "qd", "friction"):
        np.testing.assert_allclose(
            np.asarray(getattr(sol, field)[0]),
            np.asarray(getattr(reference, field)),
            rtol=_TOLERANCE,
            atol=_TOLERANCE,
        )
    # Farhat et al. 2010, Sec. 5.1: the valid member sticks at x = -0.75.
    np.testing.assert_allclose(float(sol.q[0, -1, 0]), -0.75, atol=1e-9)


def test_traced_mass_inside_jit_raises(jitted):
    with pytest.raises(
        eqx.EquinoxRuntimeError,
        match=r"Invalid parameter of Oscillator: `mass` must lie in \(0.0, inf\]",
    ):
        jitted(jnp.asarray(-1.0), jnp.asarray(1.0))


def test_check_under_grad():
    with pytest.raises(eqx.EquinoxRuntimeError, match="Coulomb: `fc` must lie"):
        jax.grad(lambda fc: _final_fc(fc, True).q[-1, 0])(-1.0)


def test_nested_law_is_checked_in_simulate():
    """The Coulomb law inside `Regularized` carries its checks too."""

    def final(fc):
        law = jf.Regularized(jf.Coulomb(fc), eps=0.01)
        osc = jf.systems.Oscillator(**_OSC)
        return jf.simulate(osc, law, 2.75, 0.0, 10.0, num_save=21).q[-1, 0]

    with pytest.raises(eqx.EquinoxRuntimeError, match="Coulomb: `fc` must lie"):
        jax.vmap(final)(_FCS)


def test_concrete_value_that_skipped_its_constructor():
    """`eqx.tree_at` builds a module without `__check_init__`; `simulate` still
    raises the constructor's ValueError."""
    law = eqx.tree_at(lambda law: law.fc, jf.Coulomb(1.0), jnp.asarray(-1.0))
    osc = jf.systems.Oscillator(**_OSC)
    with pytest.raises(ValueError, match=r"`fc` must lie in \[0.0, inf\]"):
        jf.simulate(osc, law, 2.75, 0.0, 10.0)


def test_traced_save_times_are_checked():
    # Save times built under `jit` skip `simulate`'s concrete check: a
    # decreasing pair is `RESULTS.invalid_parameters` (NaN states) without
    # `throw` (with it, the same list of checks raises, `input_checks`); good
    # ones solve.
    osc = jf.systems.Oscillator(**_OSC)

    @eqx.filter_jit
    def run(ts):
        return jf.simulate(osc, jf.Coulomb(1.0), 2.75, 0.0, 10.0, ts=ts, throw=False)

    good = jnp.linspace(0.0, 10.0, 5)
    assert run(good).result == RESULTS.successful
    sol = run(good.at[2].set(9.0))
    assert sol.result == RESULTS.invalid_parameters
    assert np.all(np.isnan(np.asarray(sol.q)))
    (owner, check) = input_checks(osc, jf.Coulomb(1.0), None, good, 0.0, 10.0)[-1]
    assert owner == "simulate" and "`ts` must be finite, non-decreasing" in (
        check.requirement()
    )
