"""Move and stick: a 1-DoF mass with Stribeck friction must move from rest to a
target and end *stuck* there by a given time, with the least actuation effort.

``m ẍ = u(t) − f``, Stribeck friction (static level ``fs`` above the kinetic
``fc``), ``x(0) = 0``, ``ẋ(0) = 0``. The torque ``u`` is a natural cubic spline
through ``num_knots`` knots on ``[0, T]`` (`jaxfric.optimize.CubicSpline`),
bounded by a projection (`jaxfric.optimize.Box`). The objective is

    ``∫u² dt + w_x (x(T) − x*)² + w_v ẋ(T)²``   (`jaxfric.optimize.PointToPoint`).

On the exact model (the switch path, `jaxfric.Stribeck`) the mass is truly
stuck at ``T`` when its velocity is exactly ``0.0``, its mode is stick, and the
stick force (the net force ``u(T)`` the friction must hold) lies inside
``[−fs, fs]``; the script checks all three.

The comparison: the same problem is optimised

- through the exact switch path (gradients through the breakaway and the final
  stick event), and
- through `jaxfric.Regularized` versions of the same law (smooth, no stick: the
  mass creeps instead), whose optimum is then replayed on the exact model.

The table gives, for each, the objective on its own model, the effort, and on
the exact model the final position error, the final velocity and the stick
check. Settings: ``configs/experiments/move_and_stick.toml``.

Run: ``python experiments/move_and_stick.py [SETTINGS.toml]``.
"""

import time

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import optax
from _common import (
    enable_float64,
    format_table,
    load_settings,
    results_dir,
    write_json,
)

enable_float64()

import jaxfric as jf  # noqa: E402
import jaxfric.optimize as jo  # noqa: E402
from jaxfric.io import build  # noqa: E402
from jaxfric.io.results import result_message  # noqa: E402
from jaxfric.simulate._stick import stick_margin  # noqa: E402

NAME = "move_and_stick"

# Used when configs/experiments/move_and_stick.toml is missing.
DEFAULT_SETTINGS = {
    "experiment": {
        "t1": 3.0,
        "target": 1.0,
        "num_knots": 7,
        "num_save": 301,
        "initial_torque": 2.0,
        "torque_bound": 3.0,
        "position_weight": 1e5,
        "velocity_weight": 1e5,
        "effort_weight": 1.0,
        "max_events": 16,
    },
    "optimizer": {
        "learning_rate": 0.05,
        "final_learning_rate": 5e-4,
        "num_steps": 400,
        "num_starts": 4,
        "init_noise": 0.3,
        "seed": 0,
    },
    "system": {"type": "Oscillator", "mass": 1.0, "stiffness": 0.0},
    "friction": {"type": "Stribeck", "fc": 1.0, "fs": 1.5, "vs": 0.1, "fv": 0.2},
    "surrogates": [
        {"kind": "tanh", "eps": 1e-2},
        {"kind": "tanh", "eps": 1e-3},
    ],
}


def _where(force):
    return force.values


def make_problem(system, law, exp):
    """The optimisation problem on `law` (exact or surrogate)."""
    knots = jnp.linspace(0.0, exp["t1"], exp["num_knots"])
    # Initial guess: push at `initial_torque` over the first half, then nothing.
    values = jnp.where(knots < 0.5 * exp["t1"], exp["initial_torque"], 0.0)
    loss = jo.PointToPoint(
        target_q=exp["target"],
        position_weight=exp["position_weight"],
        velocity_weight=exp["velocity_weight"],
        effort_weight=exp["effort_weight"],
    )
    options = {"max_events": exp["max_events"]}
    if isinstance(law, jf.Regularized):
        options = {"max_steps": 100_000}
    return jo.Problem(
        system,
        law,
        jo.CubicSpline(knots, values),
        loss,
        where=_where,
        t1=exp["t1"],
        num_save=exp["num_save"],
        simulate_options=options,
    )


def run_optimisation(problem, settings):
    opt = settings["optimizer"]
    schedule = optax.cosine_decay_schedule(
        opt["learning_rate"],
        opt["num_steps"],
        alpha=opt["final_learning_rate"] / opt["learning_rate"],
    )
    starts = jo.perturbed_starts(
        problem.initial_params(), opt["num_starts"], opt["init_noise"], opt["seed"]
    )
    bound = settings["experiment"]["torque_bound"]
    start = time.perf_counter()
    result = jo.optimize(
        problem,
        optax.adam(schedule),
        starts,
        num_steps=opt["num_steps"],
        batched=True,
        project=jo.Box(-bound, bound),
        progress=True,
    )
    return result, time.perf_counter() - start


@eqx.filter_jit
def replay(system, law, force, exp, ts):
    """The optimised torque on the exact model (the switch path)."""
    return jf.simulate(
        system,
        law,
        0.0,
        0.0,
        exp["t1"],
        force=force,
        ts=ts,
        max_events=exp["max_events"],
        throw=False,
    )


def stick_check(sol, law, target):
    """Final position error, velocity, mode and stick margin on the exact model."""
    friction = sol.friction[-1]
    margin = float(stick_margin(law, friction)[0])
    qd = float(sol.qd[-1, 0])
    mode = int(sol.modes[-1, 0])
    return {
        "exact_final_error": abs(float(sol.q[-1, 0]) - target),
        "exact_final_velocity": qd,
        "exact_final_mode": mode,
        "exact_stick_force": float(friction[0]),
        "exact_stick_margin": margin,
        "truly_stuck": bool(qd == 0.0 and mode == 0 and margin >= 0.0),
        "exact_result": result_message(sol),
        "exact_num_events": int(sol.stats["num_events"]),
    }


def main():
    settings = load_settings(NAME, DEFAULT_SETTINGS)
    exp = settings["experiment"]
    system = build("system", settings["system"])
    exact = build("friction", settings["friction"])
    models = [("exact switch path", exact)]
    for s in settings["surrogates"]:
        law = jf.Regularized(exact, eps=s["eps"], kind=s["kind"])
        models.append((f"Regularized {s['kind']}, eps={s['eps']:g}", law))

    rows, results, replays = [], {}, {}
    ts = None
    for label, law in models:
        print(f"--- optimising through: {label}")
        problem = make_problem(system, law, exp)
        ts = problem.ts
        result, wall = run_optimisation(problem, settings)
        sol_exact = replay(system, exact, result.force, exp, ts)
        row = {
            "model": label,
            "objective": float(result.value),
            "effort": float(jo.effort(result.solution, result.force)),
            "own_final_position": float(result.solution.q[-1, 0]),
            "own_final_velocity": float(result.solution.qd[-1, 0]),
            "own_result": result_message(result.solution),
            "max_abs_torque": float(
                np.max(np.abs(jo.applied_force(result.solution, result.force)))
            ),
            "wall_s": wall,
            "best_start": result.best_index,
            "knots": np.asarray(result.params).tolist(),
        }
        row.update(stick_check(sol_exact, exact, exp["target"]))
        rows.append(row)
        results[label] = result
        replays[label] = sol_exact
        print(
            f"{label}: objective {row['objective']:.6g}, exact |x(T) − x*| = "
            f"{row['exact_final_error']:.3e}, v(T) = {row['exact_final_velocity']!r}, "
            f"stuck = {row['truly_stuck']}, wall {wall:.1f} s"
        )

    columns = [
        ("model", "optimised through", ""),
        ("objective", "objective (own model)", ".6g"),
        ("effort", "∫u² dt", ".5f"),
        ("own_final_velocity", "v(T) own model", ".2e"),
        ("exact_final_error", "exact |x(T) − x*|", ".2e"),
        ("exact_final_velocity", "exact v(T)", ""),
        ("exact_stick_force", "stick force", ".4f"),
        ("exact_stick_margin", "margin fs − |f|", ".4f"),
        ("truly_stuck", "truly stuck", ""),
        ("wall_s", "wall [s]", ".1f"),
    ]
    table = format_table(rows, columns)
    print(table)

    out_dir = results_dir(NAME)
    fig = make_figure(results, replays, exp)
    fig.savefig(out_dir / "figure.png", dpi=130)
    write_json(
        {
            "experiment": NAME,
            "settings": settings,
            "rows": rows,
            "histories": {k: np.asarray(r.history) for k, r in results.items()},
            "table_markdown": table,
            "notes": {
                "objective": "∫u² dt + w_x (x(T) − x*)² + w_v v(T)² on the model "
                "optimised through (best of the batch of starts)",
                "exact_*": "the optimised torque replayed on the exact Stribeck "
                "model (switch path)",
                "truly_stuck": "exact v(T) == 0.0, stick mode, and the stick force "
                "inside [−fs, fs] (margin >= 0)",
                "wall_s": "optimisation wall time, compilation included",
            },
        },
        out_dir / "summary.json",
    )
    print(f"wrote {out_dir / 'figure.png'} and {out_dir / 'summary.json'}")


def make_figure(results, replays, exp):
    """Exact-model motion of each optimised torque, the torques, |v| near the end
    on a log scale, and the objective histories."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12.0, 8.0), layout="constrained")
    (ax_q, ax_u), (ax_v, ax_h) = fig.subplots(2, 2)
    for label, result in results.items():
        sol = replays[label]
        ts = np.asarray(sol.ts)
        ax_q.plot(ts, np.asarray(sol.q[:, 0]), lw=1.2, label=label)
        tau = np.asarray(jo.applied_force(result.solution, result.force))[:, 0]
        ax_u.plot(np.asarray(result.solution.ts), tau, lw=1.2, label=label)
        ax_v.semilogy(ts, np.maximum(np.abs(np.asarray(sol.qd[:, 0])), 1e-17), lw=1.0)
        history = np.atleast_2d(result.history)[result.best_index]
        ax_h.semilogy(np.arange(history.shape[0]), history, lw=1.0, label=label)
    ax_q.axhline(exp["target"], color="k", ls="--", lw=0.8)
    ax_q.set_ylabel("x on the exact model [m]")
    ax_u.set_ylabel("optimised force u [N]")
    ax_v.set_ylabel("|v| on the exact model [m/s] (1e-17 = exactly 0)")
    ax_h.set_ylabel("objective (own model), best start")
    ax_h.set_xlabel("iteration")
    for ax in (ax_q, ax_u, ax_v):
        ax.set_xlabel("t [s]")
    for ax in (ax_q, ax_u, ax_v, ax_h):
        ax.grid(True, lw=0.3)
    ax_q.legend(fontsize="small")
    fig.suptitle(
        "Move and stick: 1-DoF mass, Stribeck friction, minimum effort to "
        f"x* = {exp['target']} stuck by T = {exp['t1']} s"
    )
    return fig


if __name__ == "__main__":
    main()
