"""Move and stick: a 1-DoF mass with Stribeck friction must move from rest to a
target and end *stuck* there by a given time, with the least actuation effort.

``m ẍ = u(t) − f``, Stribeck friction (static level ``fs`` above the kinetic
``fc``), ``x(0) = 0``, ``ẋ(0) = 0``. The torque ``u`` is a natural cubic spline
through ``num_knots`` knots on ``[0, T]`` (`jaxfric.forces.CubicSpline`),
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
check. A second case does the same for a planar two-link arm
(`jaxfric.systems.TwoLinkArm`, horizontal plane) with Stribeck friction in both
joints, the torque of each joint a spline. Settings:
``configs/experiments/move_and_stick.toml`` (one ``[[cases]]`` entry per
system).

Run: ``python experiments/move_and_stick.py [SETTINGS.toml]``.
"""

import time

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import optax
from _common import (
    enable_float64,
    load_settings,
    print_table,
    results_dir,
    write_json,
)

enable_float64()

import jaxfric as jf  # noqa: E402
import jaxfric.optimize as jo  # noqa: E402
from jaxfric.io import build  # noqa: E402
from jaxfric.io.results import result_message  # noqa: E402
from jaxfric.simulate import stick_margin  # noqa: E402

NAME = "move_and_stick"


def _where(force):
    return force.values


def make_problem(system, law, case):
    """The optimisation problem of a case on `law` (exact or surrogate)."""
    knots = jnp.linspace(0.0, case["t1"], case["num_knots"])
    # Initial guess: push at `initial_torque` over the first half, then nothing.
    push = jnp.asarray(case["initial_torque"], dtype=float)
    values = jnp.where((knots < 0.5 * case["t1"])[:, None], push[None, :], 0.0)
    loss = jo.PointToPoint(
        target_q=case["target"],
        position_weight=case["position_weight"],
        velocity_weight=case["velocity_weight"],
        effort_weight=case["effort_weight"],
    )
    options = jf.SimulateOptions(max_events=case["max_events"])
    if isinstance(law, jf.Regularized):
        options = jf.SimulateOptions(max_steps=100_000)
    return jo.Problem(
        system,
        law,
        jf.forces.CubicSpline(knots, values),
        loss,
        where=_where,
        q0=case["q0"],
        t1=case["t1"],
        num_save=case["num_save"],
        simulate_options=options,
    )


def run_optimisation(problem, case):
    opt = case["optimizer"]
    schedule = optax.cosine_decay_schedule(
        opt["learning_rate"],
        opt["max_steps"],
        alpha=opt["final_learning_rate"] / opt["learning_rate"],
    )
    starts = jo.perturbed_starts(
        problem.initial_params(), opt["num_starts"], opt["init_noise"], opt["seed"]
    )
    bound = case["torque_bound"]
    start = time.perf_counter()
    result = jo.optimize(
        problem,
        optax.adam(schedule),
        starts,
        max_steps=opt["max_steps"],
        batched=True,
        project=jo.Box(-bound, bound),
    )
    return result, time.perf_counter() - start


@eqx.filter_jit
def replay(problem, law, force):
    """The optimised torque on the exact model (the switch path)."""
    return jf.simulate(
        problem.system,
        law,
        problem.q0,
        problem.qd0,
        problem.t1,
        force=force,
        ts=problem.ts,
        max_events=problem.simulate_options.max_events or 64,
        throw=False,
    )


def stick_check(sol, law, target):
    """Final position error, velocity, modes and stick margins on the exact
    model (every coordinate)."""
    friction = sol.friction[-1]
    margin = np.asarray(stick_margin(law, friction))
    qd = np.asarray(sol.qd[-1])
    modes = np.asarray(sol.modes[-1])
    error = np.asarray(sol.q[-1]) - np.asarray(target)
    return {
        "exact_final_error": float(np.max(np.abs(error))),
        "exact_final_velocity": float(np.max(np.abs(qd))),
        "exact_final_modes": modes.tolist(),
        "exact_stick_force": np.asarray(friction).tolist(),
        "exact_stick_margin": float(np.min(margin)),
        "truly_stuck": bool(np.all(qd == 0.0) and np.all(modes == 0))
        and bool(np.all(margin >= 0.0)),
        "exact_result": result_message(sol),
        "exact_num_events": int(sol.stats["num_events"]),
    }


def run_case(case):
    """Optimise through the exact law and each surrogate; replay on the exact."""
    system = build("system", case["system"], section=f"[{case['name']}] system")
    exact = build("friction", case["friction"], section=f"[{case['name']}] friction")
    models = [("exact switch path", exact)]
    for s in case["surrogates"]:
        law = jf.Regularized(exact, eps=s["eps"], kind=s["kind"])
        models.append((f"Regularized {s['kind']}, eps={s['eps']:g}", law))
    rows, results, replays = [], {}, {}
    for label, law in models:
        print(f"--- {case['name']}: optimising through {label}")
        problem = make_problem(system, law, case)
        result, wall = run_optimisation(problem, case)
        sol_exact = replay(problem, exact, result.force)
        row = {
            "case": case["name"],
            "model": label,
            "objective": float(result.value),
            "effort": float(jo.effort(result.solution, result.force)),
            "own_final_velocity": float(np.max(np.abs(result.solution.qd[-1]))),
            "own_result": result_message(result.solution),
            "max_abs_torque": float(
                np.max(np.abs(jo.applied_force(result.solution, result.force)))
            ),
            "wall_s": wall,
            "best_start": result.best_index,
            "knots": np.asarray(result.params),
        }
        row.update(stick_check(sol_exact, exact, case["target"]))
        rows.append(row)
        results[label] = result
        replays[label] = sol_exact
        print(
            f"{label}: objective {row['objective']:.6g}, exact max|q(T) − q*| = "
            f"{row['exact_final_error']:.3e}, max|v(T)| = "
            f"{row['exact_final_velocity']!r}, stuck = {row['truly_stuck']}, "
            f"wall {wall:.1f} s"
        )
    return rows, results, replays


def main():
    settings = load_settings(NAME)
    rows, figures = [], {}
    for case in settings["cases"]:
        case_rows, results, replays = run_case(case)
        rows.extend(case_rows)
        figures[case["name"]] = (results, replays, case)

    columns = [
        ("case", "case", ""),
        ("model", "optimised through", ""),
        ("objective", "objective (own model)", ".6g"),
        ("effort", "∫|u|² dt", ".5f"),
        ("own_final_velocity", "max|v(T)| own model", ".2e"),
        ("exact_final_error", "exact max|q(T) − q*|", ".2e"),
        ("exact_final_velocity", "exact max|v(T)|", ""),
        ("exact_stick_margin", "min margin", ".4f"),
        ("truly_stuck", "truly stuck", ""),
        ("wall_s", "wall [s]", ".1f"),
    ]
    table = print_table(rows, columns)

    out_dir = results_dir(NAME)
    paths = []
    for index, (results, replays, case) in enumerate(figures.values()):
        fig = make_figure(results, replays, case)
        path = out_dir / ("figure.png" if index == 0 else f"figure_{index}.png")
        fig.savefig(path, dpi=130)
        paths.append(path)
    write_json(
        {
            "experiment": NAME,
            "settings": settings,
            "rows": rows,
            "histories": {
                f"{name}: {label}": np.asarray(r.value_history)
                for name, (results, _, _) in figures.items()
                for label, r in results.items()
            },
            "table_markdown": table,
            "notes": {
                "objective": "∫|u|² dt + w_x |q(T) − q*|² + w_v |v(T)|² on the "
                "model optimised through (best of the batch of starts)",
                "exact_*": "the optimised torque replayed on the exact Stribeck "
                "model (switch path); max over coordinates",
                "exact_stick_margin": "min over joints of the distance of the "
                "stick force from the static limits (>= 0 inside)",
                "truly_stuck": "exact v(T) == 0.0 and stick mode in every joint, "
                "and every stick force inside [−fs, fs] (margin >= 0)",
                "wall_s": "optimisation wall time, compilation included",
            },
        },
        out_dir / "summary.json",
    )
    print(f"wrote {', '.join(map(str, paths))} and {out_dir / 'summary.json'}")


def make_figure(results, replays, case):
    """Exact-model motion of each optimised torque, the torques, |v| on a log
    scale, and the objective histories."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12.0, 8.0), layout="constrained")
    (ax_q, ax_u), (ax_v, ax_h) = fig.subplots(2, 2)
    styles = ("-", "--", ":")
    for color, (label, result) in enumerate(results.items()):
        sol = replays[label]
        ts = np.asarray(sol.ts)
        tau = np.asarray(jo.applied_force(result.solution, result.force))
        for i in range(sol.q.shape[1]):
            kw = {"color": f"C{color}", "ls": styles[i % 3], "lw": 1.2}
            name = label if sol.q.shape[1] == 1 else f"{label}, joint {i + 1}"
            ax_q.plot(ts, np.asarray(sol.q[:, i]), label=name, **kw)
            ax_u.plot(np.asarray(result.solution.ts), tau[:, i], **kw)
            speed = np.maximum(np.abs(np.asarray(sol.qd[:, i])), 1e-17)
            ax_v.semilogy(ts, speed, **kw)
        history = np.atleast_2d(result.value_history)[result.best_index]
        ax_h.semilogy(np.arange(history.shape[0]), history, color=f"C{color}")
    for target in np.atleast_1d(case["target"]):
        ax_q.axhline(target, color="k", ls="--", lw=0.8)
    ax_q.set_ylabel("q on the exact model")
    ax_u.set_ylabel("optimised force / torque u")
    ax_v.set_ylabel("|q̇| on the exact model (1e-17 = exactly 0)")
    ax_h.set_ylabel("objective (own model), best start")
    ax_h.set_xlabel("iteration")
    for ax in (ax_q, ax_u, ax_v):
        ax.set_xlabel("t [s]")
    for ax in (ax_q, ax_u, ax_v, ax_h):
        ax.grid(True, lw=0.3)
    ax_q.legend(fontsize="small")
    fig.suptitle(
        f"Move and stick, {case['name']}: Stribeck friction, minimum effort to "
        f"q* = {case['target']} stuck by T = {case['t1']} s"
    )
    return fig


if __name__ == "__main__":
    main()
