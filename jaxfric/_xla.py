"""The one XLA setting jaxfric makes: which fusions XLA's CPU backend hands to
its YNN library. Imported first by `jaxfric`, it sets it at import.

jaxlib 0.10 hands not only matrix products but also fused reductions and
elementwise kernels to YNN, one library call per fusion. jaxfric's programs are
made of many small fusions (a 3×3 rotation product per body, a few numbers per
friction element), and under `jax.vmap` the fixed cost of those calls was most
of a robot's run time (README, Performance). With ``FLAG=VALUE`` only matrix
products go to YNN.

XLA reads ``XLA_FLAGS`` once, when JAX starts its backend (the first array or
computation), and aborts the process on a flag it does not know. So jaxfric adds
the flag at import, and only

- where ``XLA_FLAGS`` does not name it already (yours wins; for instance
  ``--xla_cpu_experimental_ynn_fusion_type=dot,reduce,eltwise`` gives back the
  reduction and elementwise library fusions);
- on the jaxlib releases it was checked on (`_CHECKED`, minor versions).

Imported after JAX has started (jaxfric imported after a computation), the
flag has no effect in that process. Other backends (GPU) ignore it. Child
processes inherit ``XLA_FLAGS``: one that runs another jaxlib (another virtual
environment) may not know the flag.
"""

import importlib.metadata
import os

FLAG = "--xla_cpu_experimental_ynn_fusion_type"
VALUE = "dot"
# jaxlib (major, minor) releases whose XLA knows the flag (checked: 0.10.2).
_CHECKED = frozenset({(0, 10)})


def _jaxlib_release() -> tuple[int, int] | None:
    try:
        major, minor, *_ = importlib.metadata.version("jaxlib").split(".")
        return int(major), int(minor)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None


def limit_cpu_library_fusions() -> bool:
    """Add ``FLAG=VALUE`` to ``XLA_FLAGS`` (module doc).

    Returns:
        Whether it was added: false where ``XLA_FLAGS`` already names the flag
        or jaxlib is not a release it was checked on.
    """
    flags = os.environ.get("XLA_FLAGS", "")
    named = any(f.split("=")[0] == FLAG for f in flags.split())
    if named or _jaxlib_release() not in _CHECKED:
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {FLAG}={VALUE}".strip()
    return True


# Before anything in jaxfric can start JAX's backend (`jaxfric/__init__.py`
# imports this module first).
limit_cpu_library_fusions()
