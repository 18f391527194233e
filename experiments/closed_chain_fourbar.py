"""A closed chain that sticks exactly: a planar four-bar whose crank holds its
gravity load by Coulomb friction, then breaks away under a torque ramp.

`jaxfric.systems.four_bar` (a `ClosedChain`: three rods on revolute joints,
closed by a ball loop joint, simulated in the crank angle). The crank carries
Coulomb friction ``fc`` and a drive torque ``τ = rate·t``; gravity loads it with
``g(θ0) = dV/dθ``. It stays stuck while ``|rate·t − g(θ0)| <= fc`` and breaks
away at ``t* = (fc + g(θ0))/rate`` (Farhat et al. 2010, Eq. 5). ``V(θ)`` is
computed in closed form (`_four_bar.py`: the triangle of the coupler, the rocker
and the diagonal), independently of jaxfric.

Checked: the breakaway time against ``t*``; crank velocity exactly ``0.0`` and
angle bit-constant while stuck; the loop closure along the run; ``jax.grad`` of
the final crank angle with respect to ``fc`` and ``rate`` against central
differences. Then the crank's friction grows with its pin force
(`jaxfric.JointFriction`, MotionSolve's revolute load model): in a closed
chain the pin force depends on the drive through the loop forces; the
breakaway is checked against the rods' free-body statics. Last, a ball joint
between crank and coupler (``four_bar(ball=True)``: the coupler's spin a
second coordinate) whose friction grows with the ball's reaction force
(`jaxfric.SphericalLoad`) holds the linkage: breakaway against the statics,
exact stick, and the ball's friction work against the energy lost and the
drive's work. Printed: compile and run times.

Run: ``python experiments/closed_chain_fourbar.py [SETTINGS.toml]``.
"""

import sys
import time

import jax
import jax.numpy as jnp
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
from _four_bar import Ramp, breakaway_time, make_four_bar, reaction_breakaway_time

enable_float64()

import jaxfric as jf  # noqa: E402

NAME = "closed_chain_fourbar"


def main(settings) -> bool:
    mech, run_cfg = settings["mechanism"], settings["run"]
    theta0 = mech["crank_angle"]
    chain = make_four_bar(mech)
    t1 = run_cfg["t1"]
    ts = jnp.linspace(0.0, t1, run_cfg["num_save"])

    def simulate(fc, rate):
        return jf.simulate(
            chain,
            jf.Coulomb(fc=fc),
            q0=jnp.array([theta0]),
            qd0=jnp.zeros(1),
            t1=t1,
            force=Ramp(jnp.asarray(rate, float)),
            ts=ts,
        )

    forward = jax.jit(simulate)
    start = time.perf_counter()
    sol = jax.block_until_ready(forward(run_cfg["fc"], run_cfg["rate"]))
    compile_forward = time.perf_counter() - start
    start = time.perf_counter()
    jax.block_until_ready(forward(run_cfg["fc"], run_cfg["rate"]))
    run_forward = time.perf_counter() - start

    t_break = breakaway_time(mech, run_cfg["fc"], run_cfg["rate"])
    stuck = np.asarray(sol.ts) < t_break
    closure = jax.vmap(lambda z: chain.closure_residual(chain.assemble(z)))(sol.q)

    final = jax.jit(lambda fc, rate: simulate(fc, rate).q[-1, 0])
    gradient = jax.jit(jax.grad(final, argnums=(0, 1)))
    start = time.perf_counter()
    grad = np.asarray(jax.block_until_ready(gradient(run_cfg["fc"], run_cfg["rate"])))
    compile_grad = time.perf_counter() - start
    start = time.perf_counter()
    jax.block_until_ready(gradient(run_cfg["fc"], run_cfg["rate"]))
    run_grad = time.perf_counter() - start
    central = []
    for k in range(2):
        x = np.array([run_cfg["fc"], run_cfg["rate"]])
        step = run_cfg["fd_step"] * x[k]
        up, down = x.copy(), x.copy()
        up[k] += step
        down[k] -= step
        central.append((float(final(*up)) - float(final(*down))) / (2 * step))
    central = np.asarray(central)
    grad_err = np.abs(grad - central) / np.abs(central)

    rows = [
        {"what": "forward", "compile_s": compile_forward, "run_ms": 1e3 * run_forward},
        {
            "what": "grad (fc, rate)",
            "compile_s": compile_grad,
            "run_ms": 1e3 * run_grad,
        },
    ]
    print_table(
        rows,
        [
            ("what", "what", "s"),
            ("compile_s", "first call, s", ".1f"),
            ("run_ms", "warm call, ms", ".2f"),
        ],
    )
    event = float(sol.event_times[0])
    claims = [
        claim(sol.result == jf.RESULTS.successful, f"result {sol.result}"),
        claim(
            abs(event - t_break) <= 1e-8,
            f"breakaway at {event:.10f} s, closed form {t_break:.10f} s "
            f"(error {abs(event - t_break):.1e} s <= 1e-8)",
        ),
        claim(
            np.all(np.asarray(sol.qd)[stuck] == 0.0)
            and np.all(np.asarray(sol.q)[stuck] == theta0),
            f"stuck for {int(stuck.sum())} saved times: crank velocity exactly 0.0, "
            "angle bit-constant",
        ),
        claim(
            float(jnp.max(jnp.abs(closure))) <= 1e-10,
            f"loop closure along the run {float(jnp.max(jnp.abs(closure))):.1e} m "
            "<= 1e-10",
        ),
        *[
            claim(
                err <= 1e-5,
                f"d theta(t1)/d {name}: grad {g:.8f}, central differences {c:.8f} "
                f"(relative error {err:.1e} <= 1e-5)",
            )
            for name, g, c, err in zip(
                ("fc", "rate"), grad, central, grad_err, strict=True
            )
        ],
    ]
    claims.append(reaction_friction_claim(chain, mech, settings["reaction"]))
    ball_claims, ball_sol = ball_friction_claims(mech, settings["ball"])
    claims += ball_claims
    ok = print_claims(claims)
    out = results_dir(NAME)
    _plot(sol, ball_sol, out / "figure.png")
    write_json(
        {
            "breakaway_time": event,
            "closed_form_breakaway_time": t_break,
            "gradient": grad.tolist(),
            "central_differences": central.tolist(),
            "timings": rows,
            "claims": claims,
        },
        out / "summary.json",
    )
    return ok


def reaction_friction_claim(chain, mech, cfg):
    """The crank with friction that grows with its pin force (`JointFriction`,
    `RevoluteLoad`): in a closed chain the pin force depends on the drive
    torque through the loop forces, so the breakaway comes from the rods'
    statics (`_four_bar.reaction_breakaway_time`)."""
    load = jf.RevoluteLoad(pin_radius=cfg["pin_radius"], friction_arm=0.0)
    law = jf.JointFriction(cfg["mu_static"], cfg["mu_dynamic"], loads=(load,))
    t_break = reaction_breakaway_time(
        mech, cfg["pin_radius"], cfg["mu_static"], cfg["rate"], cfg["t1"]
    )
    start = time.perf_counter()
    sol = jf.simulate(
        chain, law, q0=jnp.array([mech["crank_angle"]]), qd0=jnp.zeros(1),
        t1=cfg["t1"], force=Ramp(jnp.asarray(cfg["rate"], float)), num_save=41,
        throw=False,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    event = float(sol.event_times[0])
    stuck = np.asarray(sol.ts) < t_break
    still = bool(np.all(np.asarray(sol.qd)[stuck] == 0.0))
    return claim(
        sol.result == jf.RESULTS.successful and abs(event - t_break) <= 1e-8 and still,
        f"reaction-load crank friction (mu_s {cfg['mu_static']:g}, pin radius "
        f"{cfg['pin_radius']:g} m): breakaway at {event:.10f} s, from the rods' "
        f"statics {t_break:.10f} s (error {abs(event - t_break):.1e} s <= 1e-8), "
        f"velocity exactly 0.0 while stuck ({still}); {seconds:.0f} s with "
        "compilation",
        reaction_breakaway=event,
        reaction_breakaway_statics=t_break,
    )


def ball_friction_claims(mech, cfg):
    """The four-bar with a ball joint between crank and coupler
    (`four_bar(ball=True)`, the coupler's spin a second coordinate) whose
    friction grows with the ball's reaction force (`SphericalLoad`, MotionSolve
    Comment 13): held by the ball under gravity and the drive ramp, it breaks
    away when the torque the ball must hold reaches ``μ_s r_b |F_A| + T_pre``
    (the rods' free-body statics, `_four_bar.reaction_breakaway_time`), then
    the crank turns against the coupler while the ball slips; its friction
    work balances the energy lost and the drive's work."""
    chain = make_four_bar(mech, ball=True)
    load = jf.SphericalLoad(
        ball_radius=cfg["ball_radius"], torque_preload=cfg["torque_preload"]
    )
    law = jf.JointFriction(cfg["mu_static"], cfg["mu_dynamic"], loads=(load,))
    t_break = reaction_breakaway_time(
        mech, cfg["ball_radius"], cfg["mu_static"], cfg["rate"], cfg["t1"],
        ball=True, torque_preload=cfg["torque_preload"],
    )  # fmt: skip
    ramp = Ramp(jnp.asarray(cfg["rate"], float))
    start = time.perf_counter()
    sol = jf.simulate(
        chain, law, q0=jnp.array([mech["crank_angle"], 0.0]), qd0=jnp.zeros(2),
        t1=cfg["t1"], force=ramp, num_save=cfg["num_save"], throw=False,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    event = float(sol.event_times[0])
    stuck = np.asarray(sol.ts) < t_break
    still = bool(
        np.all(np.asarray(sol.qd)[stuck] == 0.0)
        and np.all(np.asarray(sol.q)[stuck] == np.asarray(sol.q)[0])
    )
    work, lost = friction_energy_balance(sol, chain, ramp)
    rel = abs(work - lost) / abs(lost)
    closure = jax.vmap(lambda z: chain.closure_residual(chain.assemble(z)))(sol.q)
    closure = float(jnp.max(jnp.abs(closure)))
    spin = float(np.max(np.abs(np.asarray(sol.q)[:, 1])))
    moved = float(np.asarray(sol.q)[-1, 0] - mech["crank_angle"])
    claims = [
        claim(
            sol.result == jf.RESULTS.successful
            and abs(event - t_break) <= cfg["event_tolerance"]
            and still,
            f"ball-joint friction in the closed chain (mu_s {cfg['mu_static']:g}, "
            f"ball radius {cfg['ball_radius']:g} m, preload "
            f"{cfg['torque_preload']:g} N m): breakaway at {event:.10f} s, from "
            f"the rods' statics {t_break:.10f} s (error {abs(event - t_break):.1e} "
            f"s <= {cfg['event_tolerance']:g}), velocities exactly 0.0 and angles "
            f"bit-constant while held ({still}); {seconds:.0f} s with compilation",
            ball_breakaway=event,
            ball_breakaway_statics=t_break,
        ),
        claim(
            rel <= cfg["energy_rtol"] and closure <= 1e-10 and spin <= 1e-12,
            f"after it: crank turned {moved:.4f} rad by t1; ball friction work "
            f"{work:.9f} J vs energy lost plus drive work {lost:.9f} J (relative "
            f"{rel:.1e} <= {cfg['energy_rtol']:g}); closure {closure:.1e} m <= "
            f"1e-10; coupler spin stays {spin:.1e} rad <= 1e-12 (planar)",
            ball_friction_work=work,
            ball_energy_lost=lost,
        ),
    ]
    return claims, sol


def _plot(sol, ball_sol, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 2, figsize=(11, 7), sharex="col")
    ball_torque = np.linalg.norm(np.asarray(ball_sol.friction), axis=1)
    for col, run, torque, title in (
        (0, sol, np.asarray(sol.friction[:, 0]), "crank held by Coulomb friction"),
        (1, ball_sol, ball_torque, "held by its ball's reaction-load friction"),
    ):
        ts = np.asarray(run.ts)
        for ax, values, label in zip(
            axes[:, col],
            (run.q[:, 0], run.qd[:, 0], torque),
            ("crank angle, rad", "crank velocity, rad/s", "friction torque, N m"),
            strict=True,
        ):
            ax.plot(ts, np.asarray(values), ".-" if len(ts) < 200 else "-")
            ax.axvline(float(run.event_times[0]), color="gray", ls="--", lw=0.8)
            ax.set_ylabel(label)
        axes[-1, col].set_xlabel("t, s")
        axes[0, col].set_title(f"four-bar: {title}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(0 if main(load_settings(NAME)) else 1)
