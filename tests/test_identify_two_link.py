"""Identification through the exact switch path of a two-degree-of-freedom
system: per-joint Coulomb and viscous friction of `TwoLinkArm` (horizontal
plane) recovered from noiseless joint angles of a short PD-tracked record to
1e-6 relative, from a start 50 % off in both directions (the issue's bar; the
reference is the parameter set the data were simulated with)."""

import jax
import jax.numpy as jnp
import numpy as np

import jaxfric as jf
from jaxfric.identify import Experiment, fit

jax.config.update("jax_enable_x64", True)


def _law(theta):
    """``f = fc·d + fv·v`` slipping, stuck while ``|f| <= fc`` (Farhat Eq. 4,
    symmetric), one entry per joint: the static limit tied to ``fc``."""
    return jf.Coulomb(theta[:2], fv=theta[2:], static_ratio=1.0)


def test_two_link_noiseless_recovery_per_joint():
    arm = jf.systems.TwoLinkArm(
        m1=1.0, m2=1.0, l1=0.5, l2=0.5, lc1=0.25, lc2=0.25, I1=0.02, I2=0.02,
        gravity=0.0,
    )  # fmt: skip
    truth = np.array([0.3, 0.15, 0.1, 0.05])
    ref = jf.forces.FourierSeries(a=jnp.array([[4.0, 4.0]]), b=jnp.zeros((1, 2)),
                                  omega=4.0)  # fmt: skip
    force = jf.forces.PD(ref, kp=jnp.array([2.0, 1.0]), kd=jnp.array([0.2, 0.1]))
    ts = np.linspace(0.0, 1.2, 25)
    sol = jf.simulate(
        arm, _law(truth), jnp.zeros(2), jnp.zeros(2),
        1.2, ts=ts, force=force,
    )  # fmt: skip
    # Both joints stick and slip in the record.
    qd = np.asarray(sol.qd)
    assert np.all(np.any(qd[1:] == 0.0, axis=0)) and np.all(np.max(abs(qd), 0) > 0.3)
    start = truth * np.array([1.5, 0.5, 0.5, 1.5])
    result = fit(
        arm,
        _law(start),
        Experiment(ts, sol.q, force=force, q0=jnp.zeros(2), qd0=jnp.zeros(2)),
        free=lambda m: (m.friction.fc, m.friction.fv),
        optimizer="lm",
        max_steps=40,
    )
    np.testing.assert_allclose(result.params, truth, rtol=1e-6)
