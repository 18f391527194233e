"""TOML configuration of a simulation: system, friction law, applied force and
solver options.

A configuration file has these sections::

    [system]            # required
    type = "Oscillator"
    mass = 1.0
    stiffness = 1.0

    [friction]          # required; a wrapped law is a sub-table
    type = "Regularized"
    eps = 1e-3
    [friction.law]
    type = "Coulomb"
    fc = 1.0

    [force]             # optional
    type = "Sine"
    amplitude = 0.5
    omega = 2.0

    [simulate]          # required: keywords of `jaxfric.simulate`
    t1 = 10.0
    q0 = 2.75
    qd0 = 0.0
    num_save = 501

Every key other than ``type`` is a constructor argument of the named class; the
allowed keys and their types are read from the class itself, so a new law or
force needs no change here. An argument that is a sequence of modules is an
array of tables: a closed chain's loop joints are ``[[system.loops]]`` tables
(``kind``, ``link_a``, ``link_b``, ...), its tree the ``[system.tree]`` table
(see ``configs/four_bar_crank_friction.toml``).

A robot comes from its URDF, MJCF or MotionSolve file instead (`build_system`)::

    [system]
    type = "RigidBodyTree"
    file = "arm.urdf"   # relative to the TOML. .urdf: load_urdf; .xml:
                        # load_motionsolve if the root element is
                        # <MultiBodySystem>, else load_mjcf (`robot_format`)
    damping = 0.1       # optional overrides: damping, armature, friction_joints
                        # (and gravity for a URDF; none for a MotionSolve model,
                        # whose file is the whole model)

The ``[friction]`` section still gives the law (and, for identification, the
starting values); the file's friction levels are not read. A MotionSolve model's
``Force_JointFriction`` elements can be the law instead (`build_friction`)::

    [friction]
    type = "JointFriction"  # exact Coulomb; "JointLuGre": MotionSolve's LuGre form
    from_file = true        # no other keys: the file gives every number

and for a MotionSolve model ``[simulate]`` may leave out ``t1`` (the file's
``Command/Simulate`` end time, when it has one) and ``q0`` (the file's
configuration); see ``configs/motionsolve_pendulum.toml``.

Unknown sections, unknown keys, missing required keys, wrong value types and
unknown ``type`` names raise `ConfigError` naming the section and key (and
listing what is allowed). Errors the constructors raise (parameter ranges) are
re-raised with the section prefixed; out-of-range ``[simulate]`` numbers (a
negative ``rtol``, ``t1 <= t0``) are rejected while the file is read, before
anything is compiled (`check_simulate_ranges`).
"""

import collections.abc
import dataclasses
import inspect
import tomllib
import types
import typing
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import diffrax
import equinox as eqx

from .. import forces as _forces, friction as _friction, systems as _systems
from .._check import check_finite, check_range
from ..forces import AbstractForce
from ..friction import AbstractFrictionLaw
from ..simulate import SimulateOptions, check_interval, save_times
from ..systems import AbstractSystem
from .motionsolve import MotionSolveModel

SECTIONS = ("system", "friction", "force", "simulate")


class ConfigError(ValueError):
    """An invalid configuration; the message names the section and the key."""


# How TOML writes each `SimulateOptions` field (see `_convert`); `adjoint` has
# no TOML form.
OPTION_KINDS: dict[str, str] = {
    "solver": "solver",
    "rtol": "number",
    "atol": "number",
    "dt0": "number",
    "dtmax": "number",
    "jump_ts": "array",
    "max_steps": "int",
    "max_events": "int",
    "friction_state0": "array",
}
assert set(OPTION_KINDS) <= {f.name for f in dataclasses.fields(SimulateOptions)}
# Keys of [simulate]: name -> kind: the arguments of `simulate` besides the
# options. `throw` is left out: the caller decides how to report a failed solve.
SIMULATE_KEYS: dict[str, str] = {
    "t1": "number",
    "t0": "number",
    "q0": "array",
    "qd0": "array",
    "ts": "array",
    "num_save": "int",
    **OPTION_KINDS,
}
SIMULATE_REQUIRED = ("t1",)

_BASES: dict[str, tuple[type, types.ModuleType]] = {
    "system": (AbstractSystem, _systems),
    "friction": (AbstractFrictionLaw, _friction),
    "force": (AbstractForce, _forces),
}


class SimulationConfig(NamedTuple):
    """A parsed configuration: built objects and the keywords of `simulate`.

    Attributes:
        system: the `AbstractSystem`.
        friction: the friction law.
        force: the applied force, or `None`.
        simulate: keyword arguments of `jaxfric.simulate` other than the first
            two (``q0``, ``qd0``, ``t1`` included).
        raw: the configuration as read (plain dict), for the record.
    """

    system: AbstractSystem
    friction: AbstractFrictionLaw
    force: AbstractForce | None
    simulate: dict[str, Any]
    raw: dict[str, Any]

    @property
    def options(self) -> SimulateOptions:
        """The numerical options of `simulate` as one `SimulateOptions`."""
        return simulate_options(self.simulate)


class _Param(NamedTuple):
    name: str
    kind: Any  # "number", "array", "int", "bool", "str", ("choice", values),
    #            ("tuple", str, int or (int, str)), ("tuple", "elements"): joints
    #            or ball joints (arrays of three), ("module", family, base class
    #            or protocol), ("modules", class): an array of tables
    required: bool


def _is_concrete_class(obj, base) -> bool:
    return (
        inspect.isclass(obj)
        and issubclass(obj, base)
        and not inspect.isabstract(obj)
        and not obj.__name__.startswith("Abstract")
    )


def _unwrap_optional(annotation):
    """``X | None`` -> ``(X, True)``; anything else -> ``(annotation, False)``."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        has_none = len(args) < len(typing.get_args(annotation))
        if len(args) == 1:
            return args[0], has_none
        return annotation, has_none
    return annotation, False


def _kind_of(annotation):
    """What a TOML value for a parameter of this annotation must be; `None` for
    parameters that a configuration cannot express (callables)."""
    if typing.get_origin(annotation) is typing.Literal:
        return ("choice", typing.get_args(annotation))
    if annotation in (str, bool, int, float):
        return {str: "str", bool: "bool", int: "int", float: "number"}[annotation]
    if getattr(annotation, "_is_protocol", False):
        if getattr(annotation, "_is_runtime_protocol", False):
            # A reference trajectory (`position(t)`, ...): any force class that
            # has the protocol's methods, e.g. FourierSeries.
            return ("module", "force", annotation)
        return None
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    sequence = origin is tuple and len(args) == 2 and args[1] is Ellipsis
    if sequence or (origin is collections.abc.Sequence and len(args) == 1):
        item = args[0]
        if item in (str, int):  # static structure: names, parent indices
            return ("tuple", item)
        if typing.get_origin(item) in (typing.Union, types.UnionType):
            members = set(typing.get_args(item))
            if members == {int, str}:  # joints by index or name
                return ("tuple", (int, str))
            if {int, str} < members:  # friction elements: joints or ball joints
                return ("tuple", "elements")
        if _is_concrete_class(item, eqx.Module) and _params(item) is not None:
            # Parts of a module (a closed chain's loop joints): an array of
            # tables, `[[system.loops]]`.
            return ("modules", item)
    if inspect.isclass(annotation):
        for family, (base, _) in _BASES.items():
            if issubclass(annotation, base):
                return ("module", family, annotation)
        if issubclass(annotation, Callable):  # pyright: ignore
            return None
        if _is_concrete_class(annotation, eqx.Module) and _params(annotation):
            # A part of a module (a free body's plane contact): a sub-table.
            return ("part", annotation)
    if annotation is Callable or typing.get_origin(annotation) is Callable:
        return None
    if getattr(annotation, "dim_str", None) == "":  # a jaxtyping scalar
        return "number"
    # jaxtyping arrays, ArrayLike, unannotated: a number or a list of numbers.
    return "array"


def _params(cls) -> list[_Param] | None:
    """Constructor parameters of `cls` with the kind of value each accepts, or
    `None` if some required parameter cannot be written in TOML."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    out = []
    for p in inspect.signature(cls).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        # A hand-written __init__'s annotation says what it accepts (joints by
        # name or index); else the field type (converted fields show `Any` in
        # the generated __init__).
        annotation = p.annotation
        if annotation in (inspect.Parameter.empty, Any) and p.name in fields:
            annotation = fields[p.name].type
        if annotation is inspect.Parameter.empty:
            annotation = Any
        annotation, optional = _unwrap_optional(annotation)
        kind = _kind_of(annotation)
        required = p.default is inspect.Parameter.empty and not optional
        if kind is None:
            if required:
                return None
            continue
        out.append(_Param(p.name, kind, required))
    return out


def available_types(family: str) -> dict[str, type]:
    """The configurable classes of a family (``"system"``, ``"friction"``,
    ``"force"``): the concrete classes exported by `jaxfric.systems`,
    `jaxfric.friction` or `jaxfric.forces` whose arguments TOML can express."""
    base, module = _BASES[family]
    out = {}
    for name in sorted(dir(module)):
        obj = getattr(module, name)
        if _is_concrete_class(obj, base) and _params(obj) is not None:
            out[name] = obj
    return out


def _type_name(value) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a float",
        str: "a string",
        list: "an array",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_numeric_array(value) -> bool:
    if _is_number(value):
        return True
    return isinstance(value, list) and all(_is_numeric_array(v) for v in value)


def _convert(value, kind, where: str):
    """Check a TOML value against a parameter kind and convert it."""
    expected = None
    if kind == "number":
        if _is_number(value):
            return float(value)
        expected = "a number"
    elif kind == "array":
        if _is_numeric_array(value):
            return float(value) if _is_number(value) else value
        expected = "a number or an array of numbers"
    elif kind == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        expected = "an integer"
    elif kind == "bool":
        if isinstance(value, bool):
            return value
        expected = "a boolean"
    elif kind == "str":
        if isinstance(value, str):
            return value
        expected = "a string"
    elif kind == "table":
        if isinstance(value, Mapping):
            return dict(value)
        expected = "a table"
    elif kind == "pair":
        if isinstance(value, list) and len(value) == 2 and _is_numeric_array(value):
            return [float(v) for v in value]
        expected = "an array [lower, upper] of two numbers"
    elif kind == "solver":
        return _solver(value, where)
    elif kind == ("tuple", "elements"):
        joint = (int, str)
        if isinstance(value, list) and all(
            (isinstance(v, joint) or (isinstance(v, list) and len(v) == 3 and all(
                isinstance(j, joint) and not isinstance(j, bool) for j in v
            ))) and not isinstance(v, bool)
            for v in value
        ):  # fmt: skip
            return tuple(tuple(v) if isinstance(v, list) else v for v in value)
        expected = (
            "an array of joints (integers or strings) or ball joints (arrays of three)"
        )
    elif isinstance(kind, tuple) and kind[0] == "tuple":
        item = kind[1]
        if isinstance(value, list) and all(
            isinstance(v, item) and not isinstance(v, bool) for v in value
        ):
            return tuple(value)
        what = {str: "strings", int: "integers"}.get(item, "integers or strings")
        expected = f"an array of {what}"
    elif isinstance(kind, tuple) and kind[0] == "modules":
        cls = kind[1]
        if isinstance(value, list) and all(isinstance(v, Mapping) for v in value):
            name = cls.__name__
            return tuple(
                build(
                    "system",
                    {"type": name, **v},
                    section=f"{where[:-1]}[{i}]]" if where.endswith("]") else where,
                    types={name: cls},
                )
                for i, v in enumerate(value)
            )
        expected = f"an array of tables (each a {cls.__name__})"
    elif isinstance(kind, tuple) and kind[0] == "part":
        cls = kind[1]
        if isinstance(value, Mapping):
            name = cls.__name__
            return build(
                "system", {"type": name, **value}, section=where, types={name: cls}
            )
        expected = f"a table (a {cls.__name__})"
    elif isinstance(kind, tuple) and kind[0] == "choice":
        if isinstance(value, str) and value in kind[1]:
            return value
        expected = "one of " + ", ".join(repr(v) for v in kind[1])
    elif isinstance(kind, tuple) and kind[0] == "module":
        _, family, base = kind
        if isinstance(value, Mapping):
            return build(family, value, section=where, base=base)
        expected = f"a table with a `type` key (a {family} {base.__name__})"
    got = _type_name(value)
    shown = f" {value!r}" if not isinstance(value, dict | list) else ""
    raise ConfigError(f"{where}: expected {expected}, got {got}{shown}.")


def _solver(value, where: str):
    allowed = sorted(
        name
        for name in dir(diffrax)
        if _is_concrete_class(getattr(diffrax, name), diffrax.AbstractSolver)
    )
    if not isinstance(value, str) or value not in allowed:
        raise ConfigError(
            f"{where}: expected the name of a diffrax solver, got {value!r}; "
            f"allowed: {', '.join(allowed)}."
        )
    return getattr(diffrax, value)()


def build(
    family: str,
    table: Mapping[str, Any],
    *,
    section: str | None = None,
    base=None,
    types: Mapping[str, type] | None = None,
):
    """Build a system, friction law or force from its TOML table.

    Args:
        family: ``"system"``, ``"friction"`` or ``"force"``.
        table: the table: ``type`` plus the constructor's keyword arguments
            (sub-tables for arguments that are themselves laws or forces).
        section: the name used in error messages (default ``[family]``).
        base: restrict the allowed types to subclasses of this class.
        types: the allowed types by name, for classes outside the three
            families (the optimize config's objectives and limits); default
            `available_types(family)`.

    Returns:
        The constructed `eqx.Module`.

    Raises:
        ConfigError: unknown type or key, missing key, wrong value type, or a
            parameter the constructor rejects.
    """
    section = f"[{family}]" if section is None else section
    if not isinstance(table, Mapping):
        raise ConfigError(f"{section}: expected a table, got {_type_name(table)}.")
    allowed = available_types(family) if types is None else dict(types)
    if base is not None:
        allowed = {k: v for k, v in allowed.items() if issubclass(v, base)}
    type_name = table.get("type")
    if type_name is None:
        raise ConfigError(
            f"{section}: missing key 'type'; allowed types: {', '.join(allowed)}."
        )
    if type_name not in allowed:
        raise ConfigError(
            f"{section}: unknown type {type_name!r}; allowed types: "
            f"{', '.join(allowed)}."
        )
    cls = allowed[type_name]
    params = {p.name: p for p in _params(cls)}
    kwargs = {}
    for key, value in table.items():
        if key == "type":
            continue
        if key not in params:
            raise ConfigError(
                f"{section} unknown key {key!r} for type {type_name!r}; allowed "
                f"keys: type, {', '.join(params)}."
            )
        kind = params[key].kind
        nested = isinstance(kind, tuple) and kind[0] in ("module", "modules")
        where = f"{section[:-1]}.{key}]" if nested else f"{section} key {key!r}"
        kwargs[key] = _convert(value, kind, where)
    missing = [p.name for p in params.values() if p.required and p.name not in kwargs]
    if missing:
        raise ConfigError(
            f"{section}: missing required key(s) {', '.join(map(repr, missing))} "
            f"for type {type_name!r}."
        )
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as e:
        raise ConfigError(f"{section} {type_name}: {e}") from e


def check_ranges(
    table: Mapping[str, Any], ranges: Mapping[str, tuple[float, bool]], section: str
) -> None:
    """Check the numbers of a table against their allowed ranges.

    Args:
        table: a configuration table (keys absent from it are skipped).
        ranges: key -> ``(lower, lower_open)``: the value must be finite and
            ``>= lower`` (``> lower`` when `lower_open`), as `check_range` tests.
        section: the section name for messages, e.g. ``"[simulate]"``.

    Raises:
        ConfigError: naming the section, the key and the allowed range.
    """
    for key, (lower, lower_open) in ranges.items():
        if table.get(key) is not None:
            try:
                check_range(key, table[key], lower=lower, lower_open=lower_open)
            except ValueError as e:
                raise ConfigError(f"{section} key {key!r}: {e}") from e


def check_finite_keys(table: Mapping[str, Any], keys, section: str) -> None:
    """Raise `ConfigError` naming the section and key if a number (or an entry
    of an array) of `table` at one of `keys` is NaN or infinite."""
    for key in keys:
        if table.get(key) is not None:
            try:
                check_finite(key, table[key])
            except ValueError as e:
                raise ConfigError(f"{section} key {key!r}: {e}") from e


def parse_table(
    table: Any, kinds: Mapping[str, Any], section: str, required=()
) -> dict[str, Any]:
    """Check a TOML table against ``kinds`` (key -> kind, as `_convert` takes
    it) and convert its values; unknown or missing keys and values of the
    wrong type are a `ConfigError` naming the section and the key."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"{section}: expected a table, got {_type_name(table)}.")
    out = {}
    for key, value in table.items():
        if key not in kinds:
            raise ConfigError(
                f"{section} unknown key {key!r}; allowed keys: {', '.join(kinds)}."
            )
        out[key] = _convert(value, kinds[key], f"{section} key {key!r}")
    for key in required:
        if key not in out:
            raise ConfigError(f"{section}: missing required key {key!r}.")
    return out


def parse_simulate(table: Mapping[str, Any], section: str = "[simulate]") -> dict:
    """Check and convert the ``[simulate]`` table to keywords of `simulate`."""
    out = parse_table(table, SIMULATE_KEYS, section, SIMULATE_REQUIRED)
    check_simulate_ranges(out, section)
    out.setdefault("q0", 0.0)
    out.setdefault("qd0", 0.0)
    return out


def simulate_options(keywords: Mapping[str, Any]) -> SimulateOptions:
    """The `SimulateOptions` among the keywords of `simulate` (as
    `parse_simulate` makes them)."""
    return SimulateOptions(**{k: v for k, v in keywords.items() if k in OPTION_KINDS})


def check_simulate_ranges(options: Mapping[str, Any], section: str) -> None:
    """Reject out-of-range [simulate] numbers before anything is compiled.

    The options go through `SimulateOptions`'s checks, the interval and the
    save times through `simulate`'s own. (A fixed step longer than the interval
    on the Karnopp and Kikuuwe paths, or an option the law's path does not use,
    needs the law; `simulate` rejects them before compiling.)

    Args:
        options: converted keywords of `simulate` (as `parse_simulate` makes them).
        section: the section name for messages, e.g. ``"[simulate]"``.

    Raises:
        ConfigError: naming the section and the key, and the allowed range.
    """
    check_finite_keys(options, ("q0", "qd0", "friction_state0", "jump_ts"), section)
    t0, t1 = options.get("t0", 0.0), options["t1"]
    try:
        check_interval(t0, t1)
        simulate_options(options)
        # Without num_save, any valid count: only `ts` is checked then.
        save_times(t0, t1, options.get("ts"), options.get("num_save", 2))
    except ValueError as e:
        raise ConfigError(f"{section}: {e}") from e


# Loader keywords a robot file's [system] table may set, per format
# (`robot_format`). A MotionSolve model takes none: its file is the whole model
# (units, gravity, friction elements).
_ROBOT_FILE_KEYS = {
    "URDF": ("gravity", "damping", "armature", "friction_joints"),
    "MJCF": ("damping", "armature", "friction_joints"),
    "MotionSolve": (),
}
# The laws ``[friction] from_file = true`` reads from a MotionSolve model: the
# `MotionSolveModel` field of each.
FRICTION_FROM_FILE = {"JointFriction": "friction", "JointLuGre": "lugre_friction"}


def config_file(file: str | Path, base: Path | None) -> Path:
    """A file a configuration names: as given if absolute (or without a `base`),
    else relative to `base`, the configuration's folder."""
    path = Path(file)
    return path if path.is_absolute() or base is None else base / path


def robot_file(table: Any, base: Path | None = None) -> Path | None:
    """The URDF/MJCF/MotionSolve file a ``[system]`` table names
    (`config_file`), or `None`."""
    if not isinstance(table, Mapping) or "file" not in table:
        return None
    file = table["file"]
    if not isinstance(file, str):
        raise ConfigError(f"[system] key 'file': expected a path string, got {file!r}.")
    return config_file(file, base)


def robot_format(file: Path) -> str:
    """The format of a robot file: ``"URDF"`` (``.urdf``), ``"MotionSolve"``
    (``.xml`` whose root element is ``<MultiBodySystem>``) or ``"MJCF"`` (any
    other ``.xml``). Only the root tag is read (MuJoCo is not imported).

    Raises:
        ConfigError: another suffix, a missing file or malformed XML, naming
            ``[system] key 'file'`` and the file.
    """
    suffix = file.suffix.lower()
    if suffix not in (".urdf", ".xml"):
        raise ConfigError(
            f"[system] key 'file': {file} is neither .urdf nor .xml (MJCF or "
            "MotionSolve)."
        )
    if not file.is_file():
        raise ConfigError(f"[system] key 'file': no such file {file}.")
    if suffix == ".urdf":
        return "URDF"
    try:
        with file.open("rb") as f:
            _, root = next(ET.iterparse(f, events=("start",)))
    except (ET.ParseError, StopIteration) as e:
        raise ConfigError(
            f"[system] key 'file': {file} is not well-formed XML: {e}."
        ) from None
    except OSError as e:
        raise ConfigError(f"[system] key 'file': cannot read {file}: {e}.") from e
    return "MotionSolve" if root.tag.rsplit("}", 1)[-1] == "MultiBodySystem" else "MJCF"


def _load_system(
    table: Any, base: Path | None
) -> tuple[AbstractSystem, Path | None, MotionSolveModel | None]:
    """`build_system`, plus the robot file (`None` without one) and, for a
    MotionSolve file, the whole `MotionSolveModel` (friction, end time, q0)."""
    file = robot_file(table, base)
    if file is None:
        return build("system", table), None, None
    if table.get("type", "RigidBodyTree") != "RigidBodyTree":
        raise ConfigError(
            f"[system]: a robot file gives a RigidBodyTree; got type {table['type']!r}."
        )
    kind = robot_format(file)
    allowed = _ROBOT_FILE_KEYS[kind]
    options = {k: v for k, v in table.items() if k not in ("type", "file")}
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ConfigError(
            f"[system] unknown key(s) {unknown} for a {kind} file; allowed keys: "
            f"{', '.join(('type', 'file', *allowed))}."
        )
    try:
        if kind == "MotionSolve":
            from .motionsolve import load_motionsolve

            model = load_motionsolve(file)
            return model.system, file, model
        from .mjcf import load_mjcf
        from .urdf import load_urdf

        system, _ = (load_urdf if kind == "URDF" else load_mjcf)(file, **options)
    except (ValueError, TypeError, ImportError) as e:
        raise ConfigError(f"[system] {file}: {e}") from e
    return system, file, None


def build_system(table: Any, base: Path | None = None):
    """Build the ``[system]`` table: `build` for a class and its arguments, or,
    with a ``file`` key, the `RigidBodyTree` of a URDF (``.urdf``,
    `jaxfric.io.load_urdf`), MotionSolve (``.xml`` with root
    ``<MultiBodySystem>``, `jaxfric.io.load_motionsolve`) or MJCF (any other
    ``.xml``, `jaxfric.io.load_mjcf`) file with the loader's optional keywords
    (module docstring).

    Raises:
        ConfigError: naming the key, the file or the loader's complaint.
    """
    return _load_system(table, base)[0]


def build_friction(
    table: Any, file: Path | None = None, model: MotionSolveModel | None = None
) -> AbstractFrictionLaw:
    """Build the ``[friction]`` table: `build` for a law and its arguments, or,
    with ``from_file = true``, the law of the MotionSolve model the ``[system]``
    section loads: ``type = "JointFriction"`` is its exact Coulomb law
    (`MotionSolveModel.friction`), ``type = "JointLuGre"`` its LuGre form
    (`MotionSolveModel.lugre_friction`); no other keys are allowed.
    ``from_file = false`` is the same as leaving the key out.

    Args:
        table: the ``[friction]`` table.
        file: the ``[system]`` robot file, or `None` (for messages).
        model: the `MotionSolveModel` of a MotionSolve ``[system]`` file, else
            `None`.

    Raises:
        ConfigError: naming ``[friction]`` and the key: ``from_file`` without a
            MotionSolve ``[system]`` file or for a file without
            ``Force_JointFriction`` elements (naming the file), another type,
            other keys; ``type = "JointLuGre"`` for a file whose
            elements differ in their bristle parameters.
    """
    if not isinstance(table, Mapping) or "from_file" not in table:
        return build("friction", table)
    from_file = _convert(table["from_file"], "bool", "[friction] key 'from_file'")
    rest = {k: v for k, v in table.items() if k != "from_file"}
    if not from_file:
        return build("friction", rest)
    unknown = sorted(set(rest) - {"type"})
    if unknown:
        raise ConfigError(
            f"[friction] unknown key(s) {unknown} with from_file = true (the file "
            "gives every number); allowed keys: type, from_file."
        )
    type_name = rest.get("type")
    if type_name not in FRICTION_FROM_FILE:
        head = (
            "[friction]: missing key 'type'"
            if type_name is None
            else f"[friction] key 'type': got {type_name!r}"
        )
        raise ConfigError(
            f"{head}; from_file = true reads type 'JointFriction' (exact Coulomb) "
            "or 'JointLuGre' (MotionSolve's LuGre form)."
        )
    if model is None:
        loads = "has no file" if file is None else f"loads {file}"
        raise ConfigError(
            "[friction] key 'from_file': the file's friction needs [system] file = "
            "a MotionSolve .xml model (root element <MultiBodySystem>); the "
            f"[system] section {loads}."
        )
    if not model.friction_ids:
        raise ConfigError(
            f"[friction] key 'from_file': {file} has no <Force_JointFriction> element."
        )
    law = getattr(model, FRICTION_FROM_FILE[type_name])
    if law is None:
        raise ConfigError(
            f"[friction] key 'type': the <Force_JointFriction> elements of {file} "
            "differ in bristle_stiffness, damping_effects, viscous_effects or "
            "stiction_trans_vel, and JointLuGre takes one value of each (type = "
            "'JointFriction', the exact law, does not use them)."
        )
    return law


def parse_config(data: Mapping[str, Any], base: Path | None = None) -> SimulationConfig:
    """Build a `SimulationConfig` from a configuration already read into a dict
    (the result of `tomllib.load`); `base` is the folder relative robot files
    are found in (`load_config` passes the file's). A MotionSolve ``[system]``
    file gives the defaults of ``t1`` and ``q0`` (module docstring)."""
    for key in data:
        if key not in SECTIONS:
            raise ConfigError(
                f"unknown section [{key}]; allowed sections: "
                f"{', '.join(f'[{s}]' for s in SECTIONS)}."
            )
    for key in ("system", "friction", "simulate"):
        if key not in data:
            raise ConfigError(f"missing section [{key}].")
    system, file, model = _load_system(data["system"], base)
    friction = build_friction(data["friction"], file, model)
    force = build("force", data["force"]) if "force" in data else None
    simulate = data["simulate"]
    if model is not None and isinstance(simulate, Mapping):
        # A MotionSolve model's configuration and end time, unless given.
        defaults: dict[str, Any] = {"q0": model.q0.tolist()}
        if model.t1 is not None:
            defaults["t1"] = model.t1
        simulate = {**defaults, **simulate}
    options = parse_simulate(simulate)
    return SimulationConfig(system, friction, force, options, dict(data))


def read_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML file; syntax errors become `ConfigError` naming the file."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from e
    except UnicodeDecodeError as e:  # TOML is UTF-8 text
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 text ({e})") from e
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e}") from e


def load_config(path: str | Path) -> SimulationConfig:
    """Read and parse a simulation configuration file (see the module docstring).

    Args:
        path: the TOML file.

    Returns:
        A `SimulationConfig`.

    Raises:
        ConfigError: the file cannot be read or is invalid; the message names the
            section and key.
    """
    return parse_config(read_toml(path), Path(path).parent)


__all__ = [
    "FRICTION_FROM_FILE",
    "SECTIONS",
    "build_friction",
    "build_system",
    "robot_format",
    "config_file",
    "robot_file",
    "ConfigError",
    "SimulationConfig",
    "available_types",
    "build",
    "check_finite_keys",
    "check_ranges",
    "check_simulate_ranges",
    "load_config",
    "parse_config",
    "parse_simulate",
    "parse_table",
    "read_toml",
    "simulate_options",
]
