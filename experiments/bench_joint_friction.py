"""Benchmark of issue 15's performance target: what reaction-load joint friction
costs against load-independent friction on the same mechanism.

Four mechanisms (``configs/experiments/bench_joint_friction.toml``): a bare
1-DoF rotor under a torque ramp, the MotionSolve pendulum, the four-bar whose
crank pin friction grows with its pin force, and Itul & Pisla's 3-PPRS under
computed-torque control with friction in its six sliders and three pins. Each
runs on the exact switch path with `jaxfric.JointFriction` (MotionSolve's load
models; the friction–reaction coupling solved by Newton's method at every
evaluation) and with `jaxfric.Coulomb` at the levels of the reactions at the
start state (the pendulum: hanging at rest, as in
`motionsolve_pendulum.py`). Prints, per case and law: time per simulation (best
of ``repeats`` warm calls, the two laws' calls taken in turn), steps, events,
vector-field evaluations, the ratio of the two times against the target, and the
coupling's Newton steps per evaluation at the saved states
(`jaxfric.simulate.load_coupling`, mean and largest) with its smallest
``|det(I − ∂F/∂f)|``. Writes ``results/bench_joint_friction/summary.json`` and
``figure.png``.

Run: ``python experiments/bench_joint_friction.py [SETTINGS.toml]``.
"""

import time

import jax
import jax.numpy as jnp
import matplotlib
import numpy as np
from _common import (
    CONFIGS,
    ROOT,
    claim,
    enable_float64,
    load_average,
    load_settings,
    print_claims,
    print_table,
    read_settings,
    results_dir,
    timed_alternating,
    write_json,
)
from _four_bar import Ramp, make_four_bar

enable_float64()

import _three_pprs as pprs  # noqa: E402

import jaxfric as jf  # noqa: E402
from jaxfric.io import load_motionsolve  # noqa: E402
from jaxfric.simulate import load_coupling  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NAME = "bench_joint_friction"
LAWS = ("reaction loads", "Coulomb, fixed levels")


def rotor_case(cfg):
    """The rotor: ``(system, law, q0, qd0, t0, t1, force, ts, options)``."""
    system = jf.systems.RigidBodyTree(
        [-1],
        ["revolute"],
        [(0.0, 0.0, 1.0)],
        [(0.0, 0.0, 0.0)],
        mass=[cfg["mass"]],
        com=[(cfg["com"], 0.0, 0.0)],
        inertia=[cfg["inertia"] * np.eye(3)],
        gravity=(0.0, 0.0, -cfg["gravity"]),
    )
    load = jf.RevoluteLoad(
        pin_radius=cfg["pin_radius"],
        friction_arm=cfg["friction_arm"],
        bending_reaction_arm=cfg["bending_reaction_arm"],
        torque_preload=cfg["torque_preload"],
    )
    law = jf.JointFriction(cfg["mu_static"], cfg["mu_dynamic"], loads=(load,))
    ts = jnp.linspace(0.0, cfg["t1"], cfg["num_save"])
    force = Ramp(jnp.asarray(cfg["rate"], float))
    return system, law, jnp.zeros(1), jnp.zeros(1), 0.0, cfg["t1"], force, ts, {}


def pendulum_case(cfg):
    """The MotionSolve pendulum, released at rest, no applied force."""
    model = load_motionsolve(ROOT / cfg["model"])
    q0 = jnp.asarray(model.q0)
    ts = jnp.linspace(0.0, cfg["t1"], cfg["num_save"])
    return (
        model.system, model.friction, q0, jnp.zeros_like(q0), 0.0, cfg["t1"],
        None, ts, {},
    )  # fmt: skip


def four_bar_case(cfg):
    """The four-bar's crank held by pin friction, then breaking away."""
    base = read_settings(CONFIGS / f"{cfg['mechanism_from']}.toml")
    mech, react = base["mechanism"], base["reaction"]
    load = jf.RevoluteLoad(pin_radius=react["pin_radius"], friction_arm=0.0)
    law = jf.JointFriction(react["mu_static"], react["mu_dynamic"], loads=(load,))
    ts = jnp.linspace(0.0, react["t1"], cfg["num_save"])
    force = Ramp(jnp.asarray(react["rate"], float))
    return (
        make_four_bar(mech), law, jnp.array([mech["crank_angle"]]), jnp.zeros(1),
        0.0, react["t1"], force, ts, {},
    )  # fmt: skip


def three_pprs_case(cfg):
    """The 3-PPRS under computed-torque control along the helix."""
    base = read_settings(CONFIGS / f"{cfg['settings_from']}.toml")
    mech, traj, sim = base["mechanism"], base["trajectory"], base["simulation"]
    chain = pprs.build_chain(mech)
    law = pprs.joint_friction_law(pprs.friction_coefficients(base["friction"]), sim)
    reference = pprs.HelixReference.from_settings(mech, traj)
    force = jf.forces.ComputedTorque(chain, reference, sim["kp"], sim["kd"])
    t0 = jnp.asarray(sim["t0"])
    ts = jnp.linspace(sim["t0"], cfg["t1"], cfg["num_save"])
    options = dict(
        jump_ts=jnp.array([0.5 * np.pi, np.pi]),  # the helix's acceleration jumps
        rtol=sim["rtol"],
        atol=sim["atol"],
        max_steps=sim["max_steps"],
        max_events=sim["max_events"],
    )
    return (
        chain, law, reference.position(t0), reference.velocity(t0), sim["t0"],
        cfg["t1"], force, ts, options,
    )  # fmt: skip


CASES = {
    "rotor": rotor_case,
    "pendulum": pendulum_case,
    "four_bar": four_bar_case,
    "three_pprs": three_pprs_case,
}


def applied_at(system, force, t, q, qd):
    """The generalised applied forces of `force` at a state (zero for none)."""
    if force is None:
        return jnp.zeros(system.n_dof, q.dtype)
    return force(t, q, qd)


def fixed_levels(system, law, q0, qd0, t0, force, levels_at=None):
    """`law` at the reactions of the start state with no friction (or, with
    `levels_at`, of that configuration at rest with no applied force): the
    load-independent Coulomb law of the comparison."""
    zero = jnp.zeros(system.n_friction, q0.dtype)
    if levels_at is not None:
        q0, qd0, force = jnp.asarray(levels_at, q0.dtype), jnp.zeros_like(qd0), None
    applied = applied_at(system, force, jnp.asarray(t0, q0.dtype), q0, qd0)
    acc = system.acceleration(q0, qd0, applied, zero)
    return law.at_reactions(system.joint_reactions(q0, qd0, acc, applied, zero))


def coupling_steps(system, law, force, sol):
    """Newton steps of the load coupling and ``|det(I − ∂F/∂f)|`` at every
    saved state of `sol` (`jaxfric.simulate.load_coupling`)."""

    @jax.jit
    def at_saves(ts, q, qd, modes):
        def one(t, q, qd, modes):
            applied = applied_at(system, force, t, q, qd)
            out = load_coupling(system, law, q, qd, applied, modes)
            return out.iterations, out.regularity, out.converged

        return jax.vmap(one)(ts, q, qd, modes)

    steps, regularity, converged = at_saves(sol.ts, sol.q, sol.qd, sol.modes)
    return np.asarray(steps), np.asarray(regularity), np.asarray(converged)


def run_case(name, cfg, repeats):
    """Both laws on one mechanism: a table row each and the two solutions."""
    system, law, q0, qd0, t0, t1, force, ts, options = CASES[name](cfg)
    fixed = fixed_levels(system, law, q0, qd0, t0, force, cfg.get("levels_at"))

    def simulate(law):
        return jf.simulate(
            system, law, q0, qd0, t1, t0=t0, force=force, ts=ts, throw=False,
            **options,
        )  # fmt: skip

    rows, sols = [], []
    run = jax.jit(simulate)
    timings = timed_alternating([(run, (law,)), (run, (fixed,))], repeats)
    for label, (first, best, sol) in zip(LAWS, timings, strict=True):
        rows.append(
            dict(
                case=name,
                law=label,
                first_s=first,
                ms=1e3 * best,
                steps=int(sol.stats["num_steps"]),
                events=int(sol.stats["num_events"]),
                evals=int(sol.stats["num_vf_evals"]),
                ok=bool(sol.result == jf.RESULTS.successful),
                load=load_average(),
            )
        )
        sols.append(sol)
        print(
            f"{name}, {label}: {rows[-1]['ms']:.2f} ms (first call {first:.1f} s)",
            flush=True,
        )
    steps, regularity, converged = coupling_steps(system, law, force, sols[0])
    rows[0].update(
        ratio=rows[0]["ms"] / rows[1]["ms"],
        newton_mean=float(np.mean(steps)),
        newton_max=int(np.max(steps)),
        regularity_min=float(np.min(regularity)),
        coupling_converged=bool(np.all(converged)),
        ms_per_step=rows[0]["ms"] / max(rows[0]["steps"], 1),
    )
    rows[1].update(ratio=1.0, ms_per_step=rows[1]["ms"] / max(rows[1]["steps"], 1))
    return rows, sols


def main():
    settings = load_settings(NAME)
    start = time.perf_counter()
    rows, claims, traces = [], [], {}
    for name in CASES:
        case_rows, sols = run_case(name, settings[name], settings["repeats"])
        rows += case_rows
        traces[name] = sols
        joint = case_rows[0]
        claims.append(
            claim(
                joint["ok"] and case_rows[1]["ok"] and joint["coupling_converged"],
                f"{name}: both runs successful, the load coupling converged at "
                f"every saved state (Newton steps {joint['newton_mean']:.2f} mean, "
                f"{joint['newton_max']} at most; |det(I - dF/df)| >= "
                f"{joint['regularity_min']:.3f})",
            )
        )
        claims.append(
            claim(
                joint["ratio"] <= settings["target"],
                f"{name}: reaction loads {joint['ms']:.2f} ms against Coulomb at fixed "
                f"levels {case_rows[1]['ms']:.2f} ms: {joint['ratio']:.2f}x "
                f"<= {settings['target']:g}x (issue 15)",
                ratio=joint["ratio"],
            )
        )
    print("\nReaction-load joint friction against load-independent Coulomb:")
    table = print_table(
        rows,
        [
            ("case", "mechanism", ""),
            ("law", "law", ""),
            ("ms", "ms / simulation", ".2f"),
            ("ratio", "× Coulomb", ".2f"),
            ("steps", "steps", "d"),
            ("events", "events", "d"),
            ("evals", "evaluations", "d"),
            ("ms_per_step", "ms / step", ".4f"),
            ("newton_mean", "Newton steps per saved state (mean)", ".2f"),
            ("newton_max", "(max)", "d"),
            ("first_s", "first call s", ".1f"),
        ],
    )
    ok = print_claims(claims)
    out = results_dir(NAME)
    _plot(traces, out / "figure.png")
    write_json(
        {
            "settings": settings,
            "rows": rows,
            "table": table,
            "claims": claims,
            "seconds": time.perf_counter() - start,
        },
        out / "summary.json",
    )
    return ok


def _plot(traces, path):
    """The first friction element of every case, both laws."""
    fig, axes = plt.subplots(1, len(traces), figsize=(4 * len(traces), 3.2))
    for ax, (name, sols) in zip(axes, traces.items(), strict=True):
        for sol, label in zip(sols, LAWS, strict=True):
            ax.plot(np.asarray(sol.ts), np.asarray(sol.friction[:, 0]), label=label)
        ax.set_title(name)
        ax.set_xlabel("t [s]")
    axes[0].set_ylabel("friction, first element [N·m or N]")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
