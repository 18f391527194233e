"""Mechanical systems: mass matrix, bias forces and friction Jacobians."""

from . import rigid as rigid
from ._base import (
    AbstractSystem as AbstractSystem,
    ConfigurationStatus as ConfigurationStatus,
    Dynamics as Dynamics,
    JointReactions as JointReactions,
)
from ._closed import ClosedChain as ClosedChain, LoopJoint as LoopJoint
from ._free import (
    FreeBodies as FreeBodies,
    PenaltyJoint as PenaltyJoint,
    PlaneContact as PlaneContact,
    quaternion_rate as quaternion_rate,
    quaternion_to_matrix as quaternion_to_matrix,
)
from ._lumped import (
    Oscillator as Oscillator,
    StackedBlocks as StackedBlocks,
    TwoMass as TwoMass,
)
from ._mechanisms import four_bar as four_bar
from ._planar import TwoLinkArm as TwoLinkArm
from .rigid import RigidBodyTree as RigidBodyTree
