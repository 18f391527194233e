"""jaxtyping aliases used across jaxfric.

Dimension names: ``dof`` = number of generalised velocities n, ``coord`` =
number of position coordinates (n too, except for unit quaternions), ``m`` = number of
friction elements (slip coordinates), ``c`` = controller / internal state size,
``t`` = number of saved times.
"""

from typing import TypeAlias

from jaxtyping import Array, ArrayLike, Bool, Float, Int, Real

Scalar: TypeAlias = Float[Array, ""]
ScalarLike: TypeAlias = Real[ArrayLike, ""]
Vector: TypeAlias = Float[Array, " dof"]
Coordinates: TypeAlias = Float[Array, " coord"]
Matrix: TypeAlias = Float[Array, "dof dof"]
SlipVector: TypeAlias = Float[Array, " m"]
Jacobian: TypeAlias = Float[Array, "m dof"]
State: TypeAlias = Float[Array, " c"]
Modes: TypeAlias = Int[Array, " m"]
BoolScalar: TypeAlias = Bool[Array, ""]

__all__ = [
    "Array",
    "ArrayLike",
    "Bool",
    "BoolScalar",
    "Coordinates",
    "Float",
    "Int",
    "Jacobian",
    "Matrix",
    "Modes",
    "Real",
    "Scalar",
    "ScalarLike",
    "SlipVector",
    "State",
    "Vector",
]
