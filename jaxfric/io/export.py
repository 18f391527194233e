"""Identified joint friction out: into a copy of the user's URDF or MJCF.

Both formats hold one friction level per joint and a viscous coefficient
(URDF ``<dynamics friction damping>``; MJCF ``frictionloss``, ``damping`` and
``armature``). `joint_friction` reduces a jaxfric system and law to those
numbers and says what the formats cannot hold; `export_urdf` and `export_mjcf`
write them into the joint elements of a copy of the source file, by editing the
text of those elements only, so every other byte stays as it was.
"""

import os
import re
from typing import NamedTuple

import numpy as np

from ..friction import Coulomb, CoulombViscous, LuGre, Regularized, Stribeck
from ..systems import AbstractSystem
from ..systems.rigid import RigidBodyTree


class JointFriction(NamedTuple):
    """Per movable joint of a `RigidBodyTree`, what URDF and MJCF can hold.

    Attributes:
        names: the movable joints' names, in the order of ``q``.
        friction: Coulomb (kinetic) level, N·m or N; 0 for joints without a
            friction element.
        damping: viscous coefficient, N·m·s/rad or N·s/m: the system's damping
            plus the law's viscous term.
        armature: rotor inertia, kg·m² or kg (MJCF only).
        notes: what the law has that the formats cannot hold, and what was
            written instead.
    """

    names: tuple[str, ...]
    friction: np.ndarray
    damping: np.ndarray
    armature: np.ndarray
    notes: tuple[str, ...]


def _levels(law, m: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``(kinetic level, viscous coefficient, notes)`` per friction element."""

    def per(x):
        return np.broadcast_to(np.asarray(x, dtype=float), (m,)).copy()

    notes = []
    if isinstance(law, Regularized):
        notes.append(
            f"the {law.kind} regularisation (eps = {np.asarray(law.eps)}) is "
            "dropped: the exact Coulomb law is written"
        )
        law = law.law
    if isinstance(law, Coulomb):
        fc = per(law.fc)
        fv = per(0.0 if law.fv is None else law.fv)
        fs = fc if law.fs is None else per(law.fs)
        if law.static_ratio is not None:
            fs = fc * per(law.static_ratio)
        if np.any(fs > fc):
            notes.append(
                f"static levels {fs} above the kinetic ones: the formats hold "
                "one level, the kinetic one is written"
            )
        return fc, fv, notes
    if isinstance(law, CoulombViscous):
        fc = 0.5 * (per(law.fc_pos) + per(law.fc_neg))
        fv = 0.5 * (per(law.fv_pos) + per(law.fv_neg))
        if np.any(per(law.fc_pos) != per(law.fc_neg)) or np.any(
            per(law.fv_pos) != per(law.fv_neg)
        ):
            notes.append(
                "direction-dependent levels: the formats are symmetric, the "
                "mean of the two directions is written"
            )
        return fc, fv, notes
    if isinstance(law, Stribeck):
        notes.append(
            f"the Stribeck curve (fs = {np.asarray(law.fs)}, vs = "
            f"{np.asarray(law.vs)}) is dropped: the kinetic level fc is written"
        )
        return per(law.fc), per(law.fv), notes
    if isinstance(law, LuGre):
        notes.append(
            "the LuGre bristle dynamics (sigma0, sigma1) and Stribeck curve (fs, "
            "vs) are dropped: fc as the level and sigma2 as damping are written"
        )
        return per(law.fc), per(law.sigma2), notes
    raise ValueError(
        f"`law` {type(law).__name__} has no URDF/MJCF equivalent; export "
        "Coulomb, CoulombViscous, Stribeck, LuGre or Regularized of one."
    )


def joint_friction(system: AbstractSystem, law) -> JointFriction:
    """Reduce a fitted `RigidBodyTree` and friction law to per-joint numbers
    URDF and MJCF can hold (see `JointFriction`).

    Args:
        system: the tree (its joint names name the file's joints).
        law: its friction law, one entry per friction joint (or scalars).

    Returns:
        A `JointFriction`.

    Raises:
        ValueError: a law without an equivalent, a system that is not a
            `RigidBodyTree`, or one with ball-joint friction elements.
    """
    if not isinstance(system, RigidBodyTree):
        raise ValueError(
            f"`system` must be a RigidBodyTree (from load_urdf or load_mjcf); "
            f"got {type(system).__name__}."
        )
    if system.ball_rows:
        raise ValueError(
            "`system` has ball-joint friction elements (`friction_joints` entries "
            "of three joints): URDF's <dynamics friction> and MuJoCo's "
            "`frictionloss` act on each joint separately and have no equivalent "
            "of one friction torque on a ball."
        )
    n, joints = system.n_dof, list(system.friction_joints)
    fc, fv, notes = _levels(law, len(joints))
    friction = np.zeros(n)
    friction[joints] = fc
    damping = np.asarray(system.damping, dtype=float).copy()
    damping[joints] += fv
    for name, value in (("friction", friction), ("damping", damping)):
        if not np.all(np.isfinite(value)) or np.any(value < 0):
            raise ValueError(f"exported `{name}` must be finite and >= 0; got {value}.")
    return JointFriction(
        tuple(system.model.joint_names),
        friction,
        damping,
        np.asarray(system.armature, dtype=float).copy(),
        tuple(notes),
    )


_NAME = r"""\bname\s*=\s*(["'])(?P<name>.*?)\1"""


def _set_attributes(tag: str, values: dict[str, float]) -> str:
    """Start tag `tag` with `values` set (replaced where present, appended
    before the closing ``>`` or ``/>`` otherwise)."""
    for key, value in values.items():
        text = repr(float(value))
        pattern = rf"""(\s{key}\s*=\s*)(["']).*?\2"""
        if re.search(pattern, tag):
            tag = re.sub(pattern, lambda m, t=text: f'{m[1]}"{t}"', tag, count=1)
        else:
            end = len(tag) - (2 if tag.endswith("/>") else 1)
            tag = f'{tag[:end].rstrip()} {key}="{text}"{tag[end:]}'
    return tag


def _write(source, destination, edit) -> tuple[str, ...]:
    text = open(os.fspath(source), encoding="utf-8").read()
    out, notes = edit(text)
    with open(os.fspath(destination), "w", encoding="utf-8") as f:
        f.write(out)
    return notes


def _check_found(found: set, names, source) -> None:
    missing = [n for n in names if n not in found]
    if missing:
        raise ValueError(
            f"{os.fspath(source)}: no joint element named {missing} (the system's "
            "joint names must be the file's)."
        )


def export_urdf(
    source: str | os.PathLike,
    destination: str | os.PathLike,
    system: RigidBodyTree,
    law,
) -> tuple[str, ...]:
    """Write `system`'s joint friction into a copy of the URDF `source`.

    Each movable joint's ``<dynamics>`` gets ``friction`` (the Coulomb level)
    and ``damping`` (system damping plus the law's viscous term); a joint
    without ``<dynamics>`` gets one before ``</joint>``. Nothing else in the
    file changes. Armature has no URDF element and is not written.

    Args:
        source: the URDF the system was loaded from.
        destination: the file to write.
        system, law: the fitted tree and law (see `joint_friction`).

    Returns:
        The notes of `joint_friction` (what was approximated), plus one if the
        armature is nonzero.

    Raises:
        ValueError: as `joint_friction`, or a joint of the system missing from
            the file.
    """
    values = joint_friction(system, law)
    pairs = zip(values.friction, values.damping, strict=True)
    wanted = dict(zip(values.names, pairs, strict=True))

    def edit(text):
        found = set()

        def joint(match):
            name = re.search(_NAME, match["open"])["name"]
            if name not in wanted:
                return match[0]
            found.add(name)
            body = match["body"]
            attributes = {"damping": wanted[name][1], "friction": wanted[name][0]}
            dyn = re.search(r"<dynamics\b[^>]*?/?>", body)
            if dyn:
                tag = _set_attributes(dyn[0], attributes)
                body = body[: dyn.start()] + tag + body[dyn.end() :]
            else:
                indent = re.search(r"\n([ \t]*)<", body)
                pad = indent[1] if indent else ""
                tag = _set_attributes("<dynamics/>", attributes)
                last = body.rstrip(" \t")
                body = f"{last}{pad}{tag}\n{body[len(last) :]}"
            return match["open"] + body + "</joint>"

        # Robot joints have a type; transmissions' <joint> children do not.
        out = re.sub(
            r"(?P<open><joint\b(?=[^>]*\btype\s*=)[^>]*[^/]>)(?P<body>.*?)</joint>",
            joint,
            text,
            flags=re.S,
        )
        _check_found(found, wanted, source)
        notes = list(values.notes)
        if np.any(values.armature != 0):
            notes.append("armature has no URDF element: not written")
        return out, tuple(notes)

    return _write(source, destination, edit)


def export_mjcf(
    source: str | os.PathLike,
    destination: str | os.PathLike,
    system: RigidBodyTree,
    law,
) -> tuple[str, ...]:
    """Write `system`'s joint friction into a copy of the MJCF `source`.

    Each movable joint's ``<joint name=...>`` element gets ``frictionloss``,
    ``damping`` and ``armature`` (set on the element, so they override
    ``<default>`` classes). Nothing else in the file changes. MuJoCo's
    ``frictionloss`` is itself enforced softly by its solver (creep, see the
    README's Performance section): the number is the same, its effect in
    MuJoCo is not exact.

    Args:
        source: the MJCF the system was loaded from (joints in ``<include>``d
            files are not reached: a missing joint is an error).
        destination: the file to write.
        system, law: the fitted tree and law (see `joint_friction`).

    Returns:
        The notes of `joint_friction`.

    Raises:
        ValueError: as `joint_friction`, or a joint of the system missing from
            the file.
    """
    values = joint_friction(system, law)
    wanted = {
        name: {"frictionloss": f, "damping": d, "armature": a}
        for name, f, d, a in zip(
            values.names, values.friction, values.damping, values.armature, strict=True
        )
    }

    def edit(text):
        found = set()

        def joint(match):
            name = re.search(_NAME, match[0])
            if name is None or name["name"] not in wanted:
                return match[0]
            found.add(name["name"])
            return _set_attributes(match[0], wanted[name["name"]])

        out = re.sub(r"<joint\b[^>]*>", joint, text)
        _check_found(found, wanted, source)
        return out, values.notes

    return _write(source, destination, edit)
