"""Applied forces and controllers."""

from ._base import (
    AbstractForce as AbstractForce,
    AbstractStatelessForce as AbstractStatelessForce,
    Constant as Constant,
    FunctionForce as FunctionForce,
)
from ._controllers import (
    PD as PD,
    PID as PID,
    ComputedTorque as ComputedTorque,
)
from ._inputs import (
    FourierSeries as FourierSeries,
    Sine as Sine,
    Tabulated as Tabulated,
)
from ._spline import CubicSpline as CubicSpline
