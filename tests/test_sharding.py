"""A batch of switch-path simulations sharded over several devices gives the same
numbers as the unsharded batch (docs/sharding.md).

Runs in a subprocess with four virtual CPU devices
(``XLA_FLAGS=--xla_force_host_platform_device_count=4``), since the device count
is fixed when JAX starts.
"""

import os
import textwrap

from _fresh import run_fresh

# Sharded vs unsharded: the same program on a quarter of the batch per device.
# Vectorised code for another batch width rounds differently; near an event the
# condition is rounding noise, so the bisected time moves inside its 1e-13
# bracket, and the trajectory after it by ~1e-12.
SHARD_TOL = 1e-10

_SCRIPT = textwrap.dedent(
    """
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    import jaxfric as jf

    assert len(jax.devices()) == 4, jax.devices()
    system = jf.systems.Oscillator(mass=1.0, stiffness=1.0)

    def one(x0, amplitude):
        sol = jf.simulate(
            system, jf.Coulomb(1.0), q0=x0, qd0=0.0, t1=10.0,
            force=jf.forces.Sine(amplitude, 1.0), ts=jnp.linspace(0, 10, 11),
            max_events=16, throw=False,
        )
        return sol.q[:, 0], sol.qd[:, 0], sol.result._value

    batch = jax.jit(jax.vmap(one))
    x0 = jnp.linspace(1.5, 6.0, 8)
    amplitude = jnp.array([0.0, 0.0, 0.0, 0.0, 1.5, 2.0, 2.5, 0.5])
    plain = batch(x0, amplitude)

    mesh = Mesh(np.array(jax.devices()), ("batch",))
    sharding = NamedSharding(mesh, P("batch"))
    x0_s, amplitude_s = jax.device_put((x0, amplitude), sharding)
    sharded = batch(x0_s, amplitude_s)
    assert len(sharded[0].sharding.device_set) == 4, sharded[0].sharding
    for a, b in zip(plain, sharded, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=TOL)
    assert np.all(np.asarray(sharded[2]) == 0), sharded[2]
    # Free members stick at the analytic positions (Quinn; x0 -> 2 - x0 ...).
    ends = []
    for x in np.asarray(x0[:4]):
        while abs(x) > 1.0:
            x = -x + 2.0 * np.sign(x)
        ends.append(x)
    np.testing.assert_allclose(np.asarray(sharded[0][:4, -1]), ends, atol=1e-9)
    print("SHARDED_OK")
    """
)


def test_sharded_batch_equals_unsharded():
    flags = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
    )
    proc = run_fresh(_SCRIPT.replace("TOL", repr(SHARD_TOL)), flags)
    assert "SHARDED_OK" in proc.stdout
