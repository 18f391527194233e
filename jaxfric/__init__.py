"""jaxfric: differentiable simulation of mechanisms with exact Coulomb stick-slip
and dynamic friction models, in JAX."""

# First: XLA's CPU library fusions, set before JAX starts (`jaxfric._xla`).
from . import (
    _xla as _xla,
    forces as forces,
    friction as friction,
    identify as identify,
    optimize as optimize,
    systems as systems,
)
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

__version__ = "0.1.0"
