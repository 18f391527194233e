"""The 3-RPS parallel manipulator of ``experiments/farhat_3rps.py`` (a spatial
closed chain: 9 tree coordinates, two ball loops, 3 DoF): forward dynamics in the
independent leg lengths against Pinocchio's ``constraintDynamics``.

The model is built by the experiment's own builder (``experiments/_three_rps.py``)
from the numbers of ``configs/experiments/farhat_3rps.toml``; the Pinocchio model
is built independently from the same joint and link numbers.
"""

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfric.io import read_toml

pin = pytest.importorskip("pinocchio")

ROOT = Path(__file__).resolve().parent.parent

# Pinocchio's proximal constraint solve converges to ~1e-14 here; 1e-9 leaves room
# for the Gauss-Newton closure (tol 1e-12) of the dependent coordinates.
_TOLERANCE = 1e-9
_CLOSURE_TOLERANCE = 1e-10  # m


def _builder():
    spec = importlib.util.spec_from_file_location(
        "three_rps", ROOT / "experiments" / "_three_rps.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pinocchio_model(spec, gravity):
    model = pin.Model()
    model.gravity = pin.Motion(np.array([0.0, 0.0, -gravity, 0.0, 0.0, 0.0]))
    ids = []
    for k, parent in enumerate(spec["parents"]):
        axis = spec["axes"][k]
        if spec["joint_types"][k] == "prismatic":
            joint = pin.JointModelPrismaticUnaligned(axis)
        else:
            joint = pin.JointModelRevoluteUnaligned(axis)
        placement = pin.SE3(np.eye(3), spec["origins"][k])
        pid = 0 if parent < 0 else ids[parent]
        ids.append(model.addJoint(pid, joint, placement, spec["joint_names"][k]))
        inertia = pin.Inertia(spec["mass"][k], spec["com"][k], spec["inertia"][k])
        model.appendBodyToJoint(ids[-1], inertia, pin.SE3.Identity())
    platform = ids[spec["link_names"].index("platform")]
    models = pin.StdVec_RigidConstraintModel()
    for leg, attach in zip(("rod2", "rod3"), spec["attachments"], strict=True):
        models.append(
            pin.RigidConstraintModel(
                pin.ContactType.CONTACT_3D,
                model,
                ids[spec["link_names"].index(leg)],
                pin.SE3.Identity(),
                platform,
                pin.SE3(np.eye(3), attach),
                pin.ReferenceFrame.LOCAL,
            )
        )
    return model, models


def test_3rps_forward_dynamics_matches_pinocchio():
    mechanism = read_toml(ROOT / "configs" / "experiments" / "farhat_3rps.toml")[
        "mechanism"
    ]
    three_rps = _builder()
    chain, spec = three_rps.build_chain(mechanism)
    assert chain.tree.n_dof == 9 and chain.n_equations == 6 and chain.n_dof == 3

    model, constraints = _pinocchio_model(spec, mechanism["gravity"])
    data = model.createData()
    datas = pin.StdVec_RigidConstraintData()
    for cm in constraints:
        datas.append(cm.createData())
    pin.initConstraintDynamics(model, data, constraints, datas)
    settings = pin.ProximalSettings(1e-14, 1e-12, 50)

    rng = np.random.default_rng(3)
    legs = [spec["joint_names"].index(name) for name in three_rps.LEGS]
    num = 4
    z = spec["home_leg_length"] + rng.uniform(-0.05, 0.05, (num, 3))
    zd = rng.normal(0.0, 0.2, (num, 3))
    tau = rng.normal(0.0, 30.0, (num, 3))

    # One compiled, batched call (the closed-chain terms compile slowly).
    @jax.jit
    @jax.vmap
    def forward(z, zd, tau):
        q, qd, rows, c = chain.tree_state(z, zd)
        zdd = jnp.linalg.solve(chain.mass_matrix(z), tau - chain.bias_force(z, zd))
        return q, qd, rows @ zdd + c, chain.closure_residual(q)

    q, qd, qdd, residual = (np.asarray(x) for x in forward(z, zd, tau))
    assert np.max(np.abs(residual)) <= _CLOSURE_TOLERANCE
    # The closure's Gauss–Newton takes its last step on a quadratic model
    # without checking it (`ClosedChain._newton`): it must still close to
    # rounding. Stopping at a predicted 100× below tol left 2.3e-14 m here.
    poses = spec["home_leg_length"] + rng.uniform(-0.05, 0.05, (64, 3))
    closed = jax.jit(jax.vmap(lambda z: chain.closure_residual(chain.assemble(z))))
    assert np.max(np.abs(np.asarray(closed(poses)))) <= 1e-15
    for k in range(num):
        tau_tree = np.zeros(9)
        tau_tree[legs] = tau[k]
        expected = pin.constraintDynamics(
            model, data, q[k], qd[k], tau_tree, constraints, datas, settings
        )
        error = np.max(np.abs(qdd[k] - expected)) / np.max(np.abs(expected))
        assert error <= _TOLERANCE, (error, qdd[k], expected)
