"""Closed chains (`ClosedChain`): a planar four-bar against Pinocchio's
`constraintDynamics`, closed-form kinematics and statics, derivatives and
named errors."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxfric as jf
from jaxfric.systems import ClosedChain, LoopJoint

pin = pytest.importorskip("pinocchio")

# Crank a, coupler b, rocker c, ground d (a Grashof crank-rocker: the crank
# turns fully), rods of masses M along their x axes, planar in x-y.
A, B, C, D = 0.4, 1.0, 0.8, 1.0
LENGTHS = np.array([A, B, C])
MASSES = np.array([1.0, 2.0, 1.5])
G = 9.81
INERTIA = np.stack(
    [
        np.diag([1e-4, m * L**2 / 12, m * L**2 / 12])
        for m, L in zip(MASSES, LENGTHS, strict=True)
    ]
)


def fourbar_angles(theta, lengths=(A, B, C, D)):
    """Closed form: crank angle -> (crank, coupler relative, rocker) angles of
    the open-elbow assembly mode (link lengths crank, coupler, rocker, ground)."""
    A, B, C, D = lengths
    p = A * np.array([np.cos(theta), np.sin(theta)])
    d = np.array([D, 0.0])
    dist = np.linalg.norm(d - p)
    ex = (d - p) / dist
    x = (B**2 - C**2 + dist**2) / (2 * dist)
    h = np.sqrt(B**2 - x**2)
    joint = p + x * ex + h * np.array([-ex[1], ex[0]])
    phi = np.arctan2(joint[1] - p[1], joint[0] - p[0])
    psi = np.arctan2(joint[1] - d[1], joint[0] - d[0])
    return np.array([theta, phi - theta, psi])


def potential(theta):
    """Gravity potential of the four-bar (gravity along -y), J."""
    th, q1, q2 = fourbar_angles(theta)
    y0 = A / 2 * np.sin(th)
    y1 = A * np.sin(th) + B / 2 * np.sin(th + q1)
    y2 = C / 2 * np.sin(q2)
    return G * (MASSES[0] * y0 + MASSES[1] * y1 + MASSES[2] * y2)


def make_chain(friction_joints=("crank",)):
    return jf.systems.four_bar(
        A, B, C, D, masses=MASSES, crank_angle=THETA0, friction_joints=friction_joints
    )


THETA0 = np.pi / 3


@pytest.fixture(scope="module")
def chain():
    return make_chain()


def pinocchio_fourbar():
    model = pin.Model()
    model.gravity = pin.Motion(np.array([0.0, -G, 0.0, 0.0, 0.0, 0.0]))
    place = [np.zeros(3), np.array([A, 0, 0]), np.array([D, 0, 0])]
    joints = []
    for parent, p in zip((0, 1, 0), place, strict=True):
        jid = model.addJoint(parent, pin.JointModelRZ(), pin.SE3(np.eye(3), p), "j")
        joints.append(jid)
    for jid, m, L, inertia in zip(joints, MASSES, LENGTHS, INERTIA, strict=True):
        model.appendBodyToJoint(
            jid, pin.Inertia(m, np.array([L / 2, 0, 0]), inertia), pin.SE3.Identity()
        )
    constraint = pin.RigidConstraintModel(
        pin.ContactType.CONTACT_3D,
        model,
        joints[1],
        pin.SE3(np.eye(3), np.array([B, 0, 0])),
        joints[2],
        pin.SE3(np.eye(3), np.array([C, 0, 0])),
        pin.ReferenceFrame.LOCAL,
    )
    models = pin.StdVec_RigidConstraintModel()
    models.append(constraint)
    datas = pin.StdVec_RigidConstraintData()
    datas.append(constraint.createData())
    data = model.createData()
    pin.initConstraintDynamics(model, data, models, datas)
    return model, data, models, datas


def test_assemble_matches_closed_form(chain):
    for theta in (0.1, 1.5, 2.9, -2.0):
        q = chain.assemble(jnp.array([theta]))
        turns = (np.asarray(q) - fourbar_angles(theta) + np.pi) % (2 * np.pi) - np.pi
        np.testing.assert_allclose(turns, 0.0, rtol=0, atol=1e-12)
        assert np.all(np.abs(np.asarray(q) - chain.q_guess) <= np.pi)
        assert np.max(np.abs(chain.closure_residual(q))) <= 1e-12


def test_assembly_follows_the_branch_far_from_the_guess():
    # A non-Grashof linkage: the crank rocks between toggles at ±2.1294 rad.
    # Gauss–Newton from the guess alone landed on the other assembly mode at
    # 0.4 rad and below (0.65 rad from the guess); continuation stays on the
    # guess's branch over the whole range.
    lengths = (1.5, 1.0, 1.2, 1.0)
    chain = jf.systems.four_bar(*lengths, crank_angle=THETA0)
    thetas = np.linspace(2.12, -2.12, 41)
    q = np.asarray(jax.vmap(chain.assemble)(jnp.asarray(thetas)[:, None]))
    closed = np.stack([fourbar_angles(t, lengths) for t in thetas])
    wrapped = (q - closed + np.pi) % (2 * np.pi) - np.pi
    np.testing.assert_allclose(wrapped, 0.0, rtol=0, atol=1e-10)
    # `near` (a simulation segment's start) moves where the continuation
    # starts, not the branch: each configuration from the one before it.
    z = jnp.asarray(thetas)[:, None]
    q = np.asarray(jax.vmap(lambda a, b: chain.near(a).assemble(b))(z[:-1], z[1:]))
    wrapped = (q - closed[1:] + np.pi) % (2 * np.pi) - np.pi
    np.testing.assert_allclose(wrapped, 0.0, rtol=0, atol=1e-10)


def test_assemble_derivatives_are_the_implicit_ones(chain):
    theta, h = 0.8, 1e-6
    jac = jax.jacfwd(chain.assemble)(jnp.array([theta]))[:, 0]
    central = (fourbar_angles(theta + h) - fourbar_angles(theta - h)) / (2 * h)
    np.testing.assert_allclose(jac, central, rtol=1e-8, atol=1e-9)
    # Where the solve starts (`near`) carries no derivative.
    jac_near = jax.jacfwd(lambda z: chain.near(z).assemble(z))(jnp.array([theta]))
    np.testing.assert_allclose(jac_near[:, 0], jac, rtol=1e-12, atol=1e-14)

    # A parameter: the ground link's length (the rocker pivot's x).
    def rocker(d):
        pos = chain.tree.model.origin_translation.at[2, 0].set(d)
        moved = eqx.tree_at(lambda c: c.tree.model.origin_translation, chain, pos)
        return moved.assemble(jnp.array([theta]))[2]

    grad = jax.grad(rocker)(D)
    central = (rocker(D + h) - rocker(D - h)) / (2 * h)
    np.testing.assert_allclose(grad, central, rtol=1e-7)


@jax.jit
def _pinocchio_comparands(chain, z, zd, tau, friction):
    """Tree state and accelerations, loop forces, inverse dynamics: one compile."""
    q, qd, rows, c = chain.tree_state(z, zd)
    zdd = chain.acceleration(z, zd, tau, friction)
    lam = chain.loop_forces(z, zd, zdd, tau, friction)
    drive = chain.inverse_dynamics(z, zd, zdd)
    return q, qd, rows @ zdd + c, lam, drive, chain.friction_jacobian(z).T @ friction


def test_forward_dynamics_and_loop_forces_match_pinocchio():
    chain = make_chain(friction_joints=("crank", "rocker"))  # a passive joint too
    model, data, models, datas = pinocchio_fourbar()
    rng = np.random.default_rng(0)
    for _ in range(4):
        z = jnp.array([rng.uniform(-np.pi, np.pi)])
        zd = jnp.array([rng.normal() * 2])
        tau = jnp.array([rng.normal() * 5])
        friction = jnp.asarray(rng.normal(size=2))
        q, qd, qdd, lam, drive, fric_z = _pinocchio_comparands(
            chain, z, zd, tau, friction
        )
        tau_tree = np.zeros(3)
        tau_tree[0] += float(tau[0]) - float(friction[0])
        tau_tree[2] -= float(friction[1])
        ddq = pin.constraintDynamics(
            model,
            data,
            np.asarray(q),
            np.asarray(qd),
            tau_tree,
            models,
            datas,
            pin.ProximalSettings(1e-14, 1e-12, 50),
        )
        np.testing.assert_allclose(qdd, ddq, rtol=1e-9, atol=1e-9 * np.abs(ddq).max())
        # Loop force on the rocker from the coupler, world axes; Pinocchio's
        # contact force is expressed in the coupler-side (LOCAL) frame.
        rot1 = np.asarray(data.oMi[2].rotation)
        world = rot1 @ np.asarray(datas[0].contact_force.linear)
        np.testing.assert_allclose(np.abs(lam[:2]), np.abs(world[:2]), rtol=1e-8)
        np.testing.assert_allclose(lam, -world, rtol=1e-8, atol=1e-9)
        # Inverse dynamics gives back the drive torque (without friction).
        np.testing.assert_allclose(drive, tau - fric_z, rtol=1e-10)


def test_gravity_load_is_the_potential_gradient(chain):
    for theta in (THETA0, 2.0):
        h = 1e-5
        expected = (potential(theta + h) - potential(theta - h)) / (2 * h)
        got = chain.bias_force(jnp.array([theta]), jnp.array([0.0]))[0]
        np.testing.assert_allclose(got, expected, rtol=1e-8)


def test_joint_wrenches_balance_the_loop(chain):
    # The rocker's joint carries its own weight and the loop force: moments
    # about the rocker pivot of gravity and the loop force balance the
    # rocker's joint torque (zero: no drive) in statics.
    z, zd, zdd = jnp.array([THETA0]), jnp.zeros(1), jnp.zeros(1)
    tau = chain.inverse_dynamics(z, zd, zdd)
    wrenches = chain.joint_wrenches(z, zd, zdd, tau, jnp.zeros(1))
    np.testing.assert_allclose(wrenches[2, 2], 0.0, atol=1e-10)  # passive joint
    np.testing.assert_allclose(wrenches[1, 2], 0.0, atol=1e-10)
    np.testing.assert_allclose(wrenches[0, 2], tau[0], rtol=1e-10)


def pin_forces_by_statics(theta, drive, friction):
    """Free-body diagrams of the four-bar at rest (gravity −y): the forces
    (x, y) that the ground exerts on the crank at O, the crank on the coupler
    at its pin, and the ground on the rocker at its pivot, N, for a drive
    torque `drive` and a friction torque `friction` (opposing) at the crank,
    N·m; from the nine equilibrium equations of the three rods (forces and
    moments), solved for the eight pin-force components and the crank's
    friction torque, which must equal `friction`."""
    th, q1, q2 = fourbar_angles(theta)
    pa = A * np.array([np.cos(th), np.sin(th)])
    pb = pa + B * np.array([np.cos(th + q1), np.sin(th + q1)])
    pd = np.array([D, 0.0])
    weight = [m * np.array([0.0, -G]) for m in MASSES]
    centres = [pa / 2, (pa + pb) / 2, (pd + pb) / 2]

    def cross_rows(r):  # r × F = r_x F_y − r_y F_x, as coefficients of (F_x, F_y)
        return np.array([-r[1], r[0]])

    def cross(r, f):
        return r[0] * f[1] - r[1] * f[0]

    # Unknowns: F_O (0:2), F_A (2:4, crank on coupler), F_B (4:6, rocker on
    # coupler), F_D (6:8), friction torque (8).
    lhs, rhs = np.zeros((9, 9)), np.zeros(9)
    lhs[0:2, 0:2], lhs[0:2, 2:4], rhs[0:2] = np.eye(2), -np.eye(2), -weight[0]
    lhs[2, 2:4], lhs[2, 8] = -cross_rows(pa), -1.0
    rhs[2] = -drive - cross(centres[0], weight[0])
    lhs[3:5, 2:4], lhs[3:5, 4:6], rhs[3:5] = np.eye(2), np.eye(2), -weight[1]
    lhs[5, 4:6], rhs[5] = cross_rows(pb - pa), -cross(centres[1] - pa, weight[1])
    lhs[6:8, 6:8], lhs[6:8, 4:6], rhs[6:8] = np.eye(2), -np.eye(2), -weight[2]
    lhs[8, 4:6], rhs[8] = -cross_rows(pb - pd), -cross(centres[2] - pd, weight[2])
    x = np.linalg.solve(lhs, rhs)
    np.testing.assert_allclose(x[8], friction, rtol=1e-12)
    return x[0:2], x[2:4], x[6:8]


def test_joint_reactions_match_the_statics_of_the_rods():
    # Every joint with a friction element, the crank held at rest against a
    # drive torque: the pin forces' magnitudes (across each z axis) against the
    # free-body diagrams, the crank's axial moment is the net joint torque, and
    # a planar linkage has no axial force and no bending moment.
    chain = make_chain(friction_joints=("crank", "coupler", "rocker"))
    z, zero, drive = jnp.array([THETA0]), jnp.zeros(1), 1.0
    friction = drive - float(chain.inverse_dynamics(z, zero, zero)[0])
    forces = pin_forces_by_statics(THETA0, drive, friction)
    applied, held = jnp.array([drive]), jnp.array([friction, 0.0, 0.0])
    reactions = chain.joint_reactions(z, zero, zero, applied, held)
    wrench = np.asarray(reactions.wrench)
    np.testing.assert_allclose(
        np.hypot(wrench[:, 3], wrench[:, 4]),
        [np.linalg.norm(f) for f in forces],
        rtol=1e-10,
    )
    np.testing.assert_allclose(wrench[0, 2], drive - friction, rtol=1e-10)
    np.testing.assert_allclose(wrench[:, [0, 1, 5]], 0.0, atol=1e-10)
    assert reactions.kinds == ("revolute",) * 3


def ball_fourbar():
    """The four-bar with a ball joint between crank and coupler (its spin a
    second degree of freedom), friction at the crank, the ball and the
    rocker."""
    fj = ["crank", ("ball_z", "ball_y", "ball_x"), "rocker"]
    return jf.systems.four_bar(
        A, B, C, D, masses=MASSES, crank_angle=THETA0, friction_joints=fj, ball=True
    )


def _rot(axis, angle):
    c, s = np.cos(angle), np.sin(angle)
    i, j = [k for k in range(3) if k != axis]
    out = np.eye(3)
    out[i, i], out[i, j], out[j, i], out[j, j] = c, -s, s, c
    return out if axis != 1 else out.T  # about y: z -> x is the positive turn


def test_ball_element_in_a_closed_chain_slip_and_statics():
    # Slip: the ball's rows of J ż are the coupler's angular velocity relative
    # to the crank in the crank's frame, from central differences of the
    # closed-form relative rotation Rz Ry Rx along the assembled motion; J̇ż
    # is the derivative of J ż along ż. Statics: the crank held against a
    # drive and the ball's friction torque f (across the coupler: the spin is
    # free) - the drive, the crank's and rocker's pin forces and bending
    # moments, the ball's force and moment, against free-body diagrams of the
    # three links in 3D.
    chain = ball_fourbar()
    assert chain.vector_elements == ((1, 3),)
    z, zd, h = jnp.array([THETA0 + 0.2, 0.3]), jnp.array([0.7, -1.1]), 1e-5
    jac = chain.friction_jacobian(z)

    def relative(t):
        q = np.asarray(chain.assemble(z + t * zd))
        return _rot(2, q[1]) @ _rot(1, q[2]) @ _rot(0, q[3])

    rdot = (relative(h) - relative(-h)) / (2 * h)
    spin = rdot @ relative(0.0).T
    omega = np.array([spin[2, 1], spin[0, 2], spin[1, 0]])
    np.testing.assert_allclose(jac[1:4] @ zd, omega, rtol=1e-8, atol=1e-9)
    moved = [np.asarray(chain.friction_jacobian(z + t * zd)) @ zd for t in (h, -h)]
    along = (moved[0] - moved[1]) / (2 * h)
    np.testing.assert_allclose(
        chain.friction_jacobian_dot_qd(z, zd), along, rtol=1e-7, atol=1e-8
    )

    z, zero = jnp.array([THETA0, 0.0]), jnp.zeros(2)
    th, q1, q2 = fourbar_angles(THETA0)
    rod = _rot(2, q1)[:, 0]  # the coupler's axis in the crank's frame
    f = 0.3 * np.array([0.0, 0.0, 1.0]) + 0.2 * np.cross([0.0, 0.0, 1.0], rod)
    friction = jnp.concatenate([jnp.zeros(1), jnp.asarray(f), jnp.zeros(1)])
    applied = (
        chain.inverse_dynamics(z, zero, zero) + chain.friction_jacobian(z).T @ friction
    )
    x = wrenches_by_statics(th, q1, f)
    np.testing.assert_allclose(applied, [x[5], 0.0], rtol=1e-10, atol=1e-12)
    w = np.asarray(chain.joint_reactions(z, zero, zero, applied, friction).wrench)
    # The crank's and rocker's wrenches (from the ground, about the pivot) in
    # their links' frames, turned by th and q2 about z.
    f_o, m_o, f_a, f_d, m_d = x[0:3], x[3:5], x[6:9], x[12:15], x[15:17]
    for row, angle, force, moment in (
        (0, th, f_o, [*m_o, x[5]]),
        (4, q2, f_d, [*m_d, 0.0]),
    ):
        frame = _rot(2, angle).T
        np.testing.assert_allclose(w[row, 3:], frame @ force, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(w[row, :3], frame @ moment, rtol=1e-10, atol=1e-10)
    # The ball's three rows: its force, and the moment through massless
    # gimbals is the friction torque alone.
    np.testing.assert_allclose(
        np.linalg.norm(w[1:4, 3:], axis=1), np.linalg.norm(f_a), rtol=1e-10
    )
    np.testing.assert_allclose(
        np.linalg.norm(w[1:4, :3], axis=1), np.linalg.norm(f), rtol=1e-10
    )
    # A loop on a gimbal link would put a second force on the ball's joints.
    tree, loop = chain.tree, chain.loops[0]
    gimbal = LoopJoint("ball", "ball_gimbal_1", "rocker_link")
    with pytest.raises(ValueError, match="gimbal link of a ball-joint friction"):
        ClosedChain(tree, [loop, gimbal], independent=[0, 3], q_guess=chain.q_guess)


def wrenches_by_statics(th, q1, f):
    """Free-body diagrams of `ball_fourbar`'s links at rest (gravity −y), in
    world axes: ``x = (F_O, M_O[x, y], τ, F_A, F_B, F_D, M_D[x, y])`` - the
    ground's force and bending moment on the crank at O and the drive torque,
    the crank's force on the coupler through the ball at A, the rocker's on
    the coupler at B, the ground's force and bending moment on the rocker at
    D - for the ball's friction torque `f` on the crank (``−f`` on the
    coupler), crank frame, N·m. Eighteen equilibrium equations (the coupler's
    moment about its own axis is ``0 = 0`` for `f` across it) for 17 unknowns."""
    pa = A * np.array([np.cos(th), np.sin(th), 0.0])
    pb = pa + B * np.array([np.cos(th + q1), np.sin(th + q1), 0.0])
    pd = np.array([D, 0.0, 0.0])
    weight = [m * np.array([0.0, -G, 0.0]) for m in MASSES]
    centres = [pa / 2, (pa + pb) / 2, (pb + pd) / 2]
    torque = _rot(2, th) @ f  # on the crank, world axes

    def cross(r):  # r × F = cross(r) @ F
        return np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])

    eye, bend = np.eye(3), np.eye(3)[:, :2]
    lhs, rhs = np.zeros((18, 17)), np.zeros(18)
    # Crank: forces, then moments about O.
    lhs[0:3, 0:3], lhs[0:3, 6:9], rhs[0:3] = eye, -eye, -weight[0]
    lhs[3:6, 3:5], lhs[3:6, 5], lhs[3:6, 6:9] = bend, eye[:, 2], -cross(pa)
    rhs[3:6] = -torque - np.cross(centres[0], weight[0])
    # Coupler: forces, then moments about A.
    lhs[6:9, 6:9], lhs[6:9, 9:12], rhs[6:9] = eye, eye, -weight[1]
    lhs[9:12, 9:12] = cross(pb - pa)
    rhs[9:12] = torque - np.cross(centres[1] - pa, weight[1])
    # Rocker: forces, then moments about D.
    lhs[12:15, 12:15], lhs[12:15, 9:12], rhs[12:15] = eye, -eye, -weight[2]
    lhs[15:18, 15:17], lhs[15:18, 9:12] = bend, -cross(pb - pd)
    rhs[15:18] = -np.cross(centres[2] - pd, weight[2])
    x, _, rank, _ = np.linalg.lstsq(lhs, rhs, rcond=None)
    assert rank == 17
    np.testing.assert_allclose(lhs @ x, rhs, atol=1e-12)
    return x


def _dead_point_angles():
    """Crank angles (rad) where crank and coupler lie in line (stretched,
    folded): the rocker's extremes, where its row of ``J`` vanishes."""
    out = []
    for reach, base in ((A + B, 0.0), (B - A, np.pi)):
        # The law of cosines in the triangle (reach, rocker, ground) gives
        # ±alpha from the rod's direction (folded: opposite the crank); the
        # open-elbow mode's one is where the rocker angle is stationary.
        alpha = np.arccos((reach**2 + D**2 - C**2) / (2 * reach * D))
        angles = (base + alpha, base - alpha)
        out.append(min(angles, key=lambda x: abs(_rocker_slope(x))))
    return np.array(out)


def _rocker_slope(theta, step=1e-6):
    return (fourbar_angles(theta + step)[2] - fourbar_angles(theta - step)[2]) / (
        2 * step
    )


def test_passive_friction_passes_its_dead_points():
    # The rocker's friction row vanishes at its extremes while the crank
    # turns: its slip crosses zero and turns round, the mechanism moving on.
    # The event's velocity projection used to stop the crank (5 rad/s -> 0.0
    # at 0.62396 s, result successful), then ended the run loudly; now the
    # element passes through (`_switch._dead_points`). Independent check: no
    # gravity, so the kinetic energy lost is Coulomb's work, fc times the
    # rocker's total travel, its extremes in closed form.
    from jaxfric.simulate._stick import stick_parts
    from jaxfric.simulate._switch import _dead_points

    fc = 0.05
    chain = jf.systems.four_bar(
        A, B, C, D, masses=MASSES, friction_joints=("rocker",), gravity=(0, 0, 0)
    )
    sol = jf.simulate(
        chain, jf.Coulomb(fc=fc), q0=jnp.array([THETA0]), qd0=jnp.array([5.0]),
        t1=1.5, num_save=151,
    )  # fmt: skip
    ts, theta = np.asarray(sol.ts), np.asarray(sol.q[:, 0])
    events = np.asarray(sol.event_times)
    events = events[np.isfinite(events)]
    psi = np.array([fourbar_angles(x)[2] for x in theta])
    extremes = np.array([fourbar_angles(x)[2] for x in _dead_point_angles()])
    # One event per extreme the crank passed (none where it merely slows).
    passed = sum(
        np.floor((theta[-1] - x) / (2 * np.pi)) - np.floor((THETA0 - x) / (2 * np.pi))
        for x in _dead_point_angles()
    )
    assert len(events) == passed == 2
    travel = 0.0
    for k in range(len(ts) - 1):
        step = abs(psi[k + 1] - psi[k])
        if np.any((events > ts[k]) & (events < ts[k + 1])):
            turn = extremes[np.argmin(abs(extremes - 0.5 * (psi[k] + psi[k + 1])))]
            step = abs(turn - psi[k]) + abs(psi[k + 1] - turn)
        travel += step
    mass = jax.vmap(chain.mass_matrix)(sol.q)[:, 0, 0]
    kinetic = 0.5 * np.asarray(mass) * np.asarray(sol.qd[:, 0]) ** 2
    np.testing.assert_allclose(kinetic[0] - kinetic[-1], fc * travel, rtol=1e-6)
    assert np.all(np.asarray(sol.qd[:, 0]) > 3.0)
    # The classifier, at an event window of 1e-11 s: at a dead point the
    # rocker's slip is zero only through its row (the crank at 5 rad/s); at
    # an ordinary angle, a crank decelerating at 3 rad/s² that stops within
    # 1e-13 s is a true stop, as is one stopping at the dead point itself.
    dead, candidate = _dead_point_angles()[0], jnp.array([True])
    for theta_e, speed, expected in ((dead, 5.0, True), (THETA0, 3e-13, False),
                                     (dead, 3e-13, False)):  # fmt: skip
        q, qd = jnp.array([theta_e]), jnp.array([speed])
        dynamics = chain.dynamics(q, qd)
        parts = stick_parts(chain, q, qd, -dynamics.bias, dynamics)
        acc = jnp.array([-3.0])
        found = _dead_points(parts, qd, acc, 1e-11, candidate, 1)
        assert bool(found[0]) is expected


# The crank held by Coulomb friction through `jaxfric.simulate` (exact stick,
# breakaway at the closed-form time, closure along the run, gradients against
# central differences) is checked by experiments/closed_chain_fourbar.py: its
# switch-path compile (minutes) does not fit the suite's time budget.


def test_bad_input_is_named(chain):
    tree, loop = chain.tree, chain.loops[0]
    guess = fourbar_angles(THETA0)
    with pytest.raises(ValueError, match="1 degrees of freedom; got 2 independent"):
        ClosedChain(tree, [loop], independent=[0, 1], q_guess=guess)
    far = LoopJoint("ball", "coupler_link", "rocker_link", translation_a=(9.0, 0, 0))
    with pytest.raises(ValueError, match="cannot be assembled"):
        ClosedChain(tree, [far], independent=[0], q_guess=guess)
    with pytest.raises(ValueError, match="no link named 'nope'"):
        ClosedChain(tree, [LoopJoint("ball", "coupler_link", "nope")], independent=[0])
    with pytest.raises(ValueError, match="kind 'hinge' is not supported"):
        LoopJoint("hinge", "coupler_link", "rocker_link")
    with pytest.raises(ValueError, match="`q_guess` must have shape"):
        ClosedChain(tree, [loop], independent=[0], q_guess=[0.0])
    with pytest.raises(ValueError, match="cannot be assembled at crank_angle"):
        jf.systems.four_bar(0.4, 0.3, 0.3, 1.0)  # the diagonal exceeds 0.6 m


def test_automatic_independent_choice_and_unreachable_configuration(chain):
    # The rocker swings within a range; outside it the chain cannot close and
    # every quantity is NaN.
    tree, loop = chain.tree, chain.loops[0]
    rocker = ClosedChain(tree, [loop], independent=["rocker"], q_guess=chain.q_guess)
    assert rocker.independent == (2,) and rocker.dependent == (0, 1)
    psi = fourbar_angles(THETA0)[2]
    assert np.all(np.isfinite(rocker.mass_matrix(jnp.array([psi]))))
    assert np.all(np.isnan(rocker.mass_matrix(jnp.array([0.0]))))  # |C| > A + B
    # The causes `simulate` names: the rocker's toggle, where crank and coupler
    # are stretched in line (|rocker tip| = A + B), is singular within ~1e-6
    # rad; beyond it the chain cannot be assembled.
    toggle = np.arccos(((A + B) ** 2 - D**2 - C**2) / (2 * C * D))
    status = jf.systems.ConfigurationStatus
    for angle, expected in (
        (psi, status.ok),
        (toggle + 0.05, status.ok),
        (toggle + 1e-6, status.singular),
        (toggle - 1e-3, status.closure_failed),
        (0.0, status.closure_failed),
    ):
        assert rocker.configuration_status(jnp.array([angle])) == expected, angle
    auto = ClosedChain(tree, [loop], q_guess=chain.q_guess)
    assert len(auto.independent) == 1


def test_vmapped_simulation_calls_no_lapack(chain):
    # Under `vmap` on a CPU, jnp.linalg's LAPACK custom calls split the batch
    # over XLA's thread pool; two side by side deadlocked (a batch of 256 3-RPS
    # runs hung on 2 cores, jaxlib 0.10.2: `jaxfric/_linalg.py`). The whole
    # program of a batch with reaction-load friction (stick solves, closure,
    # loop multipliers, the stop's configuration status) has none.
    law = jf.JointFriction(0.2, 0.15, loads=(jf.RevoluteLoad(pin_radius=0.01),))

    def run(rate):
        return jf.simulate(
            chain, law, q0=jnp.array([THETA0]), qd0=jnp.zeros(1), t1=1.0,
            force=lambda t, q, qd: jnp.reshape(rate * t, (1,)), num_save=3,
        )  # fmt: skip

    hlo = jax.jit(jax.vmap(run)).lower(jnp.ones(4)).as_text()
    assert "while" in hlo and "lapack" not in hlo.lower()


def test_load_coupling_with_the_stick_solve_as_a_matrix():
    # Three pin-friction elements on the one-DoF four-bar (redundant rows).
    # Without the split of redundant stick forces (`split=False`) the load
    # coupling applies the stick solve as a matrix formed once; with it, on a
    # closed chain, it solves inside every Newton step. With one element
    # stuck there is no redundancy: both are the same solve. Either way the
    # slipping elements' friction is μ_d·N at the reactions of the result.
    # (Derivatives through the matrix form: the rotor's load-coupling test.)
    from jaxfric.simulate._stick import STICK, friction_at_modes

    chain = make_chain(("crank", "coupler", "rocker"))
    law = jf.JointFriction(
        0.4, 0.3, loads=(jf.RevoluteLoad(pin_radius=0.02, friction_arm=0.01),) * 3
    )
    q, applied = jnp.array([THETA0]), jnp.array([3.0])

    @jax.jit
    def both(qd, modes):
        net = applied - chain.bias_force(q, qd)
        affine = friction_at_modes(chain, law, q, qd, net, modes, False)
        general = friction_at_modes(chain, law, q, qd, net, modes, True)
        friction, acc, _ = affine
        reactions = chain.joint_reactions(q, qd, acc, applied, friction)
        direction = jnp.where(modes >= 0, 1.0, -1.0)
        slip = chain.friction_jacobian(q) @ qd
        expected = law.at_reactions(reactions).slip_force(slip, direction)
        return affine[:2], general[:2], expected

    moving = jnp.array([1.5])
    cases = [
        (jnp.zeros(1), jnp.array([STICK, 1, -1])),  # crank held, two at rest
        (moving, jnp.sign(chain.friction_jacobian(q) @ moving).astype(int)),
    ]
    for qd, modes in cases:
        (friction, acc), general, expected = both(qd, modes)
        assert np.all(np.isfinite(friction)) and np.all(np.isfinite(acc))
        np.testing.assert_allclose(friction, general[0], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(acc, general[1], rtol=1e-12, atol=1e-12)
        slipping = np.asarray(modes != STICK)
        np.testing.assert_allclose(
            np.asarray(friction)[slipping], np.asarray(expected)[slipping], rtol=1e-13
        )
