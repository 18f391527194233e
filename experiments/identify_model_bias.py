"""The bias a smoothed friction model leaves in identified parameters.

Data: the exact switch model (Stribeck fc = 1, fs = 1.5, vs = 0.1, fv = 0.2) of a
unit mass on a spring (k = 4 N/m) driven by 3 sin(1.5 t) N, noiseless, so that
any error of a fit is the bias of its model. The same record is fitted with

- the exact model (`Stribeck`, switch path): no bias expected;
- `Regularized` Stribeck (tanh of width eps, several eps): the smoothed law
  cannot stick, so the mass creeps where the data stand still;
- `LuGre` (Canudas de Wit et al. 1995 bristle model with the same Stribeck
  curve; σ0, σ1 fixed; its viscous coefficient σ2 plays fv).

Each fit (Levenberg–Marquardt) starts at the true values and frees the Coulomb
and static levels, the Stribeck velocity and the viscous coefficient. Reported:
each fitted value, its relative error (the bias) and the fit's RMS residual.

Run: ``python experiments/identify_model_bias.py [SETTINGS.toml]``.
"""

import time

import numpy as np
from _common import (
    enable_float64,
    format_table,
    load_settings,
    print_load_average,
    results_dir,
    write_json,
)

enable_float64()

import jaxfric as jf  # noqa: E402
from jaxfric.identify import Experiment, LevenbergMarquardt, fit, predict  # noqa: E402

NAME = "identify_model_bias"


def main():
    settings = load_settings(NAME)
    tr = settings["true"]
    system = jf.systems.Oscillator(**settings["system"])
    force = jf.forces.Sine(settings["force"]["amplitude"], settings["force"]["omega"])
    ts = np.linspace(0.0, settings["t1"], settings["num_samples"])
    sol = jf.simulate(
        system, jf.Stribeck(**tr), 0.0, 0.0, settings["t1"], ts=ts, force=force
    )
    exp = Experiment(ts, np.asarray(sol.q), force=force)
    lm = LevenbergMarquardt()

    models = [("exact Stribeck (switch)", jf.Stribeck(**tr), lambda m: m.friction)]
    for eps in settings["eps"]:
        models.append(
            (
                f"Regularized tanh eps={eps:g}",
                jf.Regularized(jf.Stribeck(**tr), eps=eps),
                lambda m: m.friction.law,
            )
        )
    lg = settings["lugre"]
    models.append(
        (
            f"LuGre sigma0={lg['sigma0']:g}",
            jf.LuGre(
                lg["sigma0"], lg["sigma1"], tr["fv"], tr["fc"], tr["fs"], tr["vs"]
            ),
            lambda m: m.friction,
        )
    )

    rows, fitted = [], {}
    for label, law, part in models:
        is_lugre = isinstance(law, jf.LuGre)
        viscous = "sigma2" if is_lugre else "fv"

        def free(m, part=part, viscous=viscous):
            p = part(m)
            return (p.fc, p.fs, p.vs, getattr(p, viscous))

        t0 = time.perf_counter()
        result = fit(
            system,
            law,
            exp,
            free=free,
            optimizer=lm,
            max_steps=settings["max_steps"],
            callback=lambda s, loss, label=label: print(
                f"  {label}: step {s}, loss {loss:.3e}", flush=True
            ),
        )
        seconds = time.perf_counter() - t0
        values = dict(zip(("fc", "fs", "vs", "fv"), result.params, strict=True))
        row = dict(
            model=label,
            rms=float(np.sqrt(result.value)),
            seconds=seconds,
            steps=result.num_steps,
        )
        for k, v in values.items():
            row[k] = float(v)
            row[f"{k}_bias"] = 100 * (float(v) - tr[k]) / tr[k]
        rows.append(row)
        fitted[label] = result
        print(
            f"{label}: fc = {values['fc']:.6f} ({row['fc_bias']:+.3f} %), "
            f"{seconds:.1f} s",
            flush=True,
        )

    table = format_table(
        rows,
        [
            ("model", "model", ""),
            ("fc", "fc", ".5f"),
            ("fc_bias", "fc bias %", "+.3f"),
            ("fs", "fs", ".5f"),
            ("fs_bias", "fs bias %", "+.3f"),
            ("vs", "vs", ".5f"),
            ("vs_bias", "vs bias %", "+.2f"),
            ("fv", "fv (σ2)", ".5f"),
            ("fv_bias", "fv bias %", "+.2f"),
            ("rms", "RMS residual m", ".2e"),
            ("seconds", "fit s", ".1f"),
        ],
    )
    print(table)
    print_load_average()

    folder = results_dir(NAME)
    write_json(dict(settings=settings, rows=rows), folder / "summary.json")
    _figure(folder / "figure.png", ts, np.asarray(sol.q[:, 0]), fitted, rows)
    print(f"wrote {folder / 'figure.png'} and {folder / 'summary.json'}")


def _figure(path, ts, q, fitted, rows):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    axes[0].plot(ts, q, "k.", ms=3, label="data (exact switch model)")
    for k, (label, result) in enumerate(fitted.items()):
        q_fit, _ = predict(result.model)
        axes[0].plot(ts, np.asarray(q_fit[0, :, 0]), color=f"C{k}", lw=1, label=label)
    axes[0].set(xlabel="t (s)", ylabel="x (m)", title="fitted trajectories")
    axes[0].legend(fontsize=8)
    labels = [r["model"] for r in rows]
    axes[1].barh(labels, [r["fc_bias"] for r in rows], color="C0")
    axes[1].set(xlabel="bias of the fitted Coulomb level fc (%)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
