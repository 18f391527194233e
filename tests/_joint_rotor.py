"""The rotor and the tolerances shared by the joint-friction tests
(`test_joint_friction.py`: revolute and prismatic joints, where the rotor's
reactions are derived by hand; `test_joint_friction_3d.py`: cylindrical and
spherical joints, with the rotor beside a ball joint)."""

import jax
import jax.numpy as jnp
import numpy as np

import jaxfric as jf

M, L, G, INERTIA = 1.0, 0.1, 9.81, 1e-3
RP, RN, RB, T_PRE = 0.005, 0.007, 0.005, 0.002
T1 = 1.6
TS = np.linspace(0.0, T1, 33)
# The switch path at its default tolerances against scipy's DOP853 at 1e-12.
_TRAJECTORY_TOL = 1e-8
# Event times are located to 1e-13 s; the closed-form breakaway is exact.
_EVENT_TOL = 1e-11
# Central differences with a relative step of 1e-6.
_GRADIENT_RTOL = 1e-6


def _rotor():
    return jf.systems.RigidBodyTree(
        [-1],
        ["revolute"],
        [(0.0, 0.0, 1.0)],
        [(0.0, 0.0, 0.0)],
        mass=[M],
        com=[(L, 0.0, 0.0)],
        inertia=[INERTIA * np.eye(3)],
        gravity=(0.0, 0.0, -G),
    )


def _load():
    return jf.RevoluteLoad(
        pin_radius=RP, friction_arm=RN, bending_reaction_arm=RB, torque_preload=T_PRE
    )


class _Ramp(jf.forces.AbstractStatelessForce):
    rate: jax.Array

    def __call__(self, t, q, qd):
        return jnp.atleast_1d(self.rate * t)
