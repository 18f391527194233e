"""TOML configuration: valid files build the right objects; every kind of error
names its section and key."""

import tomllib
from pathlib import Path

import diffrax
import numpy as np
import pytest

import jaxfric as jf
from jaxfric.io import ConfigError, load_config, parse_config

_CONFIGS = Path(__file__).resolve().parent.parent / "configs"

_BASE = """
[system]
type = "Oscillator"
mass = 2.0
stiffness = 3.0

[friction]
type = "Regularized"
eps = 0.01
kind = "linear"

[friction.law]
type = "Coulomb"
fc = 1.5

[force]
type = "Sine"
amplitude = [0.5]
omega = 2.0

[simulate]
t1 = 4.0
q0 = 1.0
num_save = 11
solver = "Tsit5"
"""


def _parse(text: str):
    return parse_config(tomllib.loads(text))


def _with(section: str, line: str, base: str = _BASE) -> str:
    """`base` with `line` added at the top of `section`."""
    return base.replace(f"[{section}]\n", f"[{section}]\n{line}\n", 1)


def test_valid_config_builds_objects():
    cfg = _parse(_BASE)
    assert isinstance(cfg.system, jf.systems.Oscillator)
    assert float(cfg.system.mass) == 2.0 and float(cfg.system.stiffness) == 3.0
    assert type(cfg.friction).__name__ == "Regularized"
    assert cfg.friction.kind == "linear"
    assert isinstance(cfg.friction.law, jf.Coulomb)
    assert float(cfg.friction.law.fc) == 1.5
    assert isinstance(cfg.force, jf.forces.Sine)
    np.testing.assert_array_equal(np.asarray(cfg.force.amplitude), [0.5])
    assert cfg.simulate["t1"] == 4.0 and cfg.simulate["num_save"] == 11
    assert cfg.simulate["q0"] == 1.0 and cfg.simulate["qd0"] == 0.0  # default
    assert isinstance(cfg.simulate["solver"], diffrax.Tsit5)


def test_optional_law_parameter_from_toml():
    # `Coulomb`'s viscous term is optional: absent, no `fv`; given, a float.
    assert _parse(_BASE).friction.law.fv is None
    law = _parse(_with("friction.law", "fv = 0.25")).friction.law
    assert float(law.fv) == 0.25 and float(law.fs) == 1.5


# `jaxfric simulate` configs; identify_*/optimize_* configs are checked by the
# tests of their subcommands.
_SIMULATE_CONFIGS = sorted(
    p
    for p in _CONFIGS.glob("*.toml")
    if not p.name.startswith(("identify_", "optimize_"))
)


@pytest.mark.parametrize("path", _SIMULATE_CONFIGS, ids=lambda p: p.name)
def test_example_configs_are_valid(path):
    cfg = load_config(path)
    assert cfg.system.n_dof >= 1 and "t1" in cfg.simulate


@pytest.mark.parametrize(
    "text, fragments",
    [
        # Unknown keys, at every level.
        (_with("system", "masss = 1.0"), ["[system]", "'masss'", "mass, stiffness"]),
        (_with("friction.law", "fk = 1.0"), ["[friction.law]", "'fk'", "fc, fs"]),
        (_with("force", "phi = 1.0"), ["[force]", "'phi'", "phase"]),
        (_with("simulate", "t_end = 1.0"), ["[simulate]", "'t_end'", "t1"]),
        # Wrong types.
        (
            _BASE.replace("mass = 2.0", 'mass = "two"'),
            ["[system] key 'mass'", "a number"],
        ),
        (
            _BASE.replace("mass = 2.0", "mass = [2.0]"),
            ["[system] key 'mass'", "a number"],
        ),
        (
            _BASE.replace("eps = 0.01", "eps = true"),
            ["[friction] key 'eps'", "boolean"],
        ),
        (
            _BASE.replace("num_save = 11", "num_save = 1.5"),
            ["'num_save'", "an integer"],
        ),
        (_BASE.replace("t1 = 4.0", 't1 = "4"'), ["[simulate] key 't1'", "a number"]),
        (
            _BASE.replace('kind = "linear"', 'kind = "cubic"'),
            ["[friction]", "kind", "'tanh'", "'linear'"],
        ),
        (
            _BASE.replace('solver = "Tsit5"', 'solver = "RK45"'),
            ["[simulate] key 'solver'", "Tsit5"],
        ),
        (
            _BASE.replace('[friction.law]\ntype = "Coulomb"\nfc = 1.5', "").replace(
                "eps = 0.01", "eps = 0.01\nlaw = 1.0"
            ),
            ["[friction.law]", "a table with a `type` key"],
        ),
        # Unknown types list the allowed ones.
        (
            _BASE.replace('type = "Coulomb"', 'type = "Coloumb"'),
            ["[friction.law]", "'Coloumb'", "Coulomb", "Stribeck"],
        ),
        (
            _BASE.replace('type = "Regularized"', 'type = "Tanh"'),
            ["[friction]", "'Tanh'", "Coulomb", "Regularized"],
        ),
        (
            _BASE.replace('type = "Oscillator"', 'type = "Pendulum"'),
            ["[system]", "'Pendulum'", "Oscillator", "StackedBlocks", "TwoMass"],
        ),
        (
            _BASE.replace('type = "Sine"', 'type = "Square"'),
            ["[force]", "'Square'", "FourierSeries", "Sine", "Tabulated"],
        ),
        # Missing pieces.
        (_BASE.replace("stiffness = 3.0", ""), ["[system]", "'stiffness'", "missing"]),
        (_BASE.replace('type = "Sine"', ""), ["[force]", "missing key 'type'"]),
        (_BASE.replace("t1 = 4.0", ""), ["[simulate]", "missing", "'t1'"]),
        (_BASE.replace("[simulate]", "[simulation]"), ["[simulation]", "[simulate]"]),
        # Ranges checked by the constructors, with the section prefixed.
        (_BASE.replace("mass = 2.0", "mass = -2.0"), ["[system] Oscillator", "`mass`"]),
        (_BASE.replace("eps = 0.01", "eps = 0.0"), ["[friction] Regularized", "`eps`"]),
    ],
)
def test_config_errors_name_the_key(text, fragments):
    with pytest.raises(ConfigError) as info:
        _parse(text)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_missing_section_and_bad_toml(tmp_path):
    with pytest.raises(ConfigError, match=r"missing section \[friction\]"):
        parse_config({"system": {"type": "Oscillator", "mass": 1, "stiffness": 1}})
    path = tmp_path / "bad.toml"
    path.write_text("[system\ntype = 1\n")
    with pytest.raises(ConfigError, match="bad.toml: invalid TOML"):
        load_config(path)


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


def test_reference_trajectory_is_a_nested_force_table():
    # A controller's `reference` (a trajectory protocol) is built from a
    # sub-table restricted to forces that have position/velocity methods.
    text = _BASE.replace(
        'type = "Sine"\namplitude = [0.5]\nomega = 2.0',
        'type = "PD"\nkp = 4.0\nkd = 1.0\n\n[force.reference]\n'
        'type = "FourierSeries"\na = [1.0]\nb = [0.5]\nomega = 2.0',
    )
    cfg = _parse(text)
    assert isinstance(cfg.force.reference, jf.forces.FourierSeries)
    with pytest.raises(ConfigError) as info:
        _parse(text.replace('type = "FourierSeries"', 'type = "Sine"'))
    assert "[force.reference]" in str(info.value)
    assert "allowed types: FourierSeries" in str(info.value)
