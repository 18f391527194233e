"""Benchmark: jaxfric against MJX (MuJoCo's JAX port) on the same closed chains,
both batched with `jax.vmap` on JAX's default backend (a GPU where JAX has one).

MJX is the peer a JAX user would batch on a GPU. It closes loops with soft
equality constraints and models joint friction as ``frictionloss`` rows of its
constraint solver, so a stuck joint creeps; its JAX implementation has no
``noslip`` pass (MJX accepts ``noslip_iterations`` and ignores it).

Cases (float64 in both engines):

(a) the four-bar of ``bench_closed_chain`` (its ``[mechanism]`` and
    ``[problem]``): the crank holds its gravity load by Coulomb friction under a
    torque ramp ``rate·t`` and breaks away at ``t* = (fc + g(θ0))/rate``, rates
    spread over ``rate_range``. jaxfric: `ClosedChain` on the exact switch path
    (breakaway against the closed form); MJX: `bench_closed_chain.mujoco_model`
    (``connect`` loop, ``frictionloss``, a motor with control ``rate·t``), the
    crank's creep ``max |θ − θ0|`` over the saves before ``t*``.
(b) the 3-RPS of ``bench_3rps`` (PD tracking of the sinusoidal leg-length
    reference scaled per member over ``scale``, Coulomb ``fc`` per leg): jaxfric
    `bench_3rps.problem`; MJX `bench_3rps.mujoco_model` (ball joint, two
    ``connect`` loops, ``frictionloss`` on the slides, position and velocity
    actuators fed the reference), started from the same states. Compared: the
    legs' velocity in MJX at the saves where jaxfric holds them stuck (one save
    in from each stick phase's ends), the loop gap, the leg lengths.

MJX steps with `lax.scan` (outer scan over the saves, inner over the steps
between two saves), one `jax.jit` of `jax.vmap` over the members. Printed per
engine, variant and batch size: first call (compile and one run), best warm call
of ``repeats``, time per simulation, and the accuracy columns.

Run: ``python experiments/bench_mjx.py [SETTINGS.toml]`` (needs ``mujoco-mjx``,
the ``bench`` extra).
"""

import sys

import jax
import jax.numpy as jnp
import numpy as np
from _common import (
    CONFIGS,
    claim,
    enable_float64,
    load_average,
    load_settings,
    print_claims,
    print_table,
    read_settings,
    results_dir,
    timed,
    write_json,
)

enable_float64()

import _three_rps as rps  # noqa: E402
import bench_3rps  # noqa: E402
import bench_closed_chain  # noqa: E402
from _four_bar import breakaway_time, make_four_bar  # noqa: E402
from bench_gpu import (  # noqa: E402
    four_bar_member,
    row as gpu_row,
    sim_row,
)

NAME = "bench_mjx"
# The creep column: the four-bar crank's angle change before t*, the 3-RPS legs'
# speed where jaxfric holds them stuck.
CREEP_UNITS = {"four_bar": "rad", "three_rps": "m/s"}
COLUMNS = [
    ("engine", "engine", ""),
    ("batch", "batch", "d"),
    ("first_call_s", "first call (s)", ".1f"),
    ("per_sim_ms", "per simulation (ms)", ".3f"),
    ("failed", "failed", "d"),
    ("t_error", "breakaway error (s)", ".1e"),
    ("creep", "creep where jaxfric sticks", ".1e"),
    ("gap", "loop gap (m)", ".1e"),
    ("difference", "max |q − jaxfric's|", ".1e"),
]


def mjx_batch(model, control, steps_per_save, num_saves):
    """`jax.jit` of `jax.vmap` of an MJX rollout: ``(qpos0, qvel0, param)`` to
    ``(qpos, qvel, site_xpos)`` after every ``steps_per_save`` steps
    (``num_saves`` of them), the control of each step ``control(param, time)``
    at the step's start time (as `mujoco.rollout` is fed)."""
    from jax import lax
    from mujoco import mjx

    mx = mjx.put_model(model, impl="jax")

    def one(qpos, qvel, param):
        data = mjx.make_data(mx).replace(qpos=qpos, qvel=qvel)

        def step(data, _):
            data = data.replace(ctrl=control(param, data.time))
            return mjx.step(mx, data), None

        def save(data, _):
            data, _ = lax.scan(step, data, None, length=steps_per_save)
            # site_xpos is from the step's start: recompute at its end.
            data = mjx.kinematics(mx, data)
            return data, (data.qpos, data.qvel, data.site_xpos)

        return lax.scan(save, data, None, length=num_saves)[1]

    return jax.jit(jax.vmap(one))


def site_gap(site_xpos, pairs) -> float:
    """The largest distance between the sites of each pair, m."""
    return max(
        float(
            np.max(np.linalg.norm(site_xpos[..., a, :] - site_xpos[..., b, :], axis=-1))
        )
        for a, b in pairs
    )


def row(engine, n, first, best, failed, **checks):
    """`bench_gpu.row` keyed by engine."""
    return gpu_row(engine, n, first, best, failed, engine=engine, **checks)


def jaxfric_row(n, first, best, sol, **checks):
    """`bench_gpu.sim_row` of a jaxfric batch, keyed by engine."""
    return sim_row("jaxfric", n, first, best, sol, engine="jaxfric", **checks)


def four_bar(cfg, sizes, repeats):
    simulate, mech, prob = four_bar_member(cfg)
    chain = make_four_bar(mech)
    q_tree0 = np.asarray(chain.q_guess)
    theta0 = mech["crank_angle"]
    batch = jax.jit(jax.vmap(simulate))
    ts = np.linspace(0.0, prob["t1"], prob["num_save"])
    rows = []
    for n in sizes:
        rates = np.linspace(*prob["rate_range"], n)
        star = np.array([breakaway_time(mech, prob["fc"], r) for r in rates])
        first, best, sol = timed(batch, (jnp.asarray(rates),), repeats)
        q = np.asarray(sol.q)[..., 0]
        before = ts[None, :] < star[:, None]
        t_error = float(np.max(np.abs(np.asarray(sol.event_times[:, 0]) - star)))
        creep = float(np.max(np.abs(q - theta0)[before]))
        rows.append(jaxfric_row(n, first, best, sol, t_error=t_error, creep=creep))
        for variant in cfg["mjx_variants"]:
            dt = variant["timestep"]
            model = bench_closed_chain.mujoco_model(mech, prob, variant, dt)
            every = int(round((ts[1] - ts[0]) / dt))
            fn = mjx_batch(
                model,
                lambda rate, t: jnp.atleast_1d(rate * t),
                every,
                len(ts) - 1,
            )
            args = (
                jnp.tile(jnp.asarray(q_tree0), (n, 1)),
                jnp.zeros((n, model.nv)),
                jnp.asarray(rates),
            )
            first, best, (qpos, _, sites) = timed(fn, args, repeats)
            theta = np.asarray(qpos)[..., 0]
            rows.append(
                row(
                    f"MJX {variant['name']}",
                    n,
                    first,
                    best,
                    np.sum(~np.isfinite(theta).all(axis=1)),
                    creep=float(np.max(np.abs(theta - theta0)[before[:, 1:]])),
                    gap=site_gap(np.asarray(sites), [(0, 1)]),
                    difference=float(np.max(np.abs(theta - q[:, 1:]))),
                )
            )
    return rows


def three_rps(cfg, sizes, repeats):
    settings = read_settings(CONFIGS / cfg["settings"])
    chain, spec, mech, law, controller, run, ts = bench_3rps.problem(settings)
    ts = np.asarray(ts)
    batch = jax.jit(jax.vmap(run))

    @jax.jit
    @jax.vmap
    def starts(scale):
        pd = controller(scale)
        return chain.tree_state(*rps.tracking_start(chain, law, pd))[:2]

    def control(scale, t):
        ref = controller(scale).reference
        return jnp.stack([ref.position(t), ref.velocity(t)], axis=-1).reshape(-1)

    closure = bench_3rps.closure_gap(chain)

    rows = []
    for n in sizes:
        scales = np.linspace(*settings["scale"], n)
        first, best, sol = timed(batch, (jnp.asarray(scales),), repeats)
        q, qd = np.asarray(sol.q), np.asarray(sol.qd)
        stuck = np.asarray(sol.modes) == 0
        inside = bench_3rps.inside_stick(stuck)
        checks = dict(
            creep=float(np.max(np.abs(qd[stuck]), initial=0.0)),
            gap=float(closure(sol.q)),
            events=int(np.max(sol.stats["num_events"])),
            stuck_points=int(inside.sum()),
        )
        rows.append(jaxfric_row(n, first, best, sol, **checks))
        q_tree, qd_tree = (np.asarray(x) for x in starts(jnp.asarray(scales)))
        mj_start = [
            bench_3rps.mujoco_state(spec, a, b)
            for a, b in zip(q_tree, qd_tree, strict=True)
        ]
        for variant in cfg["mjx_variants"]:
            dt = variant["timestep"]
            model = bench_3rps.mujoco_model(
                spec, mech, settings["fc"], settings["kp"], settings["kd"], dt, variant
            )
            every = int(round((ts[1] - ts[0]) / dt))
            fn = mjx_batch(model, control, every, len(ts) - 1)
            args = (
                jnp.asarray(np.stack([a for a, _ in mj_start])),
                jnp.asarray(np.stack([b for _, b in mj_start])),
                jnp.asarray(scales),
            )
            first, best, (qpos, qvel, sites) = timed(fn, args, repeats)
            legs, dofs = bench_3rps.leg_indices(model)
            lengths = np.asarray(qpos)[..., legs]
            speeds = np.asarray(qvel)[..., dofs]
            site = {model.site(i).name: i for i in range(model.nsite)}
            rows.append(
                row(
                    f"MJX {variant['name']}",
                    n,
                    first,
                    best,
                    np.sum(~np.isfinite(lengths).all(axis=(1, 2))),
                    creep=float(np.max(np.abs(speeds[inside[:, 1:]]), initial=0.0)),
                    gap=site_gap(
                        np.asarray(sites),
                        [(site["t2"], site["p2"]), (site["t3"], site["p3"])],
                    ),
                    difference=float(np.max(np.abs(lengths - q[:, 1:]))),
                    spread=bench_3rps.stick_spread(lengths, inside[:, 1:]),
                )
            )
    return rows


def main(settings) -> bool:
    backend = jax.default_backend()
    sizes = settings["sizes"][backend if backend == "cpu" else "gpu"]
    repeats = settings["repeats"]
    device = jax.devices()[0].device_kind
    print(f"backend {backend}, device {device}, load {load_average()}")
    out = results_dir(NAME)
    tables = {}
    for case, fn in (("four_bar", four_bar), ("three_rps", three_rps)):
        if sizes[case]:
            tables[case] = fn(settings[case], sizes[case], repeats)
            print(f"\n{case} on {device}:")
            print_table(tables[case], COLUMNS)
            write_json(
                dict(backend=backend, device=device, **tables), out / "summary.json"
            )

    claims = []
    for case, rows in tables.items():
        jrows = [r for r in rows if r["engine"] == "jaxfric"]
        mrows = [r for r in rows if r["engine"] != "jaxfric"]
        where = f"{case} on {device}"
        claims.append(
            claim(
                all(r["failed"] == 0 for r in rows),
                f"{where}: every member of every batch finishes (failed: "
                + ", ".join(f"{r['engine']} {r['batch']}: {r['failed']}" for r in rows)
                + ")",
            )
        )
        if case == "four_bar":
            tol = settings["four_bar"]["tolerance"]
            worst = max(r["t_error"] for r in jrows)
            claims.append(
                claim(
                    worst <= tol and all(r["creep"] == 0.0 for r in jrows),
                    f"{where}: jaxfric's crank still (creep exactly 0.0) and its "
                    f"breakaway {worst:.1e} s from the closed form (≤ {tol})",
                )
            )
        else:
            tol = settings["three_rps"]["closure"]
            claims.append(
                claim(
                    all(r["creep"] == 0.0 and r["gap"] <= tol for r in jrows),
                    f"{where}: jaxfric's stuck legs at velocity exactly 0.0, closure "
                    + ", ".join(f"{r['gap']:.1e}" for r in jrows)
                    + f" m (≤ {tol})",
                )
            )
        claims.append(
            claim(
                all(r["creep"] > 0.0 for r in mrows),
                f"{where}: MJX creeps where jaxfric sticks: "
                + ", ".join(
                    f"{r['engine']} (batch {r['batch']}) {r['creep']:.1e}, loop gap "
                    f"{r['gap']:.1e} m"
                    for r in mrows
                ),
            )
        )
        for n in sorted({r["batch"] for r in rows}):
            j = next(r for r in jrows if r["batch"] == n)
            m = min(
                (r for r in mrows if r["batch"] == n), key=lambda r: r["per_sim_ms"]
            )
            ratio = j["per_sim_ms"] / m["per_sim_ms"]
            claims.append(
                claim(
                    ratio <= 1.0,
                    f"{where}, batch {n}: jaxfric {j['per_sim_ms']:.3f} ms per "
                    f"simulation against MJX's fastest ({m['engine']}) "
                    f"{m['per_sim_ms']:.3f} ms ({ratio:.2f}x)",
                )
            )
    write_json(
        dict(backend=backend, device=device, claims=claims, **tables),
        out / "summary.json",
    )
    _plot(tables, device, out / "figure.png")
    return print_claims(claims)


def _plot(tables, device, path):
    """Time per simulation of every engine and batch, per case, each bar
    labelled with the engine's creep where jaxfric sticks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        1, len(tables), figsize=(6 * len(tables), 4.5), squeeze=False
    )
    for ax, (case, rows) in zip(axes[0], tables.items(), strict=True):
        x = np.arange(len(rows))
        ax.bar(x, [r["per_sim_ms"] for r in rows], color="C0")
        ax.set_yscale("log")
        ax.set_xticks(
            x, [f"{r['engine']}\nbatch {r['batch']}" for r in rows], fontsize=7
        )
        for k, r in enumerate(rows):
            ax.annotate(
                f"creep {r['creep']:.1e} {CREEP_UNITS[case]}", (k, r["per_sim_ms"]),
                ha="center",
                va="bottom", fontsize=7,
            )  # fmt: skip
        ax.set_title(f"{case} on {device}")
        ax.set_ylabel("time per simulation (ms)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(0 if main(load_settings(NAME)) else 1)
