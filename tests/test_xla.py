"""`jaxfric._xla`: the XLA flag jaxfric sets at import (only matrix products
go to XLA:CPU's YNN library), when it is set and that it takes effect."""

import os

import pytest
from _fresh import run_fresh

from jaxfric import _xla

# In a fresh process: whether JAX's backend had started once jaxfric was
# imported, and how many library (YNN) fusions XLA makes of a fused reduction
# of the kind a robot's 3×3 rotation products make, under `vmap`.
_PROBE = """
import re
import jax
from jax._src import xla_bridge
import jaxfric, jaxfric.io
print(xla_bridge.backends_are_initialized())
import jax.numpy as jnp
f = jax.jit(jax.vmap(lambda a, b: (a[..., None] * b[..., None, :, :]).sum(-2)))
a = jnp.ones((64, 4, 3, 3))
print(len(re.findall(r"%ynn_fusion[.0-9]* = ", f.lower(a, a).compile().as_text())))
"""


def _probe(xla_flags: str | None) -> tuple[bool, int]:
    run = run_fresh(_PROBE, xla_flags, drop=("JAX_ENABLE_X64",))
    started, fusions = run.stdout.split()[-2:]
    return started == "True", int(fusions)


def test_the_flag_is_added_once_and_keeps_the_users_flags(monkeypatch):
    monkeypatch.setattr(_xla, "_jaxlib_release", lambda: min(_xla._CHECKED))
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    assert _xla.limit_cpu_library_fusions()
    flags = os.environ["XLA_FLAGS"]
    assert flags == f"--xla_force_host_platform_device_count=2 {_xla.FLAG}=dot"
    # Named already (by jaxfric or by the user): left as it is.
    assert not _xla.limit_cpu_library_fusions()
    assert os.environ["XLA_FLAGS"] == flags
    monkeypatch.setenv("XLA_FLAGS", f"{_xla.FLAG}=dot,reduce,eltwise")
    assert not _xla.limit_cpu_library_fusions()
    assert os.environ["XLA_FLAGS"] == f"{_xla.FLAG}=dot,reduce,eltwise"
    # A jaxlib release it was not checked on (XLA aborts on unknown flags).
    monkeypatch.delenv("XLA_FLAGS")
    monkeypatch.setattr(_xla, "_jaxlib_release", lambda: (0, 4))
    assert not _xla.limit_cpu_library_fusions()
    assert "XLA_FLAGS" not in os.environ


def test_importing_jaxfric_starts_no_backend_and_keeps_reductions_out():
    # With XLA's reduction fusions left on, the probe's reduction is a
    # library call (where this XLA makes it one: a precondition of the check).
    started, fusions = _probe(f"{_xla.FLAG}=dot,reduce,eltwise")
    assert not started
    if _xla._jaxlib_release() not in _xla._CHECKED:
        pytest.skip("jaxfric sets no flag on this jaxlib")
    if fusions == 0:
        pytest.skip("this XLA makes no library fusion of the probe")
    # With the flag jaxfric adds at import (nothing set before): none.
    assert _probe(None) == (False, 0)
