"""Itul & Pisla's 3-PPRS parallel robot (``experiments/itul_pisla_3pprs.py``):
the paper's hand-derived kinematics and Newton–Euler inverse dynamics
(Eq. 3–8) against jaxfric's `ClosedChain` (tree recursive Newton–Euler,
closure Jacobian, loop multipliers) along the paper's helical translation,
and the power balance of the friction drive forces (Eq. 9, 12).

Both sides come from ``experiments/_three_pprs.py`` (one builder) with the
numbers of ``configs/experiments/itul_pisla_3pprs.toml``.
"""

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfric._linalg import min_norm_solve
from jaxfric.io import read_toml

ROOT = Path(__file__).resolve().parent.parent
TIMES = (0.4, 2.0, 3.9)  # s: accelerating, cruising, decelerating


def _module():
    spec = importlib.util.spec_from_file_location(
        "three_pprs", ROOT / "experiments" / "_three_pprs.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def setup():
    pprs = _module()
    settings = read_toml(ROOT / "configs" / "experiments" / "itul_pisla_3pprs.toml")
    mech = settings["mechanism"]
    chain = pprs.build_chain(mech)
    return pprs, mech, settings, chain


def _paper(pprs, mech, traj, t):
    t = jnp.asarray(t)
    q, qd, qdd, u, ud, udd = pprs.joint_trajectory(mech, traj, t)
    acc = jax.jacfwd(jax.jacfwd(lambda s: pprs.platform_path(traj, s)))(t)
    zero = jnp.zeros(3)
    drive, big_h, big_v, big_w = pprs.newton_euler(
        mech, qdd, u, ud, udd, jnp.eye(3), acc, zero, zero
    )
    return (q, qd, qdd, u, ud, udd), drive, (big_h, big_v, big_w)


def test_inverse_dynamics_and_reactions_match_closed_chain(setup):
    pprs, mech, settings, chain = setup
    assert chain.tree.n_dof == 12 and chain.n_equations == 6 and chain.n_dof == 6
    _, n, tan = pprs.directions()
    for t in TIMES:
        (q, qd, qdd, u, _, _), drive, (big_h, big_v, big_w) = _paper(
            pprs, mech, settings["trajectory"], t
        )
        assert float(jnp.max(jnp.abs(q))) > 0.01  # a moving, non-trivial pose
        drive_jf = chain.inverse_dynamics(q, qd, qdd)
        np.testing.assert_allclose(drive_jf, drive, rtol=0, atol=1e-9)
        # Ball loops 2 and 3: the force on the platform from the rod.
        lam = chain.loop_forces(q, qd, qdd, drive_jf, jnp.zeros(chain.n_friction))
        rod = jnp.cos(u)[:, None] * tan + jnp.sin(u)[:, None] * pprs.EZ[None]
        force = (
            big_h[:, None] * n
            + big_v[:, None] * rod
            + big_w[:, None] * jnp.cross(rod, n)
        )
        np.testing.assert_allclose(lam.reshape(2, 3), force[1:], rtol=0, atol=1e-9)


def test_kinematics_and_friction_power(setup):
    pprs, mech, settings, chain = setup
    traj = settings["trajectory"]
    fric = pprs.friction_coefficients(settings["friction"])
    for t in TIMES:
        (q, qd, qdd, u, ud, udd), _, reactions = _paper(pprs, mech, traj, t)
        centre = pprs.platform_path(traj, jnp.asarray(t))
        a, b, a_u, b_u = pprs.jacobians(mech, q, centre, jnp.eye(3))
        j_u = jnp.linalg.solve(b_u, a_u)
        # Eq. 10 against the closure Jacobian's velocity map (rows of u1..u3).
        rows = chain.velocity_map(chain.assemble(q))
        np.testing.assert_allclose(j_u, rows[np.array([2, 8, 11])], atol=1e-10)
        np.testing.assert_allclose(j_u @ qd, ud, atol=1e-12)
        # Eq. 4/11: the direct kinematic model gives the helix's velocity.
        j = jnp.linalg.solve(b, a)
        velocity = jax.jacfwd(lambda s: pprs.platform_path(traj, s))(jnp.asarray(t))
        np.testing.assert_allclose(j[:3] @ qd, velocity, atol=1e-12)
        np.testing.assert_allclose(j[3:] @ qd, 0.0, atol=1e-12)
        # The passive joints dissipate k_r u̇² + k_s |ω_n|²; Eq. 12 and the
        # projection put in that power, Eq. 13 (independent chains) does not.
        fr = pprs.friction_forces(
            mech, fric, qd, qdd, u, ud, udd, reactions, j_u, j[3:], jnp.zeros(3)
        )
        dissipated = float(jnp.sum((fr["k_r"] + fr["k_s"]) * ud**2))
        assert dissipated > 1e-4
        for name in ("passive_whole", "passive_projection"):
            assert float(fr[name] @ qd) == pytest.approx(dissipated, rel=1e-9)


def test_direct_geometry_recovers_pose(setup):
    pprs, mech, settings, _ = setup
    centre = pprs.platform_path(settings["trajectory"], jnp.asarray(2.0))
    q, _ = pprs.inverse_geometry(mech, centre, jnp.eye(3))
    c5, s5 = np.cos(0.05), np.sin(0.05)
    tilt = jnp.array([[1.0, 0.0, 0.0], [0.0, c5, -s5], [0.0, s5, c5]])  # 0.05 rad
    c, r = pprs.direct_geometry(mech, q, centre + 0.01, tilt, iterations=12)
    np.testing.assert_allclose(c, centre, atol=1e-12)
    np.testing.assert_allclose(r, jnp.eye(3), atol=1e-12)


def test_loop_forces_off_the_symmetric_helix(setup):
    # Poses 1e-5 m off the helix (a simulation's tracking error): the loop
    # multipliers of Φ_qᵀ λ = Φ_qᵀ μ must return μ. Deciding the rank of the
    # 12 × 12 Φ_qᵀΦ_q (the former `min_norm_solve`) miscounted a zero pivot
    # at such poses and was 9e-3 off; the reaction-load friction then missed
    # μ_d·N by 5e-9 and its simulation took 9 times the steps.
    pprs, mech, settings, chain = setup
    rng = np.random.default_rng(0)
    times = jnp.asarray(rng.uniform(0.0, 4.7, 32))
    offsets = jnp.asarray(rng.normal(size=(32, 6)) * 1e-5)
    mu = jnp.arange(1.0, 7.0)

    @jax.jit
    @jax.vmap
    def multipliers(t, dz):
        q = pprs.joint_trajectory(mech, settings["trajectory"], t)[0]
        jac = chain.closure_jacobian(chain.assemble(q + dz))
        return min_norm_solve(jac.T, jac.T @ mu)

    expected = np.broadcast_to(mu, (32, 6))
    lam = multipliers(times, offsets)
    np.testing.assert_allclose(lam, expected, rtol=0, atol=1e-12)
