"""`jaxfric._xla`: the XLA flag jaxfric sets at import (only matrix products
go to XLA:CPU's YNN library), when it is set and that it takes effect."""

import os
import subprocess
import sys

import pytest

from jaxfric import _xla

# A fused reduction of the kind a robot's 3×3 rotation products make, under
# `vmap`; prints how many library (YNN) fusions XLA made of the program, after
# checking that importing jaxfric started no backend.
_PROBE = """
import jax
from jax._src import xla_bridge
import jaxfric, jaxfric.io
assert not xla_bridge.backends_are_initialized()
import jax.numpy as jnp
f = jax.jit(jax.vmap(lambda a, b: (a[..., None] * b[..., None, :, :]).sum(-2)))
a = jnp.ones((64, 4, 3, 3))
print(f.lower(a, a).compile().as_text().count("kind=kCustom"))
"""


def _library_fusions(xla_flags: str | None) -> int:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    if xla_flags is not None:
        env["XLA_FLAGS"] = xla_flags
    run = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return int(run.stdout.split()[-1])


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


@pytest.mark.skipif(
    _xla._jaxlib_release() not in _xla._CHECKED, reason="jaxfric sets no flag here"
)
def test_importing_jaxfric_keeps_reductions_out_of_the_library():
    # XLA's own choice (its default fusions) makes the reduction a library
    # call; with the flag jaxfric adds at import, none.
    assert _library_fusions(f"{_xla.FLAG}=dot,reduce,eltwise") > 0
    assert _library_fusions(None) == 0
