"""Benchmark: batches of slipping spheres reaching pure rolling (Kikuuwe &
Yamamoto 2008, Sec. IV-A) with random launch velocities and spins, every
friction law under `jax.vmap` against MuJoCo's batched rollout.

Member ``i`` is the solid sphere of ``kikuuwe_sphere`` (`FreeBodies` with a
`PlaneContact`, resting at its static penetration) launched with its own
centre velocity ``v0`` (horizontal) and angular velocity ``ω0`` (world frame).
Closed form for the constant normal force ``m g``: the contact point's slip
``u = v + ω × (−R e_z)`` keeps its direction ``û`` and its speed falls at
``(7/2) μ g`` (``1 + m R²/I = 7/2``), so rolling starts at ``t* = 2|u0|/(7 μ
g)`` with

    v(t*) = v0 − μ g t* û,    ω(t*) = ω0 + t* (−R e_z) × (−μ m g û) / I,

and both stay so (the spin about ``z`` never changes). Laws (`configs/
experiments/bench_spheres.toml`): exact `IsotropicCoulomb` on the switch path,
Kikuuwe's Eq. 23–24 on RK4, MotionSolve's `ContactLuGre`; each as one `jit` of
`vmap` over the members' ``q̇0``, saving only ``t1``. MuJoCo (`mujoco.rollout`,
the CPU's threads, timestep 1e-3; run only where JAX's backend is the CPU): a
free sphere, ``condim 3``, default and elliptic-cone settings.

Printed per engine and batch size: first call (compile and one run), best of
the warm calls, time per simulation, members failed, the largest errors of the
centre velocity and of ``R ω`` at ``t1`` against the closed form, the contact
point's slip speed at ``t1`` (creep: 0 when rolling) and, for the exact law,
its rolling time (the stop event) against ``t*``. Writes
``results/bench_spheres/figure.png`` (errors and time per simulation by
engine) and ``summary.json``.

Run: ``python experiments/bench_spheres.py [SETTINGS.toml]``.
"""

import jax
import jax.numpy as jnp
import numpy as np
from _common import (
    claim,
    enable_float64,
    load_average,
    load_settings,
    mujoco_rollout,
    print_claims,
    print_table,
    results_dir,
    timed,
    write_json,
)

enable_float64()

from incline_creep import mujoco_sphere  # noqa: E402
from kikuuwe_sphere import make_sphere, start_height  # noqa: E402

import jaxfric as jf  # noqa: E402
from jaxfric.io import build, parse_simulate  # noqa: E402
from jaxfric.io.config import simulate_options  # noqa: E402

NAME = "bench_spheres"
COLUMNS = [
    ("engine", "engine", ""),
    ("batch", "batch", "d"),
    ("first_call_s", "first call (s)", ".1f"),
    ("per_sim_ms", "per simulation (ms)", ".4f"),
    ("failed", "failed", "d"),
    ("max_steps", "most steps", "d"),
    ("v_error", "max |v − v*| (m/s)", ".1e"),
    ("w_error", "max R|ω − ω*| (m/s)", ".1e"),
    ("slip", "max |slip(t1)| (m/s)", ".1e"),
    ("roll_error", "max |t_roll − t*| (s)", ".1e"),
    ("load", "load", ".2f"),
]


def launches(batch, n):
    """``(v0, ω0)``, each (n, 3): the members' random launch velocities."""
    rng = np.random.default_rng(int(batch["seed"]))
    speed = rng.uniform(*map(float, batch["speed_range"]), n)
    angle = rng.uniform(0.0, 2 * np.pi, n)
    v0 = np.stack([speed * np.cos(angle), speed * np.sin(angle), np.zeros(n)], 1)
    spin = float(batch["spin"])
    return v0, rng.uniform(-spin, spin, (n, 3))


def closed_form(sphere, v0, w0):
    """``(t*, v(t*), ω(t*))`` per member (module docstring)."""
    mass, radius = float(sphere["mass"]), float(sphere["radius"])
    mu, g = float(sphere["mu"]), float(sphere["gravity"])
    down = np.array([0.0, 0.0, -radius])
    u0 = v0 + np.cross(w0, down)
    speed = np.linalg.norm(u0, axis=1)
    unit = u0 / speed[:, None]
    t_roll = 2 * speed / (7 * mu * g)
    friction = -mu * mass * g * unit
    v = v0 + friction / mass * t_roll[:, None]
    w = w0 + np.cross(down, friction) / (0.4 * mass * radius**2) * t_roll[:, None]
    return t_roll, v, w


def errors(sphere, reference, v, w, slip):
    """The checks of one batch's velocities at ``t1`` (n, 3) and contact slip
    speeds (n,) against the closed form (`reference`, `closed_form`'s)."""
    _, v_ref, w_ref = reference
    return dict(
        v_error=float(np.max(np.abs(v - v_ref))),
        w_error=float(np.max(np.abs(w - w_ref))) * float(sphere["radius"]),
        slip=float(np.max(slip)),
    )


def jaxfric_rows(settings, sizes):
    """One row per law and batch size."""
    sphere, batch = settings["sphere"], settings["batch"]
    system = make_sphere(sphere)
    height = start_height({"height": "static"}, sphere)
    q0 = jnp.array([0.0, 0.0, height, 1.0, 0.0, 0.0, 0.0])
    t1 = float(batch["t1"])
    rows = []
    for model in settings["models"]:
        section = f"[[models]] {model['law']}"
        law = build("friction", model["friction"], section=section)
        options = simulate_options(
            parse_simulate(
                {"t1": t1, **model.get("simulate", {})}, section=f"{section} simulate"
            )
        )

        @jax.jit
        @jax.vmap
        def run(qd0, law=law, options=options):
            return jf.simulate(
                system, law, q0, qd0, t1, ts=jnp.array([t1]), throw=False,
                options=options,
            )  # fmt: skip

        for n in sizes:
            v0, w0 = launches(batch, n)
            reference = closed_form(sphere, v0, w0)
            qd0 = jnp.asarray(np.concatenate([v0, w0], 1))
            first, best, sol = timed(run, (qd0,), int(batch["repeats"]))
            qd = np.asarray(sol.qd)[:, -1]
            slip = np.linalg.norm(np.asarray(sol.slip_velocity)[:, -1], axis=1)
            row = dict(
                engine=model["law"],
                family=model["friction"]["type"],
                batch=n,
                first_call_s=first,
                per_sim_ms=1e3 * best / n,
                failed=int(np.sum(np.asarray(sol.result._value) != 0)),
                max_steps=int(np.max(sol.stats["num_steps"])),
                load=load_average()[0],
                **errors(sphere, reference, qd[:, :3], qd[:, 3:], slip),
            )
            events = np.asarray(sol.event_times)
            if events.shape[1]:  # the switch path: the stop is an event
                t_roll = np.where(np.isfinite(events), events, np.inf).min(axis=1)
                row["roll_error"] = float(np.max(np.abs(t_roll - reference[0])))
                row["max_events"] = int(np.max(sol.stats["num_events"]))
            rows.append(row)
            print(f"{row['engine']}, {n}: {row['per_sim_ms']:.4f} ms per simulation")
    return rows


def mujoco_rows(settings, sizes):
    """One row per MuJoCo variant and batch size (`mujoco.rollout`)."""
    import mujoco

    sphere, batch, cfg = settings["sphere"], settings["batch"], settings["mujoco"]
    radius, dt = float(sphere["radius"]), float(cfg["timestep"])
    steps = int(round(float(batch["t1"]) / dt))
    threads = int(cfg["threads"])
    rows = []
    for variant in cfg["variants"]:
        model = mujoco_sphere(
            float(sphere["mass"]),
            radius,
            float(sphere["mu"]),
            (0.0, 0.0, -float(sphere["gravity"])),
            dt,
            variant["option"],
        )
        data = mujoco.MjData(model)
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        for n in sizes:
            v0, w0 = launches(batch, n)
            # Free joint: qvel = (linear world, angular local); local = world
            # at the identity attitude of the start.
            starts = [
                (np.array([0, 0, radius, 1, 0, 0, 0.0]), np.concatenate([a, b]))
                for a, b in zip(v0, w0, strict=True)
            ]
            first, _ = mujoco_rollout(model, starts, None, steps, threads)
            best, states = float("inf"), None
            for _ in range(int(batch["repeats"])):
                wall, states = mujoco_rollout(model, starts, None, steps, threads)
                best = min(best, wall)
            v, w = np.empty((n, 3)), np.empty((n, 3))
            velocity = np.empty(6)
            for i in range(n):
                mujoco.mj_setState(model, data, states[i, -1], spec)
                mujoco.mj_forward(model, data)
                # World-frame [angular; linear] velocity at the centre.
                mujoco.mj_objectVelocity(
                    model, data, mujoco.mjtObj.mjOBJ_BODY, 1, velocity, 0
                )
                w[i], v[i] = velocity[:3], velocity[3:]
            slip = np.linalg.norm((v + np.cross(w, [0.0, 0.0, -radius]))[:, :2], axis=1)
            rows.append(
                dict(
                    engine=f"{variant['name']}, dt {dt:g}",
                    family="MuJoCo",
                    batch=n,
                    first_call_s=first,
                    per_sim_ms=1e3 * best / n,
                    failed=int(np.sum(~np.isfinite(states[:, -1]).all(axis=1))),
                    max_steps=steps,
                    load=load_average()[0],
                    **errors(sphere, closed_form(sphere, v0, w0), v, w, slip),
                )
            )
            print(f"{rows[-1]['engine']}, {n}: {rows[-1]['per_sim_ms']:.4f} ms")
    return rows


def check_claims(rows, settings) -> list[dict]:
    """jaxfric's rows against the targets; MuJoCo's creep reported."""
    c = settings["claims"]
    claims = []
    for r in rows:
        label = f"{r['engine']}, {r['batch']}"
        if r["family"] == "MuJoCo":
            text = (
                f"{label}: contact slip at t1 up to {r['slip']:.1e} m/s, centre "
                f"velocity {r['v_error']:.1e} m/s from the closed form (reported)"
            )
            claims.append(claim(True, text))
            continue
        claims.append(claim(r["failed"] == 0, f"{label}: {r['failed']} failed"))
        tol = c["velocity_error"]
        worst = max(r["v_error"], r["w_error"])
        claims.append(
            claim(
                worst <= tol,
                f"{label}: velocities at t1 within {worst:.1e} m/s of the closed "
                f"form; target <= {tol:g}",
            )
        )
        if r["family"] == "IsotropicCoulomb":
            claims.append(
                claim(
                    r["roll_error"] <= c["exact_roll_time"],
                    f"{label}: rolling time within {r['roll_error']:.1e} s of "
                    f"2|u0|/(7μg); target <= {c['exact_roll_time']:g}",
                )
            )
            claims.append(
                claim(
                    r["slip"] <= c["exact_slip"],
                    f"{label}: contact slip at t1 <= {r['slip']:.1e} m/s; target "
                    f"<= {c['exact_slip']:g}",
                )
            )
    return claims


def make_figure(rows):
    """Time per simulation and the velocity error and creep per engine, at the
    largest batch of each."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11.0, 4.5), layout="constrained")
    axes = fig.subplots(1, 2)
    last = {}
    for r in rows:
        last[r["engine"]] = r
    names = list(last)
    y = np.arange(len(names))
    axes[0].barh(y, [last[k]["per_sim_ms"] for k in names])
    axes[0].set(xscale="log", xlabel="time per simulation [ms]",
                title="batch time per member")  # fmt: skip
    axes[0].set_yticks(y, [f"{k} ({last[k]['batch']})" for k in names], fontsize=7)
    floor = 1e-18  # an exact 0 on a log axis
    axes[1].barh(y - 0.2, [max(last[k]["v_error"], floor) for k in names],
                 height=0.4, label="max |v − v*| at t1")  # fmt: skip
    axes[1].barh(y + 0.2, [max(last[k]["slip"], floor) for k in names],
                 height=0.4, label="max contact slip at t1")  # fmt: skip
    axes[1].set(xscale="log", xlabel="m/s", title="against the closed form")
    axes[1].set_yticks(y, [""] * len(names))
    axes[1].legend(fontsize=7)
    return fig


def main():
    settings = load_settings(NAME)
    backend = jax.default_backend()
    sizes = [int(n) for n in settings["sizes"][backend]]
    rows = jaxfric_rows(settings, sizes)
    if backend == "cpu":
        rows += mujoco_rows(settings, sizes)
    print(f"backend: {backend} ({jax.devices()[0].device_kind})")
    table = print_table(rows, COLUMNS)
    claims = check_claims(rows, settings)
    print_claims(claims)
    out_dir = results_dir(NAME)
    make_figure(rows).savefig(out_dir / "figure.png", dpi=130)
    write_json(
        {
            "experiment": NAME,
            "reference": "Kikuuwe & Yamamoto 2008, Sec. IV-A (the sphere), closed "
            "form of a sphere slipping to rolling under constant normal force",
            "backend": backend,
            "device": jax.devices()[0].device_kind,
            "settings": settings,
            "rows": rows,
            "table_markdown": table,
            "claims": claims,
            "notes": {
                "first_call_s": "compile and one run of the whole batch (MuJoCo: "
                "one rollout, no compilation)",
                "per_sim_ms": "best warm call of the batch / batch size",
                "slip": "the contact point's speed at t1, after every member "
                "should roll (creep)",
            },
        },
        out_dir / "summary.json",
    )
    print(f"wrote {out_dir / 'figure.png'} and {out_dir / 'summary.json'}")


if __name__ == "__main__":
    main()
