"""Karnopp 1985, Fig. 4–6: block m1 on block m2 on the ground, two interacting
stick–slip frictions, by the exact switch path.

The model (Karnopp 1985, Eq. 12–13, Fig. 4):

    ṗ1 = F1 − Fs − Fr,        ṗ2 = Fs + Fr − Ff − F2,

with ``Fr`` the friction of m1 on m2 (relative velocity ``Vr = V1 − V2``),
``Ff`` the friction of m2 on the ground (``V2``), ``Fs`` the spring between the
blocks and ``F1`` the spring through which the input velocity ``V0`` drives m1.
The input velocity is a step that returns to zero at 0.25 s ("a step in the input
velocity V0 which returned to zero at 0.25 s", Sec. IV), so the far end of the
drive spring moves as ``x0(t) = V0·min(t, 0.25 s)`` and

    F1 = k1 (x0(t) − x1),       Fs = k12 (x1 − x2),       F2 = 0.

In `jaxfric.systems.StackedBlocks` (elements: 1 = m1 on m2, 2 = m2 on ground)
the spring ``k1`` ties m1 to the ground and the moving end enters as the applied
force ``τ1 = k1·x0(t)``, a piecewise-linear `jaxfric.forces.Tabulated` (exact
for a ramp that stops). Friction: constant slip levels (Karnopp: "not a function
of velocity except for the sign") with breakaway 1.5 × slip,
``jaxfric.Coulomb(fc, fs=1.5 fc)``. The paper gives no numbers; the defaults
below are chosen so that all four cases of its Fig. 4(c) occur: (a) both
stuck, (b) m1 slips on m2 with m2 stuck, (c) the blocks slide together, (d)
both slip.

The script checks the stick forces of every saved time against Karnopp's
case-by-case formulas (Eq. 15–16, 18, 21), tabulates the stick/slip phases,
and checks that both masses end at rest with velocity exactly ``0.0``; it then
repeats the last check over a few more parameter sets (``[[sweep]]``).

Run: ``python experiments/karnopp_stacked_blocks.py [SETTINGS.toml]``.
"""

import numpy as np
from _common import (
    enable_float64,
    format_table,
    load_settings,
    results_dir,
    write_json,
)

enable_float64()

import jax.numpy as jnp  # noqa: E402

import jaxfric as jf  # noqa: E402
from jaxfric.io.results import result_message  # noqa: E402

NAME = "karnopp_stacked_blocks"


_MODEL_KEYS = ("m1", "m2", "k1", "k12", "v0", "fr_slip", "ff_slip")
# Karnopp's Fig. 4(c) cases by (element 1 sticks, element 2 sticks).
_CASES = {
    (True, True): "a",
    (False, True): "b",
    (True, False): "c",
    (False, False): "d",
}
_CASE_TEXT = {
    "a": "(a) both stick",
    "b": "(b) m1 slips on m2, m2 sticks",
    "c": "(c) blocks slide together",
    "d": "(d) both slip",
}
_MODE_TEXT = {0: "stick", 1: "slip+", -1: "slip−"}


def build(model, exp):
    """System, law and input force of one parameter set."""
    for key in model:
        if key not in _MODEL_KEYS:
            raise ValueError(f"[model] unknown key {key!r}; allowed: {_MODEL_KEYS}")
    system = jf.systems.StackedBlocks(
        m1=model["m1"], m2=model["m2"], k1=model["k1"], k12=model["k12"]
    )
    slip = jnp.array([model["fr_slip"], model["ff_slip"]])
    law = jf.Coulomb(slip, fs=exp["breakaway_ratio"] * slip)
    # τ1 = k1·x0(t): the drive spring's far end moves at v0 until input_stop.
    stop, t1 = exp["input_stop"], exp["t1"]
    end = model["k1"] * model["v0"] * stop
    force = jf.forces.Tabulated(
        ts=[0.0, stop, max(t1, 2.0 * stop)],
        values=[[0.0, 0.0], [end, 0.0], [end, 0.0]],
    )
    return system, law, force


def simulate(model, exp, ts=None):
    system, law, force = build(model, exp)
    return jf.simulate(
        system,
        law,
        jnp.zeros(2),
        jnp.zeros(2),
        exp["t1"],
        force=force,
        ts=ts,
        num_save=exp["num_save"],
        throw=False,
    )


def input_position(ts, model, exp):
    return model["v0"] * np.minimum(ts, exp["input_stop"])


def karnopp_forces(sol, model, exp):
    """Friction forces (Fr, Ff) from Karnopp's case formulas at the saved times.

    Stuck entries: Eq. 15–16 (a), 18 (b), 21 (c); slipping entries: ``±F_slip``.
    """
    ts = np.asarray(sol.ts)
    q, modes = np.asarray(sol.q), np.asarray(sol.modes)
    m1, m2 = model["m1"], model["m2"]
    f1 = model["k1"] * (input_position(ts, model, exp) - q[:, 0])
    fs = model["k12"] * (q[:, 0] - q[:, 1])
    f2 = 0.0
    fr_slip = np.sign(modes[:, 0]) * model["fr_slip"]
    ff_slip = np.sign(modes[:, 1]) * model["ff_slip"]
    stick_r, stick_f = modes[:, 0] == 0, modes[:, 1] == 0
    both = stick_r & stick_f
    fr = np.select(
        [both, stick_r],
        [f1 - fs, -fs + (m2 * f1 + m1 * (f2 + ff_slip)) / (m1 + m2)],
        fr_slip,
    )
    ff = np.select([both, stick_f], [f1 - f2, fs + fr_slip - f2], ff_slip)
    return np.stack([fr, ff], axis=1)


def phases(model, exp, sol):
    """Stick/slip phases: the modes of every segment between events (one
    simulation saved at the segments' midpoints), merged while unchanged."""
    events = np.asarray(sol.event_times)
    events = events[np.isfinite(events)]
    bounds = np.concatenate([[0.0], events, [exp["t1"]]])
    bounds = np.unique(bounds)
    mids = 0.5 * (bounds[:-1] + bounds[1:])
    modes = np.asarray(simulate(model, exp, ts=jnp.asarray(mids)).modes)
    out = []
    for start, end, mode in zip(bounds[:-1], bounds[1:], modes, strict=True):
        mode = tuple(int(m) for m in mode)
        if out and out[-1]["modes"] == mode:
            out[-1]["t_end"] = float(end)
            continue
        out.append({"modes": mode, "t_start": float(start), "t_end": float(end)})
    for i, p in enumerate(out):
        case = _CASES[(p["modes"][0] == 0, p["modes"][1] == 0)]
        p.update(
            phase=i + 1,
            case=case,
            description=_CASE_TEXT[case],
            m1_on_m2=_MODE_TEXT[p["modes"][0]],
            m2_on_ground=_MODE_TEXT[p["modes"][1]],
            duration=p["t_end"] - p["t_start"],
        )
        p["modes"] = list(p["modes"])
    return out


def check(model, exp):
    """Simulate one parameter set; return the solution and its summary."""
    sol = simulate(model, exp)
    qd_end = np.asarray(sol.qd[-1])
    phase_rows = phases(model, exp, sol)
    last = phase_rows[-1]
    stop = last["t_start"] if last["case"] == "a" else None
    if stop is not None:
        rest = np.asarray(sol.ts) >= stop
        q_rest = np.asarray(sol.q)[rest]
        drift = np.max(np.abs(q_rest - q_rest[0]), axis=0)
    else:
        drift = np.full(2, np.nan)
    totals = {c: 0.0 for c in "abcd"}
    for p in phase_rows:
        totals[p["case"]] += p["duration"]
    err = np.abs(np.asarray(sol.friction) - karnopp_forces(sol, model, exp))
    summary = {
        **model,
        "result": result_message(sol),
        "num_events": int(sol.stats["num_events"]),
        "num_phases": len(phase_rows),
        "rest_from": stop,
        "v1_end": float(qd_end[0]),
        "v2_end": float(qd_end[1]),
        "exact_rest": bool(np.all(qd_end == 0.0)),
        "x1_drift_at_rest": float(drift[0]),
        "x2_drift_at_rest": float(drift[1]),
        "karnopp_force_error": float(np.max(err)),
        **{f"time_case_{c}": totals[c] for c in "abcd"},
    }
    return sol, phase_rows, summary


def main():
    settings = load_settings(NAME)
    exp, model = settings["experiment"], settings["model"]
    sol, phase_rows, summary = check(model, exp)

    phase_table = format_table(
        phase_rows,
        [
            ("phase", "#", "d"),
            ("description", "case (Karnopp Fig. 4c)", ""),
            ("m1_on_m2", "m1 on m2", ""),
            ("m2_on_ground", "m2 on ground", ""),
            ("t_start", "from [s]", ".6f"),
            ("t_end", "to [s]", ".6f"),
            ("duration", "duration [s]", ".6f"),
        ],
    )
    print(phase_table)
    print(
        f"final velocities v1 = {summary['v1_end']!r}, v2 = {summary['v2_end']!r} "
        f"(exactly zero: {summary['exact_rest']}); at rest from "
        f"t = {summary['rest_from']}; drift at rest x1 "
        f"{summary['x1_drift_at_rest']:.1e}, x2 {summary['x2_drift_at_rest']:.1e}; "
        "stick/slip forces vs Karnopp "
        f"Eq. 15–21: max error {summary['karnopp_force_error']:.1e} N; "
        f"{summary['num_events']} events; {summary['result']}"
    )

    sweep_rows = [summary] + [check(m, exp)[2] for m in settings.get("sweep", [])]
    sweep_table = format_table(
        sweep_rows,
        [
            ("m2", "m2", "g"),
            ("k1", "k1", "g"),
            ("k12", "k12", "g"),
            ("v0", "V0", "g"),
            ("fr_slip", "Fr slip", "g"),
            ("ff_slip", "Ff slip", "g"),
            *[(f"time_case_{c}", f"t in ({c}) [s]", ".3f") for c in "abcd"],
            ("num_events", "events", "d"),
            ("rest_from", "rest from [s]", ".4f"),
            ("v1_end", "v1(t1)", ".1e"),
            ("v2_end", "v2(t1)", ".1e"),
            ("exact_rest", "v exactly 0", ""),
            ("x1_drift_at_rest", "x1 drift", ".1e"),
            ("karnopp_force_error", "force err vs Eq.15–21 [N]", ".1e"),
            ("result", "result", ""),
        ],
    )
    print(sweep_table)

    out_dir = results_dir(NAME)
    fig = make_figure(sol, phase_rows, model, exp)
    fig.savefig(out_dir / "figure.png", dpi=130)
    write_json(
        {
            "experiment": NAME,
            "settings": settings,
            "phases": phase_rows,
            "summary": summary,
            "sweep": sweep_rows,
            "phase_table_markdown": phase_table,
            "sweep_table_markdown": sweep_table,
            "notes": {
                "input": "drive spring k1 from a point moving at v0 until "
                "input_stop: applied force tau1 = k1*v0*min(t, input_stop) on m1 "
                "(jaxfric.forces.Tabulated), spring k1 to the ground in "
                "StackedBlocks",
                "exact_rest": "both final velocities are exactly 0.0",
                "x1_drift_at_rest": "max |x(t) − x(rest_from)| over the final "
                "both-stuck phase",
                "karnopp_force_error": "max over saved times of |f − f_Karnopp|, "
                "f_Karnopp from Eq. 15–16 (a), 18 (b), 21 (c) or ±F_slip",
            },
        },
        out_dir / "summary.json",
    )
    print(f"wrote {out_dir / 'figure.png'} and {out_dir / 'summary.json'}")


def make_figure(sol, phase_rows, model, exp):
    """As Karnopp Fig. 6: (a) Ff and V2, (b) Fr and Vr against time; the cases
    of Fig. 4(c) shaded; the input velocity and positions below."""
    from matplotlib.figure import Figure

    ts = np.asarray(sol.ts)
    qd, f = np.asarray(sol.qd), np.asarray(sol.friction)
    fig = Figure(figsize=(11.0, 9.0), layout="constrained")
    ax_f, ax_r, ax_in = fig.subplots(3, 1, sharex=True)
    colors = {"a": "#d9d9d9", "b": "#cfe2f3", "c": "#d9ead3", "d": "#fce5cd"}
    for ax in (ax_f, ax_r, ax_in):
        for p in phase_rows:
            ax.axvspan(p["t_start"], p["t_end"], color=colors[p["case"]], lw=0)
        ax.grid(True, lw=0.3)
    limits_r = model["fr_slip"] * np.array([1.0, exp["breakaway_ratio"]])
    limits_f = model["ff_slip"] * np.array([1.0, exp["breakaway_ratio"]])

    def panel(ax, force, velocity, limits, fname, vname, title):
        ax.plot(ts, force, "C3", lw=1.3, label=fname)
        for lim in limits:
            ax.axhline(lim, color="C3", ls=":", lw=0.8)
            ax.axhline(-lim, color="C3", ls=":", lw=0.8)
        ax.set_ylabel(f"{fname} [N]", color="C3")
        twin = ax.twinx()
        twin.plot(ts, velocity, "C0", lw=1.3, label=vname)
        twin.axhline(0.0, color="C0", lw=0.5)
        twin.set_ylabel(f"{vname} [m/s]", color="C0")
        ax.set_title(title, fontsize="medium")

    panel(
        ax_f,
        f[:, 1],
        qd[:, 1],
        limits_f,
        "Ff",
        "V2",
        "Fig. 6(a): ground friction Ff and velocity V2 of m2",
    )
    panel(
        ax_r,
        f[:, 0],
        qd[:, 0] - qd[:, 1],
        limits_r,
        "Fr",
        "Vr",
        "Fig. 6(b): relative friction Fr and relative velocity Vr = V1 − V2",
    )
    v_in = np.where(ts < exp["input_stop"], model["v0"], 0.0)
    ax_in.plot(ts, v_in, "k", lw=1.3, label="input velocity V0")
    ax_in.plot(ts, qd[:, 0], "C1", lw=1.0, label="V1")
    ax_in.plot(ts, qd[:, 1], "C0", lw=1.0, label="V2")
    ax_in.set_ylabel("velocity [m/s]")
    ax_in.set_xlabel("t [s]")
    from matplotlib.patches import Patch

    handles, _ = ax_in.get_legend_handles_labels()
    handles += [Patch(color=colors[c], label=_CASE_TEXT[c]) for c in "abcd"]
    ax_in.legend(handles=handles, fontsize="x-small", ncol=2, loc="upper right")
    fig.suptitle(
        "Karnopp 1985 Fig. 4–6: m1 on m2 on ground, exact switch path\n"
        f"(m1 = {model['m1']:g}, m2 = {model['m2']:g}, k1 = {model['k1']:g}, "
        f"k12 = {model['k12']:g}, V0 = {model['v0']:g}, Fr = {model['fr_slip']:g}, "
        f"Ff = {model['ff_slip']:g}, breakaway × {exp['breakaway_ratio']:g})"
    )
    return fig


if __name__ == "__main__":
    main()
