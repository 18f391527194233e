"""Stribeck friction identified from noisy positions of a driven mass on a spring.

``m ẍ + k x = A sin(ω t) − f``, Stribeck friction ``f`` (fc, fs, vs, fv; Gaussian
shape, delta = 2), simulated by the exact switch path: the mass sticks and slips.
Four records with different sine inputs (designed for the Stribeck velocity, see
`_stribeck_1dof.py`) are measured at 100 Hz for 16 s; Gaussian noise of 1 % of
each record's RMS position is added, and each record is weighted by the inverse
of its noise level. The four friction parameters are fitted by

- `jaxfric.identify.fit` with the built-in Levenberg–Marquardt, from two starts
  50 % off (each with parameters above and below the truth);
- `jaxfric.identify.fit` with Adam (cosine-decayed learning rate), first start;
- the classical linear least squares on inverse dynamics (Coulomb + viscous,
  with inertia and stiffness, Savitzky–Golay derivatives): it has no Stribeck
  term, so its Coulomb level is compared with ``fc`` and its viscous one with
  ``fv``.

The claim (issue 5): every parameter within 2 % with Levenberg–Marquardt, from
each start. Standard errors are the Gauss–Newton ones of the fit.

Run: ``python experiments/identify_stribeck_1dof.py [SETTINGS.toml]``.
"""

import time

import numpy as np
from _common import (
    claim,
    enable_float64,
    load_settings,
    parameter_claims,
    print_claims,
    print_table,
    results_dir,
    write_json,
)

enable_float64()

import jax.numpy as jnp  # noqa: E402
from _stribeck_1dof import PARAMS, build, free, load_setup  # noqa: E402

import jaxfric as jf  # noqa: E402
from jaxfric.identify import (  # noqa: E402
    LevenbergMarquardt,
    default_adam,
    fit,
    linear_least_squares,
    predict,
)

NAME = "identify_stribeck_1dof"


def relative_errors(values, truth):
    return np.abs(np.asarray(values) - truth) / truth


def run_fit(data, start, optimizer, steps, label, target):
    """Fit twice (the second call reuses the compiled loop); errors and the
    step at which every parameter first reached `target`."""
    kw = dict(
        free=free, optimizer=optimizer, max_steps=steps, position_weight=data.weights
    )
    t0 = time.perf_counter()
    result = fit(
        data.system,
        start,
        data.experiments,
        callback=lambda step, loss: print(
            f"  {label}: step {step}, loss {loss:.4e}", flush=True
        ),
        **kw,
    )
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    fit(data.system, start, data.experiments, **kw)
    warm = time.perf_counter() - t0
    history = relative_errors(result.params_history, data.truth)
    reached = np.flatnonzero(np.all(history <= target, axis=1))
    return dict(
        result=result,
        first_call_s=first,
        warm_call_s=warm,
        errors=relative_errors(result.params, data.truth),
        history=history,
        steps_to_target=int(reached[0]) + 1 if reached.size else None,
    )


def main():
    settings = load_settings(NAME)
    setup = load_setup(settings)
    target = settings["target"]
    data = build(setup)
    truth = data.truth

    runs = {}
    lm = LevenbergMarquardt()
    for k, start in enumerate(data.starts):
        runs[f"LM, start {k + 1}"] = run_fit(
            data, start, lm, settings["lm"]["max_steps"], f"LM start {k + 1}", target
        )
    adam = settings["adam"]
    runs["Adam, start 1"] = run_fit(
        data,
        data.starts[0],
        default_adam(adam["learning_rate"], adam["max_steps"]),
        adam["max_steps"],
        "Adam start 1",
        target,
    )

    # Classical baseline on the same noisy records (inputs known).
    t0 = time.perf_counter()
    lin_fits = [
        linear_least_squares(
            data.ts,
            q[:, 0],
            np.asarray(f.amplitude * jnp.sin(f.omega * data.ts)),
            stiffness=True,
            window=31,
        )
        for q, f in zip(data.noisy, data.forces, strict=True)
    ]
    baseline_s = time.perf_counter() - t0
    lin_fc = float(np.mean([lf.params["fc_pos"][0] for lf in lin_fits]))
    lin_fv = float(np.mean([lf.params["fv"][0] for lf in lin_fits]))
    linear = {"fc": lin_fc, "fv": lin_fv}

    rows = []
    for label, run in runs.items():
        res = run["result"]
        for k, name in enumerate(PARAMS):
            rows.append(
                dict(
                    method=label,
                    param=name,
                    true=truth[k],
                    fit=res.params[k],
                    err=100 * run["errors"][k],
                    se=res.stderr[k],
                    se_rel=100 * res.stderr[k] / truth[k],
                )
            )
    for name in ("fc", "fv"):
        k = PARAMS.index(name)
        rows.append(
            dict(
                method="linear least squares (mean of records)",
                param=name,
                true=truth[k],
                fit=linear[name],
                err=100 * abs(linear[name] - truth[k]) / truth[k],
            )
        )
    print_table(
        rows,
        [
            ("method", "method", ""),
            ("param", "param", ""),
            ("true", "true", ".4g"),
            ("fit", "fitted", ".5f"),
            ("err", "error %", ".3f"),
            ("se", "std err", ".2e"),
            ("se_rel", "std err %", ".3f"),
        ],
    )
    print()
    print_table(
        [
            dict(
                method=label,
                steps=run["result"].num_steps,
                to_target=run["steps_to_target"],
                first=run["first_call_s"],
                warm=run["warm_call_s"],
                loss=run["result"].value,
                max_err=100 * float(np.max(run["errors"])),
            )
            for label, run in runs.items()
        ]
        + [dict(method="linear least squares", first=baseline_s, warm=baseline_s)],
        [
            ("method", "method", ""),
            ("steps", "steps", ""),
            ("to_target", f"steps to {100 * target:g} %", ""),
            ("first", "first call s", ".2f"),
            ("warm", "warm call s", ".2f"),
            ("loss", "final loss (whitened)", ".3f"),
            ("max_err", "max err %", ".3f"),
        ],
    )
    print()
    claims = []
    for label, run in runs.items():
        if label.startswith("LM"):
            stderr = run["result"].stderr / truth
            claims += parameter_claims(label, PARAMS, run["errors"], stderr, target)
    holds = all(c["pass"] for c in claims)
    claims.append(
        claim(
            holds,
            f"every parameter within {100 * target:g} % from every start "
            "(LM, 1 % noise)",
        )
    )
    print_claims(claims)

    folder = results_dir(NAME)
    figure(folder / "figure.png", data, runs, linear, target)
    write_json(
        dict(
            settings=settings,
            claim_holds=holds,
            claims=claims,
            parameters=list(PARAMS),
            true=truth,
            noise_sigma_m=data.sigma,
            starts=[truth * np.asarray(f) for f in setup["start_factors"]],
            methods={
                label: dict(
                    values=run["result"].params,
                    stderr=run["result"].stderr,
                    relative_errors=run["errors"],
                    steps=run["result"].num_steps,
                    steps_to_target=run["steps_to_target"],
                    first_call_s=run["first_call_s"],
                    warm_call_s=run["warm_call_s"],
                    loss=run["result"].value,
                    loss_history=run["result"].value_history,
                )
                for label, run in runs.items()
            },
            linear_least_squares=dict(
                fc=lin_fc,
                fv=lin_fv,
                per_record=[{k: v[0] for k, v in lf.params.items()} for lf in lin_fits],
                seconds=baseline_s,
            ),
        ),
        folder / "summary.json",
    )
    print(f"wrote {folder / 'figure.png'} and {folder / 'summary.json'}")


def figure(path, data, runs, linear, target):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fitted = runs["LM, start 1"]["result"].model
    q_fit, _ = predict(fitted)
    ts = data.ts
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    ax = axes[0, 0]
    for b, q in enumerate(data.noisy):
        ax.plot(ts, q[:, 0], ".", ms=2, color=f"C{b}", alpha=0.5)
        ax.plot(ts, np.asarray(q_fit[b, :, 0]), "-", color=f"C{b}", lw=1)
    ax.set(
        xlabel="t (s)",
        ylabel="x (m)",
        title="measured (dots, 1 % noise) and fitted (lines, LM)",
    )
    ax = axes[0, 1]
    v = np.linspace(-1.0, 1.0, 801)
    v = v[v != 0]
    for law, label, style in (
        (jf.Stribeck(*data.truth), "true", "k-"),
        (fitted.friction, "LM fit", "C1--"),
        (data.starts[0], "start 1", "C7:"),
        (data.starts[1], "start 2", "C8:"),
    ):
        ax.plot(v, np.asarray(law.force(jnp.asarray(v))), style, label=label)
    ax.plot(v, np.sign(v) * linear["fc"] + linear["fv"] * v, "C2-.", label="linear LS")
    ax.set(xlabel="v (m/s)", ylabel="f (N)", title="friction law")
    ax.legend()
    for ax, label in ((axes[1, 0], "LM, start 1"), (axes[1, 1], "Adam, start 1")):
        history = runs[label]["history"]
        for k, name in enumerate(PARAMS):
            ax.semilogy(np.arange(1, len(history) + 1), history[:, k], label=name)
        if label.startswith("LM"):
            other = runs["LM, start 2"]["history"]
            for k in range(len(PARAMS)):
                ax.semilogy(
                    np.arange(1, len(other) + 1), other[:, k], color=f"C{k}", ls=":"
                )
            label += " (dotted: start 2)"
        ax.axhline(target, color="k", lw=0.8, ls="--")
        ax.set(xlabel="step", ylabel="relative error", title=label)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
