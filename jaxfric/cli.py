"""The ``jaxfric`` command line.

    jaxfric simulate CONFIG.toml [--out DIR] [--overwrite]

Each subcommand is a function decorated with ``@app.command()`` that checks its
output folder (`output_dir`: never into a non-empty folder without
``--overwrite``), reads its TOML with `jaxfric.io`, runs the library and writes
its results through `jaxfric.io.results`. Configuration, output-folder and file
errors are one-line messages from `_fail` (exit code 2), reported before anything
is simulated where they can be; failed solves exit with code 1 after the files
are written. New subcommands follow the same pattern.
"""

import os
import time
from pathlib import Path
from typing import Annotated, NoReturn

import typer

app = typer.Typer(
    name="jaxfric",
    help="Differentiable simulation of mechanisms with friction.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help text: Rich markup would swallow the section names ("[system]").
    rich_markup_mode=None,
)

EXIT_FAILED_SOLVE = 1
EXIT_BAD_CONFIG = 2

ConfigArg = Annotated[
    Path,
    typer.Argument(
        exists=True,
        dir_okay=False,
        readable=True,
        metavar="CONFIG",
        help="TOML configuration file.",
    ),
]
OutOption = Annotated[
    Path | None,
    typer.Option(
        "--out",
        "-o",
        file_okay=False,
        help="Output folder (default: results/<config name>/).",
    ),
]
ProgressOption = Annotated[
    bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")
]
OverwriteOption = Annotated[
    bool,
    typer.Option(
        "--overwrite",
        help="Write into an output folder that is not empty (files of the same "
        "names are replaced; the others are kept).",
    ),
]


@app.callback()
def main() -> None:
    """jaxfric: exact Coulomb stick-slip and dynamic friction models in JAX."""
    import jax

    # The switch path locates events to ~1e-10; float32 is not enough.
    jax.config.update("jax_enable_x64", True)


def _fail(message: str, code: int = EXIT_BAD_CONFIG) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _finish(paths: dict, failure: str | None = None) -> None:
    """List the files written; then, if `failure`, exit with `EXIT_FAILED_SOLVE`
    (the files of a failed solve are kept for inspection)."""
    for path in paths.values():
        typer.echo(f"wrote {path}")
    if failure is not None:
        _fail(failure, EXIT_FAILED_SOLVE)


def _finish_solve(paths: dict, solution, title: str, what: str, details: str) -> None:
    """Print ``title: what <result>; details`` (`what` names the solve, e.g.
    ``"best solve"``), then `_finish`, failing when `solution` did."""
    from jaxfric.io.results import result_message

    message = result_message(solution)
    typer.echo(f"{title}: {what} {message}; {details}")
    _finish(paths, None if message == "successful" else f"the {what} failed: {message}")


def _config_failure(config: Path, error: Exception) -> NoReturn:
    """`_fail` with the configuration file named once (read errors name it)."""
    message = str(error)
    _fail(message if message.startswith(f"{config}:") else f"{config}: {message}")


def output_dir(config: Path, out: Path | None, overwrite: bool = False) -> Path:
    """The output folder, checked before anything runs.

    Args:
        config: the configuration file.
        out: ``--out``, or `None` for ``results/<config stem>/`` under the current
            folder.
        overwrite: allow a folder that already holds files.

    Returns:
        The folder (not created yet: it is made when the results are written).

    Raises:
        typer.Exit: code 2, after a one-line message, if the path is a file, lies
            under a file, cannot be created or written, or is a non-empty folder
            and `overwrite` is false (a user's files are never replaced silently).
    """
    folder = out if out is not None else Path("results") / config.stem
    if folder.exists():
        if not folder.is_dir():
            _fail(f"output folder {folder} is an existing file.")
        try:
            nonempty = any(folder.iterdir())
        except OSError as e:
            _fail(f"cannot read output folder {folder}: {e.strerror or e}.")
        if nonempty and not overwrite:
            _fail(
                f"output folder {folder} is not empty; pass --overwrite to write "
                "into it (files of the same names are replaced), or choose another "
                "--out."
            )
        existing = folder
    else:
        existing = folder.absolute().parent
        while not existing.exists():
            existing = existing.parent
        if not existing.is_dir():
            _fail(f"cannot create output folder {folder}: {existing} is a file.")
    if not os.access(existing, os.W_OK | os.X_OK):
        _fail(f"cannot write output folder {folder}: {existing} is not writable.")
    return folder


@app.command()
def simulate(
    config: ConfigArg, out: OutOption = None, overwrite: OverwriteOption = False
) -> None:
    """Simulate the system of CONFIG (sections [system], [friction], optional
    [force], [simulate]; see jaxfric/io/config.py); write trajectory.npz,
    trajectory.csv, trajectory.png and summary.json."""
    import jaxfric as jf
    from jaxfric.io import load_config
    from jaxfric.io.results import save_solution

    folder = output_dir(config, out, overwrite)
    try:
        cfg = load_config(config)
    except ValueError as e:  # ConfigError, or a value a constructor rejects
        _config_failure(config, e)
    start = time.perf_counter()
    try:
        sol = jf.simulate(
            cfg.system, cfg.friction, force=cfg.force, throw=False, **cfg.simulate
        )
    except (ValueError, TypeError) as e:  # inputs `simulate` rejects (shapes, ts)
        _fail(f"{config}: [simulate] {e}")
    sol.q.block_until_ready()
    wall = time.perf_counter() - start
    title = f"{type(cfg.system).__name__} with {type(cfg.friction).__name__}"
    try:
        paths = save_solution(
            sol,
            folder,
            title=title,
            summary_extra={
                "config_file": str(config),
                "config": cfg.raw,
                "wall_time_s": wall,
            },
        )
    except OSError as e:
        _fail(f"cannot write the results to {folder}: {e}")
    _finish_solve(
        paths,
        sol,
        title,
        "solve",
        f"t1={float(sol.ts[-1]):g}, "
        f"q(t1)={[round(float(v), 6) for v in sol.q[-1]]}, "
        f"vector-field evaluations={int(sol.stats['num_vf_evals'])}, "
        f"wall {wall:.2f} s",
    )


def _progress(total: int, label: str, enabled: bool):
    """A tqdm bar and the ``callback(step, value)`` of `jaxfric.identify.fit` and
    `jaxfric.optimize.optimize` that moves it."""
    from tqdm import tqdm

    bar = tqdm(total=total, desc=label, disable=not enabled, unit="step")

    def callback(step: int, value: float) -> None:
        bar.update(step - bar.n)
        bar.set_postfix(value=f"{value:.4g}")

    return bar, callback


@app.command()
def optimize(
    config: ConfigArg,
    out: OutOption = None,
    progress: ProgressOption = True,
    overwrite: OverwriteOption = False,
) -> None:
    """Optimise the applied force of CONFIG (sections [objective], [[limits]],
    [optimize]; see docs/optimize.md); write optimize.json, history.png,
    motion.png and the best trajectory (trajectory.npz/csv/png, summary.json)."""
    import jaxfric.optimize as jo
    from jaxfric.io.optimize_config import (
        bounds_array,
        load_optimize_config,
        plot_history,
        report as make_report,
    )
    from jaxfric.io.results import save_solution, write_json
    from jaxfric.optimize import applied_force
    from jaxfric.plot import plot_solution

    folder = output_dir(config, out, overwrite)
    try:
        cfg = load_optimize_config(config)
    except ValueError as e:
        _config_failure(config, e)
    bar, callback = _progress(cfg.max_steps, config.stem, progress)
    start = time.perf_counter()
    try:
        result = jo.optimize(
            cfg.problem,
            cfg.optimizer,
            cfg.params0,
            max_steps=cfg.max_steps,
            batched=cfg.batched,
            project=cfg.project,
            callback=callback,
        )
    except (ValueError, TypeError) as e:  # inputs `simulate` or optax reject
        bar.close()
        _config_failure(config, e)
    bar.close()
    wall = time.perf_counter() - start
    title = (
        f"{type(cfg.problem.system).__name__} with "
        f"{type(cfg.problem.friction).__name__}: optimised "
        f"{type(cfg.problem.force).__name__}"
    )
    report = make_report(result, cfg.problem)
    report.update(
        config_file=str(config),
        config=cfg.raw,
        bounds=bounds_array(cfg.project),
        wall_time_s=wall,
    )
    try:
        paths = save_solution(
            result.solution,
            folder,
            title=title,
            summary_extra={"config_file": str(config), "config": cfg.raw},
        )
        paths["report"] = write_json(report, folder / "optimize.json")
        paths["history"] = folder / "history.png"
        plot_history(result, title=title).savefig(paths["history"], dpi=120)
        paths["motion"] = folder / "motion.png"
        tau = applied_force(result.solution, result.force)
        bounds = bounds_array(cfg.project) or ()
        fig = plot_solution(result.solution, applied=tau, bounds=bounds)
        fig.savefig(paths["motion"], dpi=120)
    except OSError as e:
        _fail(f"cannot write the results to {folder}: {e}")
    _finish_solve(
        paths,
        result.solution,
        title,
        "best solve",
        f"objective {report['initial_objective']} -> "
        f"{report['objective']:.6g} in {report['num_steps']} steps "
        f"(loss {report['loss']:.6g}, penalty {report['penalty']:.3g}, limit "
        f"violation {report['violation']:.3g}); "
        f"q(t1)={[round(v, 6) for v in report['final']['q']]}, wall {wall:.2f} s",
    )


ExportOption = Annotated[
    Path | None,
    typer.Option(
        help="Write the fitted joint friction into a copy of the [system] robot "
        "file at this path (URDF <dynamics>, MJCF frictionloss/damping/armature).",
        dir_okay=False,
    ),
]


@app.command()
def identify(
    config: ConfigArg,
    out: OutOption = None,
    progress: ProgressOption = True,
    overwrite: OverwriteOption = False,
    export_urdf: ExportOption = None,
    export_mjcf: ExportOption = None,
) -> None:
    """Fit the free numbers of CONFIG (sections [identify], [[experiments]],
    optional [synthetic], [true]; see jaxfric/io/identify_config.py) to its
    records; write identify.json (fitted vs true values, standard errors, loss
    history) and identify.png (measured vs fitted, convergence); with
    --export-urdf/--export-mjcf, also the fitted friction into a copy of the
    robot file the [system] section loads."""
    import jaxfric.identify as ji
    from jaxfric.io.config import read_toml, robot_file, robot_format
    from jaxfric.io.identify_config import (
        parse_identify_config,
        plot,
        report,
        resolve_path as _resolve,
    )
    from jaxfric.io.results import write_json

    # Checked first: a [synthetic] configuration simulates while it is parsed.
    folder = output_dir(config, out, overwrite)
    exports = {".urdf": export_urdf, ".xml": export_mjcf}
    exports = {kind: path for kind, path in exports.items() if path is not None}
    try:
        raw_system = read_toml(config).get("system") if exports else None
        file = robot_file(raw_system, config.parent)
    except ValueError as e:
        _config_failure(config, e)
    for kind in exports:
        expected = "URDF" if kind == ".urdf" else "MJCF"
        try:
            wrong = file is None or robot_format(file) != expected
        except ValueError as e:
            _config_failure(config, e)
        if wrong:
            _fail(
                f"{config}: --export-{'urdf' if kind == '.urdf' else 'mjcf'} needs "
                f"[system] file = a {expected} robot file; the [system] section "
                f"{'has no file' if file is None else f'loads {file}'}."
            )
    try:
        cfg = parse_identify_config(config)
    except ValueError as e:  # ConfigError, RecordError, a rejected experiment
        _config_failure(config, e)
    bar, callback = _progress(cfg.fit_kwargs["max_steps"], config.stem, progress)
    start = time.perf_counter()
    try:
        result = ji.fit(
            cfg.system,
            cfg.friction,
            cfg.experiments,
            free=lambda m: tuple(_resolve(m, p) for p in cfg.free),
            callback=callback,
            **cfg.fit_kwargs,
        )
    except (ValueError, TypeError) as e:
        bar.close()
        _fail(f"{config}: [identify] {e}")
    bar.close()
    wall = time.perf_counter() - start
    summary = report(cfg, result, wall)
    q_fit, _ = ji.predict(result.model, cfg.simulate_options)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        paths = {"report": write_json(summary, folder / "identify.json")}
        paths["figure"] = plot(cfg, result, q_fit, folder / "identify.png")
    except OSError as e:
        _fail(f"cannot write the results to {folder}: {e}")
    import jaxfric.io as jio

    writers = {".urdf": jio.export_urdf, ".xml": jio.export_mjcf}
    for kind, path in exports.items():
        try:
            notes = writers[kind](
                file, path, result.model.system, result.model.friction
            )
        except (OSError, ValueError) as e:
            _fail(f"cannot export the fitted friction to {path}: {e}")
        paths[f"export {kind[1:]}"] = path
        for note in notes:
            typer.echo(f"note ({path.name}): {note}")
    for p, entry in summary["parameters"].items():
        value = [round(float(v), 8) for v in entry["value"].ravel()]
        se = [float(f"{s:.3g}") for s in entry["stderr"].ravel()]
        line = f"{p} = {value} ± {se}"
        if "true" in entry:
            err = [f"{100 * float(e):.3g} %" for e in entry["relative_error"].ravel()]
            line += f" (true {entry['true'].ravel().tolist()}, error {err})"
        typer.echo(line)
    typer.echo(
        f"loss {result.value:.6g} after {result.num_steps} steps "
        f"({'converged' if result.converged else 'step budget spent'}), "
        f"wall {wall:.2f} s"
    )
    n_failed = result.num_failed_solves
    _finish(
        paths,
        f"{n_failed} simulation(s) fail at the fitted model" if n_failed else None,
    )


if __name__ == "__main__":
    app()
