"""jaxfric: differentiable simulation of mechanisms with exact Coulomb stick-slip
and dynamic friction models, in JAX."""

from . import (
    forces as forces,
    friction as friction,
    identify as identify,
    optimize as optimize,
    systems as systems,
)
from ._xla import limit_cpu_library_fusions
from .friction import (
    Coulomb as Coulomb,
    CoulombViscous as CoulombViscous,
    CylindricalLoad as CylindricalLoad,
    Dahl as Dahl,
    JointFriction as JointFriction,
    JointLuGre as JointLuGre,
    Karnopp as Karnopp,
    Kikuuwe as Kikuuwe,
    LuGre as LuGre,
    Regularized as Regularized,
    RevoluteLoad as RevoluteLoad,
    SphericalLoad as SphericalLoad,
    Stribeck as Stribeck,
    TranslationalLoad as TranslationalLoad,
)
from .simulate import (
    RESULTS as RESULTS,
    SimulateOptions as SimulateOptions,
    Solution as Solution,
    simulate as simulate,
)

# XLA's CPU library fusions (`jaxfric._xla`): before JAX starts its backend,
# which importing jaxfric does not do (`tests/test_layering.py`).
limit_cpu_library_fusions()

__version__ = "0.1.0"
