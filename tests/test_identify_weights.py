"""Per-experiment weights in `jaxfric.identify.fit`: ``position_weight`` of shape
``(experiments, n)`` weights each record by its own noise level.

References: a record with zero weight must not change the fit (it equals the fit
of the other record alone); weighting every record by the same factor leaves the
fitted values and the Gauss-Newton standard errors unchanged (the residual
variance absorbs the factor); bad shapes are rejected by name.
"""

import jax
import numpy as np
import pytest

import jaxfric as jf
from jaxfric.identify import Experiment, fit

jax.config.update("jax_enable_x64", True)

SYSTEM = jf.systems.Oscillator(mass=1.0, stiffness=4.0)
TRUE = jf.Regularized(jf.CoulombViscous(0.8, 0.8, 0.3, 0.3), eps=0.05)
START = jf.Regularized(jf.CoulombViscous(1.0, 1.0, 0.2, 0.2), eps=0.05)
FREE = lambda m: m.friction.law  # noqa: E731
TS = np.linspace(0.0, 2.0, 41)


def _experiment(amplitude, noise, seed):
    force = jf.forces.Sine(amplitude, 2.0)
    sol = jf.simulate(SYSTEM, TRUE, 0.0, 0.0, 2.0, ts=TS, force=force)
    q = np.asarray(sol.q)
    q = q + noise * np.random.default_rng(seed).normal(size=q.shape)
    return Experiment(TS, q, force=force, q0=0.0)


def test_zero_weight_drops_a_record_and_common_scale_changes_nothing():
    good = _experiment(3.0, 1e-3, 0)
    # Same force type and sample count, but positions far off the model.
    bad = _experiment(2.0, 0.5, 1)
    alone = fit(SYSTEM, START, good, free=FREE, optimizer="lm")
    masked = fit(
        SYSTEM,
        START,
        [good, bad],
        free=FREE,
        optimizer="lm",
        position_weight=np.array([[1.0], [0.0]]),
    )
    np.testing.assert_allclose(masked.params, alone.params, rtol=1e-6)
    # Standard errors: the masked record adds nothing but its sample count in
    # the residual-variance denominator N - P; undo that difference.
    n = TS.size
    ratio = np.sqrt((n - 4) / (2 * n - 4))
    np.testing.assert_allclose(masked.stderr, alone.stderr * ratio, rtol=1e-4)
    scaled = fit(
        SYSTEM, START, good, free=FREE, optimizer="lm", position_weight=[[25.0]]
    )
    np.testing.assert_allclose(scaled.params, alone.params, rtol=1e-6)
    np.testing.assert_allclose(scaled.stderr, alone.stderr, rtol=1e-4)


@pytest.mark.parametrize(
    ("weight", "match"),
    [
        (np.ones((3, 1)), r"position_weight.*\(2, 1\)"),
        (np.ones((2, 1, 1)), "position_weight"),
        ([1.0, 2.0], "position_weight"),
        (-1.0, "position_weight.*>= 0"),
    ],
)
def test_bad_weight_shapes(weight, match):
    exps = [_experiment(3.0, 0.0, 0), _experiment(2.0, 0.0, 0)]
    with pytest.raises(ValueError, match=match):
        fit(SYSTEM, START, exps, free=FREE, position_weight=weight)
