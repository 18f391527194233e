"""The one XLA setting jaxfric makes: which fusions XLA's CPU backend hands to
its YNN library.

jaxlib 0.10 hands not only matrix products but also fused reductions and
elementwise kernels to YNN, one library call per fusion. jaxfric's programs are
made of many small fusions (a 3×3 rotation product per body, a few scalars per
friction element), and the fixed cost of each call dominated them under
`jax.vmap`: a batch of 64 simulations of the 4-DoF ``tests/data/branched.urdf``
robot ran 2.2× slower, a UR5's mass matrix over 4096 states 3.2× (README,
Performance). With the flag below only matrix products go to YNN.

XLA reads ``XLA_FLAGS`` once, when JAX starts its backend (the first array or
computation), and aborts the process on a flag it does not know. So jaxfric adds
the flag at import, and only

- where ``XLA_FLAGS`` does not name it already (to keep XLA's own choice, set
  ``--xla_cpu_experimental_ynn_fusion_type=dot,reduce,eltwise``, the same
  fusions as its default in jaxlib 0.10.2, or any other value yourself);
- on the jaxlib releases it was checked on (`_CHECKED`, minor versions).

Imported after JAX has started (jaxfric imported after a computation), the
flag has no effect in that process. Other backends (GPU) ignore it.
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
    if FLAG in flags or _jaxlib_release() not in _CHECKED:
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {FLAG}={VALUE}".strip()
    return True
