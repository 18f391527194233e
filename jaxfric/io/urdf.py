"""URDF import: a fixed-base robot as a `RigidBodyTree` plus its joint friction.

Parsed with the standard-library XML parser. Read: links (``<inertial>``: mass,
origin xyz/rpy, inertia; a link without ``<inertial>`` is massless, as the URDF
specification says and as Pinocchio and MuJoCo load it), joints (type, parent,
child, origin, axis, ``<limit>``, ``<dynamics damping friction>``). Ignored:
``<visual>``, ``<collision>`` (meshes), ``<gazebo>``, ``<transmission>``, and
``<mimic>`` (mimic joints become independent joints, as in Pinocchio's default
loader).
Floating and planar joints are refused: the tree has a fixed base.
"""

import math
import os
import xml.etree.ElementTree as ET
from typing import NamedTuple

import numpy as np

from ..friction import Coulomb
from ..systems.rigid import RigidBodyTree, rpy_matrix

_SUPPORTED = ("revolute", "continuous", "prismatic", "fixed")
_REFUSED = ("floating", "planar")


class URDFRobot(NamedTuple):
    """A parsed URDF, as plain NumPy arrays, one entry per joint (fixed joints
    included) in topological order; entry ``k`` also describes the joint's child
    link.

    Attributes:
        name: the robot's name.
        base_name: the root link.
        joint_names, link_names, joint_types: per joint (child link names).
        parents: index of the joint whose child is this joint's parent link,
            ``-1`` for the root link.
        axes: joint axes in the joint frame, ``(k, 3)``.
        origin_xyz, origin_rpy: joint origins in the parent link frame, m / rad.
        mass, com, inertia: child link inertials (``com`` and ``inertia`` about
            the centre of mass in link axes), kg, m, kg·m².
        lower, upper: position limits (``±inf`` where absent or continuous).
        effort, velocity: effort and velocity limits (``inf`` where absent).
        damping, friction: ``<dynamics damping friction>`` (0 where absent).
    """

    name: str
    base_name: str
    joint_names: tuple[str, ...]
    link_names: tuple[str, ...]
    joint_types: tuple[str, ...]
    parents: tuple[int, ...]
    axes: np.ndarray
    origin_xyz: np.ndarray
    origin_rpy: np.ndarray
    mass: np.ndarray
    com: np.ndarray
    inertia: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    effort: np.ndarray
    velocity: np.ndarray
    damping: np.ndarray
    friction: np.ndarray

    def movable(self) -> np.ndarray:
        """Boolean mask of the movable (non-fixed) joints."""
        return np.array([t != "fixed" for t in self.joint_types], dtype=bool)


def _numbers(text: str | None, count: int, where: str, default=None) -> np.ndarray:
    if text is None:
        if default is None:
            raise ValueError(f"{where} is missing.")
        return np.asarray(default, dtype=float)
    what = "a finite number" if count == 1 else f"{count} finite numbers"
    try:
        values = [float(x) for x in text.split()]
    except ValueError:
        raise ValueError(f"{where} must be {what}; got {text!r}.") from None
    if len(values) != count or not all(math.isfinite(v) for v in values):
        raise ValueError(f"{where} must be {what}; got {text!r}.")
    return np.asarray(values)


def _number(element, attribute: str, where: str, default=None) -> float:
    text = None if element is None else element.get(attribute)
    if text is None and default is not None:
        return float(default)
    return float(_numbers(text, 1, f"{where}: attribute {attribute!r}")[0])


def _origin(element, where: str) -> tuple[np.ndarray, np.ndarray]:
    origin = element.find("origin")
    if origin is None:
        return np.zeros(3), np.zeros(3)
    xyz = _numbers(origin.get("xyz"), 3, f"{where}: <origin xyz>", np.zeros(3))
    rpy = _numbers(origin.get("rpy"), 3, f"{where}: <origin rpy>", np.zeros(3))
    return xyz, rpy


def _inertial(link, where: str):
    """``(mass, com, inertia about the com in link axes)`` of a ``<link>``;
    zero without ``<inertial>`` (the URDF specification's default: zero mass
    and zero inertia). A joint that then moves no inertia is named when the
    tree is built."""
    inertial = link.find("inertial")
    if inertial is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    mass_el = inertial.find("mass")
    if mass_el is None:
        raise ValueError(f"{where}: <inertial> has no <mass> element.")
    mass = _number(mass_el, "value", f"{where}: <mass>")
    if mass < 0:
        raise ValueError(f"{where}: <mass value> must be >= 0; got {mass}.")
    inertia_el = inertial.find("inertia")
    if inertia_el is None:
        raise ValueError(f"{where}: <inertial> has no <inertia> element.")
    i = {
        k: _number(inertia_el, k, f"{where}: <inertia>")
        for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    }
    tensor = np.array(
        [
            [i["ixx"], i["ixy"], i["ixz"]],
            [i["ixy"], i["iyy"], i["iyz"]],
            [i["ixz"], i["iyz"], i["izz"]],
        ]
    )
    xyz, rpy = _origin(inertial, f"{where}: <inertial>")
    rot = np.asarray(rpy_matrix(rpy))
    return mass, xyz, rot @ tensor @ rot.T


def _root(source: str, is_text: bool) -> ET.Element:
    label = "URDF text" if is_text else f"URDF file {source!r}"
    try:
        root = ET.fromstring(source) if is_text else ET.parse(source).getroot()
    except ET.ParseError as e:
        raise ValueError(f"{label} is not well-formed XML: {e}.") from None
    if root.tag != "robot":
        raise ValueError(
            f"{label}: the root element must be <robot>, got <{root.tag}>."
        )
    return root


def _parse(root: ET.Element) -> URDFRobot:
    links: dict[str, ET.Element] = {}
    for link in root.findall("link"):
        name = link.get("name")
        if not name:
            raise ValueError("a <link> element has no name.")
        if name in links:
            raise ValueError(f"link {name!r} is defined twice.")
        links[name] = link
    if not links:
        raise ValueError("the URDF has no <link> element.")

    joints: dict[str, dict] = {}
    child_of: dict[str, str] = {}
    for joint in root.findall("joint"):
        name = joint.get("name")
        if not name:
            raise ValueError("a <joint> element has no name.")
        where = f"joint {name!r}"
        if name in joints:
            raise ValueError(f"{where} is defined twice.")
        jtype = joint.get("type")
        if jtype in _REFUSED:
            raise ValueError(
                f"{where}: type {jtype!r} is not supported (fixed-base trees with "
                f"{', '.join(_SUPPORTED)} joints only)."
            )
        if jtype not in _SUPPORTED:
            raise ValueError(
                f"{where}: unknown joint type {jtype!r}; supported {_SUPPORTED}."
            )
        ends = {}
        for end in ("parent", "child"):
            el = joint.find(end)
            link = None if el is None else el.get("link")
            if link is None:
                raise ValueError(f"{where} has no <{end} link=...> element.")
            if link not in links:
                raise ValueError(f"{where}: {end} link {link!r} is not defined.")
            ends[end] = link
        if ends["child"] in child_of:
            raise ValueError(
                f"{where}: link {ends['child']!r} is already the child of joint "
                f"{child_of[ends['child']]!r} (a link has one parent joint)."
            )
        child_of[ends["child"]] = name
        xyz, rpy = _origin(joint, where)
        axis_el = joint.find("axis")
        axis = _numbers(
            None if axis_el is None else axis_el.get("xyz"),
            3,
            f"{where}: <axis xyz>",
            (1.0, 0.0, 0.0),
        )
        if jtype != "fixed" and np.linalg.norm(axis) < 1e-12:
            raise ValueError(f"{where}: <axis xyz> must be a non-zero vector.")
        limit = joint.find("limit")
        inf = math.inf
        bounded = jtype in ("revolute", "prismatic") and limit is not None
        lower = _number(limit, "lower", f"{where}: <limit>", 0.0) if bounded else -inf
        upper = _number(limit, "upper", f"{where}: <limit>", 0.0) if bounded else inf
        if bounded and lower > upper:
            raise ValueError(f"{where}: <limit> lower {lower} exceeds upper {upper}.")
        dyn = joint.find("dynamics")
        damping = _number(dyn, "damping", f"{where}: <dynamics>", 0.0)
        friction = _number(dyn, "friction", f"{where}: <dynamics>", 0.0)
        for attr, value in (("damping", damping), ("friction", friction)):
            if value < 0:
                raise ValueError(
                    f"{where}: <dynamics {attr}> must be >= 0; got {value}."
                )
        joints[name] = dict(
            type=jtype,
            parent=ends["parent"],
            child=ends["child"],
            xyz=xyz,
            rpy=rpy,
            axis=axis if jtype == "fixed" else axis / np.linalg.norm(axis),
            lower=lower,
            upper=upper,
            effort=_number(limit, "effort", f"{where}: <limit>", inf),
            velocity=_number(limit, "velocity", f"{where}: <limit>", inf),
            damping=damping,
            friction=friction,
        )

    roots = [name for name in links if name not in child_of]
    if len(roots) != 1:
        raise ValueError(
            "the URDF must have exactly one root link (a link that is no joint's "
            f"child); found {roots or 'none (the joints form a cycle)'}."
        )
    base = roots[0]
    # Depth-first preorder from the root, children in document order (the order
    # of Pinocchio and urdfdom): a topological order with branches contiguous.
    children: dict[str, list[str]] = {name: [] for name in links}
    for name, j in joints.items():
        children[j["parent"]].append(name)
    order: list[str] = []
    index_of_link = {base: -1}
    stack = list(reversed(children[base]))
    while stack:
        name = stack.pop()
        index_of_link[joints[name]["child"]] = len(order)
        order.append(name)
        stack.extend(reversed(children[joints[name]["child"]]))
    unreached = sorted(set(links) - set(index_of_link))
    if unreached:
        raise ValueError(
            f"links {unreached} are not connected to the root link {base!r}."
        )
    inertials = [
        _inertial(links[joints[name]["child"]], f"link {joints[name]['child']!r}")
        for name in order
    ]

    def column(key):
        return np.array([joints[name][key] for name in order], dtype=float)

    return URDFRobot(
        name=root.get("name", ""),
        base_name=base,
        joint_names=tuple(order),
        link_names=tuple(joints[name]["child"] for name in order),
        joint_types=tuple(joints[name]["type"] for name in order),
        parents=tuple(index_of_link[joints[name]["parent"]] for name in order),
        axes=np.stack([joints[name]["axis"] for name in order]).reshape(-1, 3),
        origin_xyz=np.stack([joints[name]["xyz"] for name in order]).reshape(-1, 3),
        origin_rpy=np.stack([joints[name]["rpy"] for name in order]).reshape(-1, 3),
        mass=np.array([m for m, _, _ in inertials], dtype=float),
        com=np.stack([c for _, c, _ in inertials]).reshape(-1, 3),
        inertia=np.stack([i for _, _, i in inertials]).reshape(-1, 3, 3),
        lower=column("lower"),
        upper=column("upper"),
        effort=column("effort"),
        velocity=column("velocity"),
        damping=column("damping"),
        friction=column("friction"),
    )


def parse_urdf(path: str | os.PathLike):
    """Parse a URDF file into plain arrays (no JAX objects). Links without
    ``<inertial>`` are massless.

    Args:
        path: the ``.urdf`` file.

    Returns:
        A `URDFRobot`.

    Raises:
        ValueError: malformed XML or URDF, naming the offending link or joint;
            floating/planar joints.
    """
    return _parse(_root(os.fspath(path), False))


def parse_urdf_string(text: str):
    """`parse_urdf` for URDF text instead of a file."""
    return _parse(_root(text, True))


def _override(name: str, value, default: np.ndarray, n: int) -> np.ndarray:
    if value is None:
        return default
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.shape != (n,):
        raise ValueError(
            f"`{name}` must be a scalar or have one entry per movable joint, shape "
            f"({n},); got shape {arr.shape}."
        )
    return arr


def build_urdf(
    robot: URDFRobot,
    *,
    gravity=(0.0, 0.0, -9.81),
    damping=None,
    friction=None,
    armature=0.0,
    friction_joints=None,
) -> tuple[RigidBodyTree, Coulomb]:
    """Turn a parsed `URDFRobot` into a `RigidBodyTree` and its joint friction.

    Args:
        robot: from `parse_urdf`.
        gravity: gravity in the base frame, m/s².
        damping: viscous joint damping per movable joint (or scalar); default the
            file's ``<dynamics damping>``.
        friction: Coulomb joint friction level per friction joint (or scalar);
            default the file's ``<dynamics friction>``.
        armature: rotor inertia per movable joint (or scalar), kg·m² or kg.
        friction_joints: movable joints (names or indices into ``q``) with a
            friction element; default all movable joints.

    Returns:
        ``(system, law)``: the tree and ``Coulomb(fc)`` with one level per
        friction joint. Use another law with the same levels as needed.
    """
    movable = robot.movable()
    n = int(movable.sum())
    rotations = np.stack([np.asarray(rpy_matrix(r)) for r in robot.origin_rpy])
    system = RigidBodyTree(
        robot.parents,
        robot.joint_types,
        np.where(movable[:, None], robot.axes, np.array([1.0, 0.0, 0.0])),
        robot.origin_xyz,
        rotations,
        mass=robot.mass,
        com=robot.com,
        inertia=robot.inertia,
        gravity=gravity,
        damping=_override("damping", damping, robot.damping[movable], n),
        armature=armature,
        friction_joints=friction_joints,
        joint_names=robot.joint_names,
        link_names=robot.link_names,
        base_name=robot.base_name,
    )
    if system.ball_rows:
        raise ValueError(
            "`friction_joints`: URDF friction levels are per joint; a ball element "
            "(three joints) has one isotropic friction torque: build the tree "
            "with RigidBodyTree and use JointFriction with SphericalLoad or "
            "IsotropicCoulomb(dims=3)."
        )
    levels = robot.friction[movable][list(system.friction_joints)]
    fc = _override("friction", friction, levels, system.n_friction)
    if np.any(fc < 0):
        raise ValueError(f"`friction` levels must be >= 0; got {fc!r}.")
    return system, Coulomb(fc)


def load_urdf(path: str | os.PathLike, **options) -> tuple[RigidBodyTree, Coulomb]:
    """Load a fixed-base robot from a URDF file.

    ``<dynamics damping>`` becomes viscous joint damping in the system's bias
    force, ``<dynamics friction>`` the Coulomb level of each joint's friction
    element; both can be overridden. Meshes are ignored. Links without
    ``<inertial>`` are massless; a movable joint that then moves no inertia
    (and has no `armature`) is named in a `ValueError`, as is an inertia that
    is not physical (negative principal moments, or moments that break the
    triangle inequality).

    Args:
        path: the ``.urdf`` file.
        **options: `gravity`, `damping`, `friction`, `armature`,
            `friction_joints`, as for `build_urdf`.

    Returns:
        ``(system, law)``, a `RigidBodyTree` and a `Coulomb` law.
    """
    return build_urdf(parse_urdf(path), **options)
