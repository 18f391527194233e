"""Friction laws (strategy objects for `jaxfric.simulate`)."""

from ._base import (
    AbstractDynamicLaw as AbstractDynamicLaw,
    AbstractFrictionLaw as AbstractFrictionLaw,
    AbstractSetValuedLaw as AbstractSetValuedLaw,
    AbstractSmoothLaw as AbstractSmoothLaw,
)
from ._coulomb import (
    Coulomb as Coulomb,
    CoulombViscous as CoulombViscous,
    IsotropicCoulomb as IsotropicCoulomb,
    Stribeck as Stribeck,
)
from ._joint import (
    AbstractJointLoad as AbstractJointLoad,
    CylindricalLoad as CylindricalLoad,
    JointFriction as JointFriction,
    JointLuGre as JointLuGre,
    RevoluteLoad as RevoluteLoad,
    SphericalLoad as SphericalLoad,
    TranslationalLoad as TranslationalLoad,
)
from ._karnopp import Karnopp as Karnopp
from ._kikuuwe import Kikuuwe as Kikuuwe, gsat as gsat
from ._lugre import ContactLuGre as ContactLuGre, Dahl as Dahl, LuGre as LuGre
from ._regularized import Regularized as Regularized
