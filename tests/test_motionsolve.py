"""MotionSolve XML import (`jaxfric.io.motionsolve`): the pendulum of the
Force_JointFriction reference page, unit conversion, translational and
universal joints, the tree walk, and the errors and warning of what is not
read.

Every reference number is worked out by hand from the XML in the comment next
to it; none comes from the loader."""

import math
import pathlib
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import jaxfric as jf
from jaxfric.io import MotionSolveModel, load_motionsolve, load_motionsolve_string

# Unit factors are exact decimal scalings and the model arrays products of a
# few signed unit rotations: agreement to round-off.
_TOLERANCE = 1e-12
# Friction levels of order 1e-3 N·m from one Newton–Euler pass: round-off.
_LEVEL_TOLERANCE = 1e-15
_PENDULUM = pathlib.Path(__file__).parent / "data" / "motionsolve_pendulum.xml"


def _load_quietly(text: str) -> MotionSolveModel:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return load_motionsolve_string(text)


def _world_com(system, q) -> np.ndarray:
    """World position of every body's centre of mass at ``q``."""
    rot, pos = system.forward_kinematics(jnp.asarray(q, dtype=float))
    com = system.model.first_moment / system.model.mass[:, None]
    return np.asarray(pos + np.einsum("kij,kj->ki", rot, com))


def test_pendulum_file():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every element is read or known
        model = load_motionsolve(_PENDULUM)
    system = model.system
    q = jnp.zeros(1)
    assert model.joint_ids == (301001,) and model.friction_ids == (1,)
    assert system.joint_names == ("301001",)
    assert system.friction_joints == (0,)
    # Body_Rigid mass="1." in KILOGRAM.
    np.testing.assert_allclose(system.model.mass, [1.0], atol=_TOLERANCE)
    # CM marker pos_x="-100." MILLIMETER, joint markers at the origin: the
    # centre of mass hangs 0.1 m from the joint, at (-0.1, 0, 0) m.
    np.testing.assert_allclose(_world_com(system, q), [[-0.1, 0, 0]], atol=_TOLERANCE)
    com = system.model.first_moment[0] / system.model.mass[0]
    assert abs(np.linalg.norm(com) - 0.1) < _TOLERANCE
    # The J marker's z axis (a02, a12, a22) = (0, 1, 0): the global y axis.
    rot, _ = system.forward_kinematics(q)
    axis = np.asarray(rot[0]) @ np.asarray(system.model.axes[0])
    np.testing.assert_allclose(axis, [0, 1, 0], atol=_TOLERANCE)
    # inertia_xx = yy = zz = 1000 kg·mm² = 1e-3 kg·m² about the centre of mass
    # (the model stores it about the joint: subtract m(|c|²E − c cᵀ)).
    about_com = system.model.inertia[0] - (com @ com * np.eye(3) - np.outer(com, com))
    np.testing.assert_allclose(about_com, 1e-3 * np.eye(3), atol=_TOLERANCE)
    # About the axis: I + m L² = 1e-3 + 1·0.1² kg·m².
    np.testing.assert_allclose(system.mass_matrix(q), [[0.011]], atol=_TOLERANCE)
    # grav_z = -9810 mm/s² = -9.81 m/s².
    np.testing.assert_allclose(system.model.gravity, [0, 0, -9.81], atol=_TOLERANCE)
    # Rotating the bob at (-L, 0, 0) by q about +y lifts it to height L sin q:
    # V = m g L sin q, so g(0) = dV/dq = m g L = 1 · 9.81 · 0.1 N·m.
    np.testing.assert_allclose(system.gravity_force(q), [0.981], atol=_TOLERANCE)
    np.testing.assert_allclose(model.q0, [0.0], atol=_TOLERANCE)  # I on J

    law = model.friction
    assert isinstance(law, jf.JointFriction) and law.effect == "all"
    np.testing.assert_allclose(law.mu_static, 0.5, atol=_TOLERANCE)
    np.testing.assert_allclose(law.mu_dynamic, 0.3, atol=_TOLERANCE)
    (load,) = law.loads
    assert isinstance(load, jf.RevoluteLoad) and load.inputs == "1111"
    # pin_radius="5.", friction_arm="7.", bending_reaction_arm="5." MILLIMETER.
    np.testing.assert_allclose(load.pin_radius, 0.005, atol=_TOLERANCE)
    np.testing.assert_allclose(load.friction_arm, 0.007, atol=_TOLERANCE)
    np.testing.assert_allclose(load.bending_reaction_arm, 0.005, atol=_TOLERANCE)
    np.testing.assert_allclose(load.torque_preload, 0.0, atol=_TOLERANCE)
    # end_time="5." SECOND, num_step="1000".
    assert model.t1 == 5.0 and model.num_steps == 1000
    # stiction_trans_vel="10." mm/s; max_stiction_deform defaults to 0.01 mm.
    (lugre,) = model.lugre
    assert lugre["inactive"] == "none"
    assert abs(lugre["stiction_trans_vel"] - 0.01) < _TOLERANCE
    assert abs(lugre["max_stiction_deform"] - 1e-5) < _TOLERANCE
    # The defaults 100 /mm, 0.316 s/mm, 0.0004 N·s/mm in SI.
    for name, value in (
        ("bristle_stiffness", 1e5),
        ("damping_effects", 316.0),
        ("viscous_effects", 0.4),
    ):
        assert abs(lugre[name] - value) < _TOLERANCE * value, name
        assert abs(float(getattr(model.lugre_friction, name)) - value) < 1e-9 * value
    assert model.lugre_friction.loads == model.friction.loads


def test_pendulum_friction_levels_at_the_start():
    # Horizontal at rest, with the frictionless angular acceleration
    # α = −m g L / (I + m L²) = −0.981/0.011 rad/s², the bob's centre of mass
    # accelerates by L α along z, so the pin pushes with m (g + L α) across its
    # axis; no axial force, no bending moment (no products of inertia). The
    # levels are μ r_p m (g + L α), r_p = 0.005 m (Comment 9, Tz1).
    model = load_motionsolve(_PENDULUM)
    alpha = -0.981 / 0.011
    pin_force = 1.0 * (9.81 + 0.1 * alpha)
    zero = jnp.zeros(1)
    reactions = model.system.joint_reactions(zero, zero, jnp.array([alpha]), zero, zero)
    levels = model.friction.at_reactions(reactions)
    np.testing.assert_allclose(
        levels.fc, [0.3 * 0.005 * pin_force], atol=_LEVEL_TOLERANCE
    )
    np.testing.assert_allclose(
        levels.fs, [0.5 * 0.005 * pin_force], atol=_LEVEL_TOLERANCE
    )


# The pendulum written by hand in METER (lengths / 1000, kg·mm² · 1e-6; the
# default max_stiction_deform, 0.01 length units, is 0.01 mm there: 1e-5 m).
_PENDULUM_METER = """<?xml version="1.0"?>
<MultiBodySystem>
 <Model>
  <Param_Unit force_unit="NEWTON" mass_unit="KILOGRAM" length_unit="METER"
     time_unit="SECOND"/>
  <Reference_Marker id="30101020" body_id="30101" a00="-1." a10="0." a20="0."
     a02="0." a12="1." a22="0."/>
  <Reference_Marker id="30102020" body_id="30102" a00="-1." a10="0." a20="0."
     a02="0." a12="1." a22="0."/>
  <Reference_Marker id="30102030" body_id="30102" pos_x="-0.1"/>
  <Body_Rigid id="30101" IsGround="TRUE"/>
  <Body_Rigid id="30102" cg_id="30102030" mass="1." inertia_xx="0.001"
     inertia_yy="0.001" inertia_zz="0.001"/>
  <Constraint_Joint id="301001" type="REVOLUTE" i_marker_id="30102020"
     j_marker_id="30101020"/>
  <Force_Gravity grav_x="0." grav_y="0." grav_z="-9.81"/>
  <Force_JointFriction id="1" joint_id="301001" mu_static="0.5" mu_dynamic="0.3"
     stiction_trans_vel="0.01" max_stiction_deform="1e-5" effect="ALL"
     friction_arm="0.007"
     pin_radius="0.005" bending_reaction_arm="0.005" inputs="1111"/>
 </Model>
 <Command>
  <Simulate analysis_type="Transient" end_time="5." num_step="1000"/>
 </Command>
</MultiBodySystem>
"""


def test_meter_units_give_the_same_model():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        millimeter = load_motionsolve(_PENDULUM)
    meter = _load_quietly(_PENDULUM_METER)
    for name in (
        "origin_translation",
        "origin_rotation",
        "mass",
        "first_moment",
        "inertia",
        "gravity",
    ):
        np.testing.assert_allclose(
            getattr(meter.system.model, name),
            getattr(millimeter.system.model, name),
            atol=_TOLERANCE,
            err_msg=name,
        )
    assert meter.system.model.axes == millimeter.system.model.axes
    a, b = meter.friction.loads[0], millimeter.friction.loads[0]
    for name in ("pin_radius", "friction_arm", "bending_reaction_arm"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), atol=_TOLERANCE)
    assert (meter.t1, meter.num_steps) == (millimeter.t1, millimeter.num_steps)
    # The bristle parameters' defaults are in the model's units, so they differ.
    bristles = ("bristle_stiffness", "damping_effects", "viscous_effects")
    for name, value in meter.lugre[0].items():
        if isinstance(value, float) and name not in bristles:
            assert abs(value - millimeter.lugre[0][name]) < _TOLERANCE, name


def test_joint_written_the_other_way_round():
    # I on ground, J on the bob: MotionSolve's coordinate is the ground's angle
    # relative to the bob, minus the bob's: g(0) = −m g L = −0.981 N·m.
    text = _PENDULUM_METER.replace(
        'i_marker_id="30102020"\n     j_marker_id="30101020"',
        'i_marker_id="30101020"\n     j_marker_id="30102020"',
    )
    assert text != _PENDULUM_METER
    model = _load_quietly(text)
    q = jnp.zeros(1)
    np.testing.assert_allclose(model.system.gravity_force(q), [-0.981], atol=_TOLERANCE)
    np.testing.assert_allclose(
        _world_com(model.system, q), [[-0.1, 0, 0]], atol=_TOLERANCE
    )
    assert model.system.model.axes == ((0.0, 0.0, -1.0),)


def test_initial_angle_from_the_markers():
    # The I marker's x axis (-cos 30°, 0, sin 30°) is J's x axis (-1, 0, 0)
    # turned by +30° about J's z axis (0, 1, 0): the file is at q0 = π/6.
    c, s = math.cos(math.pi / 6), math.sin(math.pi / 6)
    text = _PENDULUM_METER.replace(
        '<Reference_Marker id="30102020" body_id="30102" a00="-1." a10="0." a20="0."',
        f'<Reference_Marker id="30102020" body_id="30102" a00="{-c!r}" a10="0." '
        f'a20="{s!r}"',
    )
    assert text != _PENDULUM_METER
    model = _load_quietly(text)
    np.testing.assert_allclose(model.q0, [math.pi / 6], atol=_TOLERANCE)
    # At q0 the bob is where the file puts it, (-0.1, 0, 0) m; at q = 0 it is
    # turned back by 30°, and g(q) = m g L cos(q − q0).
    np.testing.assert_allclose(
        _world_com(model.system, model.q0), [[-0.1, 0, 0]], atol=_TOLERANCE
    )
    np.testing.assert_allclose(
        model.system.gravity_force(jnp.zeros(1)), [0.981 * c], atol=_TOLERANCE
    )


# A slider on a guide along global x, in CENTIMETER, GRAM, KILONEWTON and
# MILLISECOND: the I marker sits 5 cm along J's z axis (q0 = 0.05 m).
_SLIDER = """<MultiBodySystem>
 <Model>
  <Param_Unit force_unit="KILONEWTON" mass_unit="GRAM" length_unit="CENTIMETER"
     time_unit="MILLISECOND"/>
  <Reference_Marker id="10" body_id="1" pos_x="10." a00="0." a10="1." a20="0."
     a02="1." a12="0." a22="0."/>
  <Reference_Marker id="20" body_id="2" pos_x="15." a00="0." a10="1." a20="0."
     a02="1." a12="0." a22="0."/>
  <Reference_Marker id="21" body_id="2" pos_x="15." pos_z="2."/>
  <Body_Rigid id="1" isground="TRUE"/>
  <Body_Rigid id="2" cg_id="21" mass="2000." inertia_xx="1e4" inertia_yy="1e4"
     inertia_zz="1e4"/>
  <Constraint_Joint id="5" type="TRANSLATIONAL" i_marker_id="20" j_marker_id="10"/>
  <Force_Gravity grav_x="-9.81e-4"/>
  <Force_JointFriction id="8" joint_id="5" mu_static="0.2" mu_dynamic="0.1"
     effect="Sliding" inputs="1011" reaction_arm="3." initial_overlap="8."
     overlap_delta="Increase" force_preload="0.002"/>
 </Model>
 <Command>
  <Simulate analysis_type="Static"/>
  <Simulate end_time="500." num_step="50"/>
 </Command>
</MultiBodySystem>
"""


def test_translational_joint():
    model = _load_quietly(_SLIDER)
    system = model.system
    assert system.model.joint_types == ("prismatic",)
    # 5 cm from J to I along J's z axis.
    np.testing.assert_allclose(model.q0, [0.05], atol=_TOLERANCE)
    rot, pos = system.forward_kinematics(jnp.asarray(model.q0))
    # At q0 the body frame is the I marker: (15, 0, 0) cm, axes as J's.
    np.testing.assert_allclose(pos, [[0.15, 0, 0]], atol=_TOLERANCE)
    axis = np.asarray(rot[0]) @ np.asarray(system.model.axes[0])
    np.testing.assert_allclose(axis, [1, 0, 0], atol=_TOLERANCE)
    # The centre of mass 2 cm above I: along J's y axis z × x = (0, 0, 1).
    com = system.model.first_moment[0] / system.model.mass[0]
    np.testing.assert_allclose(com, [0, 0.02, 0], atol=_TOLERANCE)
    # 2000 g; 1e4 g·cm² = 1e-3 kg·m²; -9.81e-4 cm/ms² = -9.81 m/s² along x.
    np.testing.assert_allclose(system.model.mass, [2.0], atol=_TOLERANCE)
    np.testing.assert_allclose(system.model.gravity, [-9.81, 0, 0], atol=_TOLERANCE)
    about_com = system.model.inertia[0] - 2.0 * (
        com @ com * np.eye(3) - np.outer(com, com)
    )
    np.testing.assert_allclose(about_com, 1e-3 * np.eye(3), atol=_TOLERANCE)
    # Sliding along x moves the whole 2 kg: M = 2 kg, g = −m g_x = 19.62 N.
    q = jnp.zeros(1)
    np.testing.assert_allclose(system.mass_matrix(q), [[2.0]], atol=_TOLERANCE)
    np.testing.assert_allclose(system.gravity_force(q), [19.62], atol=_TOLERANCE)

    law = model.friction
    assert law.effect == "sliding"
    # JointLuGre has no effect: "sliding" is its coefficients, μ_s = μ_d.
    lugre = model.lugre_friction
    np.testing.assert_allclose([lugre.mu_static, lugre.mu_dynamic], [0.1, 0.1])
    (load,) = law.loads
    assert isinstance(load, jf.TranslationalLoad)
    assert load.overlap_delta == "increase" and load.inputs == "1011"
    # 3 cm, 8 cm, 0.002 kN.
    np.testing.assert_allclose(load.reaction_arm, 0.03, atol=_TOLERANCE)
    np.testing.assert_allclose(load.initial_overlap, 0.08, atol=_TOLERANCE)
    np.testing.assert_allclose(load.force_preload, 2.0, atol=_TOLERANCE)
    # The transient Simulate: 500 ms; the static one is not the end time.
    assert abs(model.t1 - 0.5) < _TOLERANCE and model.num_steps == 50


# Two links in the x-y plane about global z, the elbow joint listed first;
# two friction elements with different coefficients and effects.
_DOUBLE = """<MultiBodySystem>
 <Model>
  <Reference_Marker id="110" body_id="1"/>
  <Reference_Marker id="111" body_id="2"/>
  <Reference_Marker id="21" body_id="2" pos_x="0.3"/>
  <Reference_Marker id="120" body_id="2" pos_x="0.6"/>
  <Reference_Marker id="121" body_id="3" pos_x="0.6"/>
  <Reference_Marker id="31" body_id="3" pos_x="0.8"/>
  <Body_Rigid id="1" isground="TRUE"/>
  <Body_Rigid id="2" cg_id="21" mass="1." inertia_zz="0.01" inertia_xx="0.01"
     inertia_yy="0.01"/>
  <Body_Rigid id="3" cg_id="31" mass="0.5" inertia_zz="0.002" inertia_xx="0.002"
     inertia_yy="0.002"/>
  <Constraint_Joint id="12" type="REVOLUTE" i_marker_id="121" j_marker_id="120"/>
  <Constraint_Joint id="11" type="REVOLUTE" i_marker_id="111" j_marker_id="110"/>
  <Force_Gravity grav_y="-9.81"/>
  <Force_JointFriction id="7" joint_id="12" mu_static="0.4" mu_dynamic="0.2"
     effect="stiction"/>
  <Force_JointFriction id="3" joint_id="11" mu_static="0.3" mu_dynamic="0.3"/>
 </Model>
</MultiBodySystem>
"""


def test_chain_order_and_per_element_friction():
    model = _load_quietly(_DOUBLE)
    system = model.system
    # Walked from ground: the shoulder (11) first, then the elbow (12).
    assert model.joint_ids == (11, 12)
    assert system.model.parents == (-1, 0)
    # The elbow's J marker is 0.6 m along the upper link's x axis.
    np.testing.assert_allclose(
        system.model.origin_translation, [[0, 0, 0], [0.6, 0, 0]], atol=_TOLERANCE
    )
    # Gravity -y, links along +x: g1 = (1·0.3 + 0.5·0.8)·9.81, g2 = 0.5·0.2·9.81.
    np.testing.assert_allclose(
        system.gravity_force(jnp.zeros(2)), [6.867, 0.981], atol=_TOLERANCE
    )
    # Friction elements in file order (7 on the elbow, 3 on the shoulder);
    # element 7's "stiction" makes its kinetic coefficient its static one.
    assert model.friction_ids == (7, 3)
    assert system.friction_joints == (1, 0)
    law = model.friction
    assert law.effect == "all"
    np.testing.assert_allclose(law.mu_static, [0.4, 0.3], atol=_TOLERANCE)
    np.testing.assert_allclose(law.mu_dynamic, [0.4, 0.3], atol=_TOLERANCE)
    # MotionSolve's defaults: one length unit (METER) for the arms and radius.
    for load in law.loads:
        np.testing.assert_allclose(load.pin_radius, 1.0, atol=_TOLERANCE)
        np.testing.assert_allclose(load.friction_arm, 1.0, atol=_TOLERANCE)
    assert model.t1 is None and model.num_steps is None


def test_inertia_given_about_another_marker():
    # The IM marker sits 0.2 m from the centre of mass along global x, its
    # axes x, y, z along global y, z, x: about the IM origin the inertia is
    # diag(0.3, 0.5, 0.5) kg·m² in global axes. Moved to the centre of mass by
    # the parallel-axis theorem: the moment about x is unchanged (the offset
    # is along x), those about y and z lose m·0.2² = 2·0.04: 0.42 kg·m².
    text = """<MultiBodySystem><Model>
      <Reference_Marker id="1" body_id="1"/>
      <Reference_Marker id="2" body_id="2"/>
      <Reference_Marker id="3" body_id="2" pos_y="0.5"/>
      <Reference_Marker id="4" body_id="2" pos_x="0.2" pos_y="0.5" a00="0."
         a10="1." a20="0." a02="1." a12="0." a22="0."/>
      <Body_Rigid id="1" isground="TRUE"/>
      <Body_Rigid id="2" cg_id="3" im_id="4" mass="2." inertia_xx="0.5"
         inertia_yy="0.5" inertia_zz="0.3"/>
      <Constraint_Joint id="9" type="REVOLUTE" i_marker_id="2" j_marker_id="1"/>
    </Model></MultiBodySystem>"""
    system = _load_quietly(text).system
    com = system.model.first_moment[0] / system.model.mass[0]
    np.testing.assert_allclose(com, [0, 0.5, 0], atol=_TOLERANCE)
    about_com = system.model.inertia[0] - 2.0 * (
        com @ com * np.eye(3) - np.outer(com, com)
    )
    np.testing.assert_allclose(about_com, np.diag([0.3, 0.42, 0.42]), atol=_TOLERANCE)
    # About the joint's z axis: 0.42 + 2·0.5² kg·m².
    np.testing.assert_allclose(
        system.mass_matrix(jnp.zeros(1)), [[0.92]], atol=_TOLERANCE
    )


def test_unknown_elements_and_attributes_warn_once():
    text = _PENDULUM_METER.replace(
        "<Force_Gravity",
        '<Force_Vector id="4"/><Body_Point id="6"/>\n  <Force_Gravity',
    ).replace('<Body_Rigid id="30102"', '<Body_Rigid id="30102" v_ic_x="1."')
    with pytest.warns(UserWarning) as record:
        model = load_motionsolve_string(text)
    assert len(record) == 1
    message = str(record[0].message)
    for name in ("<Force_Vector>", "<Body_Point>", "Body_Rigid.v_ic_x"):
        assert name in message
    assert model.system.n_dof == 1  # the model itself is still read


def _error(text: str) -> str:
    with pytest.raises(ValueError) as info:
        load_motionsolve_string(text)
    return str(info.value)


def test_missing_mu_static_is_named():
    message = _error(_PENDULUM_METER.replace('mu_static="0.5" ', ""))
    assert "Force_JointFriction id=1" in message and "'mu_static'" in message


def test_bad_marker_reference_is_named():
    message = _error(
        _PENDULUM_METER.replace('j_marker_id="30101020"', 'j_marker_id="99"')
    )
    assert "Constraint_Joint id=301001" in message
    assert "'j_marker_id'" in message and "99" in message


def test_unsupported_joint_type_is_named():
    message = _error(_PENDULUM_METER.replace('"REVOLUTE"', '"PLANAR"'))
    assert "Constraint_Joint id=301001" in message
    assert "PLANAR" in message and "not supported yet" in message


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # A body without mass, and a mass that is not a number.
        ('mass="1." ', "", ("Body_Rigid id=30102", "'mass'")),
        ('mass="1."', 'mass="heavy"', ("Body_Rigid id=30102", "'mass'", "heavy")),
        # Positions relative to another marker are refused by name.
        ('pos_x="-0.1"', 'pos_x="-0.1" rm_id="30101020"', ("30102030", "'rm_id'")),
        ('length_unit="METER"', 'length_unit="FURLONG"', ("'length_unit'", "FURLONG")),
        # The I marker off the J marker's origin: the joint is not assembled.
        (
            '<Reference_Marker id="30102020" body_id="30102"',
            '<Reference_Marker id="30102020" body_id="30102" pos_z="0.01"',
            ("Constraint_Joint id=301001", "REVOLUTE"),
        ),
        # Friction on a FIXED joint.
        ('type="REVOLUTE"', 'type="FIXED"', ("Force_JointFriction id=1", "FIXED")),
    ],
)
def test_malformed_models_are_named(old, new, expected):
    text = _PENDULUM_METER.replace(old, new)
    assert text != _PENDULUM_METER
    message = _error(text)
    for part in expected:
        assert part in message


def test_loops_and_floating_bodies_are_named():
    # A third joint, from ground to the lower link, closes the loop 11-12-13.
    loop = _DOUBLE.replace(
        "<Force_Gravity",
        '<Constraint_Joint id="13" type="REVOLUTE" i_marker_id="31" '
        'j_marker_id="110"/>\n  <Force_Gravity',
    )
    assert "[11, 12, 13]" in _error(loop)
    # Without the shoulder joint the two links float.
    floating = _DOUBLE.replace(
        '<Constraint_Joint id="11" type="REVOLUTE" i_marker_id="111" '
        'j_marker_id="110"/>',
        "",
    )
    assert "[2, 3]" in _error(floating)


# A body on a universal joint at the origin, in MILLIMETER: the J marker on
# ground has its z axis along global x (J yoke), the I marker on the body its
# z axis along global y (I yoke; x along global z, y = z × x = global x). The
# 2 kg centre of mass sits at (300, 100, 0) mm, gravity −9810 mm/s² along z.
_UNIVERSAL = """<MultiBodySystem>
 <Model>
  <Param_Unit force_unit="NEWTON" mass_unit="KILOGRAM" length_unit="MILLIMETER"
     time_unit="SECOND"/>
  <Reference_Marker id="10" body_id="1" a00="0." a10="1." a20="0."
     a02="1." a12="0." a22="0."/>
  <Reference_Marker id="20" body_id="2" a00="0." a10="0." a20="1."
     a02="0." a12="1." a22="0."/>
  <Reference_Marker id="21" body_id="2" pos_x="300." pos_y="100."/>
  <Body_Rigid id="1" isground="TRUE"/>
  <Body_Rigid id="2" cg_id="21" mass="2." inertia_xx="1000." inertia_yy="1000."
     inertia_zz="1000."/>
  <Constraint_Joint id="5" type="UNIVERSAL" i_marker_id="20" j_marker_id="10"/>
  <Force_Gravity grav_z="-9810."/>
  <Force_JointFriction id="8" joint_id="5" mu_static="0.4" mu_dynamic="0.3"
     yoke_choice="J_Yoke" pin_radius="5." friction_arm="7."
     bending_reaction_arm="6." torque_preload="2000." inputs="1101"/>
 </Model>
</MultiBodySystem>
"""


def test_universal_joint():
    model = _load_quietly(_UNIVERSAL)
    system = model.system
    q = jnp.zeros(2)
    # Two revolute joints through a massless cross: the J yoke, then the I yoke.
    assert system.model.joint_types == ("revolute", "revolute")
    assert system.joint_names == ("5.j_yoke", "5.i_yoke")
    assert system.model.link_names == ("1", "5.cross", "2")
    assert model.joint_ids == (5, 5)
    np.testing.assert_allclose(model.q0, [0.0, 0.0], atol=_TOLERANCE)
    np.testing.assert_allclose(system.model.mass, [0.0, 2.0], atol=_TOLERANCE)
    # The joint axes at q = 0: J's z axis (1, 0, 0), I's z axis (0, 1, 0).
    rot, pos = system.forward_kinematics(q)
    for k, axis in enumerate(([1, 0, 0], [0, 1, 0])):
        world = np.asarray(rot[k]) @ np.asarray(system.model.axes[k])
        np.testing.assert_allclose(world, axis, atol=_TOLERANCE)
    # At q = 0 the body frame is the I marker (the file's configuration): its
    # columns x, y, z are global z, x, y.
    np.testing.assert_allclose(
        rot[1], [[0, 1, 0], [0, 0, 1], [1, 0, 0]], atol=_TOLERANCE
    )
    np.testing.assert_allclose(pos[1], [0, 0, 0], atol=_TOLERANCE)
    np.testing.assert_allclose(_world_com(system, q)[1], [0.3, 0.1, 0], atol=_TOLERANCE)
    # Centre of mass r = (d, e, 0) = (0.3, 0.1, 0) m, m = 2 kg, I = 1e-3 E:
    # about x, I + m e² = 0.021; about y, I + m d² = 0.181; the product
    # x·(−m r rᵀ)·y = −m d e = −0.06 kg·m².
    np.testing.assert_allclose(
        system.mass_matrix(q), [[0.021, -0.06], [-0.06, 0.181]], atol=_TOLERANCE
    )
    # g = dV/dq with V = m g z: turning about x lifts the centre of mass by
    # e q (x × r = (0, 0, e)), about y lowers it by d q (y × r = (0, 0, −d)):
    # g(0) = (m g e, −m g d) = (2·9.81·0.1, −2·9.81·0.3) N·m.
    np.testing.assert_allclose(
        system.gravity_force(q), [1.962, -5.886], atol=_TOLERANCE
    )
    # The friction element on the J yoke, with its load in SI: 5, 7, 6 mm and
    # 2000 N·mm.
    assert model.friction_ids == (8,)
    assert system.friction_joints == (0,)
    (load,) = model.friction.loads
    assert isinstance(load, jf.RevoluteLoad) and load.inputs == "1101"
    np.testing.assert_allclose(load.pin_radius, 0.005, atol=_TOLERANCE)
    np.testing.assert_allclose(load.friction_arm, 0.007, atol=_TOLERANCE)
    np.testing.assert_allclose(load.bending_reaction_arm, 0.006, atol=_TOLERANCE)
    np.testing.assert_allclose(load.torque_preload, 2.0, atol=_TOLERANCE)
    np.testing.assert_allclose(model.friction.mu_static, 0.4, atol=_TOLERANCE)
    np.testing.assert_allclose(model.friction.mu_dynamic, 0.3, atol=_TOLERANCE)


def test_universal_joint_default_yoke_is_the_i_yoke():
    text = _UNIVERSAL.replace('yoke_choice="J_Yoke" ', "")
    assert text != _UNIVERSAL
    model = _load_quietly(text)
    assert model.system.friction_joints == (1,)  # "5.i_yoke"


def test_hooke_joint_is_the_universal_joint():
    universal = _load_quietly(_UNIVERSAL)
    hooke = _load_quietly(_UNIVERSAL.replace('"UNIVERSAL"', '"HOOKE"'))
    assert hooke.system.model.axes == universal.system.model.axes
    assert hooke.system.joint_names == universal.system.joint_names
    assert hooke.system.friction_joints == universal.system.friction_joints
    for name in ("origin_translation", "origin_rotation", "mass", "inertia"):
        np.testing.assert_allclose(
            getattr(hooke.system.model, name),
            getattr(universal.system.model, name),
            atol=_TOLERANCE,
            err_msg=name,
        )
    assert hooke.friction.loads == universal.friction.loads


def test_universal_joint_written_the_other_way_round():
    # I on ground, J on the body: the cross still turns first about the ground
    # marker's z axis (global x), now the I yoke, then about the body marker's
    # (global y), the J yoke: the same g(0) = (m g e, −m g d).
    text = _UNIVERSAL.replace(
        'i_marker_id="20" j_marker_id="10"', 'i_marker_id="10" j_marker_id="20"'
    )
    assert text != _UNIVERSAL
    system = _load_quietly(text).system
    assert system.joint_names == ("5.i_yoke", "5.j_yoke")
    assert system.friction_joints == (1,)  # the J yoke
    np.testing.assert_allclose(
        system.gravity_force(jnp.zeros(2)), [1.962, -5.886], atol=_TOLERANCE
    )


def test_universal_joint_with_yokes_not_perpendicular_is_named():
    # I's z axis turned by asin 0.1 towards J's (global x): cosine 0.1.
    text = _UNIVERSAL.replace(
        'a02="0." a12="1." a22="0."', 'a02="0.1" a12="0.99498743710662" a22="0."'
    )
    assert text != _UNIVERSAL
    message = _error(text)
    assert "Constraint_Joint id=5" in message and "perpendicular" in message


def test_yoke_choice_is_checked():
    # Neither yoke: the attribute is named; on a revolute joint: not read.
    text = _UNIVERSAL.replace('"J_Yoke"', '"k_yoke"')
    assert text != _UNIVERSAL
    message = _error(text)
    assert "Force_JointFriction id=8" in message and "'yoke_choice'" in message
    text = _PENDULUM_METER.replace('effect="ALL"', 'effect="ALL" yoke_choice="i_yoke"')
    assert text != _PENDULUM_METER
    with pytest.warns(UserWarning, match="yoke_choice"):
        load_motionsolve_string(text)


def _rotation(axis: int, angle: float) -> np.ndarray:
    """Rotation by `angle` (rad) about global axis `axis` (0, 1, 2)."""
    c, s = np.cos(angle), np.sin(angle)
    i, j = (axis + 1) % 3, (axis + 2) % 3  # cyclic: Ry turns z towards x
    out = np.eye(3)
    out[i, i] = out[j, j] = c
    out[i, j], out[j, i] = -s, s
    return out


def _marker(mid: int, body: int, rotation: np.ndarray, position=(0.0, 0.0, 0.0)) -> str:
    """A Reference_Marker with the direction cosines of `rotation`'s x and z
    columns."""
    x, z = (rotation[:, k].tolist() for k in (0, 2))
    position = [float(p) for p in position]
    return (
        f'<Reference_Marker id="{mid}" body_id="{body}" pos_x="{position[0]!r}" '
        f'pos_y="{position[1]!r}" pos_z="{position[2]!r}" a00="{x[0]!r}" '
        f'a10="{x[1]!r}" a20="{x[2]!r}" a02="{z[0]!r}" a12="{z[1]!r}" a22="{z[2]!r}"/>'
    )


def _one_joint(kind: str, i_marker: str, cg=(0.1, 0.0, -0.3), friction="") -> str:
    """Ground (J marker 10 at the origin, global axes) and a 2 kg body (I
    marker 20, centre of mass marker 21 at `cg`, inertia diag(2, 3, 1)e-3
    kg·m² about it in global axes) on one joint of type `kind`, SI units."""
    return f"""<MultiBodySystem>
 <Model>
  {_marker(10, 1, np.eye(3))}
  {i_marker}
  {_marker(21, 2, np.eye(3), cg)}
  <Body_Rigid id="1" isground="TRUE"/>
  <Body_Rigid id="2" cg_id="21" mass="2." inertia_xx="0.002" inertia_yy="0.003"
     inertia_zz="0.001"/>
  <Constraint_Joint id="5" type="{kind}" i_marker_id="20" j_marker_id="10"/>
  <Force_Gravity grav_z="-9.81"/>
  {friction}
 </Model>
</MultiBodySystem>
"""


def _about_point(cg) -> np.ndarray:
    """The body's inertia about the origin (global axes), kg·m²."""
    r = np.asarray(cg)
    return np.diag([0.002, 0.003, 0.001]) + 2.0 * (r @ r * np.eye(3) - np.outer(r, r))


def test_cylindrical_joint():
    # I marker 0.05 m up the common z axis, turned 30° about it.
    angle, rise, cg = np.pi / 6, 0.05, (0.1, 0.0, 0.05)
    model = _load_quietly(
        _one_joint("CYLINDRICAL", _marker(20, 2, _rotation(2, angle), (0, 0, rise)), cg)
    )
    system = model.system
    # A revolute joint into a massless sleeve, then a prismatic joint, both
    # along the J marker's z: MotionSolve's AZ(I, J) and DZ(I, J, J).
    assert system.model.joint_types == ("revolute", "prismatic")
    assert system.joint_names == ("5.rotation", "5.translation")
    assert system.model.link_names == ("1", "5.sleeve", "2")
    assert model.joint_ids == (5, 5)
    np.testing.assert_allclose(model.q0, [angle, rise], atol=_TOLERANCE)
    q = jnp.asarray(model.q0)
    np.testing.assert_allclose(_world_com(system, q)[1], cg, atol=_TOLERANCE)
    # Turning about z: I_zz + m (x² + y²); sliding along z: m; no coupling.
    np.testing.assert_allclose(
        system.mass_matrix(q), np.diag([0.001 + 2.0 * 0.01, 2.0]), atol=_TOLERANCE
    )
    np.testing.assert_allclose(
        system.gravity_force(q), [0.0, 2.0 * 9.81], atol=_TOLERANCE
    )
    # Written the other way round (I on ground): AZ(I, J) = −30°, DZ(I, J, J)
    # = −0.05 m, and the file's configuration is reproduced.
    text = _one_joint(
        "CYLINDRICAL", _marker(20, 2, _rotation(2, angle), (0, 0, rise)), cg
    ).replace('i_marker_id="20" j_marker_id="10"', 'i_marker_id="10" j_marker_id="20"')
    reverse = _load_quietly(text)
    np.testing.assert_allclose(reverse.q0, [-angle, -rise], atol=_TOLERANCE)
    np.testing.assert_allclose(
        _world_com(reverse.system, jnp.asarray(reverse.q0))[1], cg, atol=_TOLERANCE
    )


def test_spherical_joint():
    # I marker at the J origin, turned by intrinsic x-y-z angles (10°, 20°, 30°).
    angles = np.deg2rad([10.0, 20.0, 30.0])
    turn = _rotation(0, angles[0]) @ _rotation(1, angles[1]) @ _rotation(2, angles[2])
    cg = np.array([0.1, 0.0, -0.3])
    model = _load_quietly(_one_joint("SPHERICAL", _marker(20, 2, turn), cg))
    system = model.system
    assert system.model.joint_types == ("revolute",) * 3
    assert system.joint_names == ("5.x", "5.y", "5.z")
    assert system.model.link_names == ("1", "5.gimbal_x", "5.gimbal_y", "2")
    assert model.joint_ids == (5, 5, 5)
    np.testing.assert_allclose(model.q0, angles, atol=_TOLERANCE)
    q = jnp.asarray(model.q0)
    rot, _ = system.forward_kinematics(q)
    np.testing.assert_allclose(rot[2], turn, atol=_TOLERANCE)
    np.testing.assert_allclose(_world_com(system, q)[2], cg, atol=_TOLERANCE)
    # The joint axes in the world: x, then Rx y, then Rx Ry z; M = Sᵀ I_O S
    # with I_O the inertia about the ball's centre, and the gravity force
    # dV/dq = −Sᵀ (r × m g).
    axes = np.stack(
        [
            np.eye(3)[0],
            _rotation(0, angles[0]) @ np.eye(3)[1],
            _rotation(0, angles[0]) @ _rotation(1, angles[1]) @ np.eye(3)[2],
        ],
        axis=1,
    )
    np.testing.assert_allclose(
        system.mass_matrix(q), axes.T @ _about_point(cg) @ axes, atol=_TOLERANCE
    )
    weight = np.array([0.0, 0.0, -2.0 * 9.81])
    np.testing.assert_allclose(
        system.gravity_force(q), -axes.T @ np.cross(cg, weight), atol=_TOLERANCE
    )
    # Written the other way round (I on ground): the angles are J's relative
    # to I, and the file's configuration is reproduced (the body's frame is
    # then its J marker).
    text = _one_joint("SPHERICAL", _marker(20, 2, turn), cg).replace(
        'i_marker_id="20" j_marker_id="10"', 'i_marker_id="10" j_marker_id="20"'
    )
    reverse = _load_quietly(text)
    q = jnp.asarray(reverse.q0)
    np.testing.assert_allclose(
        reverse.system.forward_kinematics(q)[0][2], turn, atol=_TOLERANCE
    )
    np.testing.assert_allclose(_world_com(reverse.system, q)[2], cg, atol=_TOLERANCE)


def test_cylindrical_and_spherical_joints_are_checked():
    # Off the common axis; a gimbal lock (90° about y).
    off_axis = _one_joint("CYLINDRICAL", _marker(20, 2, np.eye(3), (0.01, 0.0, 0.0)))
    assert "the same z axis" in _error(off_axis)
    locked = _one_joint("SPHERICAL", _marker(20, 2, _rotation(1, np.pi / 2)))
    assert "Constraint_Joint id=5" in _error(locked) and "90" in _error(locked)


def test_spherical_joint_friction():
    # Comment 13 on the spherical joint of `_one_joint`, both ways round: one
    # ball element of the three gimbal joints, N = |reaction| + T_pre/(μ_s r_b)
    # (at rest: the weight, 2 kg · 9.81 m/s²).
    friction = (
        '<Force_JointFriction id="8" joint_id="5" mu_static="0.4" mu_dynamic="0.3" '
        'ball_radius="0.02" torque_preload="0.1"/>'
    )
    text = _one_joint("SPHERICAL", _marker(20, 2, np.eye(3)), friction=friction)
    reverse = text.replace(
        'i_marker_id="20" j_marker_id="10"', 'i_marker_id="10" j_marker_id="20"'
    )
    for model in map(_load_quietly, (text, reverse)):
        system, law = model.system, model.friction
        assert system.friction_joints == (0, 1, 2) and system.ball_rows == (0,)
        assert isinstance(law.loads[0], jf.SphericalLoad)
        assert model.friction_ids == (8,)
        q, zero = jnp.asarray(model.q0), jnp.zeros(3)
        reactions = system.joint_reactions(q, zero, zero, zero, zero)
        normal = 2.0 * 9.81 + 0.1 / (0.4 * 0.02)
        np.testing.assert_allclose(law.at_reactions(reactions).fc, [0.3 * normal] * 3)
        assert isinstance(model.lugre_friction.loads[0], jf.SphericalLoad)


# Friction on the cylindrical joint of `_one_joint` (Comment 11), SI units: the
# I marker 0.05 m up the axis, the centre of mass 0.1 m off the axis and 0.1 m
# above the I marker.
_CYLINDRICAL_FRICTION = (
    '<Force_JointFriction id="8" joint_id="5" mu_static="0.4" mu_dynamic="0.3" '
    'pin_radius="0.01" initial_overlap="0.08" overlap_delta="Increase" '
    'force_preload="3." inputs="1110" bristle_stiffness="2e4" '
    'damping_effects="0.5" viscous_effects="0.01" stiction_trans_vel="0.002"/>'
)


def _cylindrical_friction(friction: str = _CYLINDRICAL_FRICTION) -> str:
    # Gravity across the axis, so that the joint carries the weight.
    return _one_joint(
        "CYLINDRICAL",
        _marker(20, 2, np.eye(3), (0.0, 0.0, 0.05)),
        (0.1, 0.0, 0.15),
        friction,
    ).replace('grav_z="-9.81"', 'grav_x="-9.81"')


def test_cylindrical_joint_friction():
    model = _load_quietly(_cylindrical_friction())
    system = model.system
    # One element on two friction rows, rotation then translation, in the
    # exact law and the LuGre form alike.
    assert model.friction_ids == (8,)
    assert system.friction_joints == (0, 1)
    law = model.lugre_friction
    (load,) = law.loads
    assert model.friction.loads == law.loads
    assert model.friction.rows_per_element == 2
    assert isinstance(load, jf.CylindricalLoad)
    assert (load.overlap_delta, load.inputs) == ("increase", "1110")
    expected = {"pin_radius": 0.01, "initial_overlap": 0.08, "force_preload": 3.0}
    for name, value in expected.items():
        np.testing.assert_allclose(getattr(load, name), value, atol=_TOLERANCE)
    expected = {
        "mu_static": 0.4,
        "mu_dynamic": 0.3,
        "bristle_stiffness": 2e4,
        "damping_effects": 0.5,
        "viscous_effects": 0.01,
        "stiction_trans_vel": 0.002,
    }
    for name, value in expected.items():
        np.testing.assert_allclose(getattr(law, name), value, atol=_TOLERANCE)
    # At rest in the file's configuration the weight m g = 19.62 N (along −x,
    # through the axis: no torque about it, q̈ = 0) loads the pin radially,
    # N_xy = 19.62 N, and bends it by the weight's moment about the slider's
    # frame (the I marker), |r × m g| = 0.1 m · 19.62 N, over the overlap x_s
    # = 0.08 + 0.05 m; the preload's normal force is F_pre/μ_s = 3/0.4 N.
    q, zero = jnp.asarray(model.q0), jnp.zeros(2)
    np.testing.assert_allclose(
        system.acceleration(q, zero, zero, zero), 0.0, atol=1e-12
    )
    reactions = system.joint_reactions(q, zero, zero, zero, zero)
    (normal,) = law.at_reactions(reactions).normal
    weight = 2.0 * 9.81
    np.testing.assert_allclose(
        normal, [weight, 0.1 * weight / 0.13, 3.0 / 0.4], rtol=1e-12
    )


def test_shipped_slider_file():
    # tests/data/motionsolve_slider.xml (experiments/motionsolve_slider.py)
    # reads without a warning: a cylindrical joint along global x, mm to SI.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = load_motionsolve(_PENDULUM.parent / "motionsolve_slider.xml")
    assert model.system.joint_names == ("5.rotation", "5.translation")
    (load,) = model.friction.loads
    assert model.lugre_friction.loads == model.friction.loads
    assert (load.overlap_delta, load.inputs) == ("decrease", "1111")
    expected = {"pin_radius": 0.02, "initial_overlap": 0.3, "force_preload": 1.5}
    for name, value in expected.items():
        np.testing.assert_allclose(getattr(load, name), value, atol=_TOLERANCE)
    # MotionSolve's usual bristle damping, 0.02 s/mm = 20 s/m (Newton's load
    # coupling runs it; experiments/motionsolve_slider.py).
    np.testing.assert_allclose(
        model.lugre_friction.damping_effects, 20.0, rtol=_TOLERANCE
    )
    # Spin: I_xx + m e² = 2.4e-3 + 2·0.005² kg·m²; slide: 2 kg; the weight's
    # torque about the shaft m g e = 2·9.81·0.005 N·m.
    q = jnp.zeros(2)
    np.testing.assert_allclose(
        model.system.mass_matrix(q), np.diag([0.00245, 2.0]), atol=_TOLERANCE
    )
    np.testing.assert_allclose(
        model.system.gravity_force(q), [0.0981, 0.0], atol=_TOLERANCE
    )


def test_cylindrical_joint_friction_attributes_and_effect():
    # A friction arm (revolute) and the torque preload (in the cylindrical
    # syntax, not in Comment 11) are named, not read.
    text = _cylindrical_friction(
        _CYLINDRICAL_FRICTION.replace('inputs="1110"', 'inputs="1110" '
                                      'friction_arm="0.02" torque_preload="1."')
    )  # fmt: skip
    with pytest.warns(UserWarning) as record:
        model = load_motionsolve_string(text)
    (warning,) = record
    assert "friction_arm (not for a CYLINDRICAL joint)" in str(warning.message)
    assert "torque_preload (not used by a cylindrical joint's friction" in str(
        warning.message
    )
    assert (
        model.lugre_friction.loads
        == _load_quietly(_cylindrical_friction()).lugre_friction.loads
    )
    # With friction on a revolute joint too, both forms take the mix (the
    # exact law with per-element sizes).
    mixed = _load_quietly(
        _DOUBLE.replace('id="12" type="REVOLUTE"', 'id="12" type="CYLINDRICAL"')
    )
    assert mixed.friction.rows_per_element == (2, 1)
    for law in (mixed.friction, mixed.lugre_friction):
        assert [type(load) for load in law.loads] == [
            jf.CylindricalLoad,
            jf.RevoluteLoad,
        ]
    assert mixed.system.friction_joints == (1, 2, 0)
    # `effect` folds into the LuGre coefficients: sliding, μ_s = μ_d.
    sliding = _load_quietly(
        _cylindrical_friction(
            _CYLINDRICAL_FRICTION.replace("/>", ' effect="Sliding"/>')
        )
    ).lugre_friction
    np.testing.assert_allclose([sliding.mu_static, sliding.mu_dynamic], [0.3, 0.3])
