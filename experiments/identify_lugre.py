"""LuGre parameters identified from presliding and sliding records (Canudas de
Wit, Olsson, Åström & Lischinsky 1995; the MotionSolve joint-friction text in
docs/papers gives the same law in friction-coefficient form).

A unit mass (m = 1 kg, no spring) with LuGre friction at the Canudas de Wit
1995 parameter set, σ0 = 1e5 N/m, σ1 = √1e5 N·s/m, σ2 = 0.4 N·s/m, Fc = 1 N,
Fs = 1.5 N, vs = 0.001 m/s, is driven by a known force

    τ(t) = A sin(ω t) + kp (v t − x) + kd (v − ẋ)

(a sine, or a spring–damper dragged at constant speed v). Four records of 401
samples each:

1. presliding: A = 0.9 N at 20 Hz for 0.1 s (below Fc: micrometre motion on
   the bristle spring, σ0, and its damping, σ1, at the presliding resonance
   √(σ0/m) ≈ 50 Hz);
2. presliding: A = 0.5 N at 5 Hz for 0.4 s;
3. sliding: A = 5 N at 0.25 Hz for 8 s (speeds up to 3 m/s: Fc and σ2; a
   breakaway at each reversal: Fs and vs);
4. stick–slip drag: kp = 100 N/m, kd = 14 N·s/m pulled at 0.3 mm/s for 52 s
   (speeds around vs at the breakaway).

The records were picked from candidates by predicted Gauss–Newton standard
errors. The data are simulated at tighter tolerances (rtol 1e-8, atol 1e-12)
than the fits use (the defaults, 1e-6 and 1e-10), by the stiff path (Kvaerno5).
Gaussian noise of 1 % of each record's RMS position is added, and each record
is weighted by the inverse of its noise level.

Fitting (Levenberg–Marquardt, all six parameters free, `Positive` transforms,
fs ≥ fc) goes in two stages: records 1–3 first, then all four from there. The
stick–slip record has false minima (a wrong (fc, fs, vs) that still matches
its breakaway); the presliding and sine records bring every parameter close
first. (Measured: without the LM step cap, `LevenbergMarquardt(max_step=None)`,
a single-stage fit from the second start ended in such a minimum, 68 % off;
with the default cap it converges as well. The script reports the
single-stage fit beside the two-stage ones.) Both stages run from two starts
50 % off, each with parameters above and below the truth.

The claim: all six parameters within 2 % from each start (1 % noise).

Run: ``python experiments/identify_lugre.py [SETTINGS.toml]``.
"""

import time

import numpy as np
from _common import (
    claim,
    enable_float64,
    format_table,
    load_settings,
    parameter_claims,
    print_claims,
    print_load_average,
    results_dir,
    write_json,
)

enable_float64()

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import jaxfric as jf  # noqa: E402
from jaxfric.forces import AbstractStatelessForce  # noqa: E402
from jaxfric.identify import Experiment, LevenbergMarquardt, fit, predict  # noqa: E402

NAME = "identify_lugre"
PARAMS = ("sigma0", "sigma1", "sigma2", "fc", "fs", "vs")


def as_float(value):
    return jnp.asarray(value, dtype=float)


class Drive(AbstractStatelessForce):
    """``τ = A sin(ω t) + kp (v t − q) + kd (v − q̇)``, N: a sine force plus a
    spring (kp, N/m) and damper (kd, N·s/m) whose far end moves at speed v
    (m/s) from the mass's start."""

    amplitude: jnp.ndarray = eqx.field(converter=as_float)
    omega: jnp.ndarray = eqx.field(converter=as_float)
    kp: jnp.ndarray = eqx.field(converter=as_float)
    kd: jnp.ndarray = eqx.field(converter=as_float)
    v: jnp.ndarray = eqx.field(converter=as_float)

    def __call__(self, t, q, qd):
        sine = self.amplitude * jnp.sin(self.omega * t)
        return sine + self.kp * (self.v * t - q) + self.kd * (self.v - qd)


def make_records(settings):
    system = jf.systems.Oscillator(mass=settings["mass"], stiffness=0.0)
    truth = np.array([settings["true"][p] for p in PARAMS], float)
    rec = settings["records"]
    rng = np.random.default_rng(settings["noise"]["seed"])
    experiments, clean, sigma = [], [], []
    for a, w, kp, kd, v, t1 in zip(
        rec["amplitude"],
        rec["omega"],
        rec["kp"],
        rec["kd"],
        rec["v"],
        rec["t1"],
        strict=True,
    ):
        ts = np.linspace(0.0, t1, rec["num_samples"])
        force = Drive(a, w, kp, kd, v)
        sol = jf.simulate(
            system,
            jf.LuGre(*truth),
            0.0,
            0.0,
            t1,
            ts=ts,
            force=force,
            **settings["data_tolerances"],
        )
        q = np.asarray(sol.q)
        s = settings["noise"]["relative"] * np.sqrt(np.mean(q**2))
        noisy = q + s * rng.normal(size=q.shape)
        experiments.append(Experiment(ts, noisy, force=force, q0=0.0))
        clean.append(q)
        sigma.append(s)
    return system, truth, experiments, clean, np.asarray(sigma)


def lm_fit(system, start, experiments, weights, steps, label):
    t0 = time.perf_counter()
    result = fit(
        system,
        start,
        experiments,
        optimizer=LevenbergMarquardt(),
        max_steps=steps,
        position_weight=weights,
        callback=lambda step, loss: print(
            f"  {label}: step {step}, loss {loss:.4e}", flush=True
        ),
    )
    return result, time.perf_counter() - t0


def main():
    settings = load_settings(NAME)
    target = settings["target"]
    system, truth, experiments, clean, sigma = make_records(settings)
    weights = (1.0 / sigma)[:, None]
    stage1 = list(settings["stage1_records"])
    steps = settings["max_steps"]
    labels = settings["records"]["label"]

    runs = []
    for k, factor in enumerate(settings["start_factors"]):
        start = jf.LuGre(*(truth * np.asarray(factor, float)))
        first, s1 = lm_fit(
            system,
            start,
            [experiments[i] for i in stage1],
            weights[stage1],
            steps,
            f"start {k + 1}, stage 1",
        )
        final, s2 = lm_fit(
            system,
            first.model.friction,
            experiments,
            weights,
            steps,
            f"start {k + 1}, stage 2",
        )
        runs.append(
            dict(
                label=f"start {k + 1}",
                factor=factor,
                stage1=first,
                final=final,
                seconds=s1 + s2,
                errors=np.abs(final.params - truth) / truth,
                stage1_errors=np.abs(first.params - truth) / truth,
            )
        )
    single = None
    if settings["single_stage_check"]:
        # The same fit without stage 1, from the last start: whether the
        # staging is needed.
        factor = settings["start_factors"][-1]
        result, secs = lm_fit(
            system,
            jf.LuGre(*(truth * np.asarray(factor, float))),
            experiments,
            weights,
            steps,
            "single stage",
        )
        single = dict(
            result=result,
            seconds=secs,
            errors=np.abs(result.params - truth) / truth,
        )

    rows = []
    for run in runs:
        for k, name in enumerate(PARAMS):
            rows.append(
                dict(
                    start=run["label"],
                    param=name,
                    true=truth[k],
                    start_value=truth[k] * run["factor"][k],
                    stage1=run["stage1"].params[k],
                    fit=run["final"].params[k],
                    err=100 * run["errors"][k],
                    se=run["final"].stderr[k],
                    se_rel=100 * run["final"].stderr[k] / truth[k],
                )
            )
    table = format_table(
        rows,
        [
            ("start", "start", ""),
            ("param", "param", ""),
            ("true", "true", ".5g"),
            ("start_value", "start value", ".4g"),
            ("stage1", "stage 1", ".5g"),
            ("fit", "fitted", ".6g"),
            ("err", "error %", ".3f"),
            ("se", "std err", ".3g"),
            ("se_rel", "std err %", ".3f"),
        ],
    )
    summary = [
        dict(
            run=f"{r['label']} (two stages)",
            steps=f"{r['stage1'].num_steps} + {r['final'].num_steps}",
            seconds=r["seconds"],
            loss=r["final"].value,
            max_err=100 * float(np.max(r["errors"])),
            failed=r["final"].num_failed_solves,
        )
        for r in runs
    ]
    if single is not None:
        summary.append(
            dict(
                run=f"start {len(runs)}, single stage (all records at once)",
                steps=str(single["result"].num_steps),
                seconds=single["seconds"],
                loss=single["result"].value,
                max_err=100 * float(np.max(single["errors"])),
                failed=single["result"].num_failed_solves,
            )
        )
    timing = format_table(
        summary,
        [
            ("run", "fit", ""),
            ("steps", "LM steps", ""),
            ("seconds", "seconds (incl. compile)", ".1f"),
            ("loss", "final loss (whitened)", ".3f"),
            ("max_err", "max err %", ".3f"),
            ("failed", "failed solves", ""),
        ],
    )
    records = format_table(
        [
            dict(label=lab, rms=np.sqrt(np.mean(q**2)), sigma=s)
            for lab, q, s in zip(labels, clean, sigma, strict=True)
        ],
        [
            ("label", "record", ""),
            ("rms", "RMS position m", ".3g"),
            ("sigma", "noise σ m", ".3g"),
        ],
    )
    print(records, table, timing, sep="\n\n")
    print_load_average()
    print()
    claims = []
    for run in runs:
        stderr = run["final"].stderr / truth
        claims += parameter_claims(run["label"], PARAMS, run["errors"], stderr, target)
    holds = all(c["pass"] for c in claims)
    claims.append(
        claim(
            holds,
            f"all six LuGre parameters within {100 * target:g} % from each start "
            "50 % off (1 % noise, two stages)",
        )
    )
    print_claims(claims)
    if single is not None:
        worst = float(np.max(single["errors"]))
        print(
            "note: single-stage fit from the last start: max error "
            f"{100 * worst:.2f} % "
            + (
                "(converges without the staging too)"
                if worst <= target
                else "(a false minimum of the stick-slip record)"
            )
        )

    folder = results_dir(NAME)
    figure(folder / "figure.png", runs, experiments, labels, truth, target)
    write_json(
        dict(
            settings=settings,
            claim_holds=holds,
            claims=claims,
            parameters=list(PARAMS),
            true=truth,
            noise_sigma_m=sigma,
            runs=[
                dict(
                    start=truth * np.asarray(r["factor"], float),
                    stage1_values=r["stage1"].params,
                    stage1_relative_errors=r["stage1_errors"],
                    values=r["final"].params,
                    stderr=r["final"].stderr,
                    relative_errors=r["errors"],
                    steps=[r["stage1"].num_steps, r["final"].num_steps],
                    seconds=r["seconds"],
                    loss=r["final"].value,
                    loss_history=np.concatenate(
                        [r["stage1"].value_history, r["final"].value_history]
                    ),
                )
                for r in runs
            ],
            single_stage=None
            if single is None
            else dict(
                values=single["result"].params,
                relative_errors=single["errors"],
                seconds=single["seconds"],
                loss=single["result"].value,
            ),
        ),
        folder / "summary.json",
    )
    print(f"wrote {folder / 'figure.png'} and {folder / 'summary.json'}")


def figure(path, runs, experiments, labels, truth, target):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    q_fit, _ = predict(runs[0]["final"].model)
    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    for b, ax in enumerate(axes.flat[:4]):
        e = experiments[b]
        scale = 1e6 if b < 2 else 1e3
        unit = "µm" if b < 2 else "mm"
        ts = np.asarray(e.ts)
        ax.plot(ts, scale * np.asarray(e.q[:, 0]), ".", ms=2, alpha=0.5, label="data")
        ax.plot(ts, scale * np.asarray(q_fit[b, :, 0]), "-", lw=1, label="fit")
        ax.set(xlabel="t (s)", ylabel=f"x ({unit})", title=labels[b])
        ax.legend()
    ax = axes[1, 1]
    e = experiments[0]
    # The presliding force (no spring, no damper): A sin(ω t).
    f = np.asarray(e.force.amplitude * jnp.sin(e.force.omega * e.ts))
    ax.plot(1e6 * np.asarray(e.q[:, 0]), f, ".", ms=2)
    ax.set(
        xlabel="x (µm)",
        ylabel="applied force (N)",
        title="presliding: force vs displacement (data)",
    )
    ax = axes[1, 2]
    for k, name in enumerate(PARAMS):
        for r, style in zip(runs, ("-", ":"), strict=False):
            hist = np.concatenate(
                [r["stage1"].params_history, r["final"].params_history]
            )
            ax.semilogy(
                np.abs(hist[:, k] - truth[k]) / truth[k],
                style,
                color=f"C{k}",
                label=name if style == "-" else None,
            )
    ax.axhline(target, color="k", lw=0.8, ls="--")
    ax.set(
        xlabel="LM step (stage 1 then 2)",
        ylabel="relative error",
        title="convergence (solid: start 1, dotted: start 2)",
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
