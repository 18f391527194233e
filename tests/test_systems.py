"""Lumped systems: M, h, J, J̇q̇ against hand-derived expressions, and the stick
forces of Karnopp 1985 (Eq. 11, 15, 16, 18, 21) through the Delassus solve."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxfric as jf
from jaxfric.simulate._stick import solve_stick

# Closed-form expressions evaluated in float64: agreement to rounding.
_TOLERANCE = 1e-12

_PARAMS = dict(m1=1.3, m2=2.1, k1=4.0, c1=0.3, k2=2.5, c2=0.7, k12=6.0, c12=0.2)
_Q = jnp.array([0.4, -0.9])
_QD = jnp.array([0.8, -0.25])
_TAU = jnp.array([1.7, -0.6])


def _springs(p, q, qd):
    """Hand-derived spring/damper forces: ground springs on each mass, coupling
    ``Fs = k12 (x1 − x2) + c12 (ẋ1 − ẋ2)`` between them."""
    x1, x2 = q
    v1, v2 = qd
    ground1 = p["k1"] * x1 + p["c1"] * v1
    ground2 = p["k2"] * x2 + p["c2"] * v2
    coupling = p["k12"] * (x1 - x2) + p["c12"] * (v1 - v2)
    return ground1, ground2, coupling


def _close(a, b, tol=_TOLERANCE):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def test_oscillator_terms():
    sys = jf.systems.Oscillator(mass=2.0, stiffness=3.0, damping=0.5)
    q, qd = jnp.array([0.7]), jnp.array([-1.1])
    _close(sys.mass_matrix(q), [[2.0]])
    _close(sys.bias_force(q, qd), [3.0 * 0.7 + 0.5 * -1.1])
    _close(sys.friction_jacobian(q), [[1.0]])
    _close(sys.friction_jacobian_dot_qd(q, qd), [0.0])


@pytest.mark.parametrize("cls", [jf.systems.TwoMass, jf.systems.StackedBlocks])
def test_two_mass_mass_and_bias(cls):
    sys = cls(**_PARAMS)
    g1, g2, fs = _springs(_PARAMS, _Q, _QD)
    _close(sys.mass_matrix(_Q), np.diag([_PARAMS["m1"], _PARAMS["m2"]]))
    _close(sys.bias_force(_Q, _QD), [g1 + fs, g2 - fs])
    assert sys.n_dof == 2


def test_two_mass_jacobian():
    sys = jf.systems.TwoMass(**_PARAMS)
    assert sys.n_friction == 1
    # Karnopp 1985, Eq. 8: V_r = V_1 − V_2.
    _close(sys.friction_jacobian(_Q), [[1.0, -1.0]])
    _close(sys.slip_velocity(_Q, _QD), [_QD[0] - _QD[1]])
    _close(sys.friction_jacobian_dot_qd(_Q, _QD), [0.0])


def test_stacked_jacobian_and_acceleration():
    sys = jf.systems.StackedBlocks(**_PARAMS)
    assert sys.n_friction == 2
    # Element 1 = m1 on m2 (V_r = V_1 − V_2), element 2 = m2 on ground (V_2).
    _close(sys.friction_jacobian(_Q), [[1.0, -1.0], [0.0, 1.0]])
    _close(sys.slip_velocity(_Q, _QD), [_QD[0] - _QD[1], _QD[1]])
    _close(sys.friction_jacobian_dot_qd(_Q, _QD), [0.0, 0.0])
    # Karnopp 1985, Eq. 12–13 with F1 − Fs = τ1 − h1 (ground spring of m1 is
    # part of F1), Fs − F2 = τ2 − h2.
    f = jnp.array([0.35, -0.8])
    g1, g2, fs = _springs(_PARAMS, _Q, _QD)
    acc1 = (_TAU[0] - g1 - fs - f[0]) / _PARAMS["m1"]
    acc2 = (_TAU[1] - g2 + fs + f[0] - f[1]) / _PARAMS["m2"]
    _close(sys.acceleration(_Q, _QD, _TAU, f), [acc1, acc2])


def test_two_mass_stick_force_karnopp_eq11():
    sys = jf.systems.TwoMass(**_PARAMS)
    m1, m2 = _PARAMS["m1"], _PARAMS["m2"]
    g1, g2, fs = _springs(_PARAMS, _Q, _QD)
    # Karnopp's Eq. 6–7 (with the sign of his Eq. 10): Ṗ1 = F1 − Fr, Ṗ2 = Fr − F2.
    big_f1 = _TAU[0] - g1 - fs
    big_f2 = -(_TAU[1] - g2 + fs)
    expected = m2 / (m1 + m2) * big_f1 + m1 / (m1 + m2) * big_f2
    net = _TAU - sys.bias_force(_Q, _QD)
    friction, acc = solve_stick(sys, _Q, _QD, net, jnp.zeros(1), jnp.array([True]))
    _close(friction, [expected])
    # Stuck: no relative acceleration.
    _close(acc[0] - acc[1], 0.0)


def _karnopp_forces(q, qd):
    """Karnopp's F1 (drive on m1), Fs (between blocks), F2 (input on m2, acting
    backwards) for StackedBlocks with the applied force `_TAU`."""
    p = _PARAMS
    big_f1 = _TAU[0] - p["k1"] * q[0] - p["c1"] * qd[0]
    big_fs = p["k12"] * (q[0] - q[1]) + p["c12"] * (qd[0] - qd[1])
    big_f2 = -_TAU[1] + p["k2"] * q[1] + p["c2"] * qd[1]
    return big_f1, big_fs, big_f2


def test_stacked_blocks_stick_forces_karnopp():
    sys = jf.systems.StackedBlocks(**_PARAMS)
    m1, m2 = _PARAMS["m1"], _PARAMS["m2"]
    slip = jnp.array([0.45, -0.3])

    # Case (a), both stuck at rest: Eq. 15–16.
    qd = jnp.zeros(2)
    f1, fs, f2 = _karnopp_forces(_Q, qd)
    net = _TAU - sys.bias_force(_Q, qd)
    friction, acc = solve_stick(sys, _Q, qd, net, slip, jnp.array([True, True]))
    _close(friction, [f1 - fs, f1 - f2])
    _close(acc, [0.0, 0.0])

    # Case (b), element 1 slips (V_r != 0), element 2 stuck (V_2 = 0): Eq. 18.
    qd = jnp.array([0.6, 0.0])
    f1, fs, f2 = _karnopp_forces(_Q, qd)
    net = _TAU - sys.bias_force(_Q, qd)
    friction, acc = solve_stick(sys, _Q, qd, net, slip, jnp.array([False, True]))
    _close(friction, [slip[0], fs + slip[0] - f2])
    _close(acc[1], 0.0)

    # Case (c), element 2 slips (V_2 != 0), element 1 stuck (V_r = 0): Eq. 21.
    qd = jnp.array([-0.4, -0.4])
    f1, fs, f2 = _karnopp_forces(_Q, qd)
    net = _TAU - sys.bias_force(_Q, qd)
    friction, acc = solve_stick(sys, _Q, qd, net, slip, jnp.array([True, False]))
    f_r = -fs + m2 / (m1 + m2) * f1 + m1 / (m1 + m2) * (f2 + slip[1])
    _close(friction, [f_r, slip[1]])
    _close(acc[0] - acc[1], 0.0)


def test_systems_differentiable_in_parameters():
    # d/dm1 of ẍ1 = (τ1 − h1 − f1)/m1 is −ẍ1/m1 (hand derivative).
    f = jnp.array([0.35, -0.8])

    def acc1(m1):
        sys = jf.systems.StackedBlocks(**{**_PARAMS, "m1": m1})
        return sys.acceleration(_Q, _QD, _TAU, f)[0]

    m1 = _PARAMS["m1"]
    _close(jax.grad(acc1)(m1), -acc1(m1) / m1, tol=1e-10)


@pytest.mark.parametrize("cls", [jf.systems.TwoMass, jf.systems.StackedBlocks])
@pytest.mark.parametrize(
    "name, value, match",
    [
        ("m1", 0.0, r"`m1` must lie in \(0.0, inf\]"),
        ("m2", -1.0, r"`m2` must lie in \(0.0, inf\]"),
        ("k1", -1.0, r"`k1` must lie in \[0.0, inf\]"),
        ("c2", -0.1, r"`c2` must lie in \[0.0, inf\]"),
        ("k12", -2.0, r"`k12` must lie in \[0.0, inf\]"),
        ("c12", float("nan"), r"`c12` must be finite"),
        ("m1", [1.0, 2.0], r"`m1` of \w+ must be a scalar"),
    ],
)
def test_two_mass_validation(cls, name, value, match):
    with pytest.raises(ValueError, match=match):
        cls(**{**_PARAMS, name: value})


# Vectors of the wrong length: every system names the argument and both shapes.


@pytest.fixture
def without_jaxtyping():
    """The suite runs jaxtyping's annotation checks (pyproject addopts), which
    users do not: switched off, the calls behave as in user code (where JAX
    would broadcast a length-1 vector silently)."""
    import jaxtyping

    before = jaxtyping.config.jaxtyping_disable
    jaxtyping.config.update("jaxtyping_disable", True)
    yield
    jaxtyping.config.update("jaxtyping_disable", before)


def _two_joint_tree():
    return jf.systems.RigidBodyTree(
        parents=[-1, 0],
        joint_types=["revolute", "prismatic"],
        axes=[[0, 0, 1], [1, 0, 0]],
        origin_translation=[[0, 0, 0], [0.5, 0, 0]],
        mass=[1.0, 0.5],
        com=[[0.25, 0, 0], [0.1, 0, 0]],
        inertia=[0.01 * np.eye(3), 0.002 * np.eye(3)],
        friction_joints=[1],
    )


_SYSTEMS = {
    "Oscillator": lambda: jf.systems.Oscillator(mass=1.0, stiffness=2.0),
    "TwoMass": lambda: jf.systems.TwoMass(**_PARAMS),
    "StackedBlocks": lambda: jf.systems.StackedBlocks(**_PARAMS),
    "TwoLinkArm": lambda: jf.systems.TwoLinkArm(
        m1=1.0, m2=0.8, l1=0.5, l2=0.4, lc1=0.25, lc2=0.2, I1=0.02, I2=0.01
    ),
    "RigidBodyTree": _two_joint_tree,
}
# Every public method of the interface, with the vectors it takes.
_METHODS = {
    "mass_matrix": ("q",),
    "bias_force": ("q", "qd"),
    "friction_jacobian": ("q",),
    "friction_jacobian_dot_qd": ("q", "qd"),
    "slip_velocity": ("q", "qd"),
    "acceleration": ("q", "qd", "applied", "friction"),
}
# Methods of one system only.
_EXTRA_METHODS = {
    "TwoLinkArm": {"positions": ("q",)},
    "RigidBodyTree": {
        "inverse_dynamics": ("q", "qd", "qdd"),
        "gravity_force": ("q",),
        "joint_wrenches": ("q", "qd", "qdd"),
        "forward_kinematics": ("q",),
    },
}


def _wrong_shapes(n):
    """A scalar, a length-1 vector (broadcasts against anything) where more are
    needed, one entry too many, and a matrix."""
    return [shape for shape in [(), (1,), (n + 1,), (n, 1)] if shape != (n,)]


@pytest.mark.parametrize("system_name", sorted(_SYSTEMS))
def test_wrong_vector_length_is_named(system_name, without_jaxtyping):
    system = _SYSTEMS[system_name]()
    n, m = system.n_dof, system.n_friction
    good = dict(
        q=jnp.full(n, 0.3),
        qd=jnp.full(n, -0.2),
        qdd=jnp.full(n, 0.1),
        applied=jnp.full(n, 0.5),
        friction=jnp.full(m, 0.1),
    )
    methods = {**_METHODS, **_EXTRA_METHODS.get(system_name, {})}
    for method, names in methods.items():
        # The right shapes pass (traced only: nothing to compile).
        jax.eval_shape(getattr(system, method), **{k: good[k] for k in names})
        for name in names:
            size = m if name == "friction" else n
            for shape in _wrong_shapes(size):
                args = {k: good[k] for k in names} | {name: jnp.ones(shape)}
                expected = (
                    rf"`{name}` must have shape \({size},\) for {system_name} "
                    rf"with n_\w+={size}; got shape {re.escape(str(shape))}"
                )
                with pytest.raises(ValueError, match=expected):
                    getattr(system, method)(**args)


def test_wrong_vector_length_is_named_under_jit(without_jaxtyping):
    """Shapes are static, so the check also runs when traced (a length-1 `qd`
    on a 2-DoF robot, the case that broadcast silently)."""
    system = _two_joint_tree()
    with pytest.raises(ValueError, match=r"`qd` must have shape \(2,\)"):
        jax.jit(lambda q, qd: system.bias_force(q, qd))(jnp.zeros(2), jnp.ones(1))
    with pytest.raises(ValueError, match=r"`q` must have shape \(2,\)"):
        jax.vmap(system.mass_matrix)(jnp.zeros((3, 1)))
