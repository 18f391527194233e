"""MotionSolve XML import: a subset of Altair MotionSolve's model format as a
`RigidBodyTree`, its ``Force_JointFriction`` elements as a `JointFriction` law
and as a `JointLuGre` law, and the simulation end time.

Parsed with the standard-library XML parser. Every number is converted to SI
from the model's ``Param_Unit`` (Altair MotionSolve Reference Guide, Param_Unit;
SI when absent): lengths, masses, inertias (mass·length²), gravity
(length/time²), friction arms and radii (length), preloads (force or
force·length) and the end time.

Read (Altair MotionSolve Reference Guide, each element's page):

- ``Reference_Marker``: ``body_id``, ``pos_x/y/z`` (default 0) and the
  direction cosines ``a00 a10 a20`` (x axis) and ``a02 a12 a22`` (z axis) in the
  global frame, ``y = z × x`` (``a01 a11 a21``, if given, must agree); identity
  when absent. Columns within 1e-4 of orthonormal are orthonormalised.
- ``Body_Rigid``: ``isground``, ``mass``, ``inertia_xx/yy/zz`` and the products
  ``inertia_xy/xz/yz`` (default 0, read as the off-diagonal entries of the
  inertia tensor), ``cg_id`` (the centre of mass marker), ``im_id`` (default
  ``cg_id``: the inertia is given about this marker's origin, in its axes, and
  moved to the centre of mass by the parallel-axis theorem). ``lprf_id`` is
  checked to name a marker of the body and otherwise unused: marker positions
  are global.
- ``Constraint_Joint`` of type ``REVOLUTE``, ``TRANSLATIONAL``, ``FIXED``,
  ``UNIVERSAL`` and ``HOOKE`` (the same kinematics), ``CYLINDRICAL`` and
  ``SPHERICAL`` (see below).
- ``Force_Gravity`` (``grav_x/y/z``; no gravity without it).
- ``Force_JointFriction`` on revolute, translational, universal, Hooke and
  cylindrical joints (see below).
- ``Command/Simulate`` (a transient one): ``end_time`` and ``num_step``.

Mapping. The tree is walked from the ground body through the joints (children
in file order, depth first); every other body must be reached by exactly one
joint. A joint's frame is its marker on the parent body (the ``J`` marker when
the ``J`` marker's body is nearer ground, as usual; the ``I`` marker for a
joint written the other way round), its axis that marker's ``z`` axis. Each
moving body's frame is the joint's marker on it, so its centre of mass is
``R_Cᵀ (p_cg − p_C)`` and its inertia ``R_Cᵀ R_im I R_imᵀ R_C`` with ``C`` that
marker. The joint coordinate ``q`` is MotionSolve's: the rotation of ``I``
about the ``z`` axis of ``J`` (``AZ(I, J)``) or the displacement of ``I`` along
it (``DZ(I, J, J)``), so ``q = 0`` puts ``I`` on ``J`` and the file's
configuration is ``q0``. The markers of each joint must satisfy the joint in
the file (MotionSolve would assemble the model; this loader does not): a
`ValueError` names the joint otherwise.

Universal and Hooke joints. MotionSolve's universal (Hooke) joint keeps the
origins of ``I`` and ``J`` together and the ``z`` axis of ``I`` perpendicular
to the ``z`` axis of ``J``; the two axes of the cross are those ``z`` axes,
the J yoke (``z`` of ``J``) and the I yoke (``z`` of ``I``). In the tree it is
two revolute joints through a massless link, the cross (link name
``"<id>.cross"``, mass and inertia zero: the child's inertia keeps the mass
matrix positive definite, and `RigidBodyTree` accepts it): first about the
parent-side marker's ``z`` axis, the joint frame that marker's frame, into the
cross, whose frame is that marker's at ``q = 0``; then about the child-side
marker's ``z`` axis, the joint frame the child-side marker's frame expressed in
the cross at the file's configuration, into the child. With ``J`` on the parent
(the usual way) that is the J yoke, then the I yoke; written the other way
round, the I yoke first. The joints are named ``"<id>.j_yoke"`` and
``"<id>.i_yoke"``; ``joint_ids`` lists the joint's id once for each. Each
coordinate is the right-handed rotation about the yoke marker's ``+z`` axis,
zero in the file's configuration (``q0`` has zeros there): unlike a revolute
joint's ``AZ(I, J)``, the I and J markers of a universal joint never coincide.
A file whose I and J origins differ, or whose ``z`` axes are not perpendicular
(``|z_I · z_J|`` above 1e-5), is refused with a `ValueError` naming the joint.

Cylindrical and spherical joints. A cylindrical joint (I and J share the
``z`` axis) is a revolute joint about the parent-side marker's ``z`` axis into
a massless link (``"<id>.sleeve"``), then a prismatic joint along it:
``"<id>.rotation"`` and ``"<id>.translation"``, MotionSolve's ``AZ(I, J)`` and
``DZ(I, J, J)`` as for the revolute and translational joints. A spherical
joint (I and J origins together) is three revolute joints about the
parent-side marker's ``x``, ``y`` and ``z`` axes through two massless links
(``"<id>.gimbal_x"``, ``"<id>.gimbal_y"``): ``"<id>.x"``, ``"<id>.y"``,
``"<id>.z"``, whose coordinates are the intrinsic x-y-z angles of the
child-side marker relative to the parent-side one (``q0``: the file's). Like
every such gimbal it is singular where the middle angle is ±90° (the first
and last axes line up): a file at less than 1e-3 of that (cosine) is refused,
and a simulation that turns the body that far about the parent-side ``y``
axis stops there (non-finite accelerations).

Joint friction. ``Force_JointFriction`` elements (one per joint at most)
become `jaxfric.JointFriction` and `jaxfric.JointLuGre` with the load model of
MotionSolve's Comments 9–10: `jaxfric.RevoluteLoad` (``pin_radius``, ``friction_arm``,
``bending_reaction_arm``, ``torque_preload``, ``inputs``) on revolute joints,
`jaxfric.TranslationalLoad` (``reaction_arm``, ``initial_overlap``,
``overlap_delta``, ``force_preload``, ``inputs``) on translational ones, with
MotionSolve's defaults for absent attributes. On a universal or Hooke joint
(Comments 12 and 14: "Friction on each of the yokes is modeled as for a
revolute joint") the element is one `jaxfric.RevoluteLoad` on the yoke that
``yoke_choice`` (``i_yoke`` or ``j_yoke``, any case) names: the attribute
"Specifies the yoke choice for hooke and universal joints", one yoke per
element, and the reference documents no default, so this loader takes
``i_yoke`` when it is absent. Its tree joint (``"<id>.i_yoke"`` or
``"<id>.j_yoke"``) is the friction joint. ``yoke_choice`` on another joint
type is named in the warning. On a cylindrical joint (Comment 11: turning and
sliding share one friction force in the plane of the contact) the element is
one `jaxfric.CylindricalLoad` (``pin_radius``, ``initial_overlap``,
``overlap_delta``, ``force_preload``, ``inputs``) on two friction joints,
``"<id>.rotation"`` then ``"<id>.translation"``. On a spherical joint
(Comment 13: the ball slides in its socket at ``r_b ω_r``, pressed by the
reaction force plus the preload) the element is one `jaxfric.SphericalLoad`
(``ball_radius``, ``torque_preload``, ``inputs``) on the ball element
``("<id>.x", "<id>.y", "<id>.z")`` of the system's ``friction_joints``: three
rows, the relative angular velocity. Elements of different sizes (a
cylindrical, a spherical and a revolute joint) share one exact law (a
`JointFriction` with per-element sizes) and one LuGre law. ``torque_preload``, in
MotionSolve's syntax for the cylindrical joint but not in Comment 11, is
named in the warning. ``mu_static`` and
``mu_dynamic`` are per element where they differ; ``effect`` is the law's
when all elements share it, else folded into the per-element coefficients
(``stiction``: ``μ_d = μ_s``; ``sliding``: ``μ_s = μ_d``), which gives the same
law. The LuGre attributes (``max_stiction_deform``, ``bristle_stiffness``,
``damping_effects``, ``viscous_effects``, ``stiction_trans_vel``) and
``inactive`` are checked but unused by the exact law: they are returned in
`MotionSolveModel.lugre`, and the shared bristle parameters make
`MotionSolveModel.lugre_friction` (`jaxfric.JointLuGre`, every element's
``effect`` folded into its coefficients as above).

Refused with a `ValueError` naming the element: other joint types
(``PLANAR``, ...: "not supported yet"),
marker positions relative to another marker (``rm_id``, ``rm``), Euler-angle
orientations (``psi``, ``theta``, ``phi``), markers on flexible or point
bodies, ``mass_mult_factor``, closed loops and floating bodies, several
transient ``Simulate`` commands; and malformed input: a missing required
attribute, a non-number, a marker or joint id that does not exist, a
body without mass, a coefficient or length out of range.

Ignored silently (output, graphics and integrator settings): ``Messaging``,
``Param_Transient``, ``Param_Static``, ``Post_Request``, ``Post_Graphic``,
``H3DOutput``, ``ResOutput``, ``label`` attributes and the XML schema
attributes. Anything else this loader does not read — another element (a
force, a motion, a body of another kind) or attribute (initial velocities,
a friction attribute of another joint type) — is named in one `UserWarning`,
and left out of the model.
"""

import math
import os
import warnings
import xml.etree.ElementTree as ET
from typing import NamedTuple

import numpy as np

from ..friction import (
    CylindricalLoad,
    JointFriction,
    JointLuGre,
    RevoluteLoad,
    SphericalLoad,
    TranslationalLoad,
)
from ..systems.rigid import RigidBodyTree

# Unit factors to SI (Altair MotionSolve Reference Guide, Param_Unit). The
# imperial units are the international ones: 1 in = 0.0254 m, 1 lb = 0.45359237
# kg, 1 lbf = 0.45359237 kg · 9.80665 m/s².
_INCH = 0.0254
_POUND = 0.45359237
_POUND_FORCE = _POUND * 9.80665
_LENGTH = {
    "ANGSTROM": 1e-10,
    "NANOMETER": 1e-9,
    "MICROMETER": 1e-6,
    "MILLIMETER": 1e-3,
    "CENTIMETER": 1e-2,
    "METER": 1.0,
    "KILOMETER": 1e3,
    "MICROINCH": 1e-6 * _INCH,
    "MILS": 1e-3 * _INCH,
    "MILLS": 1e-3 * _INCH,
    "MILLIINCH": 1e-3 * _INCH,
    "INCH": _INCH,
    "FOOT": 12 * _INCH,
    "YARD": 36 * _INCH,
    "MILE": 63360 * _INCH,
}
_MASS = {
    "NANOGRAM": 1e-12,
    "MICROGRAM": 1e-9,
    "MILLIGRAM": 1e-6,
    "GRAM": 1e-3,
    "KILOGRAM": 1.0,
    "MEGAGRAM": 1e3,
    "TONNE": 1e3,
    "OUNCE_MASS": _POUND / 16,
    "POUND_MASS": _POUND,
    "KPOUND_MASS": 1e3 * _POUND,
    "US_TON": 2000 * _POUND,
    # The masses that one force unit accelerates by one length unit per s².
    "SLUG": _POUND_FORCE / (12 * _INCH),
    "SLINCH": _POUND_FORCE / _INCH,
}
_FORCE = {
    "NANONEWTON": 1e-9,
    "MICRONEWTON": 1e-6,
    "MILLINEWTON": 1e-3,
    "CENTINEWTON": 1e-2,
    "NEWTON": 1.0,
    "KNEWTON": 1e3,
    "KILONEWTON": 1e3,
    "MEGANEWTON": 1e6,
    "DYNE": 1e-5,
    "KILOGRAM_FORCE": 9.80665,
    "OUNCE_FORCE": _POUND_FORCE / 16,
    "POUND_FORCE": _POUND_FORCE,
    "KPOUND_FORCE": 1e3 * _POUND_FORCE,
    "POUNDAL": _POUND * 12 * _INCH,
}
_TIME = {
    "NANOSECOND": 1e-9,
    "MICROSECOND": 1e-6,
    "MILLISECOND": 1e-3,
    "SECOND": 1.0,
    "MINUTE": 60.0,
    "HOUR": 3600.0,
    "DAY": 86400.0,
}
_UNITS = {
    "force_unit": _FORCE,
    "mass_unit": _MASS,
    "length_unit": _LENGTH,
    "time_unit": _TIME,
}

# Elements that only concern output, graphics or the integrator.
_SILENT = frozenset(
    {
        "Messaging",
        "Param_Transient",
        "Param_Static",
        "Post_Request",
        "Post_Graphic",
        "H3DOutput",
        "ResOutput",
    }
)
_AXES = ("a00", "a10", "a20", "a01", "a11", "a21", "a02", "a12", "a22")
_INERTIA = ("xx", "yy", "zz", "xy", "xz", "yz")
_LUGRE = (
    "max_stiction_deform",
    "bristle_stiffness",
    "damping_effects",
    "viscous_effects",
    "stiction_trans_vel",
)
_FRICTION_ATTRIBUTES = {
    "REVOLUTE": (
        "torque_preload",
        "friction_arm",
        "bending_reaction_arm",
        "pin_radius",
    ),
    "TRANSLATIONAL": (
        "force_preload",
        "reaction_arm",
        "initial_overlap",
        "overlap_delta",
    ),
    "CYLINDRICAL": (
        "force_preload",
        "pin_radius",
        "initial_overlap",
        "overlap_delta",
    ),
    "SPHERICAL": ("torque_preload", "ball_radius"),
}
_LOAD_ATTRIBUTES = tuple(
    dict.fromkeys(name for names in _FRICTION_ATTRIBUTES.values() for name in names)
)
# In MotionSolve's syntax for a joint type but not in its friction (Comment
# 11 has no torque preload): named in the warning with this reason.
_UNUSED_FRICTION_ATTRIBUTES = {
    ("CYLINDRICAL", "torque_preload"): "not used by a cylindrical joint's "
    "friction, MotionSolve Comment 11",
}
_KNOWN = {
    "Param_Unit": ("mass_mult_factor", *_UNITS),
    "Reference_Marker": ("id", "body_id", "body_type", "pos_x", "pos_y", "pos_z")
    + _AXES,
    "Body_Rigid": (
        "id",
        "isground",
        "cg_id",
        "im_id",
        "lprf_id",
        "mass",
        *(f"inertia_{c}" for c in _INERTIA),
    ),
    "Constraint_Joint": ("id", "type", "i_marker_id", "j_marker_id"),
    "Force_Gravity": ("id", "grav_x", "grav_y", "grav_z"),
    "Force_JointFriction": (
        "id",
        "joint_id",
        "mu_static",
        "mu_dynamic",
        "effect",
        "inputs",
        "inactive",
        *_LUGRE,
        *_LOAD_ATTRIBUTES,
        "yoke_choice",
    ),
    "Simulate": ("analysis_type", "end_time", "num_step"),
    "Command": ("time_out",),
    "MultiBodySystem": ("hw_version",),
}
# Attributes that would change the geometry and are not read: refused.
_REFUSED = {
    "Reference_Marker": {
        "rm_id": "a position relative to another marker",
        "rm": "a position relative to another marker",
        "psi": "Euler-angle orientations",
        "theta": "Euler-angle orientations",
        "phi": "Euler-angle orientations",
        "node_id": "markers on flexible-body nodes",
    },
}
_MODEL_ELEMENTS = (
    "Param_Unit",
    "Reference_Marker",
    "Body_Rigid",
    "Constraint_Joint",
    "Force_Gravity",
    "Force_JointFriction",
)
_WITH_ID = frozenset(
    {"Reference_Marker", "Body_Rigid", "Constraint_Joint", "Force_JointFriction"}
)
_JOINT_TYPES = {"REVOLUTE": "revolute", "TRANSLATIONAL": "prismatic", "FIXED": "fixed"}
# Universal (Hooke) joints: two revolute joints through a massless cross.
_UNIVERSAL = frozenset({"UNIVERSAL", "HOOKE"})
# Joints of several tree joints through massless links: cylindrical (a
# revolute and a prismatic joint on one axis), spherical (three revolute
# joints about the parent-side marker's x, y, z axes).
_COMPOUND = _UNIVERSAL | {"CYLINDRICAL", "SPHERICAL"}
# A spherical joint's middle (y) angle at most this far from ±90° is a gimbal
# lock of its three revolute joints: refused in the file's configuration.
_GIMBAL_MARGIN = 1e-3
# The load model of friction on each joint type (Comments 12 and 14: a yoke of
# a universal or Hooke joint "is modeled as for a revolute joint").
_LOAD_KIND = {
    "REVOLUTE": "REVOLUTE",
    "TRANSLATIONAL": "TRANSLATIONAL",
    "CYLINDRICAL": "CYLINDRICAL",
    "UNIVERSAL": "REVOLUTE",
    "HOOKE": "REVOLUTE",
    "SPHERICAL": "SPHERICAL",
}
# Joint markers must satisfy the joint to these tolerances (the file's numbers
# are printed to about 6 significant digits).
_POSITION_TOLERANCE = 1e-6
_AXIS_TOLERANCE = 1e-5
# Marker axes further than this from orthonormal are an error.
_ORTHONORMAL_TOLERANCE = 1e-4


class MotionSolveModel(NamedTuple):
    """A MotionSolve model read by `load_motionsolve`, in SI units.

    Attributes:
        system: the `RigidBodyTree` (``q`` in the order of `joint_ids`; link
            names are the ``Body_Rigid`` ids, joint names the
            ``Constraint_Joint`` ids, as strings; a universal or Hooke joint
            gives the joints ``"<id>.j_yoke"`` and ``"<id>.i_yoke"`` and the
            massless link ``"<id>.cross"`` between them, a cylindrical joint
            ``"<id>.rotation"``, ``"<id>.translation"`` and ``"<id>.sleeve"``,
            a spherical joint ``"<id>.x"``, ``"<id>.y"``, ``"<id>.z"`` and
            ``"<id>.gimbal_x"``, ``"<id>.gimbal_y"``).
        friction: the `JointFriction` of the ``Force_JointFriction`` elements,
            one per element in file order (the system's ``friction_joints``: one
            tree joint per element, two for a cylindrical joint, its
            ``"<id>.rotation"`` then ``"<id>.translation"``, a ball element of
            three for a spherical one; elements of different sizes mix);
            `None` without any (and then no friction joints).
        lugre_friction: the same elements as MotionSolve's LuGre law
            (`JointLuGre`, Comments 3, 7, 11 and 13) with their bristle parameters
            and each element's ``effect`` folded into its coefficients
            (``stiction``: ``μ_d = μ_s``; ``sliding``: ``μ_s = μ_d``); `None`
            without friction elements or when the elements'
            ``bristle_stiffness``, ``damping_effects``, ``viscous_effects`` or
            ``stiction_trans_vel`` differ (`JointLuGre` takes one value of
            each).
        t1: the transient ``Simulate`` command's ``end_time``, s; `None`
            without one.
        num_steps: its ``num_step`` (output steps); `None` without one.
        q0: the joint coordinates of the file's configuration (MotionSolve's
            ``AZ(I, J)``, rad, or ``DZ(I, J, J)``, m; zero for the two yokes
            of a universal or Hooke joint; a spherical joint's x-y-z angles),
            shape ``(n_dof,)``.
        joint_ids: the ``Constraint_Joint`` id of each entry of ``q`` (once
            per tree joint of a universal, Hooke, cylindrical or spherical
            joint, in the tree's order).
        friction_ids: the ``Force_JointFriction`` id of each friction element.
        lugre: per friction element, the attributes of MotionSolve's LuGre
            model, which the exact Coulomb law does not use: ``inactive``
            (``"none"`` or ``"static"``), ``max_stiction_deform`` (m),
            ``stiction_trans_vel`` (m/s), ``bristle_stiffness`` (σ0, 1/m),
            ``damping_effects`` (σ1, s/m), ``viscous_effects`` (σ2, N·s/m),
            with MotionSolve's defaults (in the model's units) where absent.
    """

    system: RigidBodyTree
    friction: JointFriction | None
    lugre_friction: JointLuGre | None
    t1: float | None
    num_steps: int | None
    q0: np.ndarray
    joint_ids: tuple[int, ...]
    friction_ids: tuple[int, ...]
    lugre: tuple[dict, ...]


def _tag(element: ET.Element) -> str:
    return element.tag.rsplit("}", 1)[-1]


class _Reader:
    """Attributes of one element, read with errors that name the element
    (tag and id) and the attribute; names are case-insensitive."""

    def __init__(self, element: ET.Element, ignored: list[str], children=True):
        self.tag = _tag(element)
        # Namespaced attributes are XML schema bookkeeping.
        self.attrib = {
            k.lower(): v for k, v in element.attrib.items() if not k.startswith("{")
        }
        self.where = f"<{self.tag}>"
        if children:
            for child in element:
                ignored.append(f"<{_tag(child)}> in <{self.tag}>")
        known = set(_KNOWN.get(self.tag, ())) | {"label"}
        refused = _REFUSED.get(self.tag, {})
        self.id = None
        if self.tag in _WITH_ID or "id" in self.attrib:
            self.id = self.integer("id")
            self.where = f"{self.tag} id={self.id}"
        for name in self.attrib:
            if name in refused:
                raise ValueError(
                    f"{self.where}: attribute {name!r} ({refused[name]}) is not "
                    "supported yet: give the marker's global position pos_x/y/z "
                    "and direction cosines a00..a22."
                )
            if name not in known:
                ignored.append(f"{self.tag}.{name}")

    def has(self, name: str) -> bool:
        return name in self.attrib

    def text(self, name: str, default: str | None = None) -> str:
        value = self.attrib.get(name)
        if value is None:
            if default is None:
                raise ValueError(
                    f"{self.where}: the required attribute {name!r} is missing."
                )
            return default
        return value.strip()

    def number(
        self,
        name: str,
        default: float | None = None,
        *,
        lower: float | None = None,
        lower_open: bool = False,
    ) -> float:
        if name not in self.attrib and default is not None:
            return float(default)
        text = self.text(name)
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise ValueError(
                f"{self.where}: attribute {name!r} must be a finite number; got "
                f"{text!r}."
            )
        if lower is not None and (value <= lower if lower_open else value < lower):
            relation = ">" if lower_open else ">="
            raise ValueError(
                f"{self.where}: attribute {name!r} must be {relation} {lower:g}; "
                f"got {text!r}."
            )
        return value

    def integer(self, name: str, default: int | None = None) -> int:
        if name not in self.attrib and default is not None:
            return default
        text = self.text(name)
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value.is_integer()):
            raise ValueError(
                f"{self.where}: attribute {name!r} must be an integer; got {text!r}."
            )
        return int(value)

    def choice(self, name: str, options: tuple[str, ...], default: str) -> str:
        text = self.text(name, default)
        if text.lower() not in options:
            raise ValueError(
                f"{self.where}: attribute {name!r} must be one of "
                f"{', '.join(options)} (any case); got {text!r}."
            )
        return text.lower()


class _Marker(NamedTuple):
    body: int
    body_type: str
    rotation: np.ndarray  # columns: the marker's axes in the global frame
    position: np.ndarray  # m, global


def _vector(v) -> str:
    return "(" + ", ".join(f"{float(x):.6g}" for x in v) + ")"


def _marker_axes(r: _Reader) -> np.ndarray:
    given = [a for a in _AXES if r.has(a)]
    if not given:
        return np.eye(3)
    columns = {}
    for k, names in enumerate((_AXES[0:3], _AXES[3:6], _AXES[6:9])):
        if k == 1 and not any(r.has(a) for a in names):
            continue
        columns[k] = np.array([r.number(a) for a in names])
    x, z = columns[0], columns[2]
    if (
        abs(np.linalg.norm(x) - 1) > _ORTHONORMAL_TOLERANCE
        or abs(np.linalg.norm(z) - 1) > _ORTHONORMAL_TOLERANCE
        or abs(x @ z) > _ORTHONORMAL_TOLERANCE
    ):
        raise ValueError(
            f"{r.where}: the x axis (a00, a10, a20) = {_vector(x)} and z axis (a02, "
            f"a12, a22) = {_vector(z)} must be orthogonal unit vectors."
        )
    z = z / np.linalg.norm(z)
    x = x - (x @ z) * z
    x = x / np.linalg.norm(x)
    y = np.cross(z, x)
    if 1 in columns and np.max(np.abs(columns[1] - y)) > _ORTHONORMAL_TOLERANCE:
        raise ValueError(
            f"{r.where}: the y axis (a01, a11, a21) = {_vector(columns[1])} must be "
            f"z × x = {_vector(y)} (a right-handed orthonormal frame)."
        )
    return np.stack([x, y, z], axis=1)


def _root(source: str, is_text: bool) -> tuple[ET.Element, str]:
    label = "MotionSolve XML text" if is_text else f"MotionSolve file {source!r}"
    try:
        root = ET.fromstring(source) if is_text else ET.parse(source).getroot()
    except ET.ParseError as e:
        raise ValueError(f"{label} is not well-formed XML: {e}.") from None
    if _tag(root) != "MultiBodySystem":
        raise ValueError(
            f"{label}: the root element must be <MultiBodySystem>, got <{_tag(root)}>."
        )
    return root, label


def _unique(kind: str, readers: list[_Reader]) -> dict[int, _Reader]:
    out: dict[int, _Reader] = {}
    for r in readers:
        if r.id in out:
            raise ValueError(f"{kind} id={r.id} is defined twice.")
        out[r.id] = r
    return out


def _units(readers: list[_Reader]) -> dict[str, float]:
    if len(readers) > 1:
        raise ValueError("the model has several <Param_Unit> elements; give one.")
    factors = {name: 1.0 for name in _UNITS}
    for r in readers:
        if r.has("mass_mult_factor") and r.number("mass_mult_factor") != 1.0:
            raise ValueError(
                "<Param_Unit>: attribute 'mass_mult_factor' is not supported yet: "
                "give force_unit, mass_unit, length_unit and time_unit."
            )
        for name, table in _UNITS.items():
            if not r.has(name):
                continue
            unit = r.text(name).upper().replace(" ", "_")
            if unit not in table:
                raise ValueError(
                    f"<Param_Unit>: attribute {name!r} = {r.text(name)!r} is not a "
                    f"unit this loader knows; known: {', '.join(table)}."
                )
            factors[name] = table[unit]
    return factors


def _load(root: ET.Element, label: str) -> MotionSolveModel:
    ignored: list[str] = []
    _Reader(root, ignored, children=False)  # hw_version and the XML schema
    models, commands = [], []
    for child in root:
        tag = _tag(child)
        if tag == "Model":
            models.append(child)
        elif tag == "Command":
            commands.append(child)
        elif tag not in _SILENT:
            ignored.append(f"<{tag}>")
    if len(models) != 1:
        raise ValueError(
            f"{label}: <MultiBodySystem> must have one <Model> element; found "
            f"{len(models)}."
        )
    by_tag: dict[str, list[_Reader]] = {
        tag: [] for tag in (*_MODEL_ELEMENTS, "Simulate")
    }
    for child in models[0]:
        tag = _tag(child)
        if tag in _MODEL_ELEMENTS:
            by_tag[tag].append(_Reader(child, ignored))
        elif tag not in _SILENT:
            ignored.append(f"<{tag}>")
    for command in commands:
        _Reader(command, ignored, children=False)  # time_out
        for child in command:
            tag = _tag(child)
            if tag == "Simulate":
                by_tag["Simulate"].append(_Reader(child, ignored))
            elif tag not in _SILENT:
                ignored.append(f"<{tag}> in <Command>")

    units = _units(by_tag["Param_Unit"])
    length, mass_unit = units["length_unit"], units["mass_unit"]
    time = units["time_unit"]

    markers: dict[int, _Marker] = {}
    for mid, r in _unique("Reference_Marker", by_tag["Reference_Marker"]).items():
        position = np.array([r.number(f"pos_{c}", 0.0) for c in "xyz"]) * length
        body_type = r.text("body_type", "RIGIDBODY").upper().replace("_", "")
        markers[mid] = _Marker(
            r.integer("body_id"), body_type, _marker_axes(r), position
        )
    scale = max(
        [length] + [float(np.max(np.abs(m.position))) for m in markers.values()]
    )

    bodies = _unique("Body_Rigid", by_tag["Body_Rigid"])

    def marker(r: _Reader, attribute: str, body: int | None = None) -> _Marker:
        """The marker `r` names in `attribute`, on a rigid body (`body`)."""
        mid = r.integer(attribute)
        if mid not in markers:
            raise ValueError(
                f"{r.where}: attribute {attribute!r} names Reference_Marker id={mid}, "
                "which does not exist."
            )
        m = markers[mid]
        if m.body_type != "RIGIDBODY" or m.body not in bodies:
            raise ValueError(
                f"{r.where}: attribute {attribute!r} names Reference_Marker id={mid}, "
                f"whose body (body_id={m.body}, body_type {m.body_type}) is no "
                "Body_Rigid of the model."
            )
        if body is not None and m.body != body:
            raise ValueError(
                f"{r.where}: attribute {attribute!r} names Reference_Marker id={mid}, "
                f"which is on body {m.body}, not on this body."
            )
        return m

    ground = [
        bid
        for bid, r in bodies.items()
        if r.choice("isground", ("true", "false"), "FALSE") == "true"
    ]
    if len(ground) != 1:
        raise ValueError(
            f'the model must have one ground body (Body_Rigid isground="TRUE"); '
            f"found {len(ground) or 'none'}{': ' + str(ground) if ground else ''}."
        )
    base = ground[0]
    inertials = {}
    for bid, r in bodies.items():
        if bid == base:
            continue
        mass = r.number("mass", lower=0.0, lower_open=True) * mass_unit
        cg = marker(r, "cg_id", bid)
        im = marker(r, "im_id", bid) if r.has("im_id") else cg
        if r.has("lprf_id"):
            marker(r, "lprf_id", bid)
        i = {c: r.number(f"inertia_{c}", 0.0) for c in _INERTIA}
        tensor = np.array(
            [
                [i["xx"], i["xy"], i["xz"]],
                [i["xy"], i["yy"], i["yz"]],
                [i["xz"], i["yz"], i["zz"]],
            ]
        ) * (mass_unit * length**2)
        # About the IM origin in IM axes -> about the centre of mass, global axes.
        offset = cg.position - im.position
        tensor = im.rotation @ tensor @ im.rotation.T
        tensor = tensor - mass * (
            offset @ offset * np.eye(3) - np.outer(offset, offset)
        )
        inertials[bid] = (mass, cg.position, tensor)

    joints = _unique("Constraint_Joint", by_tag["Constraint_Joint"])
    ends = {}
    for jid, r in joints.items():
        kind = r.text("type").upper()
        if kind not in _JOINT_TYPES and kind not in _COMPOUND:
            raise ValueError(
                f"{r.where}: type {kind!r} is not supported yet (a RigidBodyTree has "
                "revolute, prismatic and fixed joints; this loader reads "
                f"{', '.join((*_JOINT_TYPES, *sorted(_COMPOUND)))})."
            )
        i_marker, j_marker = marker(r, "i_marker_id"), marker(r, "j_marker_id")
        if i_marker.body == j_marker.body:
            raise ValueError(
                f"{r.where}: its I and J markers are both on body {i_marker.body}."
            )
        ends[jid] = (kind, i_marker, j_marker)

    # Depth-first from ground, joints in file order: parents before children.
    touching: dict[int, list[int]] = {bid: [] for bid in bodies}
    for jid, (_, i_marker, j_marker) in ends.items():
        touching[i_marker.body].append(jid)
        touching[j_marker.body].append(jid)
    entry: dict[int, tuple] = {}  # body -> (joint, parent body, sign)
    order: list[int] = []  # bodies in tree order
    used: set[int] = set()
    reached = {base}
    stack = [base]
    while stack:
        body = stack.pop()
        if body != base:
            order.append(body)
        found = []
        for jid in touching[body]:
            if jid in used:
                continue
            used.add(jid)
            _, i_marker, j_marker = ends[jid]
            # sign +1: J on the parent (the usual way); -1: written the other way.
            sign = 1 if j_marker.body == body else -1
            other = i_marker.body if sign == 1 else j_marker.body
            if other in reached:
                loop = sorted({jid} | (_path(entry, body) ^ _path(entry, other)))
                raise ValueError(
                    f"Constraint_Joint id={jid} closes a kinematic loop: joints "
                    f"{loop} connect bodies {body} and {other} twice (closed loops "
                    "are not supported: a RigidBodyTree is a tree)."
                )
            reached.add(other)
            entry[other] = (jid, body, sign)
            found.append(other)
        stack.extend(reversed(found))
    floating = sorted(set(bodies) - reached)
    if floating:
        raise ValueError(
            f"Body_Rigid {floating} are not connected to the ground body {base} by "
            "joints (floating bodies are not supported: a RigidBodyTree has a "
            "fixed base)."
        )

    index: dict = {}  # body, or (joint, inner link name) -> its link index
    frame = {base: (np.eye(3), np.zeros(3))}
    parents, types, axes, xyz, rot, masses, coms, inertias = ([] for _ in range(8))
    q0, joint_ids, names, links = [], [], [], []
    # The tree joint(s) of each Constraint_Joint, by name: one, or for a
    # compound joint {"j_yoke": ..., "i_yoke": ...} (universal), {"rotation": ...,
    # "translation": ...} (cylindrical), {"x": ..., "y": ..., "z": ...} (spherical).
    joint_names: dict[int, str | dict[str, str]] = {}
    for body in order:
        jid, parent, sign = entry[body]
        kind, i_marker, j_marker = ends[jid]
        outer, inner = (j_marker, i_marker) if sign == 1 else (i_marker, j_marker)
        r_parent, p_parent = frame[parent]
        r_c, p_c = inner.rotation, inner.position
        frame[body] = (r_c, p_c)
        position = _joint_position(joints[jid].where, kind, outer, inner, scale)
        parent_index = index.get(parent, -1)

        # A compound joint's inner tree joints, each into a massless link
        # whose frame is the parent-side marker's at q = 0: (joint name, type,
        # axis, link name, coordinate in the file).
        inner_joints = []
        final = position
        if kind == "CYLINDRICAL":
            # Rotation about, then translation along, the parent-side marker's
            # z axis (MotionSolve's AZ(I, J) and DZ(I, J, J), as for the
            # revolute and translational joints).
            angle, along = position
            final = sign * along
            axis = (0.0, 0.0, float(sign))
            inner_joints.append(
                (f"{jid}.rotation", "revolute", axis, f"{jid}.sleeve", sign * angle)
            )
            joint_names[jid] = {
                "rotation": f"{jid}.rotation",
                "translation": f"{jid}.translation",
            }
            name, kind_tree = f"{jid}.translation", "prismatic"
        elif kind == "SPHERICAL":
            # Revolute joints about the parent-side marker's x, y, z axes: the
            # intrinsic x-y-z angles of the child-side marker (`position`).
            for k, label in enumerate("xy"):
                inner_joints.append(
                    (f"{jid}.{label}", "revolute", tuple(np.eye(3)[k]),
                     f"{jid}.gimbal_{label}", position[k])
                )  # fmt: skip
            final = position[2]
            joint_names[jid] = {label: f"{jid}.{label}" for label in "xyz"}
            name, kind_tree, axis = f"{jid}.z", "revolute", (0.0, 0.0, 1.0)
        elif kind in _UNIVERSAL:
            # Revolute about the parent-side marker's z axis into a massless
            # cross, then revolute about the child-side marker's z axis into
            # the child; q = 0 is the file's configuration.
            outer_yoke, inner_yoke = (
                ("j_yoke", "i_yoke") if sign == 1 else ("i_yoke", "j_yoke")
            )
            inner_joints.append(
                (
                    f"{jid}.{outer_yoke}",
                    "revolute",
                    (0.0, 0.0, 1.0),
                    f"{jid}.cross",
                    0.0,
                )
            )
            joint_names[jid] = {
                outer_yoke: f"{jid}.{outer_yoke}",
                inner_yoke: f"{jid}.{inner_yoke}",
            }
            # The second joint's frame: the child-side marker, in the cross.
            name, kind_tree, axis = f"{jid}.{inner_yoke}", "revolute", (0.0, 0.0, 1.0)
            final = 0.0
        else:
            name, kind_tree, axis = (
                str(jid),
                _JOINT_TYPES[kind],
                (0.0, 0.0, float(sign)),
            )
            joint_names[jid] = name
            final = sign * position
        for joint_name, joint_type, joint_axis, link, q_file in inner_joints:
            index[(jid, link)] = len(parents)
            parents.append(parent_index)
            types.append(joint_type)
            axes.append(joint_axis)
            xyz.append(r_parent.T @ (outer.position - p_parent))
            rot.append(r_parent.T @ outer.rotation)
            masses.append(0.0)
            coms.append(np.zeros(3))
            inertias.append(np.zeros((3, 3)))
            names.append(joint_name)
            links.append(link)
            q0.append(q_file)
            joint_ids.append(jid)
            parent_index = len(parents) - 1
            r_parent, p_parent = outer.rotation, outer.position
        # The last tree joint's frame: the child-side marker for a universal
        # joint, else the parent-side one (at q = 0; at the file's `final`
        # the child's frame is the child-side marker).
        origin = inner if kind in _UNIVERSAL else outer
        index[body] = len(parents)
        parents.append(parent_index)
        types.append(kind_tree)
        axes.append(axis)
        xyz.append(r_parent.T @ (origin.position - p_parent))
        rot.append(r_parent.T @ origin.rotation)
        mass, p_cg, tensor = inertials[body]
        masses.append(mass)
        coms.append(r_c.T @ (p_cg - p_c))
        inertias.append(r_c.T @ tensor @ r_c)
        names.append(name)
        links.append(str(body))
        if kind != "FIXED":
            q0.append(final)
            joint_ids.append(jid)

    gravity = _gravity(by_tag["Force_Gravity"], length / time**2)
    friction, lugre_friction, friction_ids, friction_joints, lugre = _friction(
        by_tag["Force_JointFriction"], ends, joint_names, units, ignored
    )
    t1, num_steps = _simulate(by_tag["Simulate"], time)

    system = RigidBodyTree(
        parents,
        types,
        np.array(axes),
        np.stack(xyz),
        np.stack(rot),
        mass=np.array(masses),
        com=np.stack(coms),
        inertia=np.stack(inertias),
        gravity=gravity,
        friction_joints=friction_joints,
        joint_names=names,
        link_names=links,
        base_name=str(base),
    )
    if ignored:
        warnings.warn(
            f"{label}: ignored what this loader does not read (left out of the "
            f"model): {', '.join(dict.fromkeys(ignored))}.",
            UserWarning,
            stacklevel=3,
        )
    return MotionSolveModel(
        system=system,
        friction=friction,
        lugre_friction=lugre_friction,
        t1=t1,
        num_steps=num_steps,
        q0=np.array(q0, dtype=float),
        joint_ids=tuple(joint_ids),
        friction_ids=friction_ids,
        lugre=lugre,
    )


def _path(entry: dict[int, tuple], body: int) -> set[int]:
    """The joints from `body` down to ground in the tree walked so far."""
    joints = set()
    while body in entry:
        jid, body, _ = entry[body]
        joints.add(jid)
    return joints


def _joint_position(
    where: str, kind: str, outer: _Marker, inner: _Marker, scale: float
) -> float | tuple[float, ...]:
    """The joint coordinate of the file's configuration, measured from the
    parent-side marker `outer` to the child-side marker `inner` (rad or m);
    raises if the markers violate the joint. A universal (Hooke) joint needs
    coincident origins and perpendicular z axes; its coordinates are zero in the
    file's configuration (0 returned). A cylindrical joint gives (angle,
    displacement); a spherical joint the intrinsic x-y-z angles of the
    child-side marker relative to the parent-side one."""
    offset = inner.position - outer.position
    if kind == "SPHERICAL":
        across = float(np.linalg.norm(offset))
        rel = outer.rotation.T @ inner.rotation  # = Rx(a) Ry(b) Rz(c)
        middle = math.asin(max(-1.0, min(1.0, float(rel[0, 2]))))
        if across > _POSITION_TOLERANCE * scale or math.cos(middle) < _GIMBAL_MARGIN:
            raise ValueError(
                f"{where}: its I and J markers do not meet the SPHERICAL joint in "
                f"the file, or lock its gimbal (they need the same origin, "
                f"{across:.3g} m apart; the joint is three revolute joints about "
                "the parent-side marker's x, y, z axes, whose middle angle "
                f"{math.degrees(middle):.6g}° must stay off ±90°). Give the "
                "assembled configuration, with the markers' axes turned less "
                "than 90° about y from each other."
            )
        return (
            math.atan2(-float(rel[1, 2]), float(rel[2, 2])),
            middle,
            math.atan2(-float(rel[0, 1]), float(rel[0, 0])),
        )
    if kind in _UNIVERSAL:
        across = float(np.linalg.norm(offset))
        cosine = float(inner.rotation[:, 2] @ outer.rotation[:, 2])
        if across > _POSITION_TOLERANCE * scale or abs(cosine) > _AXIS_TOLERANCE:
            raise ValueError(
                f"{where}: its I and J markers do not meet the {kind} joint in the "
                "file (they need the same origin and perpendicular z axes, the "
                f"yoke axes; origins {across:.3g} m apart, the cosine between the "
                f"z axes {cosine:.3g}). Give the assembled configuration: this "
                "loader does not assemble the model."
            )
        return 0.0
    z = outer.rotation[:, 2]
    along = float(offset @ z) if kind in ("TRANSLATIONAL", "CYLINDRICAL") else 0.0
    across = float(np.linalg.norm(offset - along * z))
    if kind in ("REVOLUTE", "CYLINDRICAL"):
        tilt = float(np.linalg.norm(inner.rotation[:, 2] - z))
    else:
        tilt = float(np.max(np.abs(inner.rotation - outer.rotation)))
    if across > _POSITION_TOLERANCE * scale or tilt > _AXIS_TOLERANCE:
        what = {
            "REVOLUTE": "the same origin and z axis",
            "TRANSLATIONAL": "the same axes, origins on the J marker's z axis",
            "CYLINDRICAL": "the same z axis, origins on it",
            "FIXED": "the same origin and axes",
        }[kind]
        raise ValueError(
            f"{where}: its I and J markers do not meet the {kind} joint in the file "
            f"(they need {what}; origins {across:.3g} m off the joint, axes "
            f"{tilt:.3g} apart). Give the assembled configuration: this loader "
            "does not assemble the model."
        )
    if kind in ("REVOLUTE", "CYLINDRICAL"):
        x_outer, x_inner = outer.rotation[:, 0], inner.rotation[:, 0]
        angle = math.atan2(
            float(np.cross(x_outer, x_inner) @ z), float(x_outer @ x_inner)
        )
        return (angle, along) if kind == "CYLINDRICAL" else angle
    return along


def _gravity(readers: list[_Reader], acceleration: float) -> np.ndarray:
    if len(readers) > 1:
        raise ValueError("the model has several <Force_Gravity> elements; give one.")
    if not readers:
        return np.zeros(3)
    r = readers[0]
    return np.array([r.number(f"grav_{c}", 0.0) for c in "xyz"]) * acceleration


def _friction(
    readers: list[_Reader],
    ends: dict,
    joint_names: dict,
    units: dict,
    ignored: list[str],
):
    """`JointFriction`, the element ids, their joints (tree joint names) and
    LuGre attributes."""
    length, force = units["length_unit"], units["force_unit"]
    time = units["time_unit"]
    elements = _unique("Force_JointFriction", readers)
    if not elements:
        return None, None, (), (), ()
    mu_s, mu_d, effects, loads, joints, lugre = [], [], [], [], [], []
    rubbed: set[int] = set()  # joints with a friction element
    for r in elements.values():
        jid = r.integer("joint_id")
        if jid not in ends:
            raise ValueError(
                f"{r.where}: attribute 'joint_id' names Constraint_Joint id={jid}, "
                "which does not exist."
            )
        joint_kind = ends[jid][0]
        if joint_kind not in _LOAD_KIND:
            raise ValueError(
                f"{r.where}: Constraint_Joint id={jid} is a {joint_kind} joint; "
                f"joint friction is read on {', '.join(_LOAD_KIND)} joints."
            )
        kind = _LOAD_KIND[joint_kind]
        if jid in rubbed:
            raise ValueError(
                f"{r.where}: Constraint_Joint id={jid} already has a "
                "Force_JointFriction (one per joint)."
            )
        static = r.number("mu_static", lower=0.0, lower_open=True)
        dynamic = r.number("mu_dynamic", lower=0.0, lower_open=True)
        if dynamic > static:
            raise ValueError(
                f"{r.where}: attribute 'mu_dynamic' ({dynamic:g}) must not exceed "
                f"'mu_static' ({static:g})."
            )
        inputs = r.text("inputs", "1111")
        if not (len(inputs) == 4 and set(inputs) <= {"0", "1"}):
            raise ValueError(
                f"{r.where}: attribute 'inputs' must be four bits 0 or 1 (preload, "
                f"reaction force, bending moment, torsional moment); got {inputs!r}."
            )
        for name in _LOAD_ATTRIBUTES:
            if r.has(name) and name not in _FRICTION_ATTRIBUTES[kind]:
                why = _UNUSED_FRICTION_ATTRIBUTES.get(
                    (kind, name), f"not for a {joint_kind} joint"
                )
                ignored.append(f"{r.tag}.{name} ({why})")
        if joint_kind in _UNIVERSAL:
            # "Friction on each of the yokes is modeled as for a revolute
            # joint" (Comments 12, 14) with "yoke_choice: Specifies the yoke
            # choice for hooke and universal joints" (no default documented):
            # one element, on the chosen yoke; the I yoke when absent.
            yoke = r.choice("yoke_choice", ("i_yoke", "j_yoke"), "i_yoke")
            joints.append(joint_names[jid][yoke])
        else:
            if r.has("yoke_choice"):
                ignored.append(f"{r.tag}.yoke_choice (not for a {joint_kind} joint)")
            # A cylindrical joint rubs on two friction rows, rotation first
            # (`CylindricalLoad`); a spherical one is one ball element of its
            # three joints (`SphericalLoad`).
            names = joint_names[jid]
            if kind == "CYLINDRICAL":
                joints.extend((names["rotation"], names["translation"]))
            elif kind == "SPHERICAL":
                joints.append((names["x"], names["y"], names["z"]))
            else:
                joints.append(names)
        rubbed.add(jid)
        if kind == "REVOLUTE":
            load = RevoluteLoad(
                pin_radius=r.number("pin_radius", 1.0, lower=0.0, lower_open=True)
                * length,
                friction_arm=r.number("friction_arm", 1.0, lower=0.0) * length,
                bending_reaction_arm=r.number(
                    "bending_reaction_arm", 1.0, lower=0.0, lower_open=True
                )
                * length,
                torque_preload=r.number("torque_preload", 0.0, lower=0.0)
                * force
                * length,
                inputs=inputs,
            )
        elif kind == "SPHERICAL":
            load = SphericalLoad(
                ball_radius=r.number("ball_radius", 1.0, lower=0.0, lower_open=True)
                * length,
                torque_preload=r.number("torque_preload", 0.0, lower=0.0)
                * force
                * length,
                inputs=inputs,
            )
        else:
            overlap = {
                "initial_overlap": r.number(
                    "initial_overlap", 1000.0, lower=0.0, lower_open=True
                )
                * length,
                "overlap_delta": r.choice(
                    "overlap_delta", ("constant", "increase", "decrease"), "Constant"
                ),
                "force_preload": r.number("force_preload", 0.0, lower=0.0) * force,
                "inputs": inputs,
            }
            if kind == "CYLINDRICAL":
                load = CylindricalLoad(
                    pin_radius=r.number("pin_radius", 1.0, lower=0.0, lower_open=True)
                    * length,
                    **overlap,
                )
            else:
                load = TranslationalLoad(
                    reaction_arm=r.number(
                        "reaction_arm", 1.0, lower=0.0, lower_open=True
                    )
                    * length,
                    **overlap,
                )
        mu_s.append(static)
        mu_d.append(dynamic)
        effects.append(r.choice("effect", ("all", "stiction", "sliding"), "All"))
        loads.append(load)
        lugre.append(
            {
                "inactive": r.choice("inactive", ("none", "static"), "None"),
                "max_stiction_deform": r.number("max_stiction_deform", 0.01, lower=0.0)
                * length,
                "stiction_trans_vel": r.number(
                    "stiction_trans_vel", 0.1, lower=0.0, lower_open=True
                )
                * length
                / time,
                # F = N (σ0 z + σ1 ż) + σ2 v (Comment 3): σ0 per length, σ1
                # time per length, σ2 force·time per length.
                "bristle_stiffness": r.number(
                    "bristle_stiffness", 100.0, lower=0.0, lower_open=True
                )
                / length,
                "damping_effects": r.number("damping_effects", 0.316, lower=0.0)
                * time
                / length,
                "viscous_effects": r.number("viscous_effects", 0.0004, lower=0.0)
                * force
                * time
                / length,
            }
        )
    # Each element's effect folded into its coefficients (stiction: μ_d =
    # μ_s; sliding: μ_s = μ_d), the same law: `JointLuGre` has no effect, and
    # one `JointFriction` has one.
    pairs = [
        (d, d) if e == "sliding" else (s, s) if e == "stiction" else (s, d)
        for s, d, e in zip(mu_s, mu_d, effects, strict=True)
    ]
    folded = [s for s, _ in pairs], [d for _, d in pairs]
    # The file's coefficients and shared effect where there is one.
    coefficients = (mu_s, mu_d) if len(set(effects)) == 1 else folded
    law = JointFriction(
        *map(_per_element, coefficients),
        loads=tuple(loads),
        effect=effects[0] if len(set(effects)) == 1 else "all",
    )
    shared = {
        name: lugre[0][name]
        for name in _LUGRE_SHARED
        if len({bristles[name] for bristles in lugre}) == 1
    }
    lugre_law = None
    if len(shared) == len(_LUGRE_SHARED):
        lugre_law = JointLuGre(*map(_per_element, folded), loads=tuple(loads), **shared)
    return law, lugre_law, tuple(elements), joints, tuple(lugre)


def _per_element(values: list[float]):
    """One coefficient where all elements share it, else one per element."""
    return values[0] if len(set(values)) == 1 else np.array(values)


# The LuGre parameters `JointLuGre` takes as one value for all elements.
_LUGRE_SHARED = (
    "bristle_stiffness",
    "damping_effects",
    "viscous_effects",
    "stiction_trans_vel",
)


def _simulate(readers: list[_Reader], time: float) -> tuple[float | None, int | None]:
    transient = [
        r
        for r in readers
        if r.choice(
            "analysis_type",
            ("transient", "static", "quasistatic", "kinematic", "linear"),
            "Transient",
        )
        == "transient"
    ]
    if not transient:
        return None, None
    if len(transient) > 1:
        raise ValueError(
            f"<Command> has {len(transient)} transient <Simulate> commands; this "
            "loader reads one."
        )
    r = transient[0]
    t1 = r.number("end_time", lower=0.0, lower_open=True) * time
    num_steps = r.integer("num_step") if r.has("num_step") else None
    if num_steps is not None and num_steps < 1:
        raise ValueError(
            f"{r.where}: attribute 'num_step' must be >= 1; got {num_steps}."
        )
    return t1, num_steps


def load_motionsolve(path: str | os.PathLike) -> MotionSolveModel:
    """Load a MotionSolve XML model (the subset in the module docstring) in SI
    units.

    Reads ``Param_Unit``, ``Reference_Marker``, ``Body_Rigid``,
    ``Constraint_Joint`` (``REVOLUTE``, ``TRANSLATIONAL``, ``FIXED``,
    ``UNIVERSAL``, ``HOOKE``: two revolute joints through a massless cross,
    ``CYLINDRICAL``: a revolute and a prismatic joint, ``SPHERICAL``: three
    revolute joints),
    ``Force_Gravity``, ``Force_JointFriction`` and ``Command/Simulate``
    (Altair MotionSolve Reference Guide, Param_Unit / Reference_Marker /
    Body_Rigid / Constraint_Joint / Force_Gravity / Force_JointFriction /
    Simulate). Output, graphics and integrator elements are ignored silently;
    any other element or attribute is named in one `UserWarning` and left out.

    Args:
        path: the ``.xml`` file.

    Returns:
        A `MotionSolveModel`: the `RigidBodyTree` (m, kg, kg·m², m/s²), the
        `JointFriction` law of the joint friction elements (arms and radii m,
        preloads N·m or N; `None` without any) and their
        `JointLuGre` form, the end
        time ``t1`` (s) and
        ``num_steps``, the file's joint coordinates ``q0`` (rad or m), the ids
        behind ``q`` and the friction elements, and the LuGre-only attributes
        (kept, not used by the exact law).

    Raises:
        ValueError: malformed XML; a missing required attribute, a non-number,
            a reference to a marker, body or joint that does not exist, a body
            without mass, a value out of range, each naming the element (tag
            and id) and the attribute; other joint types ("not supported yet",
            with the joint's id),
            markers given relative to another marker, closed loops and floating
            bodies, joint markers that do not meet their joint (a universal or
            Hooke joint's: origins apart or ``z`` axes not perpendicular; a
            spherical joint's: origins apart or a gimbal lock).
    """
    return _load(*_root(os.fspath(path), False))


def load_motionsolve_string(text: str) -> MotionSolveModel:
    """`load_motionsolve` for MotionSolve XML text instead of a file (same
    subset, units and errors; Altair MotionSolve Reference Guide, as there)."""
    return _load(*_root(text, True))
