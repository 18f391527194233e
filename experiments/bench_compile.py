"""Benchmark of issue 19, items 1 and 5: what a user waits for before the first
number, and how much memory a batch takes.

Each case runs in a fresh Python process (nothing compiled or cached before):
the import of jaxfric, then the first call of a jitted function (compilation
plus one run) and a second call (the run alone), on the exact switch path:

- ``forward``: the saved trajectory (``num_save`` times) of one simulation;
- ``grad``: ``jax.grad`` of the sum of the final positions with respect to the
  Coulomb levels (reverse mode, the default adjoint);
- ``jacfwd``: ``jax.jacfwd`` of the final positions with respect to the levels
  (``diffrax.ForwardMode``);
- ``batch forward`` / ``batch grad``: ``vmap`` of the final positions / of their
  gradient over ``batch`` initial positions (oscillator only), with the
  process's peak resident memory (``ru_maxrss``) before and after.

For each case also the size of its traced program (`program_profile`): its
primitive equations and the ``profile_top`` jaxfric functions that trace the
most of them, to show where compile time goes.

Systems: the Quinn/Farhat oscillator (Coulomb 1, x0 = 2.75), the 4-DoF
``tests/data/branched.urdf`` robot and the UR5 (both from rest at 0.3 rad with
0.5 rad/s per joint, Coulomb 0.5 N·m in every joint, gravity). The issue's
first-call targets are printed as PASS/FAIL; the rest is reported. Writes
``results/bench_compile/summary.json`` and ``figure.png``.

Run: ``python experiments/bench_compile.py [SETTINGS.toml]``.
"""

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from _common import (
    ROOT,
    claim,
    example_robot_urdf,
    load_average,
    load_settings,
    print_claims,
    print_table,
    read_settings,
    results_dir,
    write_json,
)

NAME = "bench_compile"
MODES = ("forward", "grad", "jacfwd", "batch forward", "batch grad")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def program_profile(fn, args, top: int) -> dict:
    """The size of ``fn``'s traced program and where it comes from: the
    primitive equations of its jaxpr, every call, loop body and branch counted
    where it is used (XLA's CPU compiler inlines calls), and the `top` jaxfric
    functions by the equations traced inside them (inclusive: an elimination
    called from a stick solve counts for both), from each equation's
    traceback; and likewise by the innermost jaxfric function alone. Compile
    time grows with it (issue 19, item 1). Equinox's primitives (lineax's
    linear solve in optimistix's implicit derivatives) are lowered from their
    implementation, not from the jaxpr: each counts as one equation."""
    import jax
    from jax.extend import core as jcore

    import jaxfric

    package = str(Path(jaxfric.__file__).parent) + "/"
    counts, innermost, total = {}, {}, 0

    def walk(jaxpr):
        nonlocal total
        for eqn in jaxpr.eqns:
            subs = [
                j
                for value in eqn.params.values()
                for j in (value if isinstance(value, (tuple, list)) else (value,))
                if isinstance(j, (jcore.ClosedJaxpr, jcore.Jaxpr))
            ]
            for sub in subs:
                walk(sub.jaxpr if isinstance(sub, jcore.ClosedJaxpr) else sub)
            if subs:
                continue
            total += 1
            trace = eqn.source_info.traceback
            frames = [] if trace is None else trace.frames
            names = [
                f"{f.file_name[len(package) :]}:{f.function_name}"
                for f in frames
                if f.file_name.startswith(package)
            ]
            for name in set(names):
                counts[name] = counts.get(name, 0) + 1
            if names:
                innermost[names[0]] = innermost.get(names[0], 0) + 1

    walk(jax.make_jaxpr(fn)(*args).jaxpr)

    def ranked(counts):
        return dict(sorted(counts.items(), key=lambda item: -item[1])[:top])

    return dict(
        equations=total, by_function=ranked(counts), by_innermost=ranked(innermost)
    )


def run_case(settings_path: str, system_name: str, mode: str) -> dict:
    """One case, in this (fresh) process; returns its timings."""
    t0 = time.perf_counter()
    from _common import enable_float64

    enable_float64()
    import diffrax
    import jax
    import jax.numpy as jnp

    import jaxfric as jf
    from jaxfric.io import load_urdf

    import_s = time.perf_counter() - t0
    settings = read_settings(Path(settings_path))
    spec = settings["systems"][system_name]
    t1 = spec.get("t1", settings["t1"])
    num_save = settings["num_save"]
    max_events = spec.get("max_events", settings["max_events"])
    if spec["kind"] == "oscillator":
        system = jf.systems.Oscillator(mass=1.0, stiffness=1.0)
        fc0, q0, qd0 = jnp.array(1.0), jnp.array([2.75]), jnp.zeros(1)
    else:
        path = (
            str(ROOT / spec["path"])
            if "path" in spec
            else example_robot_urdf(spec["example_robot"])
        )
        system, _ = load_urdf(path)
        fc0 = jnp.full(system.n_friction, 0.5)
        q0 = jnp.full(system.n_dof, 0.3)
        qd0 = jnp.full(system.n_dof, 0.5)

    def sim(fc, x0=q0, adjoint=None):
        return jf.simulate(
            system,
            jf.Coulomb(fc),
            x0,
            qd0,
            t1,
            num_save=num_save,
            adjoint=adjoint,
            max_events=max_events,
        )

    if mode == "forward":
        fn, args = jax.jit(lambda fc: sim(fc).q), (fc0,)
    elif mode == "grad":
        fn, args = jax.jit(jax.grad(lambda fc: jnp.sum(sim(fc).q[-1]))), (fc0,)
    elif mode == "jacfwd":
        forward_mode = diffrax.ForwardMode()
        fn = jax.jit(jax.jacfwd(lambda fc: sim(fc, adjoint=forward_mode).q[-1]))
        args = (fc0,)
    else:
        x0s = q0 * jnp.linspace(0.5, 2.5, settings["batch"])[:, None]
        if mode == "batch forward":
            fn = jax.jit(jax.vmap(lambda x0: sim(fc0, x0).q[-1]))
        else:
            fn = jax.jit(
                jax.vmap(jax.grad(lambda x0: jnp.sum(sim(fc0, x0).q[-1]), argnums=0))
            )
        args = (x0s,)
    before_mb = _peak_mb()
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    first_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    second_s = time.perf_counter() - t0
    peak_after_mb = _peak_mb()
    profile = program_profile(fn, args, settings["profile_top"])
    return dict(
        **profile,
        system=system_name,
        mode=mode,
        import_s=import_s,
        first_s=first_s,
        second_s=second_s,
        compile_s=first_s - second_s,
        peak_before_mb=before_mb,
        peak_after_mb=peak_after_mb,
    )


def cases(settings):
    for name, spec in settings["systems"].items():
        for mode in MODES:
            if mode.startswith("batch") and spec["kind"] != "oscillator":
                continue
            yield name, mode


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--case":
        print(json.dumps(run_case(*sys.argv[2:5])))
        return True
    settings = load_settings(NAME)
    settings_path = str(settings.file)
    rows = []
    for name, mode in cases(settings):
        best = None
        for _ in range(settings["repeats"]):
            proc = subprocess.run(
                [sys.executable, __file__, "--case", settings_path, name, mode],
                capture_output=True,
                text=True,
                cwd=Path(__file__).parent,
            )
            if proc.returncode != 0:
                raise RuntimeError(f"{name} {mode} failed:\n{proc.stderr[-3000:]}")
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            if best is None or row["first_s"] < best["first_s"]:
                best = row
        best["case"] = f"{name} {mode}"
        best["load"] = load_average()
        print(
            f"{best['case']}: first call {best['first_s']:.1f} s, "
            f"second {best['second_s'] * 1e3:.1f} ms",
            flush=True,
        )
        rows.append(best)
    print_table(
        rows,
        [
            ("case", "case", ""),
            ("import_s", "import s", ".1f"),
            ("first_s", "first call s", ".1f"),
            ("second_s", "second call s", ".4f"),
            ("equations", "program equations", "d"),
            ("peak_before_mb", "peak RSS before MB", ".0f"),
            ("peak_after_mb", "peak RSS after MB", ".0f"),
        ],
    )
    for r in rows:
        for key, what in (("by_function", "inside"), ("by_innermost", "innermost")):
            print(f"{r['case']}: {r['equations']} equations; {what}")
            for name, count in r[key].items():
                print(f"  {count:8d} ({count / r['equations']:4.0%}) {name}")
    targets = settings["targets"]
    claims = [
        claim(
            r["first_s"] <= targets[r["case"]],
            f"{r['case']}: first call {r['first_s']:.1f} s (target "
            f"{targets[r['case']]:g} s)",
            measured=r["first_s"],
        )
        for r in rows
        if r["case"] in targets
    ]
    ok = print_claims(claims)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    labels = [r["case"] for r in rows]
    ax.barh(labels, [r["first_s"] for r in rows], label="first call")
    ax.barh(labels, [r["second_s"] for r in rows], label="second call")
    for r in rows:
        if r["case"] in targets:
            ax.plot(targets[r["case"]], r["case"], "k|", markersize=14)
    ax.set_xlabel("s (| = issue 19 target)")
    ax.invert_yaxis()
    ax.legend()
    fig.tight_layout()
    out = results_dir(NAME)
    fig.savefig(out / "figure.png", dpi=120)
    write_json({"rows": rows, "claims": claims}, out / "summary.json")
    print(f"wrote {out / 'figure.png'} and {out / 'summary.json'}")
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
