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
