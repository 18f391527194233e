"""The two-link arm of Kikuuwe & Yamamoto (Sec. IV-B, Eq. 28, Fig. 7): drift after
stopping under an oscillating torque below the static friction level.

A planar two-link arm in a horizontal plane (no gravity), Coulomb friction
``F = 0.5 N·m`` in both joints, both joints driven by (Eq. 28c–d)

    τ0 = min(0.52, 0.3 t)  if t < 4,   0.336 + 0.144 sin(100 t)  otherwise,
    τ1 = min(0.52, 0.3 t)  if t < 4,   0.336 + 0.144 cos(100 t)  otherwise.

The ramp exceeds 0.5 N·m at ``t = 5/3 s``, so both joints break away; after
``t = 4 s`` the torque stays within [0.192, 0.48] N·m, below the static level,
so the arm stops and, with exact Coulomb friction, must never move again: with
no velocity and no gravity the stick torques equal the applied torques.

The paper gives no link masses or lengths (Fig. 5 is a drawing); the arms of
``configs/experiments/kikuuwe_two_link.toml`` are stated in ``summary.json``.
Each arm is simulated with every model of the settings (exact switch path,
Kikuuwe with K = 5000 N·m/rad, B = 1 N·m·s/rad, LuGre); the script prints the
drift of both angles over the drift window (default ``t ∈ [5, 8] s``) and writes
``results/kikuuwe_two_link/figure.png`` (angles against time as in Fig. 7, and
``q(t) − q(5 s)``) and ``summary.json``.

Checked claims (PASS/FAIL lines, targets in the ``[claims]`` settings): the
exact path stops near ``t = 4.5 s`` and its drift over the window is exactly 0;
Kikuuwe's drift stays bounded near 0; LuGre's drift grows (see `check_claims`).

Run: ``python experiments/kikuuwe_two_link.py [SETTINGS.toml]``.
"""

import time

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
    write_json,
)

enable_float64()

import jaxfric as jf  # noqa: E402
from jaxfric.io import ConfigError, build, parse_simulate  # noqa: E402
from jaxfric.io.results import result_message  # noqa: E402

NAME = "kikuuwe_two_link"


_SECTIONS = ("experiment", "torque", "arms", "models", "claims")
_CLAIM_KEYS = (
    "stop_time",
    "stop_tolerance",
    "bounded_trend",
    "creep_trend",
    "creep_growth",
)
_EXPERIMENT_KEYS = ("t1", "q0", "qd0", "num_save", "drift_window", "figure_arm")
_TORQUE_KEYS = ("ramp_rate", "ramp_max", "t_switch", "offset", "amplitude", "omega")
_ARM_KEYS = ("name", "system")
_MODEL_KEYS = ("law", "setting", "friction", "simulate")


class KikuuweTorque(jf.forces.AbstractStatelessForce):
    """Joint torques of Kikuuwe & Yamamoto, Eq. 28c–d, N·m, times a per-joint
    factor ``scale`` (1 in the paper):

        τ_i = scale_i · min(ramp_max, ramp_rate·t)                 if t < t_switch,
        τ_0 = scale_0 · (offset + amplitude·sin(omega·t))          otherwise,
        τ_1 = scale_1 · (offset + amplitude·cos(omega·t))          otherwise.
    """

    ramp_rate: jax.Array
    ramp_max: jax.Array
    t_switch: jax.Array
    offset: jax.Array
    amplitude: jax.Array
    omega: jax.Array
    scale: jax.Array

    def __call__(self, t, q, qd):
        ramp = jnp.minimum(self.ramp_max, self.ramp_rate * t)
        phase = self.omega * t
        late = jnp.stack(
            [
                self.offset + self.amplitude * jnp.sin(phase),
                self.offset + self.amplitude * jnp.cos(phase),
            ]
        )
        return self.scale * jnp.where(t < self.t_switch, ramp, late)


def make_torque(table, scale=(1.0, 1.0)) -> KikuuweTorque:
    """`KikuuweTorque` from the ``[torque]`` settings table."""
    return KikuuweTorque(
        **{k: jnp.asarray(float(table[k])) for k in _TORQUE_KEYS},
        scale=jnp.asarray(scale, dtype=float),
    )


def _check_keys(table, allowed, section):
    for key in table:
        if key not in allowed:
            raise ConfigError(
                f"{section} unknown key {key!r}; allowed keys: {', '.join(allowed)}."
            )
    missing = [k for k in allowed if k not in table and k != "simulate"]
    if missing:
        raise ConfigError(f"{section} missing key(s): {', '.join(missing)}.")


def run_model(system, model, index, exp, force):
    """Simulate one model: ``(solution, wall time of the call in s)``."""
    section = f"[[models]] #{index} ({model['law']}, {model['setting']})"
    law = build("friction", model["friction"], section=f"{section} friction")
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
    start = time.perf_counter()
    sol = jf.simulate(system, law, force=force, throw=False, **options)
    sol.q.block_until_ready()
    return sol, time.perf_counter() - start


def _coulomb_level(model) -> float:
    """The Coulomb level of a model's friction table, N·m (`fc`, or `f` for
    Kikuuwe)."""
    table = model["friction"]
    return float(table["fc"] if "fc" in table else table["f"])


def summary_row(arm, model, sol, wall, exp):
    """Table row: stop time, final angles and drift over the drift window."""
    row = {
        "arm": arm["name"],
        "law": model["law"],
        "setting": model["setting"],
        "result": result_message(sol),
        "num_vf_evals": int(sol.stats["num_vf_evals"]),
        "num_steps": int(sol.stats["num_steps"]),
        "num_events": int(sol.stats["num_events"]),
        "wall_s": wall,
    }
    if row["result"] != "successful":
        return row
    ts, q, qd = (np.asarray(a) for a in (sol.ts, sol.q, sol.qd))
    lo, hi = exp["drift_window"]
    window = (ts >= lo) & (ts <= hi)
    q_win = q[window]
    # Mean angle over each third of the window: trend = last − first; growth =
    # (last − middle) / (middle − first), ~1 for a steady creep, ~0 when settled.
    third = (hi - lo) / 3.0
    means = [
        q[window & (ts >= lo + k * third) & (ts <= lo + (k + 1) * third)].mean(axis=0)
        for k in range(3)
    ]
    trend = means[2] - means[0]
    step = means[1] - means[0]
    growth = np.where(step != 0.0, (means[2] - means[1]) / np.where(step, step, 1.0), 0)
    friction = np.abs(np.asarray(sol.friction)[window])
    moving = np.any(qd != 0.0, axis=1)
    events = np.asarray(sol.event_times)
    events = events[np.isfinite(events)]
    row.update(
        q0_final=float(q[-1, 0]),
        q1_final=float(q[-1, 1]),
        drift0=float(np.ptp(q_win[:, 0])),
        drift1=float(np.ptp(q_win[:, 1])),
        trend0=float(trend[0]),
        trend1=float(trend[1]),
        # None when the first step is exactly 0 (a still joint).
        growth0=float(growth[0]) if step[0] != 0.0 else None,
        growth1=float(growth[1]) if step[1] != 0.0 else None,
        # Largest friction over the window relative to the Coulomb level: 1 when
        # an element slips (Kikuuwe: its massless anchor slides).
        friction_peak=float(np.max(friction) / _coulomb_level(model)),
        # Bitwise: every saved angle in the window equals the first one.
        bitwise_still=bool(np.all(q_win == q_win[0])),
        last_event=float(events[-1]) if events.size else None,
        last_nonzero_velocity=float(ts[moving][-1]) if moving.any() else None,
    )
    return row


def check_claims(rows, settings) -> list[dict]:
    """The claims of Kikuuwe & Yamamoto Sec. IV-B (Fig. 7), per arm and row.

    - the exact path stops near ``t = 4.5 s``: its last switch lies within
      ``stop_tolerance`` of ``stop_time`` and no velocity is nonzero after it;
    - exact path: both angles are bitwise constant over the drift window (ptp 0);
    - Kikuuwe: the drift stays bounded near 0: ptp ≤ 2F/K (the stroke of its
      spring, 2e-4 rad) and the net trend ≤ `bounded_trend` × ptp;
    - LuGre: the drift grows: net trend ≥ `creep_trend` × ptp (the creep
      dominates the oscillation) and the last third of the window still moves
      on at ≥ `creep_growth` × the rate of the second (not settling).
    """
    c = settings["claims"]
    lo, hi = settings["experiment"]["drift_window"]
    claims = []
    for r in rows:
        label = f"{r['arm']} | {r['law']}, {r['setting']}"
        if r["result"] != "successful":
            claims.append(claim(False, f"{label}: run failed ({r['result']})"))
            continue
        ptp = np.array([r["drift0"], r["drift1"]])
        trend = np.abs([r["trend0"], r["trend1"]])
        growth = np.array([r["growth0"], r["growth1"]], dtype=float)
        if r["law"].startswith("Coulomb"):
            stop, tol = c["stop_time"], c["stop_tolerance"]
            moving = r["last_nonzero_velocity"]
            still_after = moving is None or moving <= r["last_event"]
            claims.append(
                claim(
                    abs(r["last_event"] - stop) <= tol and still_after,
                    f"{label}: stops at t = {r['last_event']:.4f} s (last switch; "
                    f"no nonzero saved velocity after it: {still_after}); "
                    f"target {stop:g} ± {tol:g} s",
                )
            )
            claims.append(
                claim(
                    bool(np.all(ptp == 0.0)) and r["bitwise_still"],
                    f"{label}: drift over [{lo:g}, {hi:g}] s = {ptp[0]:.1e} / "
                    f"{ptp[1]:.1e} rad, bitwise still {r['bitwise_still']}; "
                    "target exactly 0",
                )
            )
        elif r["law"].startswith("Kikuuwe"):
            model = next(
                m
                for m in settings["models"]
                if m["law"] == r["law"] and m["setting"] == r["setting"]
            )
            stroke = 2.0 * model["friction"]["f"] / model["friction"]["k"]
            ratio = float(np.max(trend / ptp))
            claims.append(
                claim(
                    bool(np.all(ptp <= stroke)) and ratio <= c["bounded_trend"],
                    f"{label}: bounded drift: ptp {ptp[0]:.2e} / {ptp[1]:.2e} rad "
                    f"(target <= 2F/K = {stroke:.0e}), |trend|/ptp {ratio:.3f} "
                    f"(target <= {c['bounded_trend']:g}); max |f|/F in the window "
                    f"{r['friction_peak']:.3f}",
                )
            )
        elif r["law"].startswith("LuGre"):
            ratio = float(np.min(trend / ptp))
            grows = bool(np.all(growth >= c["creep_growth"]))
            claims.append(
                claim(
                    ratio >= c["creep_trend"] and grows,
                    f"{label}: drift grows: trend {r['trend0']:.2e} / "
                    f"{r['trend1']:.2e} rad, |trend|/ptp {ratio:.2f} (target >= "
                    f"{c['creep_trend']:g}), growth {growth[0]:.2f} / "
                    f"{growth[1]:.2f} (target >= {c['creep_growth']:g})",
                )
            )
    return claims


def main():
    settings = load_settings(NAME)
    _check_keys(settings, _SECTIONS, "settings:")
    exp = settings["experiment"]
    _check_keys(exp, _EXPERIMENT_KEYS, "[experiment]")
    _check_keys(settings["torque"], _TORQUE_KEYS, "[torque]")
    _check_keys(settings["claims"], _CLAIM_KEYS, "[claims]")
    force = make_torque(settings["torque"])

    rows, solutions = [], {}
    for a, arm in enumerate(settings["arms"]):
        _check_keys(arm, _ARM_KEYS, f"[[arms]] #{a}")
        system = build("system", arm["system"], section=f"[[arms]] #{a} system")
        for index, model in enumerate(settings["models"]):
            _check_keys(model, _MODEL_KEYS, f"[[models]] #{index}")
            sol, wall = run_model(system, model, index, exp, force)
            label = f"{model['law']}, {model['setting']}"
            solutions[(arm["name"], label)] = sol
            rows.append(summary_row(arm, model, sol, wall, exp))
            r = rows[-1]
            print(
                f"{arm['name']} | {label}: {r['result']}, "
                f"drift {r.get('drift0', float('nan')):.2e} / "
                f"{r.get('drift1', float('nan')):.2e} rad, {wall:.1f} s"
            )

    lo, hi = exp["drift_window"]
    columns = [
        ("arm", "arm", ""),
        ("law", "law", ""),
        ("setting", "setting", ""),
        ("q0_final", "θ0(t1)", ".5f"),
        ("q1_final", "θ1(t1)", ".5f"),
        ("drift0", f"ptp θ0 [{lo:g},{hi:g}]", ".2e"),
        ("drift1", f"ptp θ1 [{lo:g},{hi:g}]", ".2e"),
        ("trend0", "trend θ0", ".2e"),
        ("trend1", "trend θ1", ".2e"),
        ("growth0", "growth θ0", ".2f"),
        ("growth1", "growth θ1", ".2f"),
        ("friction_peak", "max |f|/F", ".3f"),
        ("bitwise_still", "bitwise still", ""),
        ("last_event", "last event [s]", ".4f"),
        ("num_vf_evals", "VF evals", "d"),
        ("wall_s", "wall [s]", ".1f"),
        ("result", "result", ""),
    ]
    table = print_table(rows, columns)
    claims = check_claims(rows, settings)
    print_claims(claims)

    out_dir = results_dir(NAME)
    fig = make_figure(solutions, settings)
    fig.savefig(out_dir / "figure.png", dpi=130)
    write_json(
        {
            "experiment": NAME,
            "reference": "Kikuuwe & Yamamoto, Sec. IV-B, Eq. 28, Fig. 7",
            "settings": settings,
            "rows": rows,
            "table_markdown": table,
            "claims": claims,
            "notes": {
                "arms": "link masses/lengths are not given in the paper; uniform "
                "rods (I = m l^2/12 about the centre, centre at mid-length), "
                "horizontal plane, q = (shoulder angle, elbow angle relative to "
                "link 1), both starting at 0 at rest",
                "lugre": "Canudas de Wit et al. 1995 bristle values sigma0 = 1e5, "
                "sigma1 = sqrt(sigma0), with sigma2 = 0 and fs = fc = 0.5 N m (the "
                "Coulomb level of the paper, no viscous term)",
                "kikuuwe": "K = 5000 N m/rad, B = 1 N m s/rad, F = 0.5 N m (paper); "
                "T = step of the generalised RK4 (Eq. 21)",
                "drift": "ptp = max - min of each angle over the saved times in "
                "the drift window (exact: 0); trend = mean over the window's last "
                "third minus mean over its first third (a bounded oscillation "
                "has trend ~0, a creep grows with the window); growth = (last − "
                "middle third) / (middle − first third): ~1 for a steady creep",
                "friction_peak": "max |friction| over the saved times in the "
                "window / F: reaches 1 when an element slips (for Kikuuwe: its "
                "massless anchor slides, i.e. the model drifts)",
                "bitwise_still": "every saved angle in the window equals the first",
                "last_event": "last mode switch of the switch path (the arm's stop)",
                "wall_s": "wall time of the call, compilation included for the "
                "first arm (jf.simulate compiles once per structure)",
            },
        },
        out_dir / "summary.json",
    )
    print(f"wrote {out_dir / 'figure.png'} and {out_dir / 'summary.json'}")


def make_figure(solutions, settings):
    """Angles against time (full run, and near the stop as in Fig. 7) and the
    drift ``q(t) − q(t_lo)`` in the drift window, for the figure arm."""
    import matplotlib as mpl
    from matplotlib.figure import Figure

    exp = settings["experiment"]
    arm = exp["figure_arm"]
    lo, hi = exp["drift_window"]
    t_switch = settings["torque"]["t_switch"]
    chosen = {label: sol for (name, label), sol in solutions.items() if name == arm}
    fig = Figure(figsize=(13.0, 10.0), layout="constrained")
    axes = fig.subplots(3, 2)
    colors = mpl.colormaps["tab10"](np.arange(max(len(chosen), 1)) % 10)
    styles = ["-", "--", "-.", ":", "-", "--"]
    final = None
    for k, (color, (label, sol)) in enumerate(
        zip(colors, chosen.items(), strict=False)
    ):
        ts, q = np.asarray(sol.ts), np.asarray(sol.q)
        if not np.all(np.isfinite(q)):
            continue  # a failed run (see the table)
        if final is None:
            final = q[-1]  # the first model (the exact path) sets the zoom
        style = dict(color=color, lw=1.0, ls=styles[k % len(styles)])
        late = ts >= t_switch
        window = (ts >= lo) & (ts <= hi)
        for j in range(2):
            axes[0, j].plot(ts, q[:, j], label=label if j == 0 else None, **style)
            axes[1, j].plot(ts[late], q[late, j], **style)
            axes[2, j].plot(ts[window], q[window, j] - q[window, j][0], **style)
    for j in range(2):
        axes[0, j].set_title(f"joint {j}")
        axes[0, j].set_ylabel(f"θ{j} [rad]")
        axes[1, j].set_ylabel(f"θ{j} [rad], near the stop")
        if final is not None:
            axes[1, j].set_ylim(final[j] - 0.03, final[j] + 0.01)
        axes[2, j].set_ylabel(f"θ{j}(t) − θ{j}({lo:g} s) [rad]")
        axes[2, j].set_xlabel("t [s]")
        axes[2, j].ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
        for i, ax in enumerate(axes[:, j]):
            ax.grid(True, lw=0.3)
            if i < 2:
                ax.axvline(t_switch, color="0.6", lw=0.6)
    fig.legend(loc="outside lower center", ncols=3, fontsize="small")
    fig.suptitle(
        f"Kikuuwe & Yamamoto two-link arm (Eq. 28, Fig. 7), {arm}, Coulomb 0.5 N·m"
    )
    return fig


if __name__ == "__main__":
    main()
