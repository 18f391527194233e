"""Benchmark: exact stick–slip with jaxfric (`jax.vmap`) against a scipy
event-driven loop and MuJoCo's ``frictionloss``, one run, side by side.

Problems (unit mass and stiffness, Coulomb level ``Fc``, 10 s each):

- free: ``ẍ + x = −f``, ``x(0)`` spread over ``[1.5, 6]``, ``ẋ(0) = 0``. Exact:
  each half swing (duration π) is a cosine about ``sign(x_k)·Fc`` and reduces the
  amplitude by ``2 Fc``; the mass sticks for good once ``|x_k| <= Fc`` at a
  velocity zero;
- forced: ``ẍ + x = A sin ωt − f`` from rest at ``x = 0`` (stuck at first),
  ``(A, ω)`` on a grid; reference: the scipy event-driven loop below at
  ``rtol = 1e-12``;
- creep: a mass stuck at ``x(0) = 0.5`` (spring force 0.5 below ``Fc``) for 5 s.

Methods:

(a) jaxfric: `jaxfric.simulate` (exact switch path, defaults: Tsit5,
    ``rtol = 1e-10``, ``atol = 1e-12``, ``dtmax = t1/100``) under `jax.vmap`
    and `jax.jit`; time after compilation, per simulation = batch / size;
    also with ``solver = diffrax.Dopri8()``, the 8th-order Dormand–Prince
    pair that scipy's DOP853 in (b) uses;
(b) scipy: `scipy.integrate.solve_ivp` with terminal events, the same switch
    logic (velocity zero → stick if ``|net| <= Fc``; stuck → slip when
    ``|net|`` reaches ``Fc``; `_common.scipy_stick_slip`), at ``rtol = 1e-10``;
    a subset;
(c) MuJoCo: a slide joint with ``frictionloss = Fc``, joint ``stiffness = 1``,
    a motor for the forcing, ``dt = 1e-3`` (Euler), default and tuned
    ``noslip_iterations`` / ``solreffriction``; `mujoco.rollout` (C loop).

Timings are taken twice (`timing_passes`), the load average is recorded with
each pass (other jobs share this 2-core machine).

Run: ``python experiments/bench_stick_slip.py [SETTINGS.toml]``.
"""

import os
import time

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
from _common import (
    best_time,
    claim,
    enable_float64,
    exact_free,
    load_average,
    load_settings,
    print_claims,
    print_table,
    results_dir,
    scipy_stick_slip,
    write_json,
)

enable_float64()

import jaxfric as jf  # noqa: E402

NAME = "bench_stick_slip"


# --- exact and reference solutions -------------------------------------------


def scipy_batch(params, prob, ts, *, method, rtol, atol):
    """`scipy_stick_slip` (unit mass and spring, Coulomb level ``fc``) for every
    ``(x0, A, ω)`` row; best-effort wall time."""
    max_step = prob["t1"] / 100.0  # as jaxfric's default dtmax
    out_x, out_v, events = [], [], []
    start = time.perf_counter()
    for x0, amp, omega in params:
        xs, vs, ne = scipy_stick_slip(
            ts,
            t1=prob["t1"],
            amplitude=amp,
            omega=omega,
            fc=prob["fc"],
            x0=x0,
            method=method,
            rtol=rtol,
            atol=atol,
            stick_max_step=max_step,
            slip_max_step=max_step,
        )
        out_x.append(xs)
        out_v.append(vs)
        events.append(ne)
    wall = time.perf_counter() - start
    return np.array(out_x), np.array(out_v), np.array(events), wall


# --- jaxfric -----------------------------------------------------------------


def jaxfric_runners(prob, num_save, solver=None):
    """Jitted, vmapped simulations of the free and forced problems, saving
    `num_save` uniform times (2: the initial and final states only); `solver`:
    a diffrax solver (default: the switch path's, Tsit5)."""
    system = jf.systems.Oscillator(mass=1.0, stiffness=1.0)
    law = jf.Coulomb(prob["fc"])

    def free(x0):
        return jf.simulate(
            system,
            law,
            x0,
            0.0,
            prob["t1"],
            num_save=num_save,
            solver=solver,
            throw=False,
        )

    def forced(amplitude, omega):
        force = jf.forces.Sine(amplitude=amplitude, omega=omega)
        return jf.simulate(
            system,
            law,
            prob["forced_x0"],
            0.0,
            prob["t1"],
            force=force,
            num_save=num_save,
            solver=solver,
            throw=False,
        )

    def creep(x0):
        return jf.simulate(system, law, x0, 0.0, prob["creep_t1"], num_save=num_save)

    return jax.jit(jax.vmap(free)), jax.jit(jax.vmap(forced)), creep


# --- MuJoCo ------------------------------------------------------------------


def mujoco_model(variant, prob, timestep):
    import mujoco

    extra = ""
    if "solreffriction" in variant:
        extra += ' solreffriction="{} {}"'.format(*variant["solreffriction"])
    xml = f"""<mujoco>
  <option timestep="{timestep}" gravity="0 0 0"
          noslip_iterations="{variant.get("noslip_iterations", 0)}"/>
  <worldbody><body>
    <joint name="x" type="slide" axis="1 0 0" stiffness="1" springref="0"
           frictionloss="{prob["fc"]}"{extra}/>
    <geom type="sphere" size="0.1" mass="1" contype="0" conaffinity="0"/>
  </body></worldbody>
  <actuator><motor joint="x" gear="1"/></actuator>
</mujoco>"""
    return mujoco.MjModel.from_xml_string(xml)


def mujoco_rollout(model, x0, controls, nstep, threads, chunk):
    """Final ``(x, v)`` of rollouts from rest at `x0`; `controls` per member
    ``(n, nstep)`` or `None`. Returns ``(x, v, wall)``."""
    import mujoco
    from mujoco import rollout

    datas = [mujoco.MjData(model) for _ in range(threads)]
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state0 = np.zeros(mujoco.mj_stateSize(model, spec))
    mujoco.mj_getState(model, datas[0], state0, spec)
    # Full-physics state of this model: (time, qpos, qvel).
    xs, vs = np.empty(len(x0)), np.empty(len(x0))
    wall = 0.0
    # One thread: the rollout runs on the calling thread (no pool).
    data = datas[0] if threads == 1 else datas
    with rollout.Rollout(nthread=0 if threads == 1 else threads) as runner:
        for lo in range(0, len(x0), chunk):
            hi = min(lo + chunk, len(x0))
            init = np.tile(state0, (hi - lo, 1))
            init[:, 1] = x0[lo:hi]
            ctrl = None if controls is None else controls[lo:hi, :, None]
            start = time.perf_counter()
            state, _ = runner.rollout(
                model,
                data,
                init,
                ctrl,
                nstep=nstep,
                chunk_size=max(1, (hi - lo) // threads),
            )
            wall += time.perf_counter() - start
            xs[lo:hi], vs[lo:hi] = state[:, -1, 1], state[:, -1, 2]
    return xs, vs, wall


def mujoco_creep(model, x0, t1):
    import mujoco

    data = mujoco.MjData(model)
    data.qpos[0] = x0
    mujoco.mj_forward(model, data)
    steps = int(round(t1 / model.opt.timestep))
    xs = np.empty(steps)
    for k in range(steps):
        mujoco.mj_step(model, data)
        xs[k] = data.qpos[0]
    return float(abs(xs[-1] - x0)), float(np.max(np.abs(xs - x0))), float(data.qvel[0])


# --- the run -----------------------------------------------------------------


def problem_arrays(prob):
    x0 = np.linspace(*prob["x0_range"], prob["n_free"])
    amps = np.linspace(*prob["amplitude_range"], prob["n_amplitude"])
    omegas = np.linspace(*prob["omega_range"], prob["n_omega"])
    amp, omega = (a.ravel() for a in np.meshgrid(amps, omegas, indexing="ij"))
    ts = np.linspace(0.0, prob["t1"], prob["num_save"])
    return x0, amp, omega, ts


def subset(n, k):
    return np.unique(np.linspace(0, n - 1, min(k, n)).round().astype(int))


def main():
    settings = load_settings(NAME)
    prob, sp, mj = settings["problem"], settings["scipy"], settings["mujoco"]
    x0, amp, omega, ts = problem_arrays(prob)
    n_free, n_forced = len(x0), len(amp)
    x_exact, v_exact = exact_free(x0, ts, prob["fc"])

    # Reference for the forced problem (tight scipy), on `n_reference` members.
    ref_idx = subset(n_forced, sp["n_reference"])
    start = time.perf_counter()
    params = [(prob["forced_x0"], amp[i], omega[i]) for i in ref_idx]
    x_ref, v_ref, ev_ref, _ = scipy_batch(
        params,
        prob,
        ts,
        method=sp["method"],
        rtol=sp["reference_rtol"],
        atol=sp["reference_atol"],
    )
    print(
        f"reference: {len(ref_idx)} forced runs (scipy {sp['method']}, rtol "
        f"{sp['reference_rtol']:g}) in {time.perf_counter() - start:.1f} s; events "
        f"per run {ev_ref.min()}–{ev_ref.max()} (median {np.median(ev_ref):g})"
    )

    free_fn, forced_fn, creep_fn = jaxfric_runners(prob, prob["num_save"])
    # Timed as well: final state only, the cheapest output.
    free_end, forced_end, _ = jaxfric_runners(prob, 2)
    # The 8th-order Dormand–Prince pair, as scipy's DOP853 below.
    free_d8, forced_d8, _ = jaxfric_runners(prob, 2, diffrax.Dopri8())
    compile_s = {}
    for name, fn, args in (
        ("free", free_fn, (jnp.asarray(x0),)),
        ("forced", forced_fn, (jnp.asarray(amp), jnp.asarray(omega))),
        ("free, final state", free_end, (jnp.asarray(x0),)),
        ("forced, final state", forced_end, (jnp.asarray(amp), jnp.asarray(omega))),
        ("free, Dopri8", free_d8, (jnp.asarray(x0),)),
        ("forced, Dopri8", forced_d8, (jnp.asarray(amp), jnp.asarray(omega))),
    ):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        compile_s[name] = time.perf_counter() - start

    # Accuracy (independent of timing).
    sol_free = free_fn(jnp.asarray(x0))
    forced_args = (jnp.asarray(amp), jnp.asarray(omega))
    sol_forced = forced_fn(*forced_args)
    acc = {"jaxfric": {}, "scipy": {}}
    q_free = np.asarray(sol_free.q[..., 0])
    qd_free = np.asarray(sol_free.qd[..., 0])
    acc["jaxfric"]["free"] = {
        "successful": int(np.sum(np.asarray(sol_free.result._value) == 0)),
        "error_final": float(np.max(np.abs(q_free[:, -1] - x_exact[:, -1]))),
        "error_traj": float(np.max(np.abs(q_free - x_exact))),
        "velocity_error_traj": float(np.max(np.abs(qd_free - v_exact))),
        "final_velocity_exactly_zero": int(np.sum(qd_free[:, -1] == 0.0)),
        "max_events": int(np.max(sol_free.stats["num_events"])),
    }
    q_forced = np.asarray(sol_forced.q[..., 0])[ref_idx]
    qd_forced = np.asarray(sol_forced.qd[..., 0])[ref_idx]
    ev_forced = np.asarray(sol_forced.stats["num_events"])
    acc["jaxfric"]["forced"] = {
        "successful": int(np.sum(np.asarray(sol_forced.result._value) == 0)),
        "error_final": float(np.max(np.abs(q_forced[:, -1] - x_ref[:, -1]))),
        "error_traj": float(np.max(np.abs(q_forced - x_ref))),
        "velocity_error_traj": float(np.max(np.abs(qd_forced - v_ref))),
        "event_count_mismatch": int(np.sum(ev_forced[ref_idx] != ev_ref)),
        "max_events": int(np.max(ev_forced)),
    }
    d8_free, d8_forced = free_d8(jnp.asarray(x0)), forced_d8(*forced_args)
    acc["jaxfric_dopri8"] = {
        "free": {
            "successful": int(np.sum(np.asarray(d8_free.result._value) == 0)),
            "error_final": float(
                np.max(np.abs(np.asarray(d8_free.q[:, -1, 0]) - x_exact[:, -1]))
            ),
        },
        "forced": {
            "successful": int(np.sum(np.asarray(d8_forced.result._value) == 0)),
            "error_final": float(
                np.max(np.abs(np.asarray(d8_forced.q[ref_idx, -1, 0]) - x_ref[:, -1]))
            ),
            "event_count_mismatch": int(
                np.sum(np.asarray(d8_forced.stats["num_events"])[ref_idx] != ev_ref)
            ),
        },
    }

    # Creep of a stuck mass.
    sol_creep = creep_fn(prob["creep_x0"])
    creep = {
        "jaxfric": {
            "creep_final": float(abs(sol_creep.q[-1, 0] - prob["creep_x0"])),
            "creep_max": float(np.max(np.abs(sol_creep.q[:, 0] - prob["creep_x0"]))),
            "velocity_final": float(sol_creep.qd[-1, 0]),
        }
    }

    # scipy subset (accuracy from the first pass; timing in each pass).
    sub_free = subset(n_free, sp["n_subset"])
    sub_forced = ref_idx[subset(len(ref_idx), sp["n_subset"])]
    pos_in_ref = np.searchsorted(ref_idx, sub_forced)

    sx, *_ = scipy_batch(
        [(x, 0.0, 0.0) for x in x0[sub_free]],
        prob,
        ts,
        method=sp["method"],
        rtol=sp["rtol"],
        atol=sp["atol"],
    )
    fx, *_ = scipy_batch(
        [(prob["forced_x0"], amp[i], omega[i]) for i in sub_forced],
        prob,
        ts,
        method=sp["method"],
        rtol=sp["rtol"],
        atol=sp["atol"],
    )
    acc["scipy"]["free"] = {
        "error_final": float(np.max(np.abs(sx[:, -1] - x_exact[sub_free, -1]))),
        "error_traj": float(np.max(np.abs(sx - x_exact[sub_free]))),
    }
    acc["scipy"]["forced"] = {
        "error_final": float(np.max(np.abs(fx[:, -1] - x_ref[pos_in_ref, -1]))),
        "error_traj": float(np.max(np.abs(fx - x_ref[pos_in_ref]))),
    }

    nstep = int(round(prob["t1"] / mj["timestep"]))
    controls = amp[:, None] * np.sin(omega[:, None] * mj["timestep"] * np.arange(nstep))
    models = {v["name"]: mujoco_model(v, prob, mj["timestep"]) for v in mj["variants"]}

    # MuJoCo accuracy on every member (untimed) and the creep of a stuck mass.
    acc["mujoco"] = {}
    for name, model in models.items():
        threads = max(mj["threads"])
        xf, vf, _ = mujoco_rollout(model, x0, None, nstep, threads, mj["chunk"])
        xg, _, _ = mujoco_rollout(
            model,
            np.full(n_forced, prob["forced_x0"]),
            controls,
            nstep,
            threads,
            mj["chunk"],
        )
        acc["mujoco"][name] = {
            "free": {
                "error_final": float(np.max(np.abs(xf - x_exact[:, -1]))),
                "final_velocity_exactly_zero": int(np.sum(vf == 0.0)),
            },
            "forced": {
                "error_final": float(np.max(np.abs(xg[ref_idx] - x_ref[:, -1])))
            },
        }
        c_final, c_max, c_vel = mujoco_creep(model, prob["creep_x0"], prob["creep_t1"])
        creep[f"MuJoCo {name}"] = {
            "creep_final": c_final,
            "creep_max": c_max,
            "velocity_final": c_vel,
        }

    passes = []
    for p in range(settings["timing_passes"]):
        timing = {"load_before": load_average()}
        repeats = settings["jaxfric"]["repeats"]
        for key, fns in (
            ("jaxfric", (free_end, forced_end)),
            ("jaxfric_saved", (free_fn, forced_fn)),
            ("jaxfric_dopri8", (free_d8, forced_d8)),
        ):
            t_free, _ = best_time(fns[0], (jnp.asarray(x0),), repeats)
            t_forced, _ = best_time(
                fns[1], (jnp.asarray(amp), jnp.asarray(omega)), repeats
            )
            timing[key] = {
                "free_ms": 1e3 * t_free / n_free,
                "forced_ms": 1e3 * t_forced / n_forced,
            }
        # Final state only, as the timed jaxfric row.
        ends = ts[[0, -1]]
        *_, s_wall_free = scipy_batch(
            [(x, 0.0, 0.0) for x in x0[sub_free]],
            prob,
            ends,
            method=sp["method"],
            rtol=sp["rtol"],
            atol=sp["atol"],
        )
        *_, s_wall_forced = scipy_batch(
            [(prob["forced_x0"], amp[i], omega[i]) for i in sub_forced],
            prob,
            ends,
            method=sp["method"],
            rtol=sp["rtol"],
            atol=sp["atol"],
        )
        timing["scipy"] = {
            "free_ms": 1e3 * s_wall_free / len(sub_free),
            "forced_ms": 1e3 * s_wall_forced / len(sub_forced),
        }
        timing["mujoco"] = {}
        sub_mj = subset(n_free, mj["n_timing"])
        for name, model in models.items():
            for threads in mj["threads"]:
                *_, w_free = mujoco_rollout(
                    model, x0[sub_mj], None, nstep, threads, mj["chunk"]
                )
                *_, w_forced = mujoco_rollout(
                    model,
                    np.full(len(sub_mj), prob["forced_x0"]),
                    controls[sub_mj],
                    nstep,
                    threads,
                    mj["chunk"],
                )
                timing["mujoco"][f"{name}|{threads}"] = {
                    "free_ms": 1e3 * w_free / len(sub_mj),
                    "forced_ms": 1e3 * w_forced / len(sub_mj),
                }
        timing["load_after"] = load_average()
        passes.append(timing)
        print(
            f"timing pass {p + 1}: load {timing['load_before']} → "
            f"{timing['load_after']}"
        )

    rows = build_rows(settings, acc, creep, passes)
    columns = [
        ("method", "method", ""),
        ("free_ms", "free [ms/sim]", ".3f"),
        ("forced_ms", "forced [ms/sim]", ".3f"),
        ("free_ms_2", "free, pass 2", ".3f"),
        ("forced_ms_2", "forced, pass 2", ".3f"),
        ("free_err", "free err x(10)", ".1e"),
        ("free_err_traj", "free err x(t)", ".1e"),
        ("forced_err", "forced err x(10)", ".1e"),
        ("creep", "creep |x(5)−0.5|", ".1e"),
        ("free_vs_jaxfric", "free time / jaxfric", ".1f"),
    ]
    table = print_table(rows, columns)
    claims = [
        claim(t["met"], f"{t['target']}: {t['value']}")
        for t in check_targets(settings, acc, creep, passes)
    ]
    print_claims(claims)

    out_dir = results_dir(NAME)
    fig = make_figure(ts, x0, x_exact, sol_free, sol_forced, ref_idx, x_ref, amp, omega)
    fig.savefig(out_dir / "figure.png", dpi=130)
    write_json(
        {
            "experiment": NAME,
            "settings": settings,
            "rows": rows,
            "claims": claims,
            "accuracy": acc,
            "creep": creep,
            "timing_passes": passes,
            "compile_s": compile_s,
            "devices": [str(d) for d in jax.devices()],
            "cpu_count": os.cpu_count(),
            "table_markdown": table,
            "notes": {
                "ms/sim": "wall time of the whole batch / batch size; jaxfric: best "
                "of `repeats` after compilation, vmap over 1000; scipy: a loop over "
                "the subset; MuJoCo: mujoco.rollout over n_timing members "
                "(errors: all members)",
                "free err": "max over members of |x − exact| (x(t): over the saved "
                "times)",
                "forced err": "max over the reference members of |x(10) − x_ref(10)|, "
                "x_ref from scipy at reference_rtol",
                "creep": "mass released at rest at creep_x0 (spring force below Fc), "
                "|x(creep_t1) − creep_x0|",
            },
        },
        out_dir / "summary.json",
    )
    print(f"wrote {out_dir / 'figure.png'} and {out_dir / 'summary.json'}")


def build_rows(settings, acc, creep, passes):
    mj = settings["mujoco"]
    first, last = passes[0], passes[-1]
    n_save = settings["problem"]["num_save"]
    rows = [
        {
            "method": f"jaxfric vmap (switch, {label}",
            "free_ms": first[key]["free_ms"],
            "forced_ms": first[key]["forced_ms"],
            "free_ms_2": last[key]["free_ms"],
            "forced_ms_2": last[key]["forced_ms"],
            "free_err": acc[source]["free"]["error_final"],
            "free_err_traj": acc[source]["free"].get("error_traj"),
            "forced_err": acc[source]["forced"]["error_final"],
            "creep": creep["jaxfric"]["creep_final"] if source == "jaxfric" else None,
        }
        for key, source, label in (
            ("jaxfric", "jaxfric", "Tsit5, rtol 1e-10), final state"),
            ("jaxfric_saved", "jaxfric", f"Tsit5, rtol 1e-10), {n_save} saved times"),
            ("jaxfric_dopri8", "jaxfric_dopri8", "Dopri8, rtol 1e-10), final state"),
        )
    ]
    rows += [
        {
            "method": f"scipy solve_ivp loop ({settings['scipy']['method']}, rtol "
            f"{settings['scipy']['rtol']:g}, {settings['scipy']['n_subset']} runs)",
            "free_ms": first["scipy"]["free_ms"],
            "forced_ms": first["scipy"]["forced_ms"],
            "free_ms_2": last["scipy"]["free_ms"],
            "forced_ms_2": last["scipy"]["forced_ms"],
            "free_err": acc["scipy"]["free"]["error_final"],
            "free_err_traj": acc["scipy"]["free"]["error_traj"],
            "forced_err": acc["scipy"]["forced"]["error_final"],
        },
    ]
    for v in mj["variants"]:
        for threads in mj["threads"]:
            key = f"{v['name']}|{threads}"
            row = {
                "method": f"MuJoCo {v['name']}, dt {mj['timestep']:g}, "
                f"{threads} thread{'s' if threads > 1 else ''}",
                "free_ms": first["mujoco"][key]["free_ms"],
                "forced_ms": first["mujoco"][key]["forced_ms"],
                "free_ms_2": last["mujoco"][key]["free_ms"],
                "forced_ms_2": last["mujoco"][key]["forced_ms"],
                "free_err": acc["mujoco"][v["name"]]["free"]["error_final"],
                "forced_err": acc["mujoco"][v["name"]]["forced"]["error_final"],
                "creep": creep[f"MuJoCo {v['name']}"]["creep_final"],
            }
            rows.append(row)
    base = min(first["jaxfric"]["free_ms"], last["jaxfric"]["free_ms"])
    for r in rows:
        r["free_vs_jaxfric"] = min(r["free_ms"], r["free_ms_2"]) / base
    return rows


def check_targets(settings, acc, creep, passes):
    tg = settings["targets"]
    jx = [p["jaxfric"] for p in passes]
    free_ms = min(j["free_ms"] for j in jx)
    err = max(
        acc["jaxfric"]["free"]["error_traj"],
        acc["jaxfric"]["forced"]["error_final"],
        acc["jaxfric_dopri8"]["free"]["error_final"],
        acc["jaxfric_dopri8"]["forced"]["error_final"],
    )

    def speedups(key):
        pairs = [(p["scipy"], p[key]) for p in passes]
        return (
            [s["free_ms"] / j["free_ms"] for s, j in pairs],
            [s["forced_ms"] / j["forced_ms"] for s, j in pairs],
        )

    def speed_text(speed, speed_f):
        return (
            "free "
            + ", ".join(f"{s:.0f}x" for s in speed)
            + "; forced "
            + ", ".join(f"{s:.0f}x" for s in speed_f)
        )

    speed, speed_f = speedups("jaxfric")
    speed8, speed8_f = speedups("jaxfric_dopri8")
    mj_keys = passes[0]["mujoco"].keys()
    mj_fastest = min(min(p["mujoco"][k]["free_ms"] for p in passes) for k in mj_keys)
    mj_fastest_forced = min(
        min(p["mujoco"][k]["forced_ms"] for p in passes) for k in mj_keys
    )
    forced_ms = min(j["forced_ms"] for j in jx)
    creeping = [k for k, c in creep.items() if k != "jaxfric" and c["creep_final"] > 0]
    return [
        {
            "target": f"jaxfric error <= {tg['error']:g}",
            "value": f"free x(t) {acc['jaxfric']['free']['error_traj']:.1e}, forced "
            f"x(10) {acc['jaxfric']['forced']['error_final']:.1e} (Tsit5); free "
            f"x(10) {acc['jaxfric_dopri8']['free']['error_final']:.1e}, forced "
            f"{acc['jaxfric_dopri8']['forced']['error_final']:.1e} (Dopri8)",
            "met": err <= tg["error"],
        },
        {
            "target": f"free vmap <= {tg['free_ms_per_sim']:g} ms/sim",
            "value": f"{free_ms:.3f} ms",
            "met": free_ms <= tg["free_ms_per_sim"],
        },
        {
            "target": f">= {tg['speedup_vs_scipy']:g}x faster than scipy loop "
            "(default Tsit5)",
            "value": speed_text(speed, speed_f),
            "met": min(speed + speed_f) >= tg["speedup_vs_scipy"],
        },
        {
            "target": f">= {tg['speedup_vs_scipy']:g}x faster than scipy loop "
            "(Dopri8, the method of scipy's DOP853)",
            "value": speed_text(speed8, speed8_f),
            "met": min(speed8 + speed8_f) >= tg["speedup_vs_scipy"],
        },
        {
            "target": "faster than MuJoCo (dt 1e-3, fastest variant)",
            "value": f"free {mj_fastest / free_ms:.1f}x, forced "
            f"{mj_fastest_forced / forced_ms:.1f}x",
            "met": free_ms < mj_fastest and forced_ms < mj_fastest_forced,
        },
        {
            "target": "jaxfric stuck mass does not move; MuJoCo's creeps",
            "value": f"jaxfric {creep['jaxfric']['creep_final']:.1e}; creeping: "
            + (", ".join(creeping) or "none")
            + "; not creeping: "
            + (
                ", ".join(
                    k
                    for k, c in creep.items()
                    if k != "jaxfric" and c["creep_final"] == 0
                )
                or "none"
            ),
            "met": creep["jaxfric"]["creep_final"] == 0.0
            and len(creeping) == len(creep) - 1,
        },
    ]


def make_figure(ts, x0, x_exact, sol_free, sol_forced, ref_idx, x_ref, amp, omega):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13.0, 8.0), layout="constrained")
    (ax_free, ax_free_err), (ax_forced, ax_forced_err) = fig.subplots(2, 2)
    q_free = np.asarray(sol_free.q[..., 0])
    for i in np.linspace(0, len(x0) - 1, 8).round().astype(int):
        ax_free.plot(ts, q_free[i], lw=1.0)
        ax_free.plot(ts, x_exact[i], "k:", lw=0.8)
    ax_free.set_title("free oscillators (8 of the batch; dotted: exact)")
    err = np.max(np.abs(q_free - x_exact), axis=1)
    ax_free_err.semilogy(x0, np.maximum(err, 1e-17), ".", ms=2)
    ax_free_err.set_xlabel("x(0) [m]")
    ax_free_err.set_ylabel("max_t |x − exact| [m]")
    q_forced = np.asarray(sol_forced.q[..., 0])
    for i in ref_idx[np.linspace(0, len(ref_idx) - 1, 6).round().astype(int)]:
        ax_forced.plot(
            ts, q_forced[i], lw=1.0, label=f"A={amp[i]:.2f}, ω={omega[i]:.2f}"
        )
    ax_forced.legend(fontsize="x-small")
    ax_forced.set_title("forced oscillators (6 of the batch)")
    err_f = np.max(np.abs(q_forced[ref_idx] - x_ref), axis=1)
    sc = ax_forced_err.scatter(
        amp[ref_idx], omega[ref_idx], c=np.log10(np.maximum(err_f, 1e-17)), s=6
    )
    fig.colorbar(sc, ax=ax_forced_err, label="log10 max_t |x − x_ref|")
    ax_forced_err.set_xlabel("A [N]")
    ax_forced_err.set_ylabel("ω [rad/s]")
    for ax in (ax_free, ax_forced):
        ax.set_xlabel("t [s]")
        ax.set_ylabel("x [m]")
        ax.grid(True, lw=0.3)
    fig.suptitle("bench_stick_slip: jaxfric vmap (exact switch) against exact / scipy")
    return fig


if __name__ == "__main__":
    main()
