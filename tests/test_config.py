"""TOML configuration: valid files build the right objects; every kind of error
names its section and key."""

import tomllib
from pathlib import Path

import diffrax
import jax.numpy as jnp
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


# ---------------------------------------------------------------------------
# Out-of-range numbers are rejected while the configuration is read (before
# anything is compiled), naming the section, the key and the allowed range.


@pytest.mark.parametrize(
    "key, value, fragments",
    [
        ("rtol", "-1.0", ["(0.0, inf]", "-1."]),
        ("rtol", "0.0", ["(0.0, inf]"]),
        ("rtol", "nan", ["finite"]),
        ("atol", "-1e-9", ["(0.0, inf]"]),
        ("atol", "inf", ["finite"]),
        ("dt0", "-0.1", ["(0.0, inf]"]),
        ("dtmax", "0.0", ["(0.0, inf]"]),
        ("dtmax", "nan", ["(0.0, inf]"]),
        ("max_steps", "0", ["[1.0, inf]"]),
        ("max_events", "-3", ["[1.0, inf]"]),
        ("num_save", "0", [">= 2"]),
        ("num_save", "1", [">= 2"]),
        ("num_save", "-5", [">= 2"]),
        ("q0", "nan", ["finite"]),
        ("qd0", "[inf]", ["finite"]),
        ("friction_state0", "[nan]", ["finite"]),
    ],
)
def test_simulate_numbers_out_of_range_name_the_key(key, value, fragments):
    # _BASE sets q0 and num_save: drop its line so that the key is not repeated.
    text = _BASE.replace("q0 = 1.0\n", "").replace("num_save = 11\n", "")
    with pytest.raises(ConfigError) as info:
        _parse(_with("simulate", f"{key} = {value}", text))
    message = str(info.value)
    for fragment in ["[simulate]", f"`{key}`", *fragments]:
        assert fragment in message, (fragment, message)


def test_simulate_dtmax_may_be_infinite():
    # No cap on the step: what `simulate` accepts, the configuration accepts.
    assert _parse(_with("simulate", "dtmax = inf")).simulate["dtmax"] == float("inf")


@pytest.mark.parametrize(
    "old, new, fragments",
    [
        ("t1 = 4.0", "t1 = inf", ["`t1` must be finite"]),
        ("t1 = 4.0", "t1 = 4.0\nt0 = 5.0", ["`t1` must be greater than `t0`"]),
        ("t1 = 4.0", "t1 = 4.0\nt0 = nan", ["`t0` must be finite"]),
        ("num_save = 11", "ts = [0.0, 5.0]", ["`ts` must lie in [t0, t1]"]),
    ],
)
def test_simulate_interval_is_checked_while_reading(old, new, fragments):
    with pytest.raises(ConfigError) as info:
        _parse(_BASE.replace(old, new))
    message = str(info.value)
    for fragment in ["[simulate]", *fragments]:
        assert fragment in message, (fragment, message)


_OPTIMIZE = """
[system]
type = "Oscillator"
mass = 1.0
stiffness = 0.0

[friction]
type = "Coulomb"
fc = 0.5

[force]
type = "Tabulated"
ts = [0.0, 0.5, 1.0]
values = [0.0, 0.0, 0.0]

[simulate]
t1 = 1.0
num_save = 11

[objective]
type = "PointToPoint"
target_q = 1.0

[[limits]]
type = "VelocityLimit"
limit = 2.0
weight = 1.0

[optimize]
parameters = ["values"]
learning_rate = 0.1
max_steps = 10
"""


def test_optimize_reference_config_parses():
    from jaxfric.io.optimize_config import parse_optimize_config

    cfg = parse_optimize_config(tomllib.loads(_OPTIMIZE))
    assert cfg.max_steps == 10 and not cfg.batched


@pytest.mark.parametrize(
    "old, new, fragments",
    [
        ("learning_rate = 0.1", "learning_rate = -0.1", ["(0.0, inf]"]),
        ("learning_rate = 0.1", "learning_rate = 0", ["(0.0, inf]"]),
        ("learning_rate = 0.1", "learning_rate = nan", ["finite"]),
        ("max_steps = 10", "max_steps = -1", ["[0.0, inf]"]),
        ("max_steps = 10", "max_steps = 10\nnum_starts = 0", ["[1.0, inf]"]),
        ("max_steps = 10", "max_steps = 10\ninit_noise = -1.0", ["[0.0, inf]"]),
        ("max_steps = 10", "max_steps = 10\ninit_noise = nan", ["finite"]),
        ("max_steps = 10", "max_steps = 10\nbounds = [1.0, -1.0]", []),
    ],
)
def test_optimize_numbers_out_of_range_name_the_key(old, new, fragments):
    from jaxfric.io.optimize_config import parse_optimize_config

    key = new.splitlines()[-1].split(" = ")[0]
    with pytest.raises(ConfigError) as info:
        parse_optimize_config(tomllib.loads(_OPTIMIZE.replace(old, new)))
    message = str(info.value)
    for fragment in [f"[optimize] key {key!r}", *fragments]:
        assert fragment in message, (fragment, message)


@pytest.mark.parametrize(
    "old, new, fragments",
    [
        ("target_q = 1.0", "target_q = nan", ["[objective] key 'target_q'"]),
        ("weight = 1.0", "weight = -1.0", ["[[limits]] #0", "`weight"]),
        ("limit = 2.0", "limit = 0.0", ["[[limits]] #0", "`limit"]),
        ("t1 = 1.0", "t1 = 1.0\nrtol = -1.0", ["[simulate]", "`rtol`"]),
    ],
)
def test_optimize_other_sections_out_of_range(old, new, fragments):
    from jaxfric.io.optimize_config import parse_optimize_config

    with pytest.raises(ConfigError) as info:
        parse_optimize_config(tomllib.loads(_OPTIMIZE.replace(old, new)))
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)


_IDENTIFY = """
[system]
type = "Oscillator"
mass = 1.0
stiffness = 4.0

[friction]
type = "Coulomb"
fc = 1.0
fs = 1.5

[identify]
free = ["friction.fc"]
{identify}

{sections}

[[experiments]]
{experiment}
"""
_RECORD = "t,q,u\n0.0,0.0,1.0\n0.1,0.0,1.0\n0.2,0.0,1.0\n"
_SYNTHETIC_EXPERIMENT = (
    'force = { type = "Sine", amplitude = 3.0, omega = 1.5 }\nt1 = 1.0\n'
    "num_samples = 11"
)


def _identify(tmp_path, identify="", sections="", experiment='file = "r.csv"'):
    from jaxfric.io.identify_config import parse_identify_config

    (tmp_path / "r.csv").write_text(_RECORD)
    path = tmp_path / "ident.toml"
    path.write_text(
        _IDENTIFY.format(identify=identify, sections=sections, experiment=experiment)
    )
    return parse_identify_config(path)


def test_identify_record_that_is_not_text_names_the_file(tmp_path):
    from jaxfric.io.identify_config import parse_identify_config

    path = tmp_path / "ident.toml"
    path.write_text(
        _IDENTIFY.format(identify="", sections="", experiment='file = "r.csv"')
    )
    (tmp_path / "r.csv").write_bytes(b"\xff\xfe,\x00\n")
    with pytest.raises(ConfigError, match=r"\[\[experiments\]\] #0 key 'file'.*r\.csv"):
        parse_identify_config(path)


def test_identify_reference_config_parses(tmp_path):
    cfg = _identify(tmp_path, identify="max_steps = 5")
    assert cfg.fit_kwargs["max_steps"] == 5 and cfg.free == ("friction.fc",)


_IDENTIFY_CASES = [
    (dict(identify="max_steps = 0"), ["[identify] key 'max_steps'", "[1.0, inf]"]),
    (
        dict(identify='optimizer = "adam"\nlearning_rate = -0.05'),
        ["[identify] key 'learning_rate'", "(0.0, inf]"],
    ),
    (
        dict(identify="learning_rate = nan"),
        ["[identify] key 'learning_rate'", "finite"],
    ),
    (
        dict(identify="position_weight = -1.0"),
        ["[identify] key 'position_weight'", "[0.0, inf]"],
    ),
    (
        dict(identify="velocity_weight = [nan]"),
        ["[identify] key 'velocity_weight'", "finite"],
    ),
    (dict(identify="windows = 0"), ["[identify] key 'windows'", "[1.0, inf]"]),
    (
        dict(identify="continuity_weight = -10.0"),
        ["[identify] key 'continuity_weight'", "[0.0, inf]"],
    ),
    (
        dict(sections="[simulate]\nrtol = -1e-8"),
        ["[simulate]", "`rtol`", "(0.0, inf]"],
    ),
    (
        dict(sections="[simulate]\nmax_events = 0"),
        ["[simulate]", "`max_events`", "[1.0, inf]"],
    ),
    (
        dict(sections='[true]\n"friction.fc" = nan'),
        ["[true] key 'friction.fc'", "finite"],
    ),
    (
        dict(experiment='file = "r.csv"\nqd0 = nan'),
        ["[[experiments]] #0 key 'qd0'", "finite"],
    ),
    (
        dict(sections="[synthetic]\nnoise = -0.01", experiment=_SYNTHETIC_EXPERIMENT),
        ["[synthetic] key 'noise'", "[0.0, inf]"],
    ),
    (
        dict(sections="[synthetic]\nseed = -1", experiment=_SYNTHETIC_EXPERIMENT),
        ["[synthetic] key 'seed'", "[0.0, inf]"],
    ),
    (
        dict(
            sections="[synthetic]",
            experiment=_SYNTHETIC_EXPERIMENT.replace("t1 = 1.0", "t1 = -1.0"),
        ),
        ["[[experiments]] #0 key 't1'", "(0.0, inf]"],
    ),
    (
        dict(
            sections="[synthetic]",
            experiment=_SYNTHETIC_EXPERIMENT.replace("= 11", "= 1"),
        ),
        ["[[experiments]] #0 key 'num_samples'", "[2.0, inf]"],
    ),
]


@pytest.mark.parametrize(
    "kwargs, fragments", _IDENTIFY_CASES, ids=[f[0] for _, f in _IDENTIFY_CASES]
)
def test_identify_numbers_out_of_range_name_the_key(tmp_path, kwargs, fragments):
    with pytest.raises(ConfigError) as info:
        _identify(tmp_path, **kwargs)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_closed_chain_config_is_the_four_bar():
    # `[[system.loops]]` tables and joints by name: the config builds the same
    # system as `four_bar`, bit for bit.
    path = _CONFIGS / "four_bar_crank_friction.toml"
    cfg = load_config(path)
    ref = jf.systems.four_bar(0.4, 1.0, 0.8, 1.0, masses=(1.0, 2.0, 1.5))
    assert isinstance(cfg.system, jf.systems.ClosedChain)
    assert cfg.system.independent == (0,) and cfg.system.tree.friction_joints == (0,)
    z, zd = jnp.array([1.1]), jnp.array([-0.3])
    assert np.array_equal(cfg.system.mass_matrix(z), ref.mass_matrix(z))
    assert np.array_equal(cfg.system.bias_force(z, zd), ref.bias_force(z, zd))
    # Errors name the loop table and key.
    text = path.read_text()
    for old, new, fragments in (
        ('kind = "ball"', 'kind = "hinge"', ["[system.loops[0]]", "'hinge'"]),
        ('kind = "ball"', 'kind = "ball"\nlink_c = "x"', ["loops[0]", "'link_c'"]),
        ('link_b = "rocker_link"', 'link_b = "nope"', ["[system]", "'nope'"]),
        ('independent = ["crank"]', "independent = [0.5]", ["'independent'"]),
    ):
        with pytest.raises(ConfigError) as err:
            parse_config(tomllib.loads(text.replace(old, new)))
        for fragment in fragments:
            assert fragment in str(err.value), (fragment, str(err.value))


# --- MotionSolve models: [system] file = "model.xml", [friction] from_file -----

_PENDULUM = _CONFIGS.parent / "tests" / "data" / "motionsolve_pendulum.xml"
_MS_CONFIG = (_CONFIGS / "motionsolve_pendulum.toml").read_text()


def _ms_parse(text: str = _MS_CONFIG, base: Path = _CONFIGS):
    return parse_config(tomllib.loads(text), base)


def _same_numbers(a, b) -> None:
    """Two laws of the same class, structure and numbers (bit for bit)."""
    import jax

    assert type(a) is type(b)
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_xml_robot_file_format_is_read_from_the_root_tag():
    from jaxfric.io.config import build_system, robot_format
    from jaxfric.io.motionsolve import load_motionsolve

    mjcf = _CONFIGS / "robots" / "two_link_arm.xml"
    assert robot_format(_PENDULUM) == "MotionSolve"
    assert robot_format(mjcf) == "MJCF"
    assert robot_format(_CONFIGS / "robots" / "two_link_arm.urdf") == "URDF"
    system = build_system({"file": "../tests/data/motionsolve_pendulum.xml"}, _CONFIGS)
    reference = load_motionsolve(_PENDULUM).system
    assert system.model.joint_names == reference.model.joint_names
    assert system.friction_joints == reference.friction_joints
    _same_numbers(system, reference)
    pytest.importorskip("mujoco")
    arm = build_system({"file": "robots/two_link_arm.xml", "damping": 0.5}, _CONFIGS)
    assert arm.n_dof == 2
    np.testing.assert_array_equal(np.asarray(arm.damping), [0.5, 0.5])


def test_friction_from_motionsolve_file_is_the_models_law():
    from jaxfric.io.motionsolve import load_motionsolve

    model = load_motionsolve(_PENDULUM)
    cfg = _ms_parse()
    _same_numbers(cfg.friction, model.friction)
    assert cfg.simulate["t1"] == 5.0 and cfg.simulate["num_save"] == 501
    np.testing.assert_array_equal(cfg.simulate["q0"], model.q0)  # the default
    lugre = _ms_parse(_MS_CONFIG.replace('"JointFriction"', '"JointLuGre"'))
    _same_numbers(lugre.friction, model.lugre_friction)
    # Without t1 and with q0: the file's end time, the config's q0.
    text = _MS_CONFIG.replace("t1 = 5.0", "q0 = [0.25]")
    cfg = _ms_parse(text)
    assert cfg.simulate["t1"] == model.t1 and cfg.simulate["q0"] == [0.25]
    # A law of the config's own (or from_file = false) works as for URDF/MJCF.
    own = 'type = "Coulomb"\nfc = 0.02'
    for table in (own, own + "\nfrom_file = false"):
        text = _MS_CONFIG.replace('type = "JointFriction"', table)
        law = _ms_parse(text.replace("from_file = true", "")).friction
        assert isinstance(law, jf.Coulomb) and float(law.fc) == 0.02


_MS_SYSTEM = '[system]\nfile = "../tests/data/motionsolve_pendulum.xml"\n'
_FROM_FILE = '[friction]\ntype = "JointFriction"\nfrom_file = true\n'
_SIMULATE = "[simulate]\nt1 = 1.0\n"
_MS_TEXT = _MS_SYSTEM + _FROM_FILE + _SIMULATE


@pytest.mark.parametrize(
    "text, fragments",
    [
        (  # a URDF robot has no friction elements to read
            _MS_TEXT.replace(
                "../tests/data/motionsolve_pendulum.xml", "robots/two_link_arm.urdf"
            ),
            ["[friction] key 'from_file'", "MotionSolve", "two_link_arm.urdf"],
        ),
        (
            _MS_TEXT.replace(
                _MS_SYSTEM,
                '[system]\ntype = "Oscillator"\nmass = 1.0\nstiffness = 1.0\n',
            ),
            ["[friction] key 'from_file'", "the [system] section has no file"],
        ),
        (
            _MS_TEXT.replace("from_file = true", "from_file = true\nmu_static = 0.4"),
            ["[friction] unknown key(s) ['mu_static']", "type, from_file"],
        ),
        (
            _MS_TEXT.replace("JointFriction", "Coulomb"),
            ["[friction] key 'type'", "'Coulomb'", "'JointFriction'", "'JointLuGre'"],
        ),
        (
            _MS_TEXT.replace('type = "JointFriction"\n', ""),
            ["[friction]: missing key 'type'", "'JointLuGre'"],
        ),
        (
            _MS_TEXT.replace("from_file = true", 'from_file = "yes"'),
            ["[friction] key 'from_file'", "a boolean"],
        ),
        (
            _MS_TEXT.replace(_MS_SYSTEM, _MS_SYSTEM + "damping = 0.1\n"),
            ["[system] unknown key(s) ['damping']", "MotionSolve", "type, file."],
        ),
        (  # [simulate] keys are still checked
            _MS_TEXT.replace("t1 = 1.0", "t_end = 1.0"),
            ["[simulate] unknown key 't_end'"],
        ),
    ],
)
def test_motionsolve_config_errors_name_the_key(text, fragments):
    with pytest.raises(ConfigError) as info:
        _ms_parse(text)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)


# A revolute joint (ground to body 2) and a cylindrical one (body 2 to body 3,
# markers on one z axis), each with friction.
_MIXED = """<MultiBodySystem>
 <Model>
  <Reference_Marker id="10" body_id="1"/>
  <Reference_Marker id="20" body_id="2"/>
  <Reference_Marker id="21" body_id="2" pos_x="0.1"/>
  <Reference_Marker id="22" body_id="2" pos_x="0.2"/>
  <Reference_Marker id="30" body_id="3" pos_x="0.2"/>
  <Body_Rigid id="1" isground="TRUE"/>
  <Body_Rigid id="2" cg_id="21" mass="1." inertia_xx="0.01" inertia_yy="0.01"
     inertia_zz="0.01"/>
  <Body_Rigid id="3" cg_id="30" mass="1." inertia_xx="0.01" inertia_yy="0.01"
     inertia_zz="0.01"/>
  <Constraint_Joint id="4" type="REVOLUTE" i_marker_id="20" j_marker_id="10"/>
  <Constraint_Joint id="5" type="CYLINDRICAL" i_marker_id="30" j_marker_id="22"/>
  <Force_JointFriction id="6" joint_id="4" mu_static="0.4" mu_dynamic="0.3"/>
  <Force_JointFriction id="7" joint_id="5" mu_static="0.4" mu_dynamic="0.3"/>
 </Model>
</MultiBodySystem>
"""


def test_motionsolve_file_errors_name_the_file(tmp_path):
    text = _PENDULUM.read_text()
    start = text.index("<Force_JointFriction")
    no_friction = text[:start] + text[text.index("/>", start) + 2 :]
    (tmp_path / "bare.xml").write_text(no_friction)
    config = _MS_TEXT.replace("../tests/data/motionsolve_pendulum.xml", "bare.xml")
    with pytest.raises(ConfigError) as info:
        _ms_parse(config, tmp_path)
    assert "[friction] key 'from_file'" in str(info.value)
    assert "bare.xml has no <Force_JointFriction>" in str(info.value)
    # Friction on a cylindrical joint and on a revolute one: both forms read
    # the mix (the exact one with per-element sizes).
    (tmp_path / "mixed.xml").write_text(_MIXED)
    config = config.replace("bare.xml", "mixed.xml")
    for form in ("JointFriction", "JointLuGre"):
        law = _ms_parse(config.replace("JointFriction", form), tmp_path).friction
        assert type(law).__name__ == form
        assert [type(load) for load in law.loads] == [
            jf.RevoluteLoad,
            jf.CylindricalLoad,
        ]
    config = config.replace("mixed.xml", "bare.xml")
    (tmp_path / "broken.xml").write_text("<MultiBodySystem><Model>")
    with pytest.raises(ConfigError, match=r"\[system\] .*broken\.xml"):
        _ms_parse(config.replace("bare.xml", "broken.xml"), tmp_path)
    (tmp_path / "junk.xml").write_text("not xml at all")
    with pytest.raises(ConfigError, match=r"\[system\] key 'file'.*not well-formed"):
        _ms_parse(config.replace("bare.xml", "junk.xml"), tmp_path)
