"""TOML configuration of an identification run (``jaxfric identify CONFIG``), its
report (JSON) and figures. File I/O lives here and in `jaxfric.cli`, never in
the fitting code.

A configuration::

    [system]                 # as for `jaxfric simulate`: the model, with the
    type = "Oscillator"      # starting guess of every free number
    mass = 1.0
    stiffness = 4.0

    [friction]
    type = "Stribeck"
    fc = 1.5
    fs = 2.25
    vs = 0.15
    fv = 0.3

    [identify]
    free = ["friction.fc", "friction.fs", "friction.vs", "friction.fv"]
    optimizer = "lm"         # "lm" (Levenberg–Marquardt) or "adam"
    max_steps = 60
    learning_rate = 0.05     # Adam only
    position_weight = 1.0    # scalar or one per coordinate
    velocity_weight = 0.0
    windows = 1              # multiple shooting
    free_nodes = true
    continuity_weight = 10.0
    jac = "fwd"              # optional: "fwd" or "bwd"

    [simulate]               # optional: the `SimulateOptions` (rtol, atol,
    rtol = 1e-10             # dtmax, dt0, max_steps, max_events, solver, ...)

    [true]                   # optional: known values, reported next to the fit
    "friction.fc" = 1.0

    [[experiments]]          # one table per measured record
    file = "records/a.csv"   # CSV or NPZ (see `load_record`), relative to the
                             # configuration's folder
    force = { type = "Sine", amplitude = 3.0, omega = 1.5 }  # optional: the
                             # input model; default: the record's `u` column

    [[experiments]]          # a robot log (`jaxfric.io.logs.load_joint_states`)
    file = "logs/run1"       # ROS 2 bag (sqlite3 or MCAP) or ROS 1 .bag
    log = { joints = ["shoulder", "elbow"], dt = 0.01, t_start = 12.0, t_stop = 20.0 }
                             # also: topic, stamp ("header"/"receive"), effort
                             # (the measured efforts become the input `u`)

Instead of files, ``[synthetic]`` makes the records by simulating a true model
(the ``[friction]`` and ``[system]`` tables of ``[synthetic]`` override the
model's; ``noise`` is relative to each record's RMS position) and every
``[[experiments]]`` entry then gives ``force``, ``t1`` and ``num_samples``::

    [synthetic]
    noise = 0.01
    seed = 0
    friction = { type = "Stribeck", fc = 1.0, fs = 1.5, vs = 0.1, fv = 0.2 }

Unknown sections and keys, wrong types and unknown names raise `ConfigError`
naming the section and key.
"""

import dataclasses
from pathlib import Path
from typing import Any

import jax.tree_util as jtu
import numpy as np

from ..identify import (
    Experiment,
    FitResult,
    LevenbergMarquardt,
    Model,
    MultipleShooting,
    Record,
    default_adam,
    from_record,
    stack_experiments,
    synthesize_record,
)
from ..simulate import SimulateOptions
from ._tables import check_sections, resolve_path
from .config import (
    OPTION_KINDS,
    ConfigError,
    _load_system,
    build,
    build_friction,
    check_finite_keys,
    check_ranges,
    config_file,
    parse_simulate,
    parse_table,
    read_toml,
    simulate_options,
)
from .logs import load_joint_states
from .records import load_record

SECTIONS = (
    "system",
    "friction",
    "identify",
    "simulate",
    "true",
    "experiments",
    "synthetic",
)
IDENTIFY_KEYS = {
    "free": ("tuple", str),
    "optimizer": ("choice", ("lm", "adam")),
    "max_steps": "int",
    "learning_rate": "number",
    "position_weight": "array",
    "velocity_weight": "array",
    "windows": "int",
    "free_nodes": "bool",
    "continuity_weight": "number",
    "jac": ("choice", ("fwd", "bwd")),
}
# Allowed ranges of the numeric keys: name -> (lower bound, bound excluded).
IDENTIFY_RANGES: dict[str, tuple[float, bool]] = {
    "max_steps": (1.0, False),
    "learning_rate": (0.0, True),
    "position_weight": (0.0, False),
    "velocity_weight": (0.0, False),
    "windows": (1.0, False),
    "continuity_weight": (0.0, False),
}
SYNTHETIC_RANGES: dict[str, tuple[float, bool]] = {
    "noise": (0.0, False),  # relative to the record's RMS position
    "seed": (0.0, False),  # numpy seeds are non-negative
}
EXPERIMENT_RANGES: dict[str, tuple[float, bool]] = {
    "t1": (0.0, True),  # synthetic records run from t = 0
    "num_samples": (2.0, False),
}
EXPERIMENT_KEYS = {
    "file": "str",
    "log": "table",
    "force": "table",
    "q0": "array",
    "qd0": "array",
    "t1": "number",
    "num_samples": "int",
}
# The `log` table of a robot-log experiment: keywords of
# `jaxfric.io.logs.load_joint_states`.
LOG_KEYS = {
    "joints": ("tuple", str),
    "dt": "number",
    "topic": "str",
    "t_start": "number",
    "t_stop": "number",
    "stamp": "str",
    "effort": "bool",
}
SYNTHETIC_KEYS = {
    "noise": "number",
    "seed": "int",
    "friction": "table",
    "system": "table",
}


@dataclasses.dataclass(frozen=True)
class IdentifyConfig:
    """A parsed identification configuration (see the module docstring)."""

    system: Any
    friction: Any
    experiments: list[Experiment]
    free: tuple[str, ...]
    fit_kwargs: dict[str, Any]
    simulate_options: SimulateOptions
    true: dict[str, Any]  # free path -> true value (a float or an array)
    records: list[Record]
    raw: dict[str, Any]


def _check_path(model: Model, path: str, where: str) -> None:
    try:
        leaf = resolve_path(model, path)
    except AttributeError as e:
        raise ConfigError(
            f"{where}: {path!r} is not a number of the model ({e}); use e.g. "
            "'friction.fc', 'system.mass', 'experiments.qd0'."
        ) from e
    if not jtu.tree_leaves(leaf):
        raise ConfigError(f"{where}: {path!r} holds no numbers.")


def parse_identify_config(path: str | Path) -> IdentifyConfig:
    """Read and check an identification configuration (module docstring).

    Raises:
        ConfigError: naming the section and key of the problem.
    """
    path = Path(path)
    data = read_toml(path)
    check_sections(data, SECTIONS, ("system", "friction", "identify", "experiments"))
    system, file, model = _load_system(data["system"], path.parent)
    friction = build_friction(data["friction"], file, model)

    ident = parse_table(data["identify"], IDENTIFY_KEYS, "[identify]")
    check_ranges(ident, IDENTIFY_RANGES, "[identify]")
    if "free" not in ident or not ident["free"]:
        raise ConfigError("[identify]: missing key 'free' (the unknowns).")

    options = SimulateOptions()
    if "simulate" in data:
        # The options only: the experiments give the times and initial states.
        table = parse_table(data["simulate"], OPTION_KINDS, "[simulate]")
        options = simulate_options(parse_simulate({**table, "t1": 1.0}))

    synthetic = data.get("synthetic")
    if synthetic is not None:
        synthetic = parse_table(synthetic, SYNTHETIC_KEYS, "[synthetic]")
        check_ranges(synthetic, SYNTHETIC_RANGES, "[synthetic]")
    entries = data["experiments"]
    if not isinstance(entries, list) or not entries:
        raise ConfigError("[[experiments]]: expected at least one table.")
    experiments, records = [], []
    for k, entry in enumerate(entries):
        where = f"[[experiments]] #{k}"
        entry = parse_table(entry, EXPERIMENT_KEYS, where)
        check_ranges(entry, EXPERIMENT_RANGES, where)
        force = (
            build("force", entry["force"], section=f"{where} force")
            if "force" in entry
            else None
        )
        kw = {
            key: np.asarray(entry[key], float) for key in ("q0", "qd0") if key in entry
        }
        check_finite_keys(kw, ("q0", "qd0"), where)
        if synthetic is not None:
            for key in ("t1", "num_samples"):
                if key not in entry:
                    raise ConfigError(f"{where}: missing key {key!r} (synthetic).")
            if "file" in entry:
                raise ConfigError(
                    f"{where}: 'file' and [synthetic] exclude each other."
                )
            record = _synthesize(system, friction, synthetic, entry, force, kw, k)
        else:
            if "file" not in entry:
                raise ConfigError(f"{where}: missing key 'file'.")
            file = config_file(entry["file"], path.parent)
            try:
                if "log" in entry:
                    log = parse_table(
                        entry["log"], LOG_KEYS, f"{where} log", ("joints", "dt")
                    )
                    record = load_joint_states(file, **log)
                else:
                    record = load_record(file)
            except (OSError, UnicodeDecodeError) as e:  # records are UTF-8 text
                raise ConfigError(f"{where} key 'file': cannot read {file}: {e}") from e
        if force is None and record.u is None:
            raise ConfigError(
                f"{where}: no 'force' and the record has no input column 'u'."
            )
        records.append(record)
        if synthetic is not None:
            # The simulated start is known exactly; the noisy first sample is not it.
            kw.setdefault("q0", np.zeros(record.n_dof))
        experiments.append(from_record(record, force=force, **kw))
    try:
        stack_experiments(experiments)
    except ValueError as e:
        raise ConfigError(f"[[experiments]]: {e}") from e

    model = Model(system, friction, stack_experiments(experiments))
    free = tuple(ident["free"])
    for p in free:
        _check_path(model, p, "[identify] key 'free'")
    true = {}
    if synthetic is not None:
        true_model = Model(
            _synthetic_part(synthetic, "system", system),
            _synthetic_part(synthetic, "friction", friction),
            model.experiments,
        )
        for p in free:
            if not p.startswith("experiments."):
                true[p] = resolve_path(true_model, p)
    known = data.get("true", {})
    for key, value in parse_table(
        known, dict.fromkeys(known, "array"), "[true]"
    ).items():
        _check_path(model, key, "[true]")
        true[key] = value
        check_finite_keys(true, (key,), "[true]")
    true = {k: np.asarray(v, float) for k, v in true.items()}

    optimizer_name = ident.get("optimizer", "lm")
    max_steps = ident.get("max_steps", 100 if optimizer_name == "lm" else 1000)
    if optimizer_name == "adam":
        optimizer = default_adam(float(ident.get("learning_rate", 0.05)), max_steps)
    else:
        optimizer = LevenbergMarquardt()
    windows = ident.get("windows", 1)
    shooting = MultipleShooting(
        windows,
        free_nodes=ident.get("free_nodes", True),
        continuity_weight=float(ident.get("continuity_weight", 10.0)),
    )
    fit_kwargs = dict(
        optimizer=optimizer,
        max_steps=max_steps,
        position_weight=ident.get("position_weight", 1.0),
        velocity_weight=ident.get("velocity_weight", 0.0),
        shooting=shooting,
        simulate_options=options,
    )
    if "jac" in ident:
        fit_kwargs["jac"] = ident["jac"]
    return IdentifyConfig(
        system=system,
        friction=friction,
        experiments=experiments,
        free=free,
        fit_kwargs=fit_kwargs,
        simulate_options=options,
        true=true,
        records=records,
        raw=dict(data),
    )


def _synthetic_part(synthetic, family, default):
    if family not in synthetic:
        return default
    return build(family, synthetic[family], section=f"[synthetic.{family}]")


def _synthesize(system, friction, synthetic, entry, force, kw, k) -> Record:
    """A record simulated from the true model of ``[synthetic]``, with noise."""
    where = f"[[experiments]] #{k}"
    if force is None:
        raise ConfigError(f"{where}: missing key 'force' (synthetic records).")
    return synthesize_record(
        _synthetic_part(synthetic, "system", system),
        _synthetic_part(synthetic, "friction", friction),
        np.linspace(0.0, entry["t1"], entry["num_samples"]),
        force=force,
        q0=kw.get("q0", 0.0),
        qd0=kw.get("qd0", 0.0),
        noise=synthetic.get("noise", 0.0),
        seed=[synthetic.get("seed", 0), k],
        source=f"synthetic record {k}",
    )


def report(cfg: IdentifyConfig, result: FitResult, wall: float) -> dict[str, Any]:
    """The JSON report: fitted values with standard errors, true values and
    relative errors where known, loss history and run facts."""
    params = {}
    offset = 0
    for p in cfg.free:
        value = np.asarray(resolve_path(result.model, p))
        se = np.asarray(resolve_path(result.stderr_model, p))
        size = value.size
        entry = {
            "names": list(result.names[offset : offset + size]),
            "value": value,
            "stderr": se,
        }
        offset += size
        if p in cfg.true:
            true = cfg.true[p]
            entry["true"] = true
            entry["relative_error"] = np.abs(value - true) / np.maximum(
                np.abs(true), 1e-300
            )
        params[p] = entry
    return dict(
        parameters=params,
        loss=result.value,
        loss_history=result.value_history,
        num_steps=result.num_steps,
        converged=result.converged,
        num_failed_solves=result.num_failed_solves,
        wall_time_s=wall,
        fit_seconds=result.seconds,
        num_experiments=len(cfg.experiments),
        config=cfg.raw,
    )


def plot(cfg: IdentifyConfig, result: FitResult, q_fit, path: Path) -> Path:
    """Measured against fitted trajectories, and the convergence of the fit."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    ax = axes[0]
    for b, record in enumerate(cfg.records):
        for j in range(record.q.shape[1]):
            color = f"C{(b * record.q.shape[1] + j) % 10}"
            ax.plot(record.ts, record.q[:, j], ".", ms=2, color=color, alpha=0.5)
            ax.plot(record.ts, np.asarray(q_fit[b, :, j]), "-", color=color, lw=1)
    ax.set(xlabel="t (s)", ylabel="q", title="measured (dots) and fitted (lines)")
    ax = axes[1]
    steps = np.arange(1, len(result.value_history) + 1)
    ax.semilogy(steps, result.value_history, "k-", label="loss")
    if cfg.true:
        names = list(result.names)
        for p, true in cfg.true.items():
            if p not in cfg.free:
                continue
            start = sum(
                np.size(resolve_path(result.model, f))
                for f in cfg.free[: cfg.free.index(p)]
            )
            cols = result.params_history[:, start : start + np.size(true)]
            err = np.abs(cols - np.ravel(true)) / np.maximum(
                np.abs(np.ravel(true)), 1e-300
            )
            for c in range(err.shape[1]):
                ax.semilogy(steps, err[:, c], label=f"rel. error {names[start + c]}")
    ax.set(xlabel="step", title="convergence")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


__all__ = ["IdentifyConfig", "parse_identify_config", "plot", "report", "resolve_path"]
