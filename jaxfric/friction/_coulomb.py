"""Coulomb-type laws: set-valued at zero velocity, simulated exactly by the switch
path (Farhat et al. 2010, Sec. 4)."""

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array

from .._check import (
    AtLeast,
    InRange,
    as_float,
    as_optional_float,
    check_fields_broadcast,
)
from .._math import block_dot, block_norm, row_arms
from .._types import Float, SlipVector
from ._base import AbstractSetValuedLaw


def _positive_power(x, p):
    """``x**p`` for ``x >= 0`` whose gradient (also w.r.t. ``p``) is finite at 0."""
    positive = x > 0
    safe = jnp.where(positive, x, 1.0)  # ln(0) in d/dp x**p would give NaN
    return jnp.where(positive, safe**p, 0.0)


def _static_field(fc, fs, static_ratio):
    """The `fs` field: `fs`, or `fc` when neither `fs` nor `static_ratio` is
    given, or `None` (no leaf) when the static level is tied to `fc`."""
    if fs is not None and static_ratio is not None:
        raise ValueError("give `fs` or `static_ratio`, not both.")
    return fc if fs is None and static_ratio is None else fs


def _static_level(law) -> Float[Array, "..."]:
    """The static limit, N or N·m: `fs`, or ``static_ratio·fc``."""
    return law.fs if law.static_ratio is None else law.static_ratio * law.fc


def _static_checks(law) -> tuple:
    """The static level's ranges: ``fs >= fc >= 0``, or ``static_ratio >= 1``."""
    if law.static_ratio is not None:
        return (InRange("static_ratio", law.static_ratio, lower=1.0),)
    return (
        InRange("fs", law.fs, lower=0.0),
        AtLeast("fs", law.fs, "fc", law.fc),
    )


class Coulomb(AbstractSetValuedLaw):
    """Coulomb friction with an optional static (breakaway) level and an
    optional viscous term.

    ``f = fc·d + fv·v`` while slipping at slip velocity ``v`` in direction
    ``d = ±1``; a stuck element holds any force in ``[-fs, fs]`` (Farhat et al.
    2010, Eq. 4 with ``F_c^+ = F_c^- = fc`` and ``F_v^+ = F_v^- = fv``; Karnopp
    1985, breakaway ``FH`` above the slip level ``FC``). For different levels
    in the two directions use `CoulombViscous`.

    Args:
        fc: kinetic (slip) Coulomb level, N or N·m, ``>= 0``.
        fs: static limit, N or N·m, ``>= fc``; defaults to `fc`.
        fv: viscous coefficient, N·s/m or N·m·s/rad, ``>= 0``; default `None`,
            no viscous term (and no `fv` leaf, so identification does not fit
            one).
        static_ratio: instead of `fs`, the static limit as a multiple of the
            kinetic level, ``fs = static_ratio·fc``, ``>= 1`` (Karnopp's
            breakaway ``FH`` at a fixed ratio above ``FC``; 1 for a limit equal
            to it). The static limit then has no leaf of its own: it follows
            `fc` when `fc` is identified.
    """

    fc: Float[Array, "..."] = eqx.field(converter=as_float)
    fs: Float[Array, "..."] | None = eqx.field(converter=as_optional_float)
    fv: Float[Array, "..."] | None = eqx.field(converter=as_optional_float)
    static_ratio: Float[Array, "..."] | None = eqx.field(converter=as_optional_float)

    def __init__(self, fc, fs=None, fv=None, static_ratio=None):
        self.fc = fc
        self.fs = _static_field(fc, fs, static_ratio)
        self.fv = fv
        self.static_ratio = static_ratio

    def __check_init__(self):
        check_fields_broadcast(self, ("fc", "fs", "fv", "static_ratio"))

    def parameter_checks(self):
        viscous = () if self.fv is None else (InRange("fv", self.fv, lower=0.0),)
        return viscous + (InRange("fc", self.fc, lower=0.0),) + _static_checks(self)

    def ordered_levels(self):
        return () if self.fs is None else (("fs", "fc"),)

    def slip_force(self, slip_velocity, direction) -> SlipVector:
        v = jnp.asarray(slip_velocity)
        viscous = 0.0 * v if self.fv is None else self.fv * v
        return self.fc * jnp.asarray(direction) + viscous

    def breakaway(self, direction) -> SlipVector:
        level = _static_level(self)
        return jnp.broadcast_to(level, jnp.shape(direction)).astype(float)


_ASYMMETRIC = ("fc_pos", "fc_neg", "fv_pos", "fv_neg")


class CoulombViscous(AbstractSetValuedLaw):
    """Asymmetric Coulomb + viscous friction, Farhat et al. 2010, Eq. 4 and 8.

    ``f = fc_pos + fv_pos·v`` while slipping forward, ``f = −fc_neg + fv_neg·v``
    while slipping backward; stuck elements hold ``−fc_neg <= f <= fc_pos``.

    Args:
        fc_pos: Coulomb level for positive motion ``F_c^+``, N or N·m, ``>= 0``.
        fc_neg: Coulomb level for negative motion ``F_c^-`` (a magnitude), ``>= 0``.
        fv_pos: viscous coefficient for positive motion, N·s/m or N·m·s/rad, ``>= 0``.
        fv_neg: viscous coefficient for negative motion, ``>= 0``.
    """

    fc_pos: Float[Array, "..."] = eqx.field(converter=as_float)
    fc_neg: Float[Array, "..."] = eqx.field(converter=as_float)
    fv_pos: Float[Array, "..."] = eqx.field(converter=as_float, default=0.0)
    fv_neg: Float[Array, "..."] = eqx.field(converter=as_float, default=0.0)

    def __check_init__(self):
        check_fields_broadcast(self, _ASYMMETRIC)

    def parameter_checks(self):
        return tuple(InRange(n, getattr(self, n), lower=0.0) for n in _ASYMMETRIC)

    def slip_force(self, slip_velocity, direction) -> SlipVector:
        v = jnp.asarray(slip_velocity)
        forward = jnp.asarray(direction) > 0
        return jnp.where(
            forward, self.fc_pos + self.fv_pos * v, -self.fc_neg + self.fv_neg * v
        )

    def breakaway(self, direction) -> SlipVector:
        forward = jnp.asarray(direction) > 0
        return jnp.where(forward, self.fc_pos, self.fc_neg) + 0.0 * jnp.asarray(
            direction, dtype=float
        )


class Stribeck(AbstractSetValuedLaw):
    """Coulomb + Stribeck + viscous friction (Armstrong-Hélouvry; the static map
    ``g(v)`` of LuGre, Canudas de Wit et al. 1995, and of the MotionSolve text).

    ``f = d·(fc + (fs − fc)·exp(−|v/vs|^delta)) + fv·v`` while slipping in
    direction ``d``; a stuck element holds any force in ``[−fs, fs]``.

    Args:
        fc: Coulomb (kinetic) level, N or N·m, ``>= 0``.
        fs: static level, N or N·m, ``>= fc``; defaults to `fc`.
        vs: Stribeck velocity, m/s or rad/s, ``> 0``.
        fv: viscous coefficient, N·s/m or N·m·s/rad, ``>= 0``.
        delta: Stribeck shape exponent, ``> 0`` (2 is Gaussian).
        static_ratio: instead of `fs`, ``fs = static_ratio·fc``, ``>= 1`` (as
            for `Coulomb`: the static level follows `fc` when it is identified).
    """

    fc: Float[Array, "..."] = eqx.field(converter=as_float)
    fs: Float[Array, "..."] | None = eqx.field(converter=as_optional_float)
    vs: Float[Array, "..."] = eqx.field(converter=as_float)
    fv: Float[Array, "..."] = eqx.field(converter=as_float)
    delta: Float[Array, "..."] = eqx.field(converter=as_float)
    static_ratio: Float[Array, "..."] | None = eqx.field(converter=as_optional_float)

    def __init__(self, fc, fs=None, vs=None, fv=0.0, delta=2.0, static_ratio=None):
        if vs is None:
            raise TypeError("Stribeck needs the Stribeck velocity `vs`.")
        self.fc = fc
        self.fs = _static_field(fc, fs, static_ratio)
        self.vs = vs
        self.fv = fv
        self.delta = delta
        self.static_ratio = static_ratio

    def __check_init__(self):
        check_fields_broadcast(self, ("fc", "fs", "vs", "fv", "delta", "static_ratio"))

    def parameter_checks(self):
        return (
            (InRange("fc", self.fc, lower=0.0),)
            + _static_checks(self)
            + (
                InRange("vs", self.vs, lower=0.0, lower_open=True),
                InRange("fv", self.fv, lower=0.0),
                InRange("delta", self.delta, lower=0.0, lower_open=True),
            )
        )

    def ordered_levels(self):
        return () if self.fs is None else (("fs", "fc"),)

    def stribeck_curve(self, slip_velocity) -> SlipVector:
        """``g(v) = fc + (fs − fc)·exp(−|v/vs|^delta)``, N or N·m (>= 0)."""
        x = jnp.abs(jnp.asarray(slip_velocity) / self.vs)
        hump = _static_level(self) - self.fc
        return self.fc + hump * jnp.exp(-_positive_power(x, self.delta))

    def slip_force(self, slip_velocity, direction) -> SlipVector:
        v = jnp.asarray(slip_velocity)
        return jnp.asarray(direction) * self.stribeck_curve(v) + self.fv * v

    def breakaway(self, direction) -> SlipVector:
        level = _static_level(self)
        return jnp.broadcast_to(level, jnp.shape(direction)).astype(float)


class IsotropicCoulomb(AbstractSetValuedLaw):
    """Exact isotropic Coulomb friction on vector elements: friction in a
    contact plane (Kikuuwe & Yamamoto 2008, Eq. 23 without the spring: the
    friction disk; MotionSolve's 3D friction, Comment 7, with a circular
    ellipse, Comment 8).

    Each element is `dims` consecutive slip rows ``s`` (the tangential
    velocity of a contact point). While it slips,

        f = fc · s / |s|

    (opposing the slip, in the sign convention of `jaxfric.friction`); while
    it sticks, ``s ≡ 0`` and the stick force ``f`` (solved with the rest of
    the system) obeys ``|f| <= fs``. The switch path locates the stop
    (``|s| → 0``) and the breakaway (``|f| → fs``) as events, so a stuck
    contact has slip velocity exactly zero and does not creep.

    With `mu` (and `mu_s`) instead of `fc` (`fs`), the levels are ``μ·N`` with
    ``N`` the system's contact normal force at each state
    (`jaxfric.systems.AbstractSystem.normal_forces`, e.g. the penalty contact
    of `jaxfric.systems.FreeBodies`).

    With `arms` ``a`` (one per row) the rows are not the contact's slip but
    ``s_i = v_i/a_i``: a cylindrical joint's rotation ``ω`` and translation
    ``v_z`` rub at the contact slip ``v = (r_p ω, v_z)`` (MotionSolve Comment
    11), arms ``(r_p, 1)``. The contact force ``F`` then lies in the disk
    ``|F| <= fs`` and opposes ``v`` (``F = fc·v/|v|`` while slipping), and each
    row's force is ``f_i = a_i F_i`` (a torque ``r_p F_rot``): in the rows, the
    friction ellipse ``|f/a| <= fs`` with the slip ``f = fc·a²s/|a s|`` of
    maximum dissipation. On a contact's own rows, arms ``(μ_x, μ_y)/μ`` with
    `mu` ``μ`` give Comment 8's ellipse of coefficients ``μ_x``, ``μ_y``. The
    switch path locates an elliptic stop to about 1e-9 s (the slip's
    direction swings as it stops), an isotropic one to 1e-13 s.

    Args:
        fc: kinetic level, N, ``>= 0`` (one per row, equal on an element's rows).
        fs: static limit, N, ``>= fc``; default `fc`.
        mu: instead of `fc`, the kinetic friction coefficient, ``>= 0``.
        mu_s: with `mu`, the static coefficient, ``>= mu``; default `mu`.
        dims: rows per element (static), 2 or 3; or a tuple of each
            element's rows, each 1, 2 or 3 (elements of different sizes in one
            law, e.g. a revolute joint's one row beside a ball joint's three:
            a one-row element is friction ``fc·s/|s|`` on its row).
        arms: per row, ``> 0``, the factor that turns the row's slip into
            the contact's (m per radian for a cylindrical joint's rotation,
            1 for its translation; ratios ``μ_i/μ`` for an ellipse on a
            contact); default 1 (the rows are the contact's slip).
    """

    fc: Float[Array, "..."] | None = eqx.field(converter=as_optional_float)
    fs: Float[Array, "..."] | None = eqx.field(converter=as_optional_float)
    mu: Float[Array, "..."] | None = eqx.field(converter=as_optional_float)
    mu_s: Float[Array, "..."] | None = eqx.field(converter=as_optional_float)
    dims: int | tuple[int, ...] = eqx.field(static=True)
    arms: Float[Array, "..."] | None = eqx.field(converter=as_optional_float)

    def __init__(self, fc=None, fs=None, mu=None, mu_s=None, dims=2, arms=None):
        if (fc is None) == (mu is None):
            raise ValueError(
                "IsotropicCoulomb needs the level `fc` (N) or the friction "
                "coefficient `mu` (level mu·N), not both."
            )
        if (fc is None and fs is not None) or (mu is None and mu_s is not None):
            raise ValueError(
                "IsotropicCoulomb: give `fs` with `fc`, or `mu_s` with `mu`."
            )
        if isinstance(dims, (tuple, list)):
            dims = tuple(dims)
            if (
                not all(
                    isinstance(d, int) and not isinstance(d, bool) and d in (1, 2, 3)
                    for d in dims
                )
                or max(dims, default=1) == 1
            ):
                raise ValueError(
                    "`dims` as a tuple gives each element's rows, each 1, 2 or 3, "
                    f"at least one above 1 (else use Coulomb); got {dims!r}."
                )
        elif isinstance(dims, bool) or dims not in (2, 3):
            raise ValueError(
                "`dims` must be 2 or 3 (rows per element), or a tuple of each "
                f"element's rows; got {dims!r}."
            )
        else:
            dims = int(dims)  # a Python int (static), also from a NumPy integer
        self.fc = fc
        self.fs = fc if fs is None else fs
        self.mu = mu
        self.mu_s = mu if mu_s is None else mu_s
        self.dims = dims
        self.arms = arms

    def __check_init__(self):
        check_fields_broadcast(self, ("fc", "fs", "mu", "mu_s", "arms"))

    def parameter_checks(self):
        arms = (
            () if self.arms is None else (InRange("arms", self.arms, lower=0.0,
                                                  lower_open=True),)
        )  # fmt: skip
        if self.mu is not None:
            return arms + (
                InRange("mu", self.mu, lower=0.0),
                InRange("mu_s", self.mu_s, lower=0.0),
                AtLeast("mu_s", self.mu_s, "mu", self.mu),
            )
        return arms + (
            InRange("fc", self.fc, lower=0.0),
            InRange("fs", self.fs, lower=0.0),
            AtLeast("fs", self.fs, "fc", self.fc),
        )

    def ordered_levels(self):
        return (("mu_s", "mu"),) if self.mu is not None else (("fs", "fc"),)

    @property
    def rows_per_element(self) -> int | tuple[int, ...]:
        return self.dims

    def at_state(self, system, q, qd) -> "IsotropicCoulomb":
        """With `mu`: the law at the levels ``fc = μ·N``, ``fs = μ_s·N``, N,
        with ``N`` the contact normal forces at ``(q, q̇)``."""
        if self.mu is None:
            return self
        normal = system.normal_forces(q, qd)
        return IsotropicCoulomb(
            fc=self.mu * normal, fs=self.mu_s * normal, dims=self.dims, arms=self.arms
        )

    def _levels(self):
        if self.fc is None:
            raise ValueError(
                "this IsotropicCoulomb law has friction coefficients: take "
                "`law.at_state(system, q, qd)` first (its levels are mu·N)."
            )
        return self.fc, self.fs

    def row_arms(self, like) -> SlipVector:
        """The `arms` per row (ones without), shaped like `like`."""
        return row_arms(self.arms, like)

    def force_norm(self, friction) -> SlipVector:
        """The norm of each element's contact force ``|f/a|`` (N), on every
        row of the element: what `breakaway` bounds."""
        f = jnp.asarray(friction)
        if self.arms is not None:
            f = f / self.row_arms(f)
        return block_norm(f, self.dims)[0]

    def slip_force(self, slip_velocity, direction) -> SlipVector:
        """``fc · s/|s|`` per element (with `arms`: ``fc·a·(a s)/|a s|``).
        `direction` is the unit reference of the slip, in the rows
        (`jaxfric.simulate`'s switch path: the slip direction at the segment's
        start): it gives the force where ``s = 0`` (an element released from
        rest) and, past a stop, extends the force smoothly (``s/|s|`` turned
        round where ``s`` points back along ``direction``, more than 120° from
        it) so that the stop is a crossing that the event finder locates, not
        a jump. A slip that turns a right angle from ``direction`` (the other
        event of ``s·direction``) keeps ``s/|s|``: continuous there too (turned
        round at 90°, a slip at 1e-2 rad/s turning while it slowed had a jump
        there that no step crossed: 11695 rejected steps)."""
        fc, _ = self._levels()
        s = jnp.asarray(slip_velocity)
        u = jnp.asarray(direction, dtype=s.dtype)
        back = block_dot(s, u, self.dims) < -0.5 * block_norm(s, self.dims)[0]
        ahead = jnp.where(back, -1.0, 1.0)
        if self.arms is not None:
            arms = self.row_arms(s)
            s, u = arms * s, arms * u
            size, some = block_norm(u, self.dims)
            u = jnp.where(some, u / jnp.where(some, size, 1.0), 0.0)
        norm, moving = block_norm(s, self.dims)
        unit = jnp.where(moving, ahead * s / jnp.where(moving, norm, 1.0), u)
        return fc * (unit if self.arms is None else arms * unit)

    def force(self, slip_velocity) -> SlipVector:
        """``fc · s/|s|`` (with `arms`: ``fc·a·(a s)/|a s|``), 0 at ``s = 0``
        (the stick force is the switch path's)."""
        fc, _ = self._levels()
        s = jnp.asarray(slip_velocity)
        arms = self.row_arms(s)
        norm, moving = block_norm(arms * s, self.dims)
        pull = fc * arms * arms * s
        return jnp.where(moving, pull / jnp.where(moving, norm, 1.0), 0.0)

    def breakaway(self, direction) -> SlipVector:
        """The static limit ``fs`` of the element's force norm, per row."""
        _, fs = self._levels()
        return jnp.broadcast_to(fs, jnp.shape(direction)).astype(float)
