"""Friction in a spherical (ball) joint: MotionSolve Comment 13, exact.

A ball joint's friction is one torque against the ball's rotation relative to
its socket, ``|T| <= μ_s r_b N`` while stuck and ``T = −μ_d r_b N ω_r/|ω_r|``
while slipping, ``N`` the reaction force's magnitude plus the preload's
equivalent ``T_pre/(μ_s r_b)`` (Altair MotionSolve Reference,
Force_JointFriction, Comment 13). jaxfric simulates it on a
`jaxfric.systems.RigidBodyTree` whose ball is three revolute joints (a
`friction_joints` entry of three) with `jaxfric.JointFriction` and
`jaxfric.SphericalLoad`: the isotropic Coulomb law of three rows on the exact
switch path, the reaction solved with the friction at every evaluation.

Cases:

(a) spin: a body whose centre of mass is the ball's centre (inertia I·1) spun
    at ``omega0`` about a tilted axis ``n`` against a torque ``−rate·t·n``:
    ``I ω̇ = −rate t − k_d`` until it stops, held while ``rate t <= k_s``,
    then turning back (``k = μ r_b N``, ``N = m g + T_pre/(μ_s r_b)``), about
    ``n`` throughout: closed form. The exact law; MotionSolve's LuGre
    (`jaxfric.JointLuGre`, a 3D bristle per contribution); MuJoCo's ball joint
    with ``frictionloss = k_d`` and the torque applied in the world frame
    (``xfrc_applied``), stepped at ``[mujoco] timestep``.
(b) pendulum: the centre of mass off the ball, released tilted and swirling:
    the reaction follows the motion, so does the friction; the friction work
    equals the energy lost (``energy_rtol``), held phases are still (velocity
    exactly 0.0). Its inertia about the ball is isotropic (an anisotropic
    one, 14:1, had stalled the stop before the slip force was made continuous
    across a right-angle turn: ``docs/joint_friction.md``).

Run: ``python experiments/ball_joint.py [SETTINGS.toml]`` (MuJoCo from the
``bench`` extra).
"""

import time

import numpy as np
from _common import (
    claim,
    enable_float64,
    friction_energy_balance,
    load_settings,
    print_claims,
    print_table,
    results_dir,
    write_json,
)

enable_float64()

import diffrax  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import jaxfric as jf  # noqa: E402

NAME = "ball_joint"


def ball_tree(mass, com, inertia, gravity=9.81):
    """A body on a ball joint at the origin (three revolute joints x, y, z
    through massless gimbals), its centre of mass `com` (m, body frame) and
    `inertia` (kg·m², about the centre of mass), with ball-joint friction."""
    zero = np.zeros((3, 3))
    return jf.systems.RigidBodyTree(
        [-1, 0, 1], ["revolute"] * 3, np.eye(3), np.zeros((3, 3)),
        mass=[0.0, 0.0, mass], com=[np.zeros(3), np.zeros(3), com],
        inertia=[zero, zero, inertia], gravity=(0.0, 0.0, -gravity),
        joint_names=["x", "y", "z"], friction_joints=[("x", "y", "z")],
    )  # fmt: skip


class AxisTorque(jf.forces.AbstractStatelessForce):
    """A torque ``−rate·t·n`` (N·m, socket frame) on the ball, as joint
    torques ``E(q)ᵀ T``."""

    system: jf.systems.RigidBodyTree
    rate: jax.Array
    axis: jax.Array

    def __call__(self, t, q, qd):
        return self.system.friction_jacobian(q).T @ (-self.rate * t * self.axis)


def spin_closed_form(ball, spin, ts):
    """``(stop, breakaway, ω·n at ts)`` of case (a)."""
    normal = ball["mass"] * 9.81 + ball["torque_preload"] / (
        ball["mu_static"] * ball["ball_radius"]
    )
    kd = ball["mu_dynamic"] * ball["ball_radius"] * normal
    ks = ball["mu_static"] * ball["ball_radius"] * normal
    rate, inertia, w0 = spin["rate"], ball["inertia"], spin["omega0"]
    stop = (np.sqrt(kd**2 + 2 * rate * inertia * w0) - kd) / rate
    brk = ks / rate
    ts = np.asarray(ts)
    before = w0 - (kd * ts + rate * ts**2 / 2) / inertia
    after = -(rate * (ts**2 - brk**2) / 2 - kd * (ts - brk)) / inertia
    omega = np.where(ts <= stop, before, np.where(ts <= brk, 0.0, after))
    return stop, brk, omega, kd


def result_name(sol) -> str:
    """``"successful"`` or the failure's message."""
    return (
        "successful"
        if sol.result == jf.RESULTS.successful
        else str(jf.RESULTS[sol.result])
    )


def relative_omega(system, q, qd):
    return jax.vmap(lambda q, qd: system.friction_jacobian(q) @ qd)(q, qd)


def mujoco_spin(ball, spin, kd, ts, timestep):
    """MuJoCo's ball joint with ``frictionloss = k_d``: ``(world ω at ts,
    wall time s)``."""
    import mujoco

    inertia = ball["inertia"]
    xml = f"""<mujoco><option timestep="{timestep}" gravity="0 0 -9.81"/>
    <worldbody><body><joint type="ball" frictionloss="{kd!r}"/>
    <inertial pos="0 0 0" mass="{ball["mass"]}"
      diaginertia="{inertia} {inertia} {inertia}"/></body></worldbody></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    axis = np.asarray(spin["axis"], float) / np.linalg.norm(spin["axis"])
    data.qvel[:] = spin["omega0"] * axis  # body frame = world frame at q = 0
    steps = np.rint(np.asarray(ts) / timestep).astype(int)
    out = np.zeros((len(ts), 3))
    start = time.perf_counter()
    k = 0
    rot = np.zeros(9)
    for step in range(steps[-1] + 1):
        while k < len(steps) and steps[k] == step:
            # A ball joint's velocity is in the body frame; qpos its quaternion.
            mujoco.mju_quat2Mat(rot, data.qpos)
            out[k] = rot.reshape(3, 3) @ data.qvel
            k += 1
        data.xfrc_applied[1, 3:] = -spin["rate"] * data.time * axis
        mujoco.mj_step(model, data)
    return out, time.perf_counter() - start


def spin_case(settings):
    ball, spin, lugre_s = settings["ball"], settings["spin"], settings["lugre"]
    system = ball_tree(ball["mass"], np.zeros(3), ball["inertia"] * np.eye(3))
    load = jf.SphericalLoad(
        ball_radius=ball["ball_radius"], torque_preload=ball["torque_preload"]
    )
    axis = jnp.asarray(spin["axis"], float) / np.linalg.norm(spin["axis"])
    ts = jnp.linspace(0.0, spin["t1"], spin["num_save"])
    force = AxisTorque(system, jnp.asarray(spin["rate"]), axis)
    q0, qd0 = jnp.zeros(3), spin["omega0"] * axis
    stop, brk, omega_cf, kd = spin_closed_form(ball, spin, ts)
    laws = {
        "exact": jf.JointFriction(ball["mu_static"], ball["mu_dynamic"], (load,)),
        "LuGre": jf.JointLuGre(
            ball["mu_static"], ball["mu_dynamic"], (load,),
            lugre_s["bristle_stiffness"], lugre_s["damping_effects"],
            lugre_s["viscous_effects"], lugre_s["stiction_trans_vel"],
        ),
    }  # fmt: skip
    rows, claims, curves = [], [], {"t": np.asarray(ts), "closed form": omega_cf}
    held = (np.asarray(ts) > stop + 0.02) & (np.asarray(ts) < brk - 0.02)
    for name, law in laws.items():
        run = jax.jit(lambda law: jf.simulate(system, law, q0, qd0, spin["t1"], ts=ts,
                                              force=force, throw=False))  # fmt: skip
        start = time.perf_counter()
        sol = jax.block_until_ready(run(law))
        first = time.perf_counter() - start
        start = time.perf_counter()
        sol = jax.block_until_ready(run(law))
        warm = time.perf_counter() - start
        omega = np.asarray(relative_omega(system, sol.q, sol.qd))
        along = omega @ np.asarray(axis)
        off = np.linalg.norm(omega - along[:, None] * np.asarray(axis), axis=1)
        rows.append(
            dict(
                law=name, result=result_name(sol), first_s=first,
                warm_ms=1e3 * warm, err=float(np.max(np.abs(along - omega_cf))),
                off=float(np.max(off)), held=float(np.max(np.abs(omega[held]))),
            )
        )  # fmt: skip
        curves[name] = along
        if name == "exact":
            events = np.asarray(sol.event_times[:2])
            event_err = float(np.max(np.abs(events - [stop, brk])))
            still = bool(np.all(np.asarray(sol.qd)[held] == 0.0))
            claims += [
                claim(
                    sol.result == jf.RESULTS.successful
                    and event_err <= spin["event_tolerance"],
                    f"spin, exact: stop and breakaway {event_err:.1e} s from the "
                    f"closed form ({stop:.6f} s, {brk:.6f} s; <= "
                    f"{spin['event_tolerance']:g})",
                    event_error=event_err,
                ),
                claim(
                    rows[-1]["err"] <= spin["omega_tolerance"] and still,
                    f"spin, exact: ω·n {rows[-1]['err']:.1e} rad/s from the closed "
                    f"form, off the axis {rows[-1]['off']:.1e} rad/s, held at "
                    "velocity exactly 0.0 between the events",
                ),
            ]
    mj, wall = mujoco_spin(
        ball, spin, kd, np.asarray(ts), settings["mujoco"]["timestep"]
    )
    along = mj @ np.asarray(axis)
    off = np.linalg.norm(mj - along[:, None] * np.asarray(axis), axis=1)
    rows.append(
        dict(
            law=f"MuJoCo ball, frictionloss, dt {settings['mujoco']['timestep']:g}",
            result="—", first_s=float("nan"), warm_ms=1e3 * wall,
            err=float(np.max(np.abs(along - omega_cf))), off=float(np.max(off)),
            held=float(np.max(np.linalg.norm(mj[held], axis=1))),
        )
    )  # fmt: skip
    curves["MuJoCo"] = along
    lug, mjr = rows[1], rows[2]
    claims.append(
        claim(
            mjr["off"] > 1e3 * max(rows[0]["off"], 1e-16),
            f"spin: MuJoCo's ball frictionloss turns the spin off its axis by up to "
            f"{mjr['off']:.2e} rad/s (per-axis friction), jaxfric's exact law "
            f"{rows[0]['off']:.1e}, LuGre {lug['off']:.1e}; while the closed form "
            f"holds, MuJoCo turns at up to {mjr['held']:.1e} rad/s, LuGre "
            f"{lug['held']:.1e}, exact {rows[0]['held']:.1e}",
        )
    )
    columns = [
        ("law", "law", "s"), ("result", "result", "s"),
        ("first_s", "first call (s)", ".1f"), ("warm_ms", "warm (ms)", ".1f"),
        ("err", "max |ω·n − closed form| (rad/s)", ".1e"),
        ("off", "max ω off the axis (rad/s)", ".1e"),
        ("held", "max |ω| while held (rad/s)", ".1e"),
    ]  # fmt: skip
    print(f"\nspin: stop {stop:.9f} s, breakaway {brk:.9f} s (closed form)")
    print_table(rows, columns)
    claims.append(spin_derivatives(system, load, force, axis, ball, spin))
    return rows, claims, curves


def spin_derivatives(system, load, force, axis, ball, spin):
    """The claim that the derivatives of case (a)'s stop and breakaway times
    with respect to ``(μ_s, μ_d, ω0)``, forward mode through the exact path,
    match central differences of the closed form (`spin_closed_form`); the
    spin is about the unit `axis`."""

    def events(p):
        law = jf.JointFriction(p[0], p[1], (load,))
        sol = jf.simulate(
            system, law, jnp.zeros(3), p[2] * axis, spin["t1"], force=force,
            adjoint=diffrax.ForwardMode(), throw=False,
        )  # fmt: skip
        return sol.event_times[:2]

    def closed_form(p):
        stop, brk, _, _ = spin_closed_form(
            dict(ball, mu_static=p[0], mu_dynamic=p[1]), dict(spin, omega0=p[2]),
            np.zeros(1),
        )  # fmt: skip
        return np.array([stop, brk])

    p0 = np.array([ball["mu_static"], ball["mu_dynamic"], spin["omega0"]])
    jac = np.asarray(jax.jit(jax.jacfwd(events))(jnp.asarray(p0)))
    steps = 1e-6 * np.maximum(np.abs(p0), 1.0) * np.eye(3)
    fd = np.stack(
        [(closed_form(p0 + h) - closed_form(p0 - h)) / (2 * h.sum()) for h in steps],
        axis=1,
    )
    err = float(np.max(np.abs(jac - fd)) / np.max(np.abs(fd)))
    print(f"∂(stop, breakaway)/∂(μ_s, μ_d, ω0): jacfwd {jac.tolist()}")
    print(f"  central differences of the closed form {fd.tolist()}")
    return claim(
        err <= spin["derivative_rtol"],
        f"spin, exact: derivatives of the stop and breakaway times (jacfwd through "
        f"the switch path) {err:.1e} from central differences of the closed form "
        f"(relative to the largest; <= {spin['derivative_rtol']:g})",
        derivative_error=err,
    )


def pendulum_case(settings):
    ball, pend = settings["ball"], settings["pendulum"]
    system = ball_tree(ball["mass"], np.asarray(pend["com"]), np.diag(pend["inertia"]))
    load = jf.SphericalLoad(
        ball_radius=pend["ball_radius"], torque_preload=ball["torque_preload"]
    )
    law = jf.JointFriction(ball["mu_static"], ball["mu_dynamic"], (load,))
    ts = jnp.linspace(0.0, pend["t1"], pend["num_save"])
    sol = jax.jit(
        lambda law: jf.simulate(
            system, law, jnp.asarray(pend["q0"]), jnp.asarray(pend["qd0"]),
            pend["t1"], ts=ts, throw=False,
        )
    )(law)  # fmt: skip
    work, lost = friction_energy_balance(sol, system)
    rel = abs(work - lost) / abs(lost)
    stuck = np.asarray(sol.modes)[:, 0] == 0
    still = bool(np.all(np.asarray(sol.qd)[stuck] == 0.0))
    n_events = int(sol.stats["num_events"])
    first_held = float(np.asarray(ts)[stuck][0]) if stuck.any() else float("nan")
    claims = [
        claim(
            sol.result == jf.RESULTS.successful and rel <= pend["energy_rtol"],
            f"pendulum: {result_name(sol)}, {n_events} events; friction "
            f"work {work:.9f} J vs energy lost {lost:.9f} J, relative {rel:.1e} "
            f"(<= {pend['energy_rtol']:g})",
            work=work, energy_lost=lost,
        ),
        claim(
            stuck.any() and still,
            f"pendulum: held at {int(stuck.sum())} of {len(stuck)} saves (from "
            f"t = {first_held:.3f} s), velocity exactly 0.0 there",
        ),
    ]  # fmt: skip
    return sol, claims


def main() -> bool:
    settings = load_settings(NAME)
    out = results_dir(NAME)
    rows, claims, curves = spin_case(settings)
    sol, more = pendulum_case(settings)
    claims += more
    write_json(dict(spin=rows, claims=claims), out / "summary.json")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for name in ("closed form", "exact", "LuGre", "MuJoCo"):
        a.plot(
            curves["t"],
            curves[name],
            label=name,
            lw=2.5 if name == "closed form" else 1,
        )
    a.set(
        xlabel="t (s)",
        ylabel="ω·n (rad/s)",
        title="ball spun about n, torque −rate·t·n",
    )
    a.legend()
    b.plot(sol.ts, sol.q, lw=1)
    b.set(
        xlabel="t (s)", ylabel="gimbal angles (rad)", title="spherical pendulum, exact"
    )
    fig.tight_layout()
    fig.savefig(out / "figure.png", dpi=120)
    return print_claims(claims)


if __name__ == "__main__":
    import sys

    sys.exit(0 if main() else 1)
