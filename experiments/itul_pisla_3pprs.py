"""Itul & Pisla 2007: the 3-PPRS parallel robot (6 DoF, triangular platform),
its inverse dynamics without friction and the additional drive forces from
friction in its active and passive joints, along the paper's helical
translation (Figs. 8–9).

The mechanism, the paper's kinematics (Eq. 3, 4, 10, 11), its Newton–Euler
steps (Eq. 5–8) and its friction forces (Eq. 9, 12, 13, 15, 16) are in
``_three_pprs.py``; the same mechanism is a `jaxfric.systems.ClosedChain`
(12 tree coordinates, two ball loops, the six prismatic joints independent),
whose inverse dynamics and loop forces are computed from the tree's
recursive Newton–Euler and the closure Jacobian: a formulation independent
of the paper's hand-derived steps.

Checked and printed:

1. drive forces without friction, the paper's Newton–Euler (Eq. 5–8) against
   `ClosedChain.inverse_dynamics`, and the spherical joints' reactions
   against `ClosedChain.loop_forces`, over the whole trajectory;
2. kinematics: ``[J_u] = [B_u]⁻¹[A_u]`` (Eq. 10) against the rows of the
   ClosedChain's velocity map, the relative angular velocity of each rod
   and the platform against the tree's kinematics, the direct geometric
   model (Newton, Eq. 3) from a perturbed pose;
3. friction: the power each approach's additional drive forces put in
   against the power the passive joints' friction moments dissipate
   (Eq. 9), for Eq. 12 (whole mechanism), Eq. 13 (independent chains) and the
   virtual-power projection of the same moments;
4. the joints' normal loads in Eq. 9, 15, 16 against the reaction forces
   across each joint's axis from `ClosedChain.joint_reactions`;
5. a forward simulation (not in the paper): computed-torque control along
   the helix with exact Coulomb friction from the joints' reactions in the six
   sliders and the three pins (`jaxfric.friction.JointFriction`; the ball
   joints and the viscous terms left out), without and with the paper's
   friction drive forces as feedforward: result, stuck sliders at velocity
   exactly 0.0, every slipping friction force equal to ``μ_d·N`` at the
   reactions that force itself produces (recomputed from the saved state),
   closure, tracking error;
6. the mechanism cut at two welds instead (every ball three gimbal revolutes
   of the tree, ``_three_pprs.build_chain(balls="tree")``, so that every ball
   can carry friction) must run as the ball-loop cut (leg positions at every
   save); then with the balls' friction too (`jaxfric.friction.SphericalLoad`,
   Eq. 9's ``μ_s (d_s/2) |R_s|``; 12 elements of 18 rows, all stuck and
   redundant at t0), the claims of part 5 again;
7. the paper's claims, measured: "both approaches give the same passive-joint
   forces for a translational platform motion", and "the passive joints'
   friction coefficients change the drive forces little".

The forward simulation's first call takes about 2.5 minutes on a 2-core
machine (12 tree coordinates, 9 reaction-load friction elements; the load
coupling is solved at every evaluation), each weld-cut run about 3 minutes
(18 coordinates); the whole script about 11 minutes.

Run: ``python experiments/itul_pisla_3pprs.py [SETTINGS.toml]``.
"""

import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from _common import (
    claim,
    enable_float64,
    load_settings,
    print_claims,
    print_table,
    results_dir,
    stick_phases,
    write_json,
)

enable_float64()

import _three_pprs as pprs  # noqa: E402

import jaxfric as jf  # noqa: E402
from jaxfric.io.results import result_message  # noqa: E402

NAME = "itul_pisla_3pprs"
ROD_ROWS = np.array([2, 8, 11])  # tree indices of u1, u2, u3


def _vee(skew):
    return jnp.array([skew[2, 1], skew[0, 2], skew[1, 0]])


def angular_velocity(chain, q_tree, qd_tree, link):
    """World angular velocity of a link from the tree's forward kinematics:
    ``vee(Ṙ Rᵀ)`` with ``Ṙ`` the derivative of the link's rotation along
    ``q̇``."""
    rot, rot_dot = jax.jvp(
        lambda q: chain.tree.link_pose(q, link)[0], (q_tree,), (qd_tree,)
    )
    return _vee(rot_dot @ rot.T)


def sample(chain, mech, traj, fric, t):
    """Everything at time `t`: the paper's quantities and jaxfric's."""
    _, n, tan = pprs.directions()
    q, qd, qdd, u, ud, udd = pprs.joint_trajectory(mech, traj, t)
    centre = pprs.platform_path(traj, t)
    acc = jax.jacfwd(jax.jacfwd(lambda s: pprs.platform_path(traj, s)))(t)
    rot, zero = jnp.eye(3), jnp.zeros(3)  # a translation: ω = ε = 0
    drive, big_h, big_v, big_w = pprs.newton_euler(
        mech, qdd, u, ud, udd, rot, acc, zero, zero
    )
    a, b, a_u, b_u = pprs.jacobians(mech, q, centre, rot)
    j = jnp.linalg.solve(b, a)
    j_u = jnp.linalg.solve(b_u, a_u)
    fr = pprs.friction_forces(
        mech, fric, qd, qdd, u, ud, udd, (big_h, big_v, big_w), j_u, j[3:], zero
    )
    # jaxfric: inverse dynamics, loop forces (on the platform, from rods 2, 3).
    drive_jf = chain.inverse_dynamics(q, qd, qdd)
    lam = chain.loop_forces(q, qd, qdd, drive_jf, jnp.zeros(chain.n_friction))
    rod_dir = jnp.cos(u)[:, None] * tan + jnp.sin(u)[:, None] * pprs.EZ[None]
    paper_force = (
        big_h[:, None] * n
        + big_v[:, None] * rod_dir
        + big_w[:, None] * jnp.cross(rod_dir, n)
    )
    q_tree, qd_tree, rows, _ = chain.tree_state(q, qd)
    omega_platform = angular_velocity(chain, q_tree, qd_tree, "platform")
    rel_tree = jnp.stack(
        [
            angular_velocity(chain, q_tree, qd_tree, f"rod{i + 1}") - omega_platform
            for i in range(3)
        ]
    )
    rel_paper = ud[:, None] * n  # ω_n = u̇_i n_i − ω, ω = 0
    # The joints' reactions across their axes (friction frame, z the axis).
    wrench = chain.joint_reactions(
        q, qd, qdd, drive_jf, jnp.zeros(chain.n_friction)
    ).wrench
    across = jnp.hypot(wrench[:, 3], wrench[:, 4])
    paper_normal = jnp.concatenate([fr["active_normal"], fr["revolute_normal"]])
    dissipated = jnp.sum(fr["k_r"] * ud**2) + jnp.sum(fr["k_s"] * ud**2)
    return dict(
        q=q,
        qd=qd,
        u=u,
        drive=drive,
        drive_jf=drive_jf,
        reaction_error=jnp.max(jnp.abs(lam.reshape(2, 3) - paper_force[1:])),
        closure=jnp.max(jnp.abs(chain.closure_residual(q_tree))),
        j_u_error=jnp.max(jnp.abs(j_u - rows[ROD_ROWS])),
        rel_error=jnp.max(jnp.abs(rel_tree - rel_paper)),
        omega_platform=jnp.max(jnp.abs(omega_platform)),
        normal_error=jnp.max(jnp.abs(across - paper_normal)),
        dissipated=dissipated,
        **{k: fr[k] for k in ("active", "passive_whole", "passive_chains",
                              "passive_projection", "revolute_normal",
                              "spherical_normal")},
    )  # fmt: skip


def direct_geometry_error(mech, traj, times):
    """Largest pose error of the direct geometric model (Newton on Eq. 3)
    started 1 cm and 0.05 rad away from the helix's pose."""
    errors = []
    for t in times:
        t = jnp.asarray(t)
        centre = pprs.platform_path(traj, t)
        q, _ = pprs.inverse_geometry(mech, centre, jnp.eye(3))
        tilt = jnp.array([0.03, -0.04, 0.0])
        angle = jnp.linalg.norm(tilt)
        start_rot = pprs.rotation_matrix(tilt / angle, angle)
        c, r = pprs.direct_geometry(mech, q, centre + 0.01, start_rot)
        errors.append(
            max(
                float(jnp.max(jnp.abs(c - centre))),
                float(jnp.max(jnp.abs(r - jnp.eye(3)))),
            )
        )
    return max(errors)


def feedforward(chain, mech, traj, fric, sim):
    """The paper's friction drive forces along the reference (Eq. 14 less the
    frictionless part), with the simulated model's friction: the sliders' μ_d,
    the pins' μ_r, no viscous terms, no ball friction; as a `Tabulated`
    force."""
    model = dict(fric, c_i=0.0, c_r=0.0, c_s=0.0, mu_s=0.0, mu=sim["mu_dynamic"])
    ts = jnp.linspace(sim["t0"], sim["t1"], sim["feedforward_points"])
    out = jax.jit(jax.vmap(lambda t: sample(chain, mech, traj, model, t)))(ts)
    return jf.forces.Tabulated(ts, out["active"] + out["passive_projection"])


def simulate(chain, law, force, reference, sim, ts, jump_ts):
    t0 = jnp.asarray(sim["t0"])
    return jf.simulate(
        chain,
        law,
        q0=reference.position(t0),
        qd0=reference.velocity(t0),
        t0=sim["t0"],
        t1=sim["t1"],
        force=force,
        ts=ts,
        jump_ts=jump_ts,
        rtol=sim["rtol"],
        atol=sim["atol"],
        max_steps=sim["max_steps"],
        max_events=sim["max_events"],
        throw=False,
    )


@eqx.filter_jit
def friction_levels(chain, law, force, sol):
    """Per save: the Coulomb levels ``(μ_d N, μ_s N)`` at the joints' reactions
    recomputed from the saved state, the solution's friction and the applied
    force (an independent evaluation of the load coupling's fixed point), the
    closure residual, and the magnitude of the friction that the levels
    bound."""

    def one(t, z, zd, f):
        applied = force(t, z, zd)
        acc = chain.acceleration(z, zd, applied, f)
        coulomb = law.at_reactions(chain.joint_reactions(z, zd, acc, applied, f))
        closure = jnp.max(jnp.abs(chain.closure_residual(chain.assemble(z))))
        # What the levels bound: with ball elements, each element's contact
        # force (its torque over its arm, the norm over a ball's rows).
        size = coulomb.force_norm(f) if hasattr(coulomb, "force_norm") else jnp.abs(f)
        return coulomb.fc, coulomb.fs, closure, size

    return jax.vmap(one)(sol.ts, sol.q, sol.qd, sol.friction)


FORWARD_RUNS = (("computed torque", 0.0), ("+ friction feedforward", 1.0))


def forward(settings, chain, fric, law=None, table=None, which=FORWARD_RUNS):
    """Part 2: computed-torque runs without and with the feedforward (`which`:
    names and feedforward weights), under `law` (default
    `pprs.joint_friction_law`), the feedforward `table` computed on `chain`
    unless given. Returns the runs and the table."""
    mech, traj, sim = (
        settings["mechanism"],
        settings["trajectory"],
        settings["simulation"],
    )
    if law is None:
        law = pprs.joint_friction_law(fric, sim)
    reference = pprs.HelixReference.from_settings(mech, traj)
    control = jf.forces.ComputedTorque(chain, reference, sim["kp"], sim["kd"])
    if table is None:
        table = feedforward(chain, mech, traj, fric, sim)
    ts = jnp.linspace(sim["t0"], sim["t1"], sim["num_save"])
    kinks = jnp.array([0.5 * np.pi, np.pi])  # the helix's acceleration jumps
    jump_ts = jnp.sort(jnp.concatenate([table.ts[1:-1], kinks]))
    runs = {}
    for name, weight in which:
        force = pprs.CompensatedTorque(control, table, weight)
        start = time.perf_counter()
        sol = simulate(chain, law, force, reference, sim, ts, jump_ts)
        jax.block_until_ready(sol.q)
        wall = time.perf_counter() - start
        fc, fs, closure, size = (
            np.asarray(x) for x in friction_levels(chain, law, force, sol)
        )
        q, qd, f = (np.asarray(x) for x in (sol.q, sol.qd, sol.friction))
        modes, slip = np.asarray(sol.modes), np.asarray(sol.slip_velocity)
        moving = modes != 0
        level_error = float(
            np.max(np.abs(size[moving] - fc[moving]) / fc[moving], initial=0.0)
        )
        saved = np.flatnonzero(np.all(np.isfinite(q), axis=1))
        stuck_excess = (
            float(np.max((size - fs)[~moving] / fs[~moving]))
            if np.any(~moving)
            else None
        )
        speeds, spreads, phases = [], [], 0
        for k in range(6):  # active joints: independent coordinates
            for a, b in stick_phases(modes[:, k] == 0):
                phases += 1
                speeds.append(float(np.max(np.abs(qd[a:b, k]))))
                spreads.append(float(np.ptp(q[a:b, k])))
        ref_q = np.asarray(jax.vmap(reference.position)(ts))
        runs[name] = dict(
            result=result_message(sol),
            successful=bool(sol.result == jf.RESULTS.successful),
            wall_s=wall,
            events=int(sol.stats["num_events"]),
            steps=int(sol.stats["num_steps"]),
            stick_phases=phases,
            stuck_points=int(np.sum(modes[:, :6] == 0)),
            stuck_speed=max(speeds, default=0.0),
            # Every stuck element, pins included: slip velocity exactly zero.
            stuck_slip=float(np.max(np.abs(slip[~moving]), initial=0.0)),
            passive_stuck_points=int(np.sum(~moving[:, 6:])),
            stuck_spread=max(spreads, default=0.0),
            level_error=level_error,
            stuck_excess=stuck_excess,
            closure=float(np.max(closure)),
            tracking_mm=1e3 * float(np.max(np.abs(q - ref_q))),
            ts=np.asarray(ts),
            reached=float(np.asarray(ts)[saved[-1]]) if saved.size else None,
            q=q,
            q_error=q - ref_q,
            friction=f,
            modes=modes,
            slip=slip,
        )
    return runs, table


def ball_friction(settings, fric, table, loop_run):
    """Part 3: the same mechanism cut where no joint rubs (every ball three
    gimbal revolutes, chains 2 and 3 welded to the platform:
    ``build_chain(balls="tree")``), under the feedforward `table` of part 2.
    Without ball friction its run must equal part 2's `loop_run` (the ball
    loops' cut; two formulations of one mechanism); then the balls rub too
    (`SphericalLoad`, the paper's Eq. 9: a torque of norm
    ``μ_s (d_s/2) |R_s|``, not in the paper's simulation)."""
    mech, sim = settings["mechanism"], settings["simulation"]
    plain = pprs.build_chain(mech, balls="tree")
    runs, _ = forward(
        settings, plain, fric, table=table,
        which=(("tree balls, no ball friction", 1.0),),
    )  # fmt: skip
    (same,) = runs.values()
    rubbing = pprs.build_chain(
        mech, pprs.ACTIVE + pprs.PASSIVE + pprs.BALLS, balls="tree"
    )
    law = pprs.joint_friction_law(fric, sim, balls=True)
    runs, _ = forward(
        settings, rubbing, fric, law, table, which=(("+ ball friction", 1.0),)
    )
    (with_balls,) = runs.values()
    return dict(
        cut_difference=float(np.max(np.abs(same["q"] - loop_run["q"]))),
        same=same,
        with_balls=with_balls,
    )


def run_claims(name, r, checks, exact_passive=True):
    """The claims on one forward run `r` (`forward`): stuck passive elements
    at slip velocity exactly 0.0 when `exact_passive` (they stick only while
    the sliders do), else within ``checks["stuck_slip"]``."""
    bound = 0.0 if exact_passive else checks["stuck_slip"]
    how = (
        "exactly 0.0"
        if exact_passive
        else f"<= {bound:g} (m/s, rad/s: a pin's or ball's rows mix the "
        "independent coordinates, held by the stick solve to rounding while "
        "sliders move)"
    )
    return [
        claim(
            r["successful"] and r["events"] > 0,
            f"{name}: the run reaches t1 ({r['result']}) through "
            f"{r['events']} friction events, {r['stick_phases']} stick phases "
            "of the sliders",
        ),
        claim(
            r["stuck_speed"] == 0.0 and r["stuck_spread"] == 0.0,
            f"{name}: stuck sliders have velocity exactly 0.0 (max "
            f"{r['stuck_speed']:.1e}) and constant position (spread "
            f"{r['stuck_spread']:.1e} m) at {r['stuck_points']} saves",
        ),
        claim(
            r["stuck_slip"] <= bound,
            f"{name}: every stuck element, the passive joints' "
            f"{r['passive_stuck_points']} stuck saves included, slips at "
            f"{how} (max {r['stuck_slip']:.1e})",
        ),
        claim(
            max(r["level_error"], r["stuck_excess"] or 0.0) <= checks["friction_level"],
            f"{name}: slipping |f| equals μ_d·N at the reactions of f "
            f"(relative {r['level_error']:.1e}), stuck |f| within μ_s·N "
            f"(largest |f|/μ_s N − 1 = {r['stuck_excess'] or 0.0:.2e}) <= "
            f"{checks['friction_level']:g}",
        ),
        claim(
            r["closure"] <= checks["closure_simulation"],
            f"{name}: closure |Φ| {r['closure']:.1e} m <= "
            f"{checks['closure_simulation']:g} m at every save",
        ),
    ]


def figure(ts, out, runs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(4, 1, figsize=(8, 13), sharex=True)
    total = out["drive"] + out["active"] + out["passive_whole"]
    axes[0].plot(ts, out["drive"][:, 0], label="$Q_1$ without friction")
    axes[0].plot(ts, total[:, 0], label="$Q_1^m$ with friction (Eq. 14, Eq. 12)")
    axes[0].set_ylabel("N")
    axes[0].set_title("Drive force of motor 1 (Itul & Pisla, Fig. 8)")
    axes[0].legend()
    passive = out["passive_whole"][:, 0]
    axes[1].plot(ts, out["active"][:, 0] + passive, label=r"$\Delta Q_1$ total")
    axes[1].plot(ts, out["active"][:, 0], label=r"$\Delta Q_1^m$ active joints")
    axes[1].plot(ts, passive, label=r"$\Delta Q_1^p$ passive, Eq. 12")
    axes[1].plot(ts, out["passive_projection"][:, 0], "--",
                 label=r"$\Delta Q_1^p$ passive, virtual-power projection")  # fmt: skip
    axes[1].set_ylabel("N")
    axes[1].set_title("Additional drive forces of motor 1 (Fig. 9)")
    axes[1].legend(fontsize=8)
    axes[2].plot(ts, out["passive_whole"][:, 3], label="Eq. 12 (whole mechanism)")
    axes[2].plot(ts, out["passive_projection"][:, 3], "--",
                 label="virtual-power projection")  # fmt: skip
    axes[2].plot(ts, out["passive_chains"][:, 3], ":",
                 label="Eq. 13 (independent chains)")  # fmt: skip
    scale = 3.0 * float(np.max(np.abs(out["passive_projection"][:, 3])))
    axes[2].set_ylim(-scale, scale)
    axes[2].set_ylabel("N")
    axes[2].set_title(
        r"Passive-joint friction force $\Delta Q_4^p$ of vertical motor 4 "
        "(Eq. 13 clipped near vertical rods)"
    )
    axes[2].legend(fontsize=8)
    for name, r in runs.items():
        axes[3].plot(r["ts"], 1e3 * r["q_error"][:, 0], label=f"$q_1$, {name}")
    run = runs["computed torque"]
    stuck = run["modes"][:, 0] == 0
    axes[3].plot(run["ts"][stuck], 1e3 * run["q_error"][stuck, 0], "k.", ms=3,
                 label="$q_1$ stuck (computed torque)")  # fmt: skip
    axes[3].set_ylabel("mm")
    axes[3].set_xlabel("t (s)")
    axes[3].set_title("Forward simulation: tracking error of slider 1")
    axes[3].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    settings = load_settings(NAME)
    mech, traj, checks = (
        settings["mechanism"],
        settings["trajectory"],
        settings["checks"],
    )
    fric = pprs.friction_coefficients(settings["friction"])
    start = time.perf_counter()
    chain = pprs.build_chain(mech)
    build_s = time.perf_counter() - start
    t_end = 1.5 * np.pi
    num = traj["num_points"]
    ts = (np.arange(num) + 0.5) * t_end / num  # rest at both ends: interior points

    start = time.perf_counter()
    run = jax.jit(jax.vmap(lambda t: sample(chain, mech, traj, fric, t)))
    out = {k: np.asarray(v) for k, v in run(jnp.asarray(ts)).items()}
    sample_s = time.perf_counter() - start
    passive_off = {k: 0.0 for k in ("c_r", "c_s", "mu_r", "mu_s")}
    out_rigid = jax.jit(
        jax.vmap(lambda t: sample(chain, mech, traj, dict(fric, **passive_off), t))
    )(jnp.asarray(ts))
    direct_error = direct_geometry_error(mech, traj, ts[:: num // 8])

    id_error = float(np.max(np.abs(out["drive"] - out["drive_jf"])))
    normal_error = float(np.max(out["normal_error"]))
    reaction_error = float(np.max(out["reaction_error"]))
    power = {
        name: np.einsum("tj,tj->t", out[name], out["qd"])
        for name in ("passive_whole", "passive_chains", "passive_projection")
    }
    power_error = {
        name: float(np.max(np.abs(p - out["dissipated"])) / np.max(out["dissipated"]))
        for name, p in power.items()
    }
    cos_u = np.cos(out["u"])
    away = np.all(np.abs(cos_u) > 0.2, axis=1)  # rods at least 11.5° off vertical
    diff_12_13 = np.abs(out["passive_whole"] - out["passive_chains"])
    scale_12 = float(np.max(np.abs(out["passive_whole"])))
    diff_12_proj = float(
        np.max(np.abs(out["passive_whole"] - out["passive_projection"]))
    )
    total = out["active"] + out["passive_whole"]
    total_rigid = np.asarray(out_rigid["active"] + out_rigid["passive_whole"])
    passive_share = float(np.max(np.abs(total - total_rigid)) / np.max(np.abs(total)))
    friction_share = float(np.max(np.abs(total)) / np.max(np.abs(out["drive"])))

    print(
        f"3-PPRS: {chain.tree.n_dof} tree coordinates, {chain.n_equations} closure "
        f"equations, {chain.n_dof} DoF; build {build_s:.1f} s, {num} samples "
        f"(compile + run) {sample_s:.1f} s"
    )
    rows = [
        dict(quantity="drive forces, Newton–Euler vs ClosedChain (N)", value=id_error),
        dict(
            quantity="spherical reactions A2, A3 vs loop forces (N)",
            value=reaction_error,
        ),
        dict(
            quantity="closure |Φ| along the helix (m)",
            value=float(np.max(out["closure"])),
        ),
        dict(
            quantity="[J_u] (Eq. 10) vs velocity map (rad/m)",
            value=float(np.max(out["j_u_error"])),
        ),  # fmt: skip
        dict(
            quantity="relative ω of rods, paper vs tree (rad/s)",
            value=float(np.max(out["rel_error"])),
        ),  # fmt: skip
        dict(
            quantity="platform |ω| from the tree (rad/s)",
            value=float(np.max(out["omega_platform"])),
        ),  # fmt: skip
        dict(quantity="direct geometry (Newton) pose error", value=direct_error),
        *(
            dict(quantity=f"power of {name} vs dissipated (relative)", value=err)
            for name, err in power_error.items()
        ),
        dict(quantity="Eq. 12 vs projection, max |Δ| (N)", value=diff_12_proj),
        dict(
            quantity="Eq. 12 vs Eq. 13, max |Δ| (N), rods ≥ 11.5° off vertical",
            value=float(np.max(diff_12_13[away])),
        ),  # fmt: skip
        dict(quantity="largest |ΔQ^p| of Eq. 12 (N)", value=scale_12),
        dict(
            quantity="passive share of the friction drive forces", value=passive_share
        ),
        dict(quantity="friction share of the drive forces", value=friction_share),
    ]
    print_table(rows, [("quantity", "quantity", ""), ("value", "value", ".3e")])

    claims = [
        claim(
            id_error <= checks["inverse_dynamics"],
            f"drive forces without friction: the paper's Newton–Euler (Eq. 5–8) "
            f"and jaxfric's ClosedChain agree to {id_error:.1e} N "
            f"<= {checks['inverse_dynamics']:g} N over {num} points",
            value=id_error,
        ),
        claim(
            reaction_error <= checks["reactions"],
            f"spherical-joint reactions (H, V, W of Eq. 6) equal the ClosedChain's "
            f"loop forces to {reaction_error:.1e} N <= {checks['reactions']:g} N",
            value=reaction_error,
        ),
        claim(
            max(
                float(np.max(out["j_u_error"])),
                float(np.max(out["rel_error"])),
                direct_error,
            )
            <= checks["kinematics"],
            "kinematics (Eq. 3, 4, 10, 11) match the tree's: [J_u] "
            f"{float(np.max(out['j_u_error'])):.1e}, relative ω "
            f"{float(np.max(out['rel_error'])):.1e}, direct geometry "
            f"{direct_error:.1e} <= {checks['kinematics']:g}",
        ),  # fmt: skip
        claim(
            normal_error <= checks["normal_loads"],
            "the joints' normal loads of Eq. 9, 15, 16 equal the reaction forces "
            f"across the axes from ClosedChain.joint_reactions to {normal_error:.1e} N "
            f"<= {checks['normal_loads']:g} N",
            value=normal_error,
        ),
        claim(
            max(power_error["passive_whole"], power_error["passive_projection"])
            <= 1e-9,
            "Eq. 12 and the virtual-power projection put in the power the passive "
            f"joints dissipate: relative errors {power_error['passive_whole']:.1e}, "
            f"{power_error['passive_projection']:.1e} <= 1e-9",
        ),
    ]
    runs, table = forward(settings, chain, fric)
    balls = ball_friction(settings, fric, table, runs["+ friction feedforward"])
    print()
    print(
        "Forward simulation, computed torque along the helix, exact reaction-load "
        "friction in the six sliders and three pins:"
    )
    print_table(
        [dict(run=name, **r) for name, r in runs.items()],
        [
            ("run", "run", ""),
            ("result", "result", ""),
            ("wall_s", "wall (s, first incl. compile)", ".1f"),
            ("steps", "steps", "d"),
            ("events", "events", "d"),
            ("stick_phases", "slider stick phases", "d"),
            ("stuck_points", "stuck saves", "d"),
            ("stuck_speed", "max |q̇| stuck", ".1e"),
            ("level_error", "slip |f| vs μ_d N", ".1e"),
            ("stuck_excess", "stuck |f|/μ_s N − 1", ".2f"),
            ("closure", "|Φ| (m)", ".1e"),
            ("tracking_mm", "max |q − q_ref| (mm)", ".4f"),
        ],
    )
    for name, r in runs.items():
        claims += run_claims(name, r, checks)
    plain, fed = runs["computed torque"], runs["+ friction feedforward"]
    gain = plain["tracking_mm"] / fed["tracking_mm"]
    claims.append(
        claim(
            gain >= 10.0,
            "the paper's friction drive forces (Eq. 14) as feedforward cut the "
            f"tracking error {gain:.0f}-fold ({plain['tracking_mm']:.4f} -> "
            f"{fed['tracking_mm']:.4f} mm) >= 10-fold",
            value=gain,
        )
    )
    cut, rub = balls["same"], balls["with_balls"]
    print()
    print("The same mechanism cut at two welds (every ball a tree joint):")
    print_table(
        [dict(run=name, **r) for name, r in (("tree balls", cut), ("+ balls", rub))],
        [
            ("run", "run", ""),
            ("wall_s", "wall (s, first incl. compile)", ".1f"),
            ("steps", "steps", "d"),
            ("events", "events", "d"),
            ("reached", "reached t (s)", ".5f"),
            ("closure", "|Φ| (m)", ".1e"),
            ("tracking_mm", "max |q − q_ref| (mm)", ".4f"),
        ],
    )
    claims.append(
        claim(
            cut["successful"]
            and balls["cut_difference"] <= checks["cut_agreement"]
            and cut["events"] == fed["events"],
            "the 3-PPRS cut at two welds (all three balls gimbal joints of the "
            "tree, 18 coordinates, 12 closure equations) runs as the ball-loop "
            f"cut (12, 6): leg positions within {balls['cut_difference']:.1e} m "
            f"<= {checks['cut_agreement']:g} m at every save, {cut['events']} "
            f"events ({fed['events']} with the loops)",
            value=balls["cut_difference"],
        )
    )
    claims += run_claims(
        "+ ball friction (weld cut, 12 elements, 18 rows)", rub, checks, False
    )
    ok = print_claims(claims)
    print()
    print("The paper's claims (measured, not asserted):")
    print(
        f"- 'both approaches give the same passive-joint forces for a "
        f"translational motion': Eq. 12 vs Eq. 13 differ by up to "
        f"{float(np.max(diff_12_13[away])):.3f} N where every rod is >= 11.5° off "
        f"vertical (Eq. 12's largest |ΔQ^p| {scale_12:.3f} N); Eq. 13 puts in "
        f"{power_error['passive_chains']:.0%} (largest relative error) of the "
        "dissipated power. Eq. 12 itself differs from the virtual-power projection "
        f"of the same moments by {diff_12_proj:.2e} N (the spherical joints' "
        "friction moment on the platform, J_ω^T Σ k_s u̇_i n_i, is not in Eq. 12)."
    )
    print(
        f"- 'passive-joint friction changes the drive forces little': the passive "
        f"joints change the friction drive forces by {passive_share:.0%} of their "
        f"peak; friction is {friction_share:.1%} of the peak drive force."
    )

    folder = results_dir(NAME)
    figure(ts, out, runs, folder / f"{NAME}.png")
    write_json(
        dict(
            claims=claims,
            inverse_dynamics_error=id_error,
            reaction_error=reaction_error,
            power_error=power_error,
            eq12_vs_eq13_max=float(np.max(diff_12_13[away])),
            eq12_vs_projection_max=diff_12_proj,
            passive_share=passive_share,
            friction_share=friction_share,
            t=ts,
            drive=out["drive"],
            active=out["active"],
            passive_whole=out["passive_whole"],
            passive_chains=out["passive_chains"],
            passive_projection=out["passive_projection"],
            normal_load_error=normal_error,
            simulation=runs,
            balls=dict(
                cut_difference=balls["cut_difference"],
                tree_cut=balls["same"],
                with_balls=balls["with_balls"],
            ),
        ),
        folder / f"{NAME}.json",
    )
    print(f"wrote {folder}")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
