"""Farhat et al. 2010, Sec. 5.2-5.4 (Figs. 12-15): the 3-RPS parallel
manipulator with asymmetric Coulomb + viscous friction (Eq. 4) in its three
prismatic actuators, under PID leg-length control.

The mechanism (`_three_rps.py`) is a `jaxfric.systems.ClosedChain`: a 9-joint
tree cut at the spherical joints of legs 2 and 3, closed by two ball loops,
simulated in the three leg lengths (coordinate partitioning, Eq. 2-3). Both
references are `jaxfric.forces.FourierSeries` of the same shape (the sinusoid is
a first harmonic), so one compiled switch-path simulation runs both.

Checked and printed:

1. closure: the largest ``|Φ(q(z))|`` over each saved trajectory;
2. stick: every saved point where a leg is stuck has its velocity exactly
   ``0.0`` and its length constant through each stick phase;
3. the naive law, ``sign(v)`` friction (`Regularized` with ``kind="linear"``
   and ``eps = 1e-300``, i.e. ``clip(v/eps, ±1) = sign(v)``) with diffrax
   Tsit5 and an adaptive controller at Farhat's tolerances, stalls at the first
   velocity reversal of a leg (Sec. 5.3: "not able to continue after the first
   velocity change of sign"): it reaches the first stick phase of the switch
   path, its leg velocity chatters about zero there and its step budget runs
   out before that leg's breakaway; when, and its step count against the
   switch path's, which integrates the whole trajectory with the same
   non-stiff Tsit5;
4. figure: leg lengths against the reference, actuator forces, friction
   forces and leg accelerations for both trajectories (Figs. 12, 14, 15).

Run: ``python experiments/farhat_3rps.py [SETTINGS.toml]``.
"""

import time

import diffrax
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

import _three_rps  # noqa: E402

import jaxfric as jf  # noqa: E402
from jaxfric.io.results import result_message  # noqa: E402

NAME = "farhat_3rps"
TRAJECTORIES = ("sinusoidal", "fourier")


def simulate(chain, law, controller, start, ts, sim, **options):
    """One run from ``start = (z0, ż0)``; `options` replace the `[simulate]`
    settings."""
    z0, zd0 = start
    opts = dict(
        rtol=sim["rtol"],
        atol=sim["atol"],
        max_steps=sim["max_steps"],
        max_events=sim["max_events"],
    )
    opts.update(options)
    return jf.simulate(
        chain,
        law,
        q0=z0,
        qd0=zd0,
        t1=sim["t1"],
        force=controller,
        ts=ts,
        throw=False,
        **{k: v for k, v in opts.items() if v is not None},
    )


def timed(fn):
    start = time.perf_counter()
    out = fn()
    jax.block_until_ready(out.q)
    return time.perf_counter() - start, out


@eqx.filter_jit
def post(chain, controller, ts, q, qd, force_state, friction):
    """Per saved point: closure residual max |Φ|, actuator force, leg
    acceleration (equations of motion with the solution's friction, which is
    the stick force of the Delassus solve for stuck legs), tree coordinates."""

    def one(t, z, zd, x, f):
        q_tree = chain.assemble(z)
        residual = jnp.max(jnp.abs(chain.closure_residual(q_tree)))
        applied = controller.force(t, z, zd, x)
        return residual, applied, chain.acceleration(z, zd, applied, f), q_tree

    return jax.vmap(one)(ts, q, qd, force_state, friction)


def stick_check(sol):
    """Per leg: stick phases on the saved grid, max |velocity| at stuck points,
    the largest spread of the length within one phase."""
    q, qd, modes = (np.asarray(x) for x in (sol.q, sol.qd, sol.modes))
    out = []
    for leg in range(q.shape[1]):
        phases = stick_phases(modes[:, leg] == 0)
        stuck = modes[:, leg] == 0
        out.append(
            dict(
                phases=len(phases),
                stuck_points=int(stuck.sum()),
                max_speed=float(np.max(np.abs(qd[stuck, leg]), initial=0.0)),
                max_spread=max(
                    (float(np.ptp(q[a:b, leg])) for a, b in phases), default=0.0
                ),
            )
        )
    return out


def main():
    settings = load_settings(NAME)
    sim, naive = settings["simulate"], settings["naive"]
    times = {}

    start = time.perf_counter()
    chain, spec = _three_rps.build_chain(settings["mechanism"])
    times["build_s"] = time.perf_counter() - start
    home = np.full(3, spec["home_leg_length"])
    start = time.perf_counter()
    home_q = chain.assemble(jnp.asarray(home))
    mass = np.asarray(chain.mass_matrix(jnp.asarray(home)))
    times["eager_terms_s"] = time.perf_counter() - start
    print(
        f"3-RPS: {chain.tree.n_dof} tree coordinates, {chain.n_equations} closure "
        f"equations, {chain.n_dof} DoF (legs {_three_rps.LEGS}); home leg length "
        f"{spec['home_leg_length']:.4f} m, home |Φ| "
        f"{float(jnp.max(jnp.abs(chain.closure_residual(home_q)))):.1e}, "
        f"eig M(home) {np.round(np.linalg.eigvalsh(mass), 4)} kg"
    )

    fr = settings["friction"]
    law = jf.CoulombViscous(
        np.array(fr["fc_pos"]),
        np.array(fr["fc_neg"]),
        np.array(fr["fv_pos"]),
        np.array(fr["fv_neg"]),
    )
    gains = settings["pid"]
    controllers = {
        name: jf.forces.PID(
            _three_rps.reference(settings, name, home),
            gains["kp"],
            gains["ki"],
            gains["kd"],
        )
        for name in TRAJECTORIES
    }
    starts = {
        n: _three_rps.tracking_start(chain, law, c) for n, c in controllers.items()
    }
    ts = jnp.linspace(0.0, sim["t1"], sim["num_save"])
    gimbal_middle = spec["joint_names"].index("sph1_b")

    # Switch path: one compile (first call), reused for the second trajectory.
    sols, posts, rows = {}, {}, []
    for k, name in enumerate(TRAJECTORIES):
        wall, sol = timed(
            lambda n=name: simulate(chain, law, controllers[n], starts[n], ts, sim)
        )
        times[f"switch_{name}_first_call_s"] = wall
        if k == 0:
            wall, sol = timed(
                lambda n=name: simulate(chain, law, controllers[n], starts[n], ts, sim)
            )
            times["switch_warm_run_s"] = wall
            times["switch_compile_s"] = times["switch_sinusoidal_first_call_s"] - wall
        sols[name] = sol
        start = time.perf_counter()
        fields = (sol.ts, sol.q, sol.qd, sol.force_state, sol.friction)
        posts[name] = [np.asarray(x) for x in post(chain, controllers[name], *fields)]
        times[f"post_{name}_s"] = time.perf_counter() - start
        events = np.asarray(sol.event_times)
        sticks = stick_check(sol)
        ref = np.asarray(jax.vmap(controllers[name].reference.position)(ts))
        rows.append(
            dict(
                run=f"switch, {name}",
                result=result_message(sol),
                steps=int(sol.stats["num_steps"]),
                accepted=int(sol.stats["num_accepted_steps"]),
                rejected=int(sol.stats["num_rejected_steps"]),
                events=int(sol.stats["num_events"]),
                first_event=float(events[0]) if np.isfinite(events[0]) else None,
                reached=float(sol.ts[-1])
                if result_message(sol) == "successful"
                else None,
                closure=float(np.max(posts[name][0])),
                gimbal_deg=float(
                    np.rad2deg(np.max(np.abs(posts[name][3][:, gimbal_middle])))
                ),
                stick_phases=sum(s["phases"] for s in sticks),
                stick_speed=max(s["max_speed"] for s in sticks),
                stick_spread=max(s["max_spread"] for s in sticks),
                rms_error_mm=1e3
                * float(np.sqrt(np.mean((np.asarray(sol.q) - ref) ** 2))),
                sticks=sticks,
                wall_s=wall,
            )
        )
        print(f"{name}: {rows[-1]}", flush=True)

    # Naive sign(v) friction, Tsit5 + adaptive controller, sinusoidal reference.
    naive_law = jf.Regularized(law, naive["eps"], kind="linear")
    wall, naive_sol = timed(
        lambda: simulate(
            chain,
            naive_law,
            controllers["sinusoidal"],
            starts["sinusoidal"],
            ts,
            sim,
            solver=diffrax.Tsit5(),
            rtol=naive["rtol"],
            atol=naive["atol"],
            max_steps=naive["max_steps"],
            max_events=None,
        )
    )
    times["naive_first_call_s"] = wall
    reached = np.isfinite(np.asarray(naive_sol.q)).all(axis=1)
    last = int(np.flatnonzero(reached)[-1])
    t_last = float(ts[last])
    t_next = float(ts[last + 1]) if last + 1 < len(ts) else None
    switch_sin = sols["sinusoidal"]
    events = np.asarray(switch_sin.event_times)
    events = events[np.isfinite(events)]
    first_event = float(events[0])
    # The first switch that leaves a leg stuck: the last event before the first
    # saved point with a stuck leg.
    modes_sin = np.asarray(switch_sin.modes)
    first_stuck = int(np.flatnonzero((modes_sin == 0).any(axis=1))[0])
    first_stick = float(events[events <= float(ts[first_stuck])][-1])
    first_leg = int(np.flatnonzero(modes_sin[first_stuck] == 0)[0])
    # Its breakaway: the last event before the leg's first saved slip after it.
    slips_again = first_stuck + int(np.argmax(modes_sin[first_stuck:, first_leg] != 0))
    first_breakaway = float(events[events <= float(ts[slips_again])][-1])
    # The naive leg's velocity between the first stick and the stall (chatter
    # about 0 instead of a stick).
    window = (np.asarray(ts) >= first_stick) & reached
    naive_speed = float(np.max(np.abs(np.asarray(naive_sol.qd)[window, first_leg])))
    rows.append(
        dict(
            run="naive sign(v), sinusoidal",
            result=result_message(naive_sol),
            steps=int(naive_sol.stats["num_steps"]),
            accepted=int(naive_sol.stats["num_accepted_steps"]),
            rejected=int(naive_sol.stats["num_rejected_steps"]),
            events=None,
            reached=t_last,
            wall_s=wall,
        )
    )

    columns = [
        ("run", "run", ""),
        ("result", "result", ""),
        ("reached", "last saved t [s]", ".3f"),
        ("steps", "steps", "d"),
        ("accepted", "accepted", "d"),
        ("rejected", "rejected", "d"),
        ("events", "events", "d"),
        ("first_event", "first switch [s]", ".4f"),
        ("stick_phases", "stick phases", "d"),
        ("stick_speed", "max |v| stuck [m/s]", ".1e"),
        ("stick_spread", "max length spread stuck [m]", ".1e"),
        ("closure", "max |Φ| [m]", ".1e"),
        ("gimbal_deg", "max |sph1_b| [deg]", ".1f"),
        ("rms_error_mm", "RMS tracking [mm]", ".3f"),
        ("wall_s", "wall [s]", ".2f"),
    ]
    print()
    table = print_table(rows, columns)
    print()
    for key, value in times.items():
        print(f"{key}: {value:.1f}")
    print(
        f"naive sign(v): stalled after t = {t_last:.3f} s (next save "
        f"{t_next} s), {rows[-1]['steps']} steps ({rows[-1]['rejected']} rejected); "
        f"switch path, sinusoidal: first switch (a leg velocity reaching 0) at "
        f"{first_event:.4f} s, first stick at {first_stick:.4f} s (leg "
        f"{first_leg + 1}), whole trajectory in {rows[0]['steps']} steps"
    )

    threshold = settings["checks"]["closure_residual"]
    claims = []
    for row, name in zip(rows, TRAJECTORIES, strict=False):
        claims += [
            claim(
                row["result"] == "successful",
                f"{name}: the switch path (Tsit5) integrates the whole trajectory "
                f"[0, {sim['t1']}] s: {row['result']}, {row['steps']} steps, "
                f"{row['events']} events",
            ),
            claim(
                row["closure"] <= threshold,
                f"{name}: closure residual max |Φ| = {row['closure']:.1e} m <= "
                f"{threshold:g} m over the saved trajectory",
                closure=row["closure"],
            ),
            claim(
                all(s["phases"] >= 1 for s in row["sticks"])
                and row["stick_speed"] == 0.0
                and row["stick_spread"] == 0.0,
                f"{name}: every leg sticks ({[s['phases'] for s in row['sticks']]} "
                f"phases, {[s['stuck_points'] for s in row['sticks']]} saved points); "
                f"stuck velocity max {row['stick_speed']:.1e} m/s == 0.0, length "
                f"spread within a phase {row['stick_spread']:.1e} m == 0.0",
            ),
        ]
    gimbal = max(r["gimbal_deg"] for r in rows[:2])
    claims.append(
        claim(
            gimbal <= settings["checks"]["gimbal_middle_deg"],
            f"the spherical joint of leg 1 (three revolutes) stays far from its "
            f"gimbal singularity (middle angle ±90°): max |middle angle| "
            f"{gimbal:.1f}° <= {settings['checks']['gimbal_middle_deg']:g}°",
        )
    )
    stalled = naive_sol.result != jf.RESULTS.successful and t_last < sim["t1"]
    # Stalled inside the stick phase that begins at the first velocity zero:
    # after reaching it, before that leg's breakaway.
    in_first_stick = (
        t_next is not None and first_stick < t_next and (t_last < first_breakaway)
    )
    claims.append(
        claim(
            stalled and in_first_stick and first_stick == first_event,
            f"naive sign(v) + Tsit5 stalls at the first leg velocity reversal: "
            f"{result_message(naive_sol)} after {rows[-1]['steps']} steps "
            f"({rows[-1]['rejected']} rejected), stopped in [{t_last:.3f}, "
            f"{t_next} s), inside leg {first_leg + 1}'s first stick phase "
            f"[{first_stick:.4f}, {first_breakaway:.4f}] s of the switch path, "
            f"which begins at its first velocity zero; there the naive leg "
            f"velocity chatters (|v| <= {naive_speed:.1e} m/s at the saved "
            f"points) instead of being 0.0; the switch path integrates all "
            f"{sim['t1']} s in {rows[0]['steps']} steps ({rows[0]['rejected']} "
            "rejected)",
            stall_interval=[t_last, t_next],
            first_switch=first_event,
            first_stick=[first_stick, first_breakaway],
            naive_chatter_speed=naive_speed,
        )
    )
    print()
    ok = print_claims(claims)

    out_dir = results_dir(NAME)
    fig = make_figure(ts, sols, posts, controllers, t_last, settings)
    fig.savefig(out_dir / "figure.png", dpi=120)
    write_json(
        {
            "experiment": NAME,
            "settings": settings,
            "rows": rows,
            "times_s": times,
            "naive": {
                "last_saved_time": t_last,
                "next_save_time": t_next,
                "first_switch_time": first_event,
                "first_stick_phase": [first_stick, first_breakaway],
                "naive_chatter_speed": naive_speed,
                "first_switch_leg": first_leg + 1,
            },
            "claims": claims,
            "table_markdown": table,
            "all_pass": ok,
        },
        out_dir / "summary.json",
    )
    print(f"wrote {out_dir / 'figure.png'} and {out_dir / 'summary.json'}")


def make_figure(ts, sols, posts, controllers, t_stall, settings):
    """Figs. 12-15: per trajectory (columns), leg lengths against the reference,
    actuator forces, friction forces (stuck points as dots), leg
    accelerations."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(14.0, 13.0), layout="constrained")
    axes = fig.subplots(4, 2, sharex=True)
    t = np.asarray(ts)
    colors = ("C0", "C1", "C2")
    for col, name in enumerate(TRAJECTORIES):
        sol, (_, applied, accel, _) = sols[name], posts[name]
        ref = np.asarray(jax.vmap(controllers[name].reference.position)(ts))
        q, f, modes = (np.asarray(x) for x in (sol.q, sol.friction, sol.modes))
        for leg, c in enumerate(colors):
            label = f"leg {leg + 1}"
            axes[0, col].plot(t, 1e3 * q[:, leg], c, lw=1.2, label=label)
            axes[0, col].plot(t, 1e3 * ref[:, leg], c, ls="--", lw=0.8)
            axes[1, col].plot(t, applied[:, leg], c, lw=1.0, label=label)
            slipping = np.where(modes[:, leg] != 0, f[:, leg], np.nan)
            stuck = modes[:, leg] == 0
            axes[2, col].plot(t, slipping, c, lw=1.0, label=label)
            axes[2, col].plot(t[stuck], f[stuck, leg], ".", color=c, ms=2.5)
            axes[3, col].plot(t, accel[:, leg], c, lw=0.8, label=label)
        axes[0, col].set_title(
            f"{name} reference (dashed) and leg lengths, switch path"
        )
        if name == "sinusoidal":
            for ax in axes[:, col]:
                ax.axvline(t_stall, color="k", lw=0.8, ls=":")
            axes[0, col].text(
                t_stall,
                axes[0, col].get_ylim()[1],
                " naive sign(v) stalls",
                va="top",
                fontsize="small",
            )
    labels = (
        "leg length [mm]",
        "actuator force (PID) [N]",
        "friction force [N]\n(dots: stuck, stick force)",
        "leg acceleration [m/s²]",
    )
    for row, label in enumerate(labels):
        axes[row, 0].set_ylabel(label)
        for ax in axes[row]:
            ax.grid(True, lw=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("t [s]")
    axes[0, 0].legend(fontsize="small")
    fig.suptitle(
        "Farhat et al. 2010, Figs. 12-15: 3-RPS manipulator, PID leg control, "
        "asymmetric Coulomb + viscous friction (Eq. 4), exact switch path"
    )
    return fig


if __name__ == "__main__":
    main()
