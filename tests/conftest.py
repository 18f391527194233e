import jax
import numpy as np
import pytest

# float64 everywhere in tests, and no silent rank promotion (STYLE.md, habit 3).
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")

# The modules that keep a worker longest (seconds of one worker, measured with
# `--durations=0` on the 2-core machine, 2026-11-29: 232, 151, 137, 118, 115,
# 113, 97, 93, 82; 1661 s in all), in that order. xdist's loadscope hands out
# whole modules in collection order (`--no-loadscope-reorder`,
# pyproject.toml), so these go first: a long module handed out last kept one
# worker busy while the other idled (1090 s for 2033 s of work on 2026-11-28;
# the half is 1016 s).
_LONGEST_FIRST = (
    "test_free_bodies.py",
    "test_joint_friction_3d.py",
    "test_switch.py",
    "test_closed_chain.py",
    "test_unrolled.py",
    "test_optimize.py",
    "test_joint_friction.py",
    "test_modes.py",
    "test_failures.py",
)


def pytest_collection_modifyitems(items):
    """Longest modules first (`_LONGEST_FIRST`); the rest keep their order."""
    rank = {name: k for k, name in enumerate(_LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


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
