"""Rigid-body trees: algorithms as pure functions over a `TreeModel` (forward
kinematics, recursive Newton–Euler, composite rigid body mass matrix, forward
dynamics) and the user-facing system `RigidBodyTree`."""

from ._dynamics import (
    bias_force as bias_force,
    forward_dynamics as forward_dynamics,
    gravity_force as gravity_force,
    inverse_dynamics as inverse_dynamics,
    joint_wrenches as joint_wrenches,
    mass_matrix as mass_matrix,
    mass_matrix_and_bias as mass_matrix_and_bias,
)
from ._kinematics import (
    forward_kinematics as forward_kinematics,
    link_poses as link_poses,
)
from ._model import TreeModel as TreeModel, build_model as build_model
from ._spatial import axis_rotation as axis_rotation, rpy_matrix as rpy_matrix
from ._system import RigidBodyTree as RigidBodyTree
