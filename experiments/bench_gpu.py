"""Benchmark: batches of exact stick–slip simulations on JAX's default backend
(a GPU where JAX has one, else the CPU), time per simulation against batch size.

Cases (every member on the switch path, float64, `jax.vmap` of `jaxfric.simulate`
under one `jax.jit`):

(a) free Quinn/Farhat oscillators (unit mass and stiffness, Coulomb level
    ``fc``, released at rest from ``x0``): errors against the closed form;
(b) the four-bar of ``bench_closed_chain`` (`ClosedChain`), its crank holding its
    gravity load by friction under a torque ramp ``rate·t``: breakaway times
    against the closed form ``(fc + g(θ0))/rate``;
(c) the 3-RPS of ``farhat_3rps`` (`ClosedChain`, two ball loops, PID leg
    control, asymmetric Coulomb + viscous leg friction), member i tracking the
    sinusoidal reference scaled by a factor of ``amplitude_range``: closure
    residual, stuck legs at velocity exactly 0.0, and (on a GPU) the leg
    lengths against the CPU's run of the same members, which a CPU run of this
    script writes to ``results/bench_gpu/reference_cpu.json``;
(d) gradients under `vmap` (reverse mode, `jax.grad` per member): of each
    oscillator's final position in (``fc``, ``x0``) against central differences
    of the closed form, and of each four-bar's breakaway time in the ramp rate
    against ``dt*/d rate = −t*/rate``.

Printed: per case and batch size, the first call (compile and one run), the best
of `repeats` warm calls, time per simulation, the most steps of a member, and
the checks. The batch sizes per backend are in the settings (``[sizes.cpu]``,
``[sizes.gpu]``).

Run: ``python experiments/bench_gpu.py [SETTINGS.toml]``.
"""

import jax
import jax.numpy as jnp
import numpy as np
from _common import (
    CONFIGS,
    claim,
    enable_float64,
    exact_free,
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

import _three_rps  # noqa: E402
import farhat_3rps  # noqa: E402
import identify_3rps  # noqa: E402
from _four_bar import Ramp, breakaway_time, make_four_bar  # noqa: E402

import jaxfric as jf  # noqa: E402

NAME = "bench_gpu"
COLUMNS = [
    ("batch", "batch", "d"),
    ("first_call_s", "first call (s)", ".1f"),
    ("warm_s", "warm batch (s)", ".4f"),
    ("per_sim_ms", "per simulation (ms)", ".4f"),
    ("max_steps", "most steps", "d"),
    ("failed", "failed", "d"),
    ("error", "error vs closed form", ".1e"),
    ("closure", "max |Φ| (m)", ".1e"),
    ("stuck_speed", "stuck speed", ".1e"),
    ("cpu_difference", "|q − q_cpu| (m)", ".1e"),
    ("grad_error", "gradient rel. error", ".1e"),
]


def row(case, n, first, best, failed, **checks):
    """One table row: timings per batch and per member, members `failed`."""
    return dict(
        case=case,
        batch=n,
        first_call_s=first,
        warm_s=best,
        per_sim_ms=1e3 * best / n,
        failed=int(failed),
        load=load_average()[0],
        **checks,
    )


def sim_row(case, n, first, best, sol, **checks):
    """`row` of a batch of simulations: the most steps of a member, and the
    members whose result is not successful."""
    failed = np.sum(np.asarray(sol.result._value) != 0)
    steps = int(np.max(sol.stats["num_steps"]))
    return row(case, n, first, best, failed, max_steps=steps, **checks)


def grad_row(case, n, first, best, grads, **checks):
    """`row` of a batch of gradients: members with a non-finite one failed."""
    return row(case, n, first, best, np.sum(~np.isfinite(np.asarray(grads))), **checks)


def oscillators(cfg, sizes, repeats):
    system = jf.systems.Oscillator(mass=1.0, stiffness=1.0)
    law = jf.Coulomb(cfg["fc"])

    @jax.jit
    @jax.vmap
    def batch(x0):
        return jf.simulate(
            system, law, x0, 0.0, cfg["t1"], num_save=cfg["num_save"], throw=False
        )

    rows = []
    for n in sizes:
        x0 = np.linspace(*cfg["x0_range"], n)
        first, best, sol = timed(batch, (jnp.asarray(x0),), repeats)
        ts = np.asarray(sol.ts[0])
        x, _ = exact_free(x0, ts, cfg["fc"])
        error = float(np.max(np.abs(np.asarray(sol.q)[..., 0] - x)))
        rows.append(sim_row("oscillators", n, first, best, sol, error=error))
    return rows


def four_bar_member(cfg):
    """``(simulate(rate), mech, prob)``: one four-bar run under the ramp
    ``rate·t`` (the problem of ``cfg["settings"]``)."""
    other = read_settings(CONFIGS / cfg["settings"])
    mech, prob = other["mechanism"], other["problem"]
    chain = make_four_bar(mech)
    ts = jnp.linspace(0.0, prob["t1"], prob["num_save"])

    def simulate(rate):
        return jf.simulate(
            chain,
            jf.Coulomb(fc=prob["fc"]),
            q0=jnp.array([mech["crank_angle"]]),
            qd0=jnp.zeros(1),
            t1=prob["t1"],
            force=Ramp(rate),
            ts=ts,
            throw=False,
        )

    return simulate, mech, prob


def four_bar(cfg, sizes, repeats):
    simulate, mech, prob = four_bar_member(cfg)
    batch = jax.jit(jax.vmap(simulate))
    rows = []
    for n in sizes:
        rates = np.linspace(*prob["rate_range"], n)
        first, best, sol = timed(batch, (jnp.asarray(rates),), repeats)
        star = np.array([breakaway_time(mech, prob["fc"], r) for r in rates])
        error = float(np.max(np.abs(np.asarray(sol.event_times[:, 0]) - star)))
        rows.append(sim_row("four-bar", n, first, best, sol, error=error))
    return rows


def three_rps(cfg, sizes, repeats, reference):
    other = read_settings(CONFIGS / cfg["settings"])
    gains = other["pid"]
    options = dict(other["simulate"], t1=cfg["t1"])
    chain, spec = _three_rps.build_chain(other["mechanism"])
    home = np.full(3, spec["home_leg_length"])
    law = identify_3rps.law_of(other["friction"])
    base = _three_rps.reference(other, "sinusoidal", home)
    ts = jnp.linspace(0.0, cfg["t1"], cfg["num_save"])

    @jax.jit
    @jax.vmap
    def batch(scale):
        ref = jf.forces.FourierSeries(
            a=scale * base.a, b=scale * base.b, omega=base.omega, offset=base.offset
        )
        controller = jf.forces.PID(ref, gains["kp"], gains["ki"], gains["kd"])
        start = _three_rps.tracking_start(chain, law, controller)
        sol = farhat_3rps.simulate(chain, law, controller, start, ts, options)
        closure = jax.vmap(lambda z: chain.closure_residual(chain.assemble(z)))(sol.q)
        return sol, jnp.max(jnp.abs(closure))

    rows = []
    for n in sizes:
        scales = np.linspace(*cfg["amplitude_range"], n)
        first, best, (sol, closure) = timed(batch, (jnp.asarray(scales),), repeats)
        q, qd, modes = (np.asarray(x) for x in (sol.q, sol.qd, sol.modes))
        stuck = modes == 0
        checks = dict(
            closure=float(np.max(closure)),
            stuck_points=int(stuck.sum()),
            stuck_speed=float(np.max(np.abs(qd[stuck]), initial=0.0)),
            events=int(np.max(sol.stats["num_events"])),
        )
        key = str(n)
        if jax.default_backend() == "cpu":
            reference[key] = dict(scales=scales.tolist(), q=q.tolist())
        elif key in reference:
            checks["cpu_difference"] = float(np.max(np.abs(q - reference[key]["q"])))
        rows.append(sim_row("3-RPS", n, first, best, sol, **checks))
    return rows


def oscillator_gradients(cfg, sizes, repeats):
    """d x(t1)/d(fc, x0) of free oscillators, per member by reverse mode."""
    system = jf.systems.Oscillator(mass=1.0, stiffness=1.0)

    def final(params):
        fc, x0 = params
        sol = jf.simulate(
            system, jf.Coulomb(fc), x0, 0.0, cfg["t1"], num_save=2, throw=False
        )
        return sol.q[-1, 0]

    batch = jax.jit(jax.vmap(jax.grad(final)))
    rows = []
    for n in sizes:
        x0 = np.linspace(*cfg["x0_range"], n)
        params = jnp.stack([jnp.full(n, cfg["fc"]), jnp.asarray(x0)], axis=1)
        first, best, grads = timed(batch, (params,), repeats)
        # Central differences of the closed form; members within h of a kink
        # (a stop exactly at |x| = fc) have no derivative and are left out.
        h, ts = 1e-6, np.array([0.0, cfg["t1"]])
        mid = exact_free(x0, ts, cfg["fc"])[0][:, -1]
        fd = []
        for dfc, dx0 in ((h, 0.0), (0.0, h)):
            up = exact_free(x0 + dx0, ts, cfg["fc"] + dfc)[0][:, -1]
            down = exact_free(x0 - dx0, ts, cfg["fc"] - dfc)[0][:, -1]
            one_sided = np.abs((up - mid) - (mid - down)) / h
            fd.append(((up - down) / (2 * h), one_sided < 1e-6))
        fd_grad = np.stack([g for g, _ in fd], axis=1)
        smooth = fd[0][1] & fd[1][1]
        scale = np.maximum(np.abs(fd_grad), 1.0)
        error = np.abs(np.asarray(grads) - fd_grad) / scale
        rows.append(
            grad_row(
                "oscillator gradients",
                n,
                first,
                best,
                grads,
                grad_error=float(np.max(error[smooth])),
                checked=int(smooth.sum()),
            )
        )
    return rows


def four_bar_gradients(cfg, sizes, repeats):
    """d t*/d rate of the four-bar's breakaway time, per member by reverse mode."""
    simulate, mech, prob = four_bar_member(cfg)
    batch = jax.jit(
        jax.vmap(jax.value_and_grad(lambda rate: simulate(rate).event_times[0]))
    )
    rows = []
    for n in sizes:
        rates = np.linspace(*prob["rate_range"], n)
        first, best, (event, grads) = timed(batch, (jnp.asarray(rates),), repeats)
        star = np.array([breakaway_time(mech, prob["fc"], r) for r in rates])
        exact = -star / rates
        rows.append(
            grad_row(
                "four-bar gradients",
                n,
                first,
                best,
                grads,
                error=float(np.max(np.abs(np.asarray(event) - star))),
                grad_error=float(np.max(np.abs(np.asarray(grads) / exact - 1))),
            )
        )
    return rows


def make_figure(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for case in dict.fromkeys(r["case"] for r in rows):
        sel = [r for r in rows if r["case"] == case]
        ax.loglog(
            [r["batch"] for r in sel], [r["per_sim_ms"] for r in sel], "o-", label=case
        )
    ax.set_xlabel("batch size")
    ax.set_ylabel("time per simulation (ms)")
    ax.set_title(f"jaxfric under vmap on {jax.devices()[0].device_kind}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    settings = load_settings(NAME)
    backend = jax.default_backend()
    sizes = settings["sizes"][backend if backend == "cpu" else "gpu"]
    repeats = settings["repeats"]
    out = results_dir(NAME)
    ref_path = out / "reference_cpu.json"
    # A CPU run adds its batch sizes to the reference; a GPU run compares.
    reference = {}
    if ref_path.exists():
        import json

        reference = json.loads(ref_path.read_text())
    device = jax.devices()[0].device_kind
    print(f"backend {backend}, device {device}, load {load_average()}")

    rows = []
    for case, run in (
        ("oscillators", lambda c, s: oscillators(c, s, repeats)),
        ("four_bar", lambda c, s: four_bar(c, s, repeats)),
        ("three_rps", lambda c, s: three_rps(c, s, 1, reference)),
        (
            "oscillator_gradients",
            lambda c, s: oscillator_gradients(settings["oscillators"] | c, s, repeats),
        ),
        (
            "four_bar_gradients",
            lambda c, s: four_bar_gradients(settings["four_bar"] | c, s, repeats),
        ),
    ):
        if not sizes[case]:
            continue
        rows += run(settings[case], sizes[case])
        print(f"\n{case} on {device}:")
        print_table(rows[-len(sizes[case]) :], COLUMNS)
        write_json(
            dict(backend=backend, device=device, rows=rows), out / "summary.json"
        )
    if reference and backend == "cpu":
        write_json(reference, ref_path)

    claims = []
    for r in rows:
        where = f"{r['case']} batch {r['batch']} on {device}"
        claims.append(
            claim(r["failed"] == 0, f"{where}: {r['failed']} members failed (0)")
        )
        if r["case"] == "oscillators":
            tol = settings["oscillators"]["tolerance"]
            text = f"{where}: error {r['error']:.1e} m vs the closed form (≤ {tol})"
            claims.append(claim(r["error"] <= tol, text))
        elif r["case"].endswith("gradients"):
            tol = settings[r["case"].replace(" ", "_").replace("-", "_")]["tolerance"]
            text = (
                f"{where}: reverse-mode gradient {r['grad_error']:.1e} relative from "
                f"the closed form's (≤ {tol})"
            )
            claims.append(claim(r["grad_error"] <= tol, text))
        elif r["case"] == "four-bar":
            tol = settings["four_bar"]["tolerance"]
            text = (
                f"{where}: breakaway {r['error']:.1e} s from the closed form (≤ {tol})"
            )
            claims.append(claim(r["error"] <= tol, text))
        else:
            cfg = settings["three_rps"]
            tol = cfg["closure_tolerance"]
            text = f"{where}: closure {r['closure']:.1e} m (≤ {tol})"
            claims.append(claim(r["closure"] <= tol, text))
            text = (
                f"{where}: {r['stuck_points']} stuck saved points, largest speed "
                f"{r['stuck_speed']} (exactly 0.0)"
            )
            claims.append(
                claim(r["stuck_points"] > 0 and r["stuck_speed"] == 0.0, text)
            )
            if "cpu_difference" in r:
                tol = cfg["cpu_tolerance"]
                text = (
                    f"{where}: leg lengths {r['cpu_difference']:.1e} m from the "
                    f"CPU's (≤ {tol})"
                )
                claims.append(claim(r["cpu_difference"] <= tol, text))
    make_figure(rows, out / "figure.png")
    write_json(
        dict(backend=backend, device=device, rows=rows, claims=claims),
        out / "summary.json",
    )
    return print_claims(claims)


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
