"""The Quinn/Farhat oscillator with every friction law of jaxfric.

``x'' + x = −f``, Coulomb level ``Fc = 1``, ``x(0) = 2.75``, ``x'(0) = 0``,
``t ∈ [0, 10]`` (Farhat et al. 2010, Sec. 5.1, after Quinn). Exact solution:
``x = 1 + 1.75 cos t`` until the velocity vanishes at ``t = π``, where the
spring force 0.75 is below the static limit 1, so the mass sticks at
``x = −0.75`` for good.

Each law and setting of ``configs/experiments/oscillator_models.toml`` is
simulated; the script prints a table of final-position error and
vector-field evaluations and writes ``results/oscillator_models/figure.png`` and
``summary.json``. A law whose type is not available in this jaxfric build is
skipped with a printed note.

Run: ``python experiments/oscillator_models.py [SETTINGS.toml]``.
"""

import time

import equinox as eqx
import numpy as np
from _common import (
    enable_float64,
    load_settings,
    print_table,
    results_dir,
    write_json,
)

enable_float64()

import jaxfric as jf  # noqa: E402
from jaxfric.io import ConfigError, available_types, build, parse_simulate  # noqa: E402
from jaxfric.io.results import result_message  # noqa: E402

NAME = "oscillator_models"


_EXPERIMENT_KEYS = (
    "t1",
    "q0",
    "qd0",
    "num_save",
    "exact_stick_position",
    "exact_stick_time",
)
_MODEL_KEYS = ("law", "setting", "friction", "simulate")


def _check_keys(table, allowed, section):
    for key in table:
        if key not in allowed:
            raise ConfigError(
                f"{section} unknown key {key!r}; allowed keys: {', '.join(allowed)}."
            )


def exact_position(ts, settings):
    """Quinn's exact solution: ``1 + 1.75 cos t`` until ``t = π``, then −0.75."""
    exp = settings["experiment"]
    q0, stick_t = exp["q0"], exp["exact_stick_time"]
    slipping = 1.0 + (q0 - 1.0) * np.cos(ts)
    return np.where(ts < stick_t, slipping, exp["exact_stick_position"])


def run_model(system, model, index, exp):
    """Simulate one model row; `None` when its law is not available."""
    section = f"[[models]] #{index} ({model.get('law')}, {model.get('setting')})"
    _check_keys(model, _MODEL_KEYS, section)
    table = model["friction"]
    if table.get("type") not in available_types("friction"):
        print(
            f"note: skipping {section}: law type {table.get('type')!r} is not "
            "available in this jaxfric build."
        )
        return None
    law = build("friction", table, section=f"{section} friction")
    options = parse_simulate(
        {
            "t1": exp["t1"],
            "q0": exp["q0"],
            "qd0": exp["qd0"],
            "num_save": exp["num_save"],
            **model.get("simulate", {}),
        },
        section=f"{section} simulate",
    )
    # Jitted so that the second call measures the solve alone, not tracing.
    run = eqx.filter_jit(lambda law: jf.simulate(system, law, throw=False, **options))
    try:
        start = time.perf_counter()
        sol = run(law)
        sol.q.block_until_ready()
        first = time.perf_counter() - start
        start = time.perf_counter()
        run(law).q.block_until_ready()
        warm = time.perf_counter() - start
    except (NotImplementedError, AttributeError) as e:
        # A law whose simulation path has not landed yet (placeholder module).
        print(f"note: skipping {section}: {type(e).__name__}: {e}")
        return None
    return sol, first, warm


def summary_row(model, sol, first, warm, settings):
    """Table row: errors against the exact answer and the solver's counters."""
    exp = settings["experiment"]
    row = {
        "law": model["law"],
        "setting": model["setting"],
        "result": result_message(sol),
        "num_vf_evals": int(sol.stats["num_vf_evals"]),
        "num_steps": int(sol.stats["num_steps"]),
        "num_events": int(sol.stats["num_events"]),
        "wall_first_s": first,
        "wall_warm_s": warm,
    }
    if row["result"] != "successful":
        return row  # the trajectory stops short of t1: no errors to report
    ts, q, qd = (np.asarray(a) for a in (sol.ts, sol.q[:, 0], sol.qd[:, 0]))
    settled = ts >= exp["exact_stick_time"] + 0.5  # stuck in the exact answer
    row.update(
        final_position=float(q[-1]),
        final_error=float(abs(q[-1] - exp["exact_stick_position"])),
        final_velocity=float(abs(qd[-1])),
        drift_after_stick=float(np.ptp(q[settled])),
        max_error=float(np.max(np.abs(q - exact_position(ts, settings)))),
    )
    return row


def main():
    settings = load_settings(NAME)
    _check_keys(settings, ("experiment", "system", "models"), "settings:")
    exp = settings["experiment"]
    _check_keys(exp, _EXPERIMENT_KEYS, "[experiment]")
    system = build("system", settings["system"])

    rows, solutions = [], {}
    for index, model in enumerate(settings["models"]):
        out = run_model(system, model, index, exp)
        if out is None:
            rows.append(
                {
                    "law": model["law"],
                    "setting": model["setting"],
                    "result": "skipped: not available",
                }
            )
            continue
        sol, first, warm = out
        solutions[f"{model['law']}, {model['setting']}"] = sol
        rows.append(summary_row(model, sol, first, warm, settings))

    columns = [
        ("law", "law", ""),
        ("setting", "setting", ""),
        ("final_position", "x(10)", ".8f"),
        ("final_error", "|x(10) + 0.75|", ".2e"),
        ("final_velocity", "|v(10)|", ".1e"),
        ("drift_after_stick", "drift t>π+0.5", ".1e"),
        ("num_vf_evals", "VF evals", "d"),
        ("num_steps", "steps", "d"),
        ("wall_warm_s", "wall [s]", ".3f"),
        ("result", "result", ""),
    ]
    table = print_table(rows, columns)

    out_dir = results_dir(NAME)
    fig = make_figure(solutions, settings)
    fig.savefig(out_dir / "figure.png", dpi=130)
    write_json(
        {
            "experiment": NAME,
            "settings": settings,
            "rows": rows,
            "table_markdown": table,
            "notes": {
                "final_error": "|x(t1) − (−0.75)|, exact stick position of Quinn",
                "drift_after_stick": "max − min of x over t >= π + 0.5 (exact: 0)",
                "max_error": "max over saved times of |x(t) − exact x(t)|",
                "wall_warm_s": "wall time of a second identical call (no compile)",
                "wall_first_s": "wall time of the first call (with compilation)",
            },
        },
        out_dir / "summary.json",
    )
    print(f"wrote {out_dir / 'figure.png'} and {out_dir / 'summary.json'}")


def make_figure(solutions, settings):
    """Position of every model with the exact solution, and the error on a log
    scale."""
    import matplotlib as mpl
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13.0, 8.5), layout="constrained")
    ax_q, ax_zoom, ax_err = fig.subplots(3, 1, sharex=True)
    t1 = settings["experiment"]["t1"]
    ts_exact = np.linspace(0.0, t1, 4001)
    x_exact = exact_position(ts_exact, settings)
    ax_q.plot(ts_exact, x_exact, "k--", lw=1.5, label="exact (Quinn)", zorder=5)
    ax_zoom.plot(ts_exact, x_exact, "k--", lw=1.5, zorder=5)
    colors = mpl.colormaps["tab20"](np.linspace(0.0, 1.0, max(len(solutions), 2)))
    for color, (label, sol) in zip(colors, solutions.items(), strict=False):
        ts, q = np.asarray(sol.ts), np.asarray(sol.q[:, 0])
        ax_q.plot(ts, q, lw=1.0, color=color, label=label)
        ax_zoom.plot(ts, q, lw=1.0, color=color)
        err = np.abs(q - exact_position(ts, settings))
        ax_err.semilogy(ts, np.maximum(err, 1e-16), lw=1.0, color=color)
    stick = settings["experiment"]["exact_stick_position"]
    ax_zoom.set_ylim(stick - 0.01, stick + 0.05)
    ax_q.set_ylabel("x [m]")
    ax_zoom.set_ylabel("x [m], near the stick")
    ax_err.set_ylabel("|x − x_exact| [m]")
    ax_err.set_xlabel("t [s]")
    for ax in (ax_q, ax_zoom, ax_err):
        ax.grid(True, lw=0.3)
    fig.legend(loc="outside right upper", fontsize="small")
    fig.suptitle("Quinn/Farhat oscillator: x'' + x = −f, Fc = 1, x(0) = 2.75")
    return fig


if __name__ == "__main__":
    main()
