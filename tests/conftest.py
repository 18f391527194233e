import jax
import numpy as np
import pytest

# float64 everywhere in tests, and no silent rank promotion (STYLE.md, habit 3).
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")


def _central_differences(fn, params, rel_step):
    """``∂fn/∂params[i]`` by central differences with step ``rel_step·|params[i]|``
    (`fn` scalar-valued, `params` a 1-D JAX array)."""
    fd = []
    for i in range(len(params)):
        h = rel_step * abs(float(params[i]))
        plus, minus = fn(params.at[i].add(h)), fn(params.at[i].add(-h))
        fd.append((plus - minus) / (2 * h))
    return np.array(fd)


@pytest.fixture
def central_differences():
    """The reference gradient for `jax.grad` checks: see `_central_differences`."""
    return _central_differences


@pytest.fixture(autouse=True, scope="module")
def _clear_compiled_programs():
    """Frees each module's compiled programs after it (`jax.clear_caches`):
    a worker that kept them all grew past 6 GB, and one crashed inside XLA's
    compiler (a segmentation fault) 14 minutes into a run; the same test
    passed alone. Modules share no compiled programs they need to keep."""
    yield
    jax.clear_caches()
