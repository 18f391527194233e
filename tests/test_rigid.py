"""Rigid-body trees (`jaxfric.systems.rigid`, `RigidBodyTree`) and the closed-form
`TwoLinkArm`: analytic mechanisms, fixed-joint merging, the system interface,
and validation. (Real robots are checked against Pinocchio in test_pinocchio.py.)
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxfric as jf
from jaxfric.systems import RigidBodyTree, TwoLinkArm, rigid

# Closed forms and the tree evaluate the same expressions in another order.
_TOLERANCE = 1e-12
# The switch path bisects event times to 1e-13 relative; allow for the
# integration error of the stick force (rtol 1e-10).
_EVENT_TOLERANCE = 1e-9
_G = 9.81


@jax.jit
def _closed_form(arm, q, qd):
    return arm.mass_matrix(q), arm.bias_force(q, qd), arm.positions(q)


@jax.jit
def _mass_bias_bodies(system, q, qd):
    """The smaller set for the planar-arm comparisons (less to compile)."""
    return system.mass_matrix(q), system.bias_force(q, qd), system.forward_kinematics(q)


@jax.jit
def _terms(system, q, qd, qdd):
    """Everything a test compares, for one system: one compilation per tree."""
    return dict(
        mass_matrix=system.mass_matrix(q),
        bias=system.bias_force(q, qd),
        inverse=system.inverse_dynamics(q, qd, qdd),
        gravity=system.gravity_force(q),
        wrenches=system.joint_wrenches(q, qd, qdd),
        accel=system.acceleration(
            q, qd, system.inverse_dynamics(q, qd, qdd), jnp.zeros(system.n_friction)
        ),
        bodies=system.forward_kinematics(q),
        links=rigid.link_poses(system.model, q),
    )


def _lift_pendulum(m1=1.5, m2=0.8, length=0.4, inertia=0.02, damping=0.0):
    """A vertical prismatic lift (joint 1, along z) carrying a pendulum (joint 2,
    about x). The pendulum link itself is massless; its bob is a separate link
    on a fixed joint at distance `length` along the pendulum's y axis, so the
    dynamics only come out right if the fixed joint is merged."""
    eye = np.eye(3)
    return RigidBodyTree(
        parents=[-1, 0, 1],
        joint_types=["prismatic", "revolute", "fixed"],
        axes=[[0, 0, 1], [1, 0, 0], [1, 0, 0]],
        origin_translation=[[0.0, 0.0, 0.5], [0.0, 0.0, 0.0], [0.0, length, 0.0]],
        mass=[m1, 0.0, m2],
        com=np.zeros((3, 3)),
        inertia=[0.1 * eye, 0.0 * eye, np.diag([inertia, 0.01, 0.01])],
        damping=damping,
        joint_names=["lift", "swing", "bob_mount"],
        link_names=["carriage", "pendulum", "bob"],
    )


def _lift_pendulum_closed_form(q, qd, m1=1.5, m2=0.8, length=0.4, inertia=0.02):
    """Lagrange's equations by hand: bob at ``(0, l cos θ, z + l sin θ)``,
    ``T = ½ m1 ż² + ½ m2 (ż² + 2 l cos θ ż θ̇ + l² θ̇²) + ½ I θ̇²``,
    ``V = (m1 + m2) g z + m2 g l sin θ``."""
    c, s = np.cos(q[1]), np.sin(q[1])
    mass = np.array(
        [[m1 + m2, m2 * length * c], [m2 * length * c, m2 * length**2 + inertia]]
    )
    coriolis = np.array([-m2 * length * s * qd[1] ** 2, 0.0])
    gravity = np.array([(m1 + m2) * _G, m2 * _G * length * c])
    return mass, coriolis + gravity, gravity


def test_lift_pendulum_matches_lagrange():
    system = _lift_pendulum(damping=0.3)
    q, qd, qdd = np.array([0.2, 0.7]), np.array([-0.4, 1.3]), np.array([0.5, -2.0])
    out = _terms(system, jnp.asarray(q), jnp.asarray(qd), jnp.asarray(qdd))
    mass, bias, gravity = _lift_pendulum_closed_form(q, qd)
    np.testing.assert_allclose(out["mass_matrix"], mass, rtol=0, atol=_TOLERANCE)
    np.testing.assert_allclose(out["bias"], bias + 0.3 * qd, rtol=0, atol=_TOLERANCE)
    np.testing.assert_allclose(out["gravity"], gravity, rtol=0, atol=_TOLERANCE)
    np.testing.assert_allclose(
        out["inverse"], mass @ qdd + bias + 0.3 * qd, rtol=0, atol=_TOLERANCE
    )
    # Forward dynamics inverts inverse dynamics.
    np.testing.assert_allclose(out["accel"], qdd, rtol=0, atol=1e-10)


def test_float32_model_and_state_compute_in_float32():
    """A float32 model and state give float32 dynamics (also with x64 on: the
    joint axes and subspaces once promoted them to float64) equal to the closed
    form to float32 rounding, the prismatic lift included; unbatched and in a
    `vmap` of a few states."""
    system = _lift_pendulum()
    model = jax.tree.map(
        lambda x: x.astype(jnp.float32) if eqx.is_inexact_array(x) else x,
        system.model,
    )
    states = np.array([[0.2, 0.7], [-0.5, 2.9], [1.4, -1.1]])
    rates = np.array([[-0.4, 1.3], [0.8, -2.0], [0.0, 0.5]])
    f32 = jnp.float32
    mass, bias = jax.jit(jax.vmap(rigid.mass_matrix_and_bias, (None, 0, 0)))(
        model, jnp.asarray(states, f32), jnp.asarray(rates, f32)
    )
    assert mass.dtype == f32 and bias.dtype == f32
    for k, (q, qd) in enumerate(zip(states, rates, strict=True)):
        mass_ref, bias_ref, _ = _lift_pendulum_closed_form(q, qd)
        np.testing.assert_allclose(mass[k], mass_ref, rtol=0, atol=1e-6)
        np.testing.assert_allclose(bias[k], bias_ref, rtol=2e-7, atol=1e-6)


def test_static_joint_wrenches():
    """At rest with the pendulum horizontal (θ = 0), each joint carries the weight
    hanging below it: statics by hand."""
    m1, m2, length = 1.5, 0.8, 0.4
    system = _lift_pendulum(m1, m2, length)
    zero = jnp.zeros(2)
    wrench = np.asarray(_terms(system, zero, zero, zero)["wrenches"])
    # Pendulum joint (frame at the pivot): holds the bob, weight m2 g at y = l.
    np.testing.assert_allclose(
        wrench[1], [m2 * _G * length, 0, 0, 0, 0, m2 * _G], rtol=0, atol=_TOLERANCE
    )
    # Lift joint (frame at its own origin): both weights, the bob's lever arm l.
    np.testing.assert_allclose(
        wrench[0],
        [m2 * _G * length, 0, 0, 0, 0, (m1 + m2) * _G],
        rtol=0,
        atol=_TOLERANCE,
    )


def test_link_pose_of_merged_link():
    system = _lift_pendulum(length=0.4)
    q = jnp.array([0.3, np.pi / 2])
    rot, pos = _terms(system, q, q, q)["links"]
    k = system.model.link_names.index("bob")
    # Lift at z = 0.5 + 0.3; pendulum turned 90° about x puts the bob straight up.
    np.testing.assert_allclose(pos[k], [0.0, 0.0, 0.8 + 0.4], rtol=0, atol=_TOLERANCE)
    np.testing.assert_allclose(
        rot[k], [[1, 0, 0], [0, 0, -1], [0, 1, 0]], rtol=0, atol=_TOLERANCE
    )
    with pytest.raises(ValueError, match="no link named 'nope'"):
        system.link_pose(q, "nope")


def _arm_parameters():
    return dict(m1=1.3, m2=0.9, l1=0.6, l2=0.5, lc1=0.25, lc2=0.3, I1=0.04, I2=0.02)


def _arm_tree(p, gravity, damping):
    """The same planar arm as a tree: joints about z, links along x, gravity
    along −y."""
    # Thin links: only the inertia about z (normal to the plane) matters.
    inertia = [np.diag([0.0, p["I1"], p["I1"]]), np.diag([0.0, p["I2"], p["I2"]])]
    return RigidBodyTree(
        parents=[-1, 0],
        joint_types=["revolute", "revolute"],
        axes=[[0, 0, 1], [0, 0, 1]],
        origin_translation=[[0, 0, 0], [p["l1"], 0, 0]],
        mass=[p["m1"], p["m2"]],
        com=[[p["lc1"], 0, 0], [p["lc2"], 0, 0]],
        inertia=inertia,
        gravity=(0.0, -gravity, 0.0),
        damping=damping,
    )


def test_two_link_arm_equals_tree():
    p = _arm_parameters()
    arm = TwoLinkArm(**p, gravity=_G, damping=0.05)
    tree = _arm_tree(p, _G, 0.05)
    rng = np.random.default_rng(0)
    for _ in range(5):
        q, qd = (jnp.asarray(rng.normal(0, 2, 2)) for _ in range(2))
        tree_mass, tree_bias, (rot, pos) = _mass_bias_bodies(tree, q, qd)
        mass, bias, positions = _closed_form(arm, q, qd)
        np.testing.assert_allclose(tree_mass, mass, rtol=0, atol=_TOLERANCE)
        np.testing.assert_allclose(tree_bias, bias, rtol=0, atol=_TOLERANCE)
        # The tip of the closed form is the tree's second body + l2 along its x.
        tip = pos[1] + p["l2"] * rot[1][:, 0]
        np.testing.assert_allclose(positions[1], tip[:2], rtol=0, atol=_TOLERANCE)
    np.testing.assert_array_equal(arm.friction_jacobian(q), np.eye(2))


def test_tree_friction_jacobian_rows():
    tree = _lift_pendulum()
    assert (tree.n_dof, tree.n_friction) == (2, 2)
    swing_only = RigidBodyTree(
        parents=[-1, 0],
        joint_types=["prismatic", "revolute"],
        axes=[[0, 0, 1], [1, 0, 0]],
        origin_translation=np.zeros((2, 3)),
        mass=[1.0, 1.0],
        com=[[0, 0, 0], [0, 0.3, 0]],
        inertia=[0.01 * np.eye(3)] * 2,
        friction_joints=["joint1"],
    )
    q = jnp.zeros(2)
    assert swing_only.n_friction == 1
    np.testing.assert_array_equal(swing_only.friction_jacobian(q), [[0.0, 1.0]])
    np.testing.assert_array_equal(swing_only.friction_jacobian_dot_qd(q, q), [0.0])
    np.testing.assert_array_equal(
        swing_only.slip_velocity(q, jnp.array([0.4, -1.5])), [-1.5]
    )


def test_armature_adds_to_mass_matrix_diagonal():
    p = _arm_parameters()
    base = _arm_tree(p, _G, 0.0)
    geared = eqx.tree_at(lambda s: s.armature, base, jnp.array([0.5, 0.25]))
    q = jnp.array([0.1, 0.2])
    difference = _mass_bias_bodies(geared, q, q)[0] - _mass_bias_bodies(base, q, q)[0]
    np.testing.assert_allclose(difference, np.diag([0.5, 0.25]), rtol=0, atol=1e-14)


def _arm_rhs_numpy(p, law_fc, eps):
    """The planar arm in closed form (Spong et al., Sec. 7.4.1) with tanh-smoothed
    Coulomb joint friction, in NumPy for scipy."""

    def rhs(t, y):
        q1, q2, v1, v2 = y
        c2, s2 = np.cos(q2), np.sin(q2)
        m22 = p["m2"] * p["lc2"] ** 2 + p["I2"]
        m12 = m22 + p["m2"] * p["l1"] * p["lc2"] * c2
        m11 = (
            p["m1"] * p["lc1"] ** 2
            + p["m2"] * (p["l1"] ** 2 + p["lc2"] ** 2 + 2 * p["l1"] * p["lc2"] * c2)
            + p["I1"]
            + p["I2"]
        )
        k = p["m2"] * p["l1"] * p["lc2"] * s2
        g12 = p["m2"] * p["lc2"] * _G * np.cos(q1 + q2)
        h = np.array(
            [
                -k * (2 * v1 * v2 + v2**2)
                + (p["m1"] * p["lc1"] + p["m2"] * p["l1"]) * _G * np.cos(q1)
                + g12,
                k * v1**2 + g12,
            ]
        )
        friction = law_fc * np.tanh(np.array([v1, v2]) / eps)
        acc = np.linalg.solve([[m11, m12], [m12, m22]], -h - friction)
        return [v1, v2, *acc]

    return rhs


def test_tree_simulates_like_closed_form():
    """A tree in `jaxfric.simulate` (smooth path) follows the closed-form arm
    integrated by scipy at tight tolerance: the tree satisfies the system
    interface."""
    from scipy.integrate import solve_ivp

    p = _arm_parameters()
    law = jf.friction.Regularized(jf.Coulomb(0.2), eps=0.05)
    q0, qd0, ts = np.array([0.3, -0.2]), np.array([1.0, 0.5]), np.linspace(0, 0.5, 6)
    sol = jf.simulate(
        _arm_tree(p, _G, 0.0), law, q0, qd0, 0.5, ts=ts, rtol=1e-10, atol=1e-10
    )
    ref = solve_ivp(
        _arm_rhs_numpy(p, 0.2, 0.05),
        (0.0, 0.5),
        [*q0, *qd0],
        t_eval=ts,
        rtol=1e-11,
        atol=1e-11,
        method="DOP853",
    )
    np.testing.assert_allclose(sol.q, ref.y[:2].T, rtol=0, atol=1e-8)
    np.testing.assert_allclose(sol.qd, ref.y[2:].T, rtol=0, atol=1e-8)


def test_build_model_is_differentiable():
    """Gradients flow through construction (merging) and the algorithms:
    ∂M22/∂m2 = lc2² for the planar arm (closed form)."""

    def m22(mass2):
        p = _arm_parameters()
        p["m2"] = mass2
        return _arm_tree(p, 0.0, 0.0).mass_matrix(jnp.zeros(2))[1, 1]

    grad = jax.jit(jax.grad(m22))(0.9)
    np.testing.assert_allclose(grad, 0.3**2, rtol=1e-12)


# A rotation about a skew axis, to give inertias off-diagonal entries.
_ROTATION = np.asarray(rigid.rpy_matrix(np.array([0.4, -0.7, 1.1])))


def _one_link(**overrides):
    kwargs = dict(
        parents=[-1],
        joint_types=["revolute"],
        axes=[[0, 0, 1]],
        origin_translation=[[0, 0, 0]],
        mass=[1.0],
        com=[[0.5, 0, 0]],
        inertia=[0.01 * np.eye(3)],
    )
    kwargs.update(overrides)
    return RigidBodyTree(**kwargs)


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (dict(joint_types=["floating"]), "type 'floating' is not supported"),
        (dict(parents=[0]), r"parent index 0 must lie in \[-1, -1\]"),
        (dict(axes=[[0, 0, 0]]), "axis must be a non-zero vector"),
        (dict(mass=[-1.0]), "mass of link 'link0'"),
        (dict(inertia=[np.diag([-0.1, 0.1, 0.1])]), "inertia of link 'link0' is not"),
        (dict(inertia=[[[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]]), "must be symmetric"),
        # Principal moments (0.01, 0.01, 0.03): 0.03 > 0.01 + 0.01.
        (
            dict(inertia=[np.diag([0.01, 0.01, 0.03])]),
            r"inertia of link 'link0' is not physical: its principal moments "
            r".*0\.03.* break the triangle inequality",
        ),
        # The same moments in rotated axes: the check is on principal moments.
        (
            dict(inertia=[_ROTATION @ np.diag([0.03, 0.01, 0.01]) @ _ROTATION.T]),
            "break the triangle inequality",
        ),
        (dict(mass=[0.0], inertia=[np.zeros((3, 3))]), "joint 'joint0': the bodies"),
        (dict(damping=-0.1), "`damping` must lie in"),
        (dict(armature=[1.0, 2.0]), r"`armature` must have shape \(1,\) for a tree of"),
        (dict(friction_joints=["elbow"]), "no movable joint named 'elbow'"),
        (dict(friction_joints=[3]), r"index 3 must lie in \[0, 0\]"),
        (dict(joint_types=["fixed"]), "no movable joint"),
        (dict(com=[[0.5, 0]]), "`com` must have shape"),
        (dict(gravity=(0.0, np.nan, 0.0)), "`gravity` must be finite"),
    ],
)
def test_tree_validation(overrides, match):
    with pytest.raises(ValueError, match=match):
        _one_link(**overrides)


def test_flat_plate_inertia_is_accepted():
    """A thin uniform plate (sides a, b, mass m) has ``Ixx = m b²/12``,
    ``Iyy = m a²/12`` and ``Izz = Ixx + Iyy``: the triangle inequality's edge,
    accepted exactly and as a file prints it (6 significant digits, rotated)."""
    m, a, b = 0.7, 0.3, 0.1
    plate = np.diag([m * b**2 / 12, m * a**2 / 12, m * (a**2 + b**2) / 12])
    printed = np.array([[float(f"{x:.6g}") for x in row] for row in plate])
    for inertia in (plate, _ROTATION @ printed @ _ROTATION.T):
        system = _one_link(mass=[m], inertia=[inertia])
        np.testing.assert_allclose(
            system.model.inertia[0], inertia + m * np.diag([0, 0.25, 0.25])
        )


def test_massless_link_with_armature_is_accepted():
    system = _one_link(mass=[0.0], inertia=[np.zeros((3, 3))], armature=0.1)
    np.testing.assert_array_equal(system.armature, [0.1])


@pytest.mark.parametrize(
    ("name", "value", "match"),
    [
        ("m1", 0.0, "`m1` must lie in"),
        ("l1", -1.0, "`l1` must lie in"),
        ("I2", -0.1, "`I2` must lie in"),
        ("gravity", -9.81, "`gravity` must lie in"),
        ("lc1", [0.1, 0.2], "`lc1` of TwoLinkArm must be a scalar"),
    ],
)
def test_two_link_arm_validation(name, value, match):
    p = _arm_parameters()
    p[name] = value
    with pytest.raises(ValueError, match=match):
        TwoLinkArm(**p)


class _RampOnJoint(jf.forces.AbstractStatelessForce):
    """``τ = (0, rate·t, 0)``: a torque ramp on the middle joint, N·m."""

    rate: jax.Array

    def __call__(self, t, q, qd):
        return jnp.stack([0.0 * t, self.rate * t, 0.0 * t])


_ARM3 = dict(
    mass=(2.0, 1.5, 1.0),
    length=(0.5, 0.4, 0.3),
    com=(0.25, 0.2, 0.15),
    inertia=(0.05, 0.03, 0.01),
)


def _three_link_arm():
    """A planar 3-link arm in a vertical plane (joints about z, gravity −y)."""
    m, ell, lc, inertia = (np.asarray(_ARM3[k]) for k in _ARM3)
    return RigidBodyTree(
        parents=[-1, 0, 1],
        joint_types=["revolute"] * 3,
        axes=[[0, 0, 1]] * 3,
        origin_translation=[[0, 0, 0], [ell[0], 0, 0], [ell[1], 0, 0]],
        mass=m,
        com=[[c, 0, 0] for c in lc],
        inertia=[np.diag([0.0, i, i]) for i in inertia],
        gravity=(0.0, -_G, 0.0),
    )


def test_stuck_joint_breaks_away_at_hand_computed_time():
    """All joints start at rest and stuck. The outer joints' static limits are
    far above any load; the middle one's ``fs = 10 N·m`` exceeds its gravity
    torque ``g2 = g cos(q1+q2) (m2 lc2 + m3 l2) + g m3 lc3 cos(q1+q2+q3)``.
    With every joint stuck the stick torques are ``τ − g(q0)`` (the Delassus
    solve with J = I), so the middle joint holds exactly still until the ramp
    ``τ2 = ρ t`` reaches ``fs + g2``: breakaway at ``t* = (fs + g2)/ρ``."""
    m, ell, lc, _ = (np.asarray(_ARM3[k]) for k in _ARM3)
    q0 = np.array([0.3, -0.5, 0.4])
    g2 = _G * (
        np.cos(q0[0] + q0[1]) * (m[1] * lc[1] + m[2] * ell[1])
        + m[2] * lc[2] * np.cos(q0.sum())
    )
    fs, rate = 10.0, 20.0
    assert abs(g2) < fs  # the static limit holds the arm at first
    t_star = (fs + g2) / rate
    law = jf.Coulomb(fc=[1e3, 8.0, 1e3], fs=[1e3, fs, 1e3])
    ts = np.linspace(0.0, 1.2, 13)
    sol = jf.simulate(
        _three_link_arm(),
        law,
        q0=q0,
        qd0=np.zeros(3),
        t1=1.2,
        ts=ts,
        force=_RampOnJoint(jnp.asarray(rate)),
    )
    before = ts < t_star
    # Exactly still: not a bit of creep before the breakaway.
    np.testing.assert_array_equal(sol.q[before], np.broadcast_to(q0, (before.sum(), 3)))
    np.testing.assert_array_equal(sol.qd[before], 0.0)
    # Breakaway at the hand-computed time, then the middle joint slips forward
    # while the outer joints stay put.
    first = np.asarray(sol.event_times)[0]
    np.testing.assert_allclose(first, t_star, rtol=0, atol=_EVENT_TOLERANCE)
    assert np.all(sol.q[~before, 1] > q0[1])
    np.testing.assert_array_equal(
        sol.q[:, [0, 2]], np.broadcast_to(q0[[0, 2]], (13, 2))
    )
