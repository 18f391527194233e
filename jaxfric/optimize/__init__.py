"""Trajectory optimisation through stick–slip: choose applied forces or reference
trajectories (`jaxfric.forces.CubicSpline` or `Tabulated` torques, Fourier
coefficients) that minimise a loss on the simulated motion, with any `optax`
transformation, limits by penalty (`TorqueLimit`, `VelocityLimit`) or projection
(`Box`), and batches of starts under `vmap` (see ``docs/optimize.md``)."""

from ._optimize import (
    Box as Box,
    OptimizeResult as OptimizeResult,
    evaluate as evaluate,
    optimize as optimize,
    perturbed_starts as perturbed_starts,
    value_and_grad as value_and_grad,
)
from ._problem import (
    AbstractLimit as AbstractLimit,
    PointToPoint as PointToPoint,
    Problem as Problem,
    TorqueLimit as TorqueLimit,
    VelocityLimit as VelocityLimit,
    applied_force as applied_force,
    effort as effort,
    time_integral as time_integral,
)
