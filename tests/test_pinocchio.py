"""Rigid-body dynamics against Pinocchio (the C++ reference implementation of
Featherstone's algorithms) on robots from `example-robot-data` (the xArm7's
end-effector link has no ``<inertial>``) and a small branched test robot: mass
matrix, inverse dynamics, forward dynamics, gravity, joint reaction wrenches and
link placements at random states."""

import pathlib
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pinocchio as pin
import pytest

from jaxfric.io.urdf import load_urdf
from jaxfric.systems import rigid

# The robot helpers are shared with experiments/bench_rigid_body.py.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "experiments"))
from _common import (  # noqa: E402
    example_robot_urdf,
    pinocchio_configuration,
    random_robot_states,
)

# Required agreement, max |ours − Pinocchio| / max |Pinocchio| per quantity.
_TOLERANCE = 1e-9
_NUM_STATES = 8
_DATA = pathlib.Path(__file__).parent / "data"


_ROBOTS = {
    "ur5": example_robot_urdf("ur_description/urdf/ur5_robot.urdf"),
    "panda": example_robot_urdf("panda_description/urdf/panda.urdf"),
    # Its end-effector link has no <inertial>: massless, as Pinocchio reads it.
    "xarm7": example_robot_urdf("xarm_description/urdf/xarm7.urdf"),
    "branched": str(_DATA / "branched.urdf"),
}


@jax.jit
def _ours(model, q, qd, qdd, tau):
    """Every quantity for a batch of states: one compilation per robot."""

    def one(q, qd, qdd, tau):
        # What a simulation evaluates: M and C q̇ + g from one kinematics pass.
        one_pass_mass, nle = rigid.mass_matrix_and_bias(model, q, qd)
        return dict(
            one_pass_mass=one_pass_mass,
            nle=nle,
            mass_matrix=rigid.mass_matrix(model, q),
            rnea=rigid.inverse_dynamics(model, q, qd, qdd),
            aba=rigid.forward_dynamics(model, q, qd, tau),
            gravity=rigid.gravity_force(model, q),
            wrenches=rigid.joint_wrenches(model, q, qd, qdd),
            links=rigid.link_poses(model, q),
        )

    return jax.vmap(one)(q, qd, qdd, tau)


def _pinocchio(model, links, q, qd, qdd, tau):
    data = model.createData()
    out = {k: [] for k in ("mass_matrix", "rnea", "aba", "gravity", "wrenches", "nle")}
    out["link_rotation"], out["link_translation"] = [], []
    for x, v, a, t in zip(q, qd, qdd, tau, strict=True):
        xp = pinocchio_configuration(model, x)
        mass = pin.crba(model, data, xp)
        out["mass_matrix"].append(np.triu(mass) + np.triu(mass, 1).T)
        out["nle"].append(pin.nonLinearEffects(model, data, xp, v).copy())
        out["rnea"].append(pin.rnea(model, data, xp, v, a).copy())
        # data.f after rnea: the force each joint transmits (linear, angular).
        out["wrenches"].append(
            [np.concatenate([f.angular, f.linear]) for f in data.f[1:]]
        )
        out["aba"].append(pin.aba(model, data, xp, v, t).copy())
        out["gravity"].append(pin.computeGeneralizedGravity(model, data, xp).copy())
        pin.framesForwardKinematics(model, data, xp)
        placements = [data.oMf[model.getFrameId(name)] for name in links]
        out["link_rotation"].append([p.rotation.copy() for p in placements])
        out["link_translation"].append([p.translation.copy() for p in placements])
    out = {k: np.asarray(v) for k, v in out.items()}
    out["one_pass_mass"] = out["mass_matrix"]
    return out


@pytest.fixture(scope="module", params=sorted(_ROBOTS))
def robot(request):
    path = _ROBOTS[request.param]
    tree, _ = load_urdf(path)
    model = pin.buildModelFromUrdf(path)
    assert model.nv == tree.n_dof
    assert tuple(model.names[1:]) == tree.joint_names
    q, qd, qdd, tau = random_robot_states(1234, _NUM_STATES, tree.n_dof)
    ours = _ours(tree.model, *(jnp.asarray(x) for x in (q, qd, qdd, tau)))
    ref = _pinocchio(model, tree.model.link_names, q, qd, qdd, tau)
    return request.param, ours, ref


def _relative_error(ours, ref) -> float:
    ours, ref = np.asarray(ours), np.asarray(ref)
    assert ours.shape == ref.shape
    return float(np.max(np.abs(ours - ref)) / np.max(np.abs(ref)))


@pytest.mark.parametrize(
    "quantity",
    ["mass_matrix", "rnea", "aba", "gravity", "wrenches", "one_pass_mass", "nle"],
)
def test_dynamics_match_pinocchio(robot, quantity):
    _, ours, ref = robot
    assert _relative_error(ours[quantity], ref[quantity]) < _TOLERANCE


def test_link_placements_match_pinocchio(robot):
    _, ours, ref = robot
    rot, pos = ours["links"]
    assert _relative_error(rot, ref["link_rotation"]) < _TOLERANCE
    assert _relative_error(pos, ref["link_translation"]) < _TOLERANCE
