"""`SimulateOptions` and the path protocol (`jaxfric.simulate._options`,
`_path`): one options object, the same rejection of an option a path does not
use on every path, and a law family that plugs in by declaring its path."""

import diffrax
import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest

import jaxfric as jf
from jaxfric.friction import AbstractFrictionLaw
from jaxfric.simulate import SimulateOptions
from jaxfric.simulate._smooth import SMOOTH_PATH

OSC = jf.systems.Oscillator(mass=1.0, stiffness=1.0)
# Closed form of the damped oscillator below: tolerance of the smooth path's
# default controller (rtol = atol = 1e-8) over a few periods.
_TOLERANCE = 1e-6

LAWS = {
    "Coulomb": jf.Coulomb(1.0),
    "Regularized": jf.Regularized(jf.Coulomb(1.0), 0.1),
    "Dahl": jf.Dahl(sigma0=1e3, fc=1.0),
    "Kikuuwe": jf.Kikuuwe(k=1e3, b=60.0, f=1.0),
    "Karnopp": jf.Karnopp(0.01, None, jf.Coulomb(1.0)),
}
UNUSED = [
    ("Coulomb", "friction_state0", 0.0, "the switch path"),
    ("Regularized", "max_events", 8, "the smooth path"),
    ("Dahl", "max_events", 8, "the dynamic-law path"),
    ("Kikuuwe", "rtol", 1e-6, "the Kikuuwe path"),
    ("Kikuuwe", "jump_ts", np.array([0.5]), "the Kikuuwe path"),
    ("Karnopp", "dtmax", 0.1, "the Karnopp path"),
    ("Karnopp", "max_events", 8, "the Karnopp path"),
]


@pytest.mark.parametrize("law, name, value, path", UNUSED)
def test_unused_option_is_rejected_naming_option_and_path(law, name, value, path):
    # Before: max_events, and rtol/atol/dtmax/jump_ts on the fixed-step paths,
    # were ignored silently; friction_state0 and solver were rejected with
    # different words per path.
    message = f"`{name}` is not an option of {path}, which simulates {law}"
    with pytest.raises(ValueError, match=message):
        jf.simulate(OSC, LAWS[law], 1.0, 0.0, 1.0, **{name: value})


def test_options_object_equals_keywords():
    law = LAWS["Coulomb"]
    by_keywords = jf.simulate(OSC, law, 2.75, 0.0, 4.0, rtol=1e-8, max_events=8)
    options = SimulateOptions(rtol=1e-8, max_events=8)
    by_object = jf.simulate(OSC, law, 2.75, 0.0, 4.0, options=options)
    np.testing.assert_array_equal(by_keywords.q, by_object.q)
    assert int(by_keywords.stats["num_steps"]) == int(by_object.stats["num_steps"])
    with pytest.raises(TypeError, match="pass one"):
        jf.simulate(OSC, law, 2.75, 0.0, 4.0, rtol=1e-8, options=options)


def test_options_validate_names_and_ranges():
    with pytest.raises(TypeError, match="rtoll"):
        SimulateOptions(rtoll=1e-8)  # pyright: ignore[reportCallIssue]
    with pytest.raises(ValueError, match=r"`rtol` must lie in \(0.0, inf\]"):
        SimulateOptions(rtol=0.0)
    with pytest.raises(ValueError, match=r"`dtmax` must lie in \(0.0, inf\]"):
        SimulateOptions(dtmax=-1.0)
    with pytest.raises(ValueError, match=r"`max_events` must lie in \[1.0, inf\]"):
        SimulateOptions(max_events=0)
    options = SimulateOptions(rtol=1e-6, adjoint=diffrax.ForwardMode())
    assert options.given() == ("rtol", "adjoint")
    filled = options.with_defaults(rtol=1.0, atol=1e-9)
    assert (filled.rtol, filled.atol, filled.max_steps) == (1e-6, 1e-9, 16384)


class _LinearViscous(AbstractFrictionLaw):
    """A family defined outside jaxfric: ``f = c·v``, simulated by the smooth
    path because it says so."""

    simulation_path = SMOOTH_PATH
    c: float

    def force(self, slip_velocity):
        return self.c * jnp.asarray(slip_velocity)


def test_new_family_plugs_in_by_declaring_its_path():
    # x'' + c x' + x = 0, x(0) = 1, x'(0) = 0: underdamped closed form.
    c, t1 = 0.2, 6.0
    sol = jf.simulate(OSC, _LinearViscous(c), 1.0, 0.0, t1, num_save=61)
    zeta = c / 2
    wd = np.sqrt(1 - zeta**2)
    t = np.asarray(sol.ts)
    exact = np.exp(-zeta * t) * (np.cos(wd * t) + zeta / wd * np.sin(wd * t))
    np.testing.assert_allclose(sol.q[:, 0], exact, atol=_TOLERANCE)


def test_family_without_a_path_cannot_be_built():
    class NoPath(AbstractFrictionLaw):
        def force(self, slip_velocity):
            return slip_velocity

    with pytest.raises(TypeError, match="simulation_path"):
        NoPath()
    assert isinstance(NoPath, type(eqx.Module))
