"""The pendulum of MotionSolve's joint-friction page, with exact Coulomb joint
friction that grows with the pin's reaction loads.

Altair MotionSolve Reference Guide, Force_JointFriction: a 1 kg bob at 100 mm
from a revolute pin (pin radius 5 mm, friction arm 7 mm, bending arm 5 mm,
μ_s = 0.5, μ_d = 0.3), released from the horizontal, 5 s. The XML file is read
by `jaxfric.io.load_motionsolve` and simulated by the switch path with
`jaxfric.JointFriction` (Comment 9: pin, end caps, bending couple, preload),
the friction–reaction coupling solved at every evaluation.

It is also simulated with MotionSolve's LuGre form (`jaxfric.JointLuGre`, one
bristle state per contribution, the file's bristle parameters or MotionSolve's
defaults), for comparison.

Checks:

- friction work ``∫ f·θ̇ dt`` equals the mechanical energy lost, relative
  ``energy_rtol`` (Simpson's rule on the saved times between events);
- the stuck phases have velocity exactly ``0.0`` and a constant angle;
- quasi-static breakaway: hanging at rest under a torque ramp, the pin carries
  ``m g`` and the pendulum breaks away at ``μ_s r_p m g`` (+ preload), closed
  form.

- identification: ``(μ_s, μ_d)`` fitted by Levenberg–Marquardt through the
  exact simulation to noisy angle records of the hanging pendulum under slow
  torque ramps, from each start of ``start_offsets`` (+50 % and −50 %): first with the
  records cut into ``shooting_windows`` windows restarted from the data
  (multiple shooting), then single shooting from where that ends (single
  shooting alone stalls from 50 % off: the simulated stick–slip phases
  misalign with the records').

And a table: time per simulation against load-independent Coulomb friction at
the levels of the static reaction ``m g``.

Run: ``python experiments/motionsolve_pendulum.py [SETTINGS.toml]``.
"""

import time
import warnings

import numpy as np
from _common import (
    ROOT,
    best_time,
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

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optimistix as optx  # noqa: E402

import jaxfric as jf  # noqa: E402
from jaxfric.io import load_motionsolve  # noqa: E402

NAME = "motionsolve_pendulum"


class Ramp(jf.forces.AbstractStatelessForce):
    """Applied joint torque ``rate·t``, N·m."""

    rate: jax.Array

    def __call__(self, t, q, qd):
        return jnp.reshape(self.rate * t, (1,))


def contributions(system, law, q, qd, friction):
    """The four contributions ``c_k`` (N·m per unit μ) at a saved state: the
    reactions at the accelerations this friction gives."""
    zero = jnp.zeros_like(q)
    qdd = system.acceleration(q, qd, zero, friction)
    reactions = system.joint_reactions(q, qd, qdd, zero, friction)
    return law.contributions(reactions)[0]


def main():
    settings = load_settings(NAME)
    exp, quasi, timing = (
        settings["experiment"],
        settings["quasi_static"],
        settings["timing"],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the shipped file must read cleanly
        model = load_motionsolve(ROOT / exp["model"])
    system, law = model.system, model.friction
    q0 = jnp.asarray(model.q0)
    qd0 = jnp.zeros_like(q0)
    # The file's 5 s, continued until the pendulum has come to rest.
    t1 = exp["t1"]
    ts = jnp.linspace(0.0, t1, exp["num_save"])

    run = jax.jit(lambda law: jf.simulate(system, law, q0, qd0, t1, ts=ts, throw=False))
    sol = run(law)
    claims = [
        claim(
            sol.result == jf.RESULTS.successful,
            f"simulation result: {jf.RESULTS[sol.result]!r} "
            f"({int(sol.stats['num_events'])} events)",
        )
    ]

    # Friction work = mechanical energy lost.
    work, lost = friction_energy_balance(sol, system)
    rel = abs(work - lost) / abs(lost)
    claims.append(
        claim(
            rel <= exp["energy_rtol"],
            f"friction work {work:.9f} J vs energy lost {lost:.9f} J: relative "
            f"{rel:.1e} <= {exp['energy_rtol']:g}",
            work=work,
            energy_lost=lost,
        )
    )

    # The state at the file's end time.
    at_end = int(np.searchsorted(np.asarray(ts), model.t1))
    print(
        f"at the file's end time {model.t1:g} s: angle {float(sol.q[at_end, 0]):.9f} "
        f"rad, velocity {float(sol.qd[at_end, 0]):.9f} rad/s"
    )

    # Stuck phases: exactly still.
    modes, qd, q = (np.asarray(a[:, 0]) for a in (sol.modes, sol.qd, sol.q))
    stuck = modes == 0
    first_stuck = float(np.asarray(sol.ts)[stuck][0]) if stuck.any() else None
    still = bool(stuck.any() and np.all(qd[stuck] == 0.0))
    constant = bool(stuck.any() and np.all(q[stuck] == q[stuck][-1]))
    claims.append(
        claim(
            still and constant,
            f"stuck from t = {first_stuck} s at {q[-1]:.9f} rad: velocity exactly "
            f"0.0 at all {int(stuck.sum())} stuck saves ({still}), angle constant "
            f"to the bit ({constant})",
        )
    )

    # The same pendulum with MotionSolve's LuGre form (Comment 3 per
    # contribution, the file's bristle parameters or their defaults).
    lugre = model.lugre_friction
    tol = settings["lugre"]
    lugre_sol = jf.simulate(
        system, lugre, q0, qd0, t1, ts=ts, rtol=tol["rtol"], atol=tol["atol"],
        throw=False,
    )  # fmt: skip
    l_work, l_lost = friction_energy_balance(lugre_sol, system)
    l_rel = abs(l_work - l_lost) / abs(l_lost)
    late = np.asarray(lugre_sol.ts) >= t1 - tol["rest_window"]
    creep = float(np.max(np.abs(np.asarray(lugre_sol.qd[late, 0]))))
    drift = float(np.ptp(np.asarray(lugre_sol.q[late, 0])))
    claims.append(
        claim(
            lugre_sol.result == jf.RESULTS.successful and l_rel <= tol["energy_rtol"],
            f"LuGre form: friction work {l_work:.9f} J vs energy lost "
            f"{l_lost:.9f} J, relative {l_rel:.1e} <= {tol['energy_rtol']:g}; at "
            f"rest near {float(lugre_sol.q[-1, 0]):.6f} rad (exact law "
            f"{q[-1]:.6f} rad), over the last {tol['rest_window']:g} s |θ̇| <= "
            f"{creep:.1e} rad/s, drift {drift:.1e} rad "
            f"({int(lugre_sol.stats['num_steps'])} steps)",
            lugre_work=l_work,
            lugre_energy_lost=l_lost,
            lugre_creep=creep,
            lugre_drift=drift,
        )
    )

    # Quasi-static breakaway from hanging at rest (the file's q = 0 is the
    # horizontal; gravity pulls towards −π/2, a stable equilibrium: dg/dq > 0).
    hanging = jnp.asarray([-np.pi / 2])
    hang_g = float(system.gravity_force(hanging)[0])
    stiffness = float(jax.jacfwd(system.gravity_force)(hanging)[0, 0])
    rate = quasi["rate"]
    mass, g = float(system.model.mass[0]), float(jnp.linalg.norm(system.model.gravity))
    load = law.loads[0]
    mu_s = float(jnp.broadcast_to(law.mu_static, (1,))[0])
    limit = mu_s * float(load.pin_radius) * mass * g + float(load.torque_preload)
    hang = jf.simulate(
        system, law, hanging, qd0, quasi["t1"], force=Ramp(jnp.asarray(rate)),
        num_save=401, throw=False,
    )  # fmt: skip
    t_break = float(hang.event_times[0])
    err = abs(t_break - limit / rate)
    claims.append(
        claim(
            err <= quasi["event_tol"] and abs(hang_g) < 1e-12 and stiffness > 0,
            f"hanging pendulum (gravity torque {hang_g:.1e} N·m, stiffness "
            f"{stiffness:.3f} N·m/rad) breaks away at "
            f"{t_break:.12f} s, closed form mu_s r_p m g / rate = "
            f"{limit / rate:.12f} s: error {err:.1e} s <= {quasi['event_tol']:g}",
        )
    )

    # Identification of (mu_s, mu_d) through the exact simulation, from noisy
    # angle records of the hanging pendulum under slow torque ramps.
    claims += identification_claims(system, law, hanging, settings["identify"])

    # Cost against load-independent friction at the static reaction's levels.
    mu_d = float(jnp.broadcast_to(law.mu_dynamic, (1,))[0])
    r_p = float(load.pin_radius)
    fixed = jf.Coulomb(fc=mu_d * r_p * mass * g, fs=mu_s * r_p * mass * g)
    rows = []
    for name, each in (("JointFriction (reaction loads)", law), ("Coulomb", fixed)):
        seconds, out = best_time(run, (each,), timing["repeats"])
        rows.append(
            {
                "law": name,
                "ms": 1e3 * seconds,
                "steps": int(out.stats["num_steps"]),
                "events": int(out.stats["num_events"]),
                "final": float(out.q[-1, 0]),
            }
        )
    rows[0]["ratio"], rows[1]["ratio"] = rows[0]["ms"] / rows[1]["ms"], 1.0
    print(f"\nPendulum, {t1:g} s, {exp['num_save']} saved times, warm:")
    table = print_table(
        rows,
        [
            ("law", "law", ""),
            ("ms", "time / simulation [ms]", ".2f"),
            ("ratio", "× Coulomb", ".2f"),
            ("steps", "steps", "d"),
            ("events", "events", "d"),
            ("final", "final angle [rad]", ".6f"),
        ],
    )

    parts = np.asarray(
        jax.vmap(lambda q, qd, f: contributions(system, law, q, qd, f))(
            sol.q, sol.qd, sol.friction
        )
    )
    print()
    ok = print_claims(claims)
    out_dir = results_dir(NAME)
    fig = make_figure(sol, parts, law, hang, limit, lugre_sol)
    fig.savefig(out_dir / "figure.png", dpi=130)
    write_json(
        {
            "experiment": NAME,
            "settings": settings,
            "claims": claims,
            "timing": rows,
            "table": table,
            "event_times": np.asarray(sol.event_times)[
                np.isfinite(np.asarray(sol.event_times))
            ],
        },
        out_dir / "summary.json",
    )
    print(f"wrote {out_dir / 'figure.png'} and summary.json")
    if not ok:
        raise SystemExit(1)


def _stopped(result) -> str:
    """How a fit stopped: "converged" or the optimistix result's message."""
    return "converged" if result.converged else optx.RESULTS[result.result]


def identification_claims(system, law, hanging, cfg):
    """Fit ``(μ_s, μ_d)`` of `law` (its load model known) by Levenberg–Marquardt
    through `jaxfric.simulate` to records synthesised with the true law under
    torque ramps (`cfg`: rates, duration, samples, noise, start offset), and
    claim each within ``cfg["target"]``."""
    rng = np.random.default_rng(cfg["seed"])
    ts = jnp.linspace(0.0, cfg["t1"], cfg["num_samples"])
    options = jf.SimulateOptions(max_events=cfg["max_events"])
    experiments = []
    for rate in cfg["rates"]:
        force = Ramp(jnp.asarray(rate))
        record = jf.simulate(
            system, law, hanging, jnp.zeros(1), cfg["t1"], ts=ts, force=force,
            options=options,
        )  # fmt: skip
        noisy = record.q + cfg["noise"] * rng.standard_normal(record.q.shape)
        experiments.append(jf.identify.Experiment(ts, noisy, q0=hanging, force=force))
    mu_s = float(jnp.broadcast_to(law.mu_static, (1,))[0])
    mu_d = float(jnp.broadcast_to(law.mu_dynamic, (1,))[0])

    def fit(friction, shooting=None):
        return jf.identify.fit(
            system, friction, experiments, simulate_options=options,
            free=lambda m: (m.friction.mu_static, m.friction.mu_dynamic),
            shooting=shooting,
        )  # fmt: skip

    claims = []
    for offset in cfg["start_offsets"]:
        start = 1.0 + offset
        guess = jf.JointFriction(start * mu_s, start * mu_d, loads=law.loads)
        began = time.perf_counter()
        # From far off, single shooting stalls in a local minimum (the simulated
        # stick-slip phases misaligned with the records'); windows restarted from
        # the records first bring it near, where single shooting converges.
        stages = []
        if cfg["shooting_windows"] > 0:
            windows = jf.identify.MultipleShooting(cfg["shooting_windows"], False)
            first = fit(guess, windows)
            guess = first.model.friction
            stages.append(
                f"{cfg['shooting_windows']} windows in {int(first.num_steps)} LM "
                f"steps ({_stopped(first)}) to ({float(guess.mu_static):.4f}, "
                f"{float(guess.mu_dynamic):.4f})"
            )
        result = fit(guess)
        seconds = time.perf_counter() - began
        fitted = result.model.friction
        found = (float(fitted.mu_static), float(fitted.mu_dynamic))
        stages.append(f"{int(result.num_steps)} LM steps ({_stopped(result)})")
        label = (
            f"identification from {len(cfg['rates'])} ramp records ({cfg['noise']:g} "
            f"rad noise), start {100 * offset:+.0f} %, {', then '.join(stages)}, "
            f"{seconds:.0f} s"
        )
        claims += [
            claim(
                abs(got - true) / true <= cfg["target"],
                f"{label}: {name} {got:.6f} (true {true:g}, error "
                f"{100 * abs(got - true) / true:.3f} % <= {100 * cfg['target']:g} %)",
            )
            for name, got, true in zip(
                ("mu_s", "mu_d"), found, (mu_s, mu_d), strict=True
            )
        ]
    return claims


def make_figure(sol, parts, law, hang, limit, lugre_sol):
    from matplotlib.figure import Figure

    ts = np.asarray(sol.ts)
    mu_s = float(jnp.broadcast_to(law.mu_static, (1,))[0])
    mu_d = float(jnp.broadcast_to(law.mu_dynamic, (1,))[0])
    slipping = np.asarray(sol.modes[:, 0]) != 0
    mu = np.where(slipping, mu_d, np.nan)[:, None]
    fig = Figure(figsize=(10, 9), layout="constrained")
    ax_q, ax_f, ax_c, ax_h = fig.subplots(4, 1)
    ax_q.plot(ts, np.asarray(sol.q[:, 0]), "C0", label="angle θ [rad]")
    ax_q.plot(ts, np.asarray(sol.qd[:, 0]), "C1", lw=0.8, label="velocity θ̇ [rad/s]")
    ax_q.plot(
        np.asarray(lugre_sol.ts), np.asarray(lugre_sol.q[:, 0]), "C2--", lw=0.8,
        label="angle, LuGre form [rad]",
    )  # fmt: skip
    ax_q.legend(fontsize="small")
    ax_q.set_title("MotionSolve pendulum, exact reaction-load joint friction")
    ax_f.plot(ts, 1e3 * np.asarray(sol.friction[:, 0]), "C3", label="friction torque")
    ax_f.plot(
        np.asarray(lugre_sol.ts), 1e3 * np.asarray(lugre_sol.friction[:, 0]), "C2--",
        lw=0.8, label="friction torque, LuGre form",
    )  # fmt: skip
    total = parts.sum(1)
    ax_f.plot(ts, 1e3 * mu_s * total, "k:", lw=0.8, label="± static limit μ_s Σ c_k")
    ax_f.plot(ts, -1e3 * mu_s * total, "k:", lw=0.8)
    ax_f.set_ylabel("[mN·m]")
    ax_f.legend(fontsize="small")
    for k, name in enumerate(law.loads[0].contribution_names):
        ax_c.plot(ts, 1e3 * mu[:, 0] * parts[:, k], label=f"Tz{k + 1}: {name}")
    ax_c.set_ylabel("slip torque parts μ_d c_k [mN·m]")
    ax_c.legend(fontsize="small")
    th = np.asarray(hang.ts)
    ax_h.plot(th, 1e3 * np.asarray(hang.friction[:, 0]), "C3", label="friction")
    ax_h.axhline(1e3 * limit, color="k", ls=":", lw=0.8, label="μ_s r_p m g")
    ax_h.plot(
        th, 1e3 * np.asarray(hang.q[:, 0] - hang.q[0, 0]), "C0", label="θ − θ0 [mrad]"
    )
    ax_h.set_xlabel("t [s]")
    ax_h.set_ylabel("[mN·m]")
    ax_h.set_title("hanging at rest under a torque ramp: quasi-static breakaway")
    ax_h.legend(fontsize="small")
    return fig


if __name__ == "__main__":
    main()
