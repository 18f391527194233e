"""The stick/slip mode choice at an event (`jaxfric.simulate._stick`,
Farhat et al. 2010, Sec. 4.2 and Eq. 5–8; the box LCP of `_lcp.box_lcp`).

References: every mode set checked by brute force in NumPy (all ``3^m``
combinations, forces from `numpy.linalg`), a NumPy consistency certificate for
larger ``m``, and closed forms for two elements on one coordinate.
"""

import itertools
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxfric as jf
from jaxfric.io import load_urdf
from jaxfric.simulate._stick import (
    consistent_modes,
    friction_at_modes,
    isotropic_modes,
)

# Brute force and certificate: a stick force may exceed its limit, and a
# slipping element accelerate against its direction, by this much relative to
# the limit (rounding of the float64 solves); a case is a clear one when the
# answer holds with the opposite margin.
_REL_TOL = 1e-9
# Redundant elements: accelerations compared with the merged problem's.
_ACC_TOL = 1e-10
# Closed-form stick and slip of two elements on one coordinate.
_EVENT_TOL = 1e-9
_STATE_TOL = 1e-8


class _Constant(jf.systems.AbstractSystem):
    """``M q̈ = τ − Jᵀ f`` with constant ``M`` and ``J`` (no bias force)."""

    mass: jax.Array
    jac: jax.Array
    n_dof: int = eqx.field(static=True)
    n_friction: int = eqx.field(static=True)

    def mass_matrix(self, q):
        return self.mass

    def bias_force(self, q, qd):
        return jnp.zeros_like(q)

    def friction_jacobian(self, q):
        return self.jac

    def friction_jacobian_dot_qd(self, q, qd):
        return jnp.zeros(self.n_friction, q.dtype)


@jax.jit
def _choose(mass, jac, fc, fs, net, release_first):
    """Modes of all elements from rest (`consistent_modes`, with or without its
    release iteration first), and the friction and accelerations, for a batch
    of constant systems, `Coulomb(fc, fs)` laws and net forces."""

    def one(mass, jac, fc, fs, net):
        system = _Constant(mass, jac, *jac.shape[::-1])
        law = jf.Coulomb(fc, fs)
        m = system.n_friction
        q = jnp.zeros(system.n_dof)
        at_zero = jnp.ones(m, bool)
        modes, ok = consistent_modes(
            system, law, q, q, net, jnp.zeros(m, jnp.int32), at_zero,
            release_first=release_first,
        )  # fmt: skip
        friction, acc, _ = friction_at_modes(system, law, q, q, net, modes)
        return modes, ok, friction, acc

    return jax.vmap(one)(mass, jac, fc, fs, net)


def _random_problems(rng, num, m, redundant=0, ratios=False):
    """`num` random systems with ``m`` coordinates and ``m`` elements (the last
    `redundant` rows of ``J`` copies of others, scaled by random ratios of
    either sign, 0.01 to 100 in size, when `ratios`), kinetic levels and net
    forces; the copied rows and the ratios."""
    a = rng.normal(size=(num, m, m))
    mass = a @ np.swapaxes(a, 1, 2) + m * np.eye(m)
    jac = rng.normal(size=(num, m, m))
    copies = rng.integers(0, m - redundant, size=(num, redundant))
    scale = np.ones((num, m))
    if ratios:
        size = 10.0 ** rng.uniform(-2, 2, size=(num, redundant))
        scale[:, m - redundant :] = size * rng.choice([-1.0, 1.0], size=size.shape)
    for k in range(redundant):
        jac[:, m - redundant + k] = jac[np.arange(num), copies[:, k]]
    jac = jac * scale[:, :, None]
    fc = rng.uniform(0.2, 1.5, size=(num, m)) / np.abs(scale)
    net = 2.0 * rng.normal(size=(num, m))
    return mass, jac, fc, net, copies, scale


def _run(mass, jac, fc, fs, net, release_first):
    # `release_first` as an array: one compilation for both ways.
    args = map(jnp.asarray, (mass, jac, fc, fs, net, release_first))
    out = _choose(*args)
    return tuple(map(np.asarray, out))


def _solve_modes(delassus, free_rate, modes, slip_forces):
    """NumPy: stick forces (least squares) and slip accelerations of `modes`."""
    stuck = modes == 0
    f = np.where(stuck, 0.0, slip_forces)
    rhs = free_rate - delassus @ f
    if stuck.any():
        block = delassus[np.ix_(stuck, stuck)]
        f[stuck] = np.linalg.lstsq(block, rhs[stuck], rcond=None)[0]
    return f, free_rate - delassus @ f


def _violation(delassus, free_rate, modes, static, kinetic):
    """The largest relative violation of the consistency conditions of
    `modes` (Farhat Eq. 5: stuck forces inside the static limits; slipping
    elements, with their kinetic level, accelerating in their direction);
    ``<= 0`` when consistent."""
    f, rate = _solve_modes(delassus, free_rate, modes, modes * kinetic)
    excess = (np.abs(f) - static) / static
    against = -modes * rate / (np.diagonal(delassus) * static)
    return np.max(np.where(modes == 0, excess, against))


def _brute_force(delassus, free_rate, static, kinetic):
    """The consistent mode set with the most stuck elements when it is clear:
    consistent with margin, and no other set with as many stuck elements or
    more consistent or nearly so; else None."""
    m = len(free_rate)
    candidates = np.array(list(itertools.product((0, 1, -1), repeat=m)))
    v = np.array(
        [_violation(delassus, free_rate, c, static, kinetic) for c in candidates]
    )
    stuck = np.sum(candidates == 0, axis=1)
    consistent = v <= _REL_TOL
    if not consistent.any():
        return None
    most = stuck[consistent].max()
    near = (v <= 1e3 * _REL_TOL) & (stuck >= most)
    best = np.argmax(np.where(consistent, stuck, -1))
    if near.sum() > 1 or v[best] > -_REL_TOL:
        return None
    return candidates[best]


def _delassus(mass, jac, net):
    minv_jt = np.linalg.solve(mass, jac.T)
    return jac @ minv_jt, jac @ np.linalg.solve(mass, net)


# One size for the brute-force tests (one compilation each way).
_M = 4
_NUM = 40


def test_random_coupled_modes_match_brute_force():
    # Random coupled elements (random SPD M, random J), all at rest; static
    # limits equal to the kinetic levels (Coulomb, Farhat Eq. 4), so the
    # consistent sets are the box LCP's solutions and the most-stuck one is
    # unique unless degenerate. Both the release iteration with its LCP
    # fallback and the LCP alone must give the brute force's modes.
    mass, jac, fc, net, *_ = _random_problems(np.random.default_rng(3), _NUM, _M)
    compared = 0
    for release_first in (True, False):
        modes, ok, _, _ = _run(mass, jac, fc, fc, net, release_first)
        assert ok.all()
        for i in range(_NUM):
            delassus, free_rate = _delassus(mass[i], jac[i], net[i])
            v = _violation(delassus, free_rate, modes[i], fc[i], fc[i])
            assert v <= _REL_TOL
            expected = _brute_force(delassus, free_rate, fc[i], fc[i])
            if expected is not None:
                compared += 1
                np.testing.assert_array_equal(modes[i], expected)
    # Most random cases are clear, and mixed (some stuck, some slipping).
    assert compared >= 1.5 * _NUM
    assert 0.2 < np.mean(modes == 0) < 0.8


def test_static_above_kinetic_modes_are_consistent():
    # Static limits above the kinetic levels (Coulomb fs > fc): consistent sets
    # are no longer unique (an element between its levels may stick or slip).
    # The LCP with its kinetic cascade must give consistent modes, mostly the
    # brute force's most-stuck set where that is clear.
    rng = np.random.default_rng(7)
    mass, jac, fc, net, *_ = _random_problems(rng, _NUM, _M)
    fs = fc * rng.uniform(1.0, 1.6, size=fc.shape)
    modes, ok, _, _ = _run(mass, jac, fc, fs, net, False)
    assert ok.all()
    same = 0
    for i in range(_NUM):
        delassus, free_rate = _delassus(mass[i], jac[i], net[i])
        assert _violation(delassus, free_rate, modes[i], fs[i], fc[i]) <= _REL_TOL
        expected = _brute_force(delassus, free_rate, fs[i], fc[i])
        same += expected is not None and np.array_equal(modes[i], expected)
    assert same >= 0.75 * _NUM


@pytest.mark.parametrize("ratios", [False, True])
def test_redundant_elements_modes_and_accelerations(ratios):
    # Two of four elements copy the rows of others, scaled by a ratio a
    # (`ratios`: of either sign, 0.01 to 100 in size, as a pinion on a
    # slider's rack; else 1): a positive semidefinite Delassus matrix, so
    # forces are not unique, modes and accelerations are. Reference: the
    # merged problem, copies removed and their limits |a|·fs added to the
    # original's. A merged element that sticks has all its copies stuck; one
    # that slips has all slipping its way (times sign(a)).
    rng = np.random.default_rng(11)
    redundant = 2
    mass, jac, fc, net, copies, scale = _random_problems(
        rng, _NUM, _M, redundant, ratios
    )
    compared = 0
    for release_first in (True, False):
        modes, ok, friction, acc = _run(mass, jac, fc, fc, net, release_first)
        assert ok.all()
        for i in range(_NUM):
            group = np.arange(_M)
            group[_M - redundant :] = copies[i]
            keep = np.unique(group)
            worth = fc[i] * np.abs(scale[i])  # each limit on its original's row
            merged = np.array([worth[group == g].sum() for g in keep])
            delassus, free_rate = _delassus(mass[i], jac[i][keep], net[i])
            expected = _brute_force(delassus, free_rate, merged, merged)
            if expected is None:
                continue
            compared += 1
            np.testing.assert_array_equal(
                modes[i], expected[np.searchsorted(keep, group)] * np.sign(scale[i])
            )
            # Accelerations from the merged modes, in NumPy.
            f, _ = _solve_modes(delassus, free_rate, expected, expected * merged)
            ref = np.linalg.solve(mass[i], net[i] - jac[i][keep].T @ f)
            np.testing.assert_allclose(acc[i], ref, atol=_ACC_TOL, rtol=0)
            # Stick forces inside their own limits: a stuck group's members
            # share its load at one fraction of their limits.
            stuck = modes[i] == 0
            share = friction[i] * np.sign(scale[i]) / fc[i]
            assert np.all(np.abs(share[stuck]) <= 1 + 1e-12)
            for g in keep[stuck[keep]]:
                np.testing.assert_allclose(share[group == g], share[g], atol=1e-9)
    assert compared >= 1.5 * _NUM


def _least_largest_utilisation(jac, load, limits):
    """NumPy/SciPy: ``min max_k |f_k|/L_k`` over the stick forces with
    ``Jᵀ f = load`` (a linear programme in ``(f, t)``)."""
    from scipy.optimize import linprog

    m, n = jac.shape
    cost = np.r_[np.zeros(m), 1.0]
    # |f_k| <= t L_k as two inequalities per element.
    rows = np.block([[np.eye(m), -limits[:, None]], [-np.eye(m), -limits[:, None]]])
    out = linprog(
        cost, A_ub=rows, b_ub=np.zeros(2 * m), A_eq=np.c_[jac.T, np.zeros(n)],
        b_eq=load, bounds=[(None, None)] * m + [(0, None)], method="highs",
    )  # fmt: skip
    assert out.status == 0
    return out.x[-1]


def test_redundant_elements_coupled_through_several_coordinates():
    # Three elements on two coordinates, rows (1, 0), (0, 1) and (a, b): the
    # stick forces have a one-dimensional family, which no fixed weighting of
    # the least-norm split keeps inside the limits whenever some member is
    # (Lawson's iteration in `psd_solve` finds it). At rest under a constant
    # load: all three stuck exactly when the least largest utilisation over
    # that family (a linear programme, SciPy) is below 1.
    rng = np.random.default_rng(21)
    num = 48
    mass = np.broadcast_to(np.eye(2), (num, 2, 2))
    jac = np.zeros((num, 3, 2))
    jac[:, 0, 0] = jac[:, 1, 1] = 1.0
    jac[:, 2] = rng.uniform(0.2, 2.0, size=(num, 2)) * rng.choice([-1, 1], (num, 2))
    fs = rng.uniform(0.2, 1.5, size=(num, 3))
    net = rng.normal(size=(num, 2))
    best = np.array(
        [
            _least_largest_utilisation(j, load, limits)
            for j, load, limits in zip(jac, net, fs, strict=True)
        ]
    )
    # Scale each load so its least largest utilisation is 0.97 or 1.03.
    target = np.where(np.arange(num) % 2 == 0, 0.97, 1.03)
    net = net * (target / best)[:, None]
    modes, ok, friction, acc = _run(mass, jac, fs, fs, net, True)
    assert ok.all()
    held = target < 1
    assert np.all(modes[held] == 0)
    np.testing.assert_allclose(acc[held], 0.0, atol=1e-12)
    assert np.all(np.abs(friction[held]) <= fs[held] * (1 + 1e-9))
    generalised = np.einsum("bk,bkn->bn", friction[held], jac[held])
    np.testing.assert_allclose(generalised, net[held], atol=1e-12)
    assert np.all(np.any(modes[~held] != 0, axis=1))


def test_redundant_split_balances_disks_not_rows():
    # A two-row element (a disk, limit 1) and a one-row element (limit 1) on
    # one coordinate under a load F = 2.3, rows j: the least largest
    # utilisation is F / (1 + |j_disk|), the disk's force along j_disk.
    # Balanced per row, the split puts the disk at 1.084 (j = 1, 1, 1),
    # outside although a split inside exists (a ball held with two pins broke
    # away alone, docs/joint_friction.md); with each row's split weight
    # inside the disk it held F / 3.12 where F / (1 + √5) exists (j = 2, 1, 1).
    from jaxfric._math import block_norm
    from jaxfric.simulate._stick import psd_solve

    # With arms a (the disk bounds |f/a|, `IsotropicCoulomb.arms`) the disk's
    # contact force |F| = r contributes |j_disk ⊙ a_disk| r.
    load, limits = 2.3, jnp.ones(3)
    for j, arms in (((1.0, 1.0, 1.0), (1.0, 1.0, 1.0)),
                    ((2.0, 1.0, 1.0), (1.0, 1.0, 1.0)),
                    ((2.0, 1.0, 1.0), (2.0, 1.0, 1.0))):  # fmt: skip
        j, arms = jnp.array(j), jnp.array(arms)
        disk = lambda x, arms=arms: block_norm(x / arms, (2, 1))[0]  # noqa: E731
        a, b = jnp.outer(j, j), load * j
        rows = psd_solve(a, b, limits=limits)
        balanced = psd_solve(a, b, limits=limits, norm=disk)
        best = load / (1 + float(jnp.linalg.norm(j[:2] * arms[:2])))
        assert float(jnp.max(disk(rows))) > 1.01 * best
        np.testing.assert_allclose(disk(balanced), best, rtol=1e-9)
        np.testing.assert_allclose(j @ balanced, load, rtol=1e-12)


def test_many_elements_consistency_certificate():
    # m = 12 coupled elements: no enumeration; the LCP's modes must pass the
    # consistency certificate in NumPy (forces and accelerations from the
    # returned modes), with static limits equal to and above the kinetic ones.
    rng = np.random.default_rng(12)
    num, m = 8, 12
    mass, jac, fc, net, *_ = _random_problems(rng, num, m)
    fs = fc * rng.uniform(1.0, 1.3, size=fc.shape)
    for static in (fc, fs):
        modes, ok, _, _ = _run(mass, jac, fc, static, net, False)
        assert ok.all()
        for i in range(num):
            delassus, free_rate = _delassus(mass[i], jac[i], net[i])
            v = _violation(delassus, free_rate, modes[i], static[i], fc[i])
            assert v <= _REL_TOL
        assert 0.2 < np.mean(modes == 0) < 0.8  # mixed stick and slip


_DIMS = (1, 1, 2, 2)  # vector elements of one and two rows


@jax.jit
def _isotropic_from_rest(mass, jac, fc, fs, net):
    """`isotropic_modes` of all elements from rest for a batch of constant
    systems and `IsotropicCoulomb(fc, fs, dims=_DIMS)` laws."""

    def one(mass, jac, fc, fs, net):
        system = _Constant(mass, jac, *jac.shape[::-1])
        law = jf.friction.IsotropicCoulomb(fc, fs, dims=_DIMS)
        m = system.n_friction
        q = jnp.zeros(system.n_dof)
        return isotropic_modes(
            system, law, q, q, net, jnp.zeros(m, jnp.int32), jnp.ones(m),
            jnp.ones(m, bool), jnp.zeros(m, bool),
        )  # fmt: skip

    return jax.vmap(one)(mass, jac, fc, fs, net)


def test_isotropic_modes_from_rest_are_consistent():
    # Vector elements (1, 1, 2, 2 rows), all at rest, static limits 1 to 1.5
    # times the kinetic levels, and equal to them. Certificate in NumPy from
    # the returned modes and directions: stuck forces inside their disks
    # |F| <= fs, slipping ones accelerating along their direction. The modes
    # come from the disk problem (`disk_lcp`): every one of the 64 must be
    # consistent. (The release heuristic before it left 2 of these 64
    # inconsistent, flagged: the run ended with stick_solve_failed.)
    rng = np.random.default_rng(5)
    num, m = 64, sum(_DIMS)
    mass, jac, _, net, *_ = _random_problems(rng, num, m)
    element = np.repeat(np.arange(len(_DIMS)), _DIMS)
    level = rng.uniform(0.2, 1.5, size=(num, len(_DIMS)))
    fc = level[:, element]
    above = fc * rng.uniform(1.0, 1.5, size=(num, len(_DIMS)))[:, element]
    for fs in (above, fc):
        modes, direction, ok = map(
            np.asarray,
            _isotropic_from_rest(*map(jnp.asarray, (mass, jac, fc, fs, net))),
        )
        assert ok.all()
        _check_isotropic_certificate(mass, jac, net, fc, fs, modes, direction)
        assert 0.1 < np.mean(modes == 0) < 0.9  # mixed stick and slip
    # The batch calls no LAPACK (its calls can hang a CPU `vmap`,
    # `jaxfric._linalg`): the disk problem's blocks use Jacobi rotations.
    lowered = _isotropic_from_rest.lower(*map(jnp.asarray, (mass, jac, fc, fc, net)))
    assert "lapack" not in lowered.as_text().lower()


def _check_isotropic_certificate(mass, jac, net, fc, fs, modes, direction):
    element = np.repeat(np.arange(len(_DIMS)), _DIMS)
    for i in range(len(modes)):
        delassus, free_rate = _delassus(mass[i], jac[i], net[i])
        stuck = modes[i] == 0
        f = np.where(stuck, 0.0, fc[i] * direction[i])
        if stuck.any():
            block = delassus[np.ix_(stuck, stuck)]
            rhs = free_rate[stuck] - delassus[np.ix_(stuck, ~stuck)] @ f[~stuck]
            f[stuck] = np.linalg.solve(block, rhs)
        rate = free_rate - delassus @ f
        for k in range(len(_DIMS)):
            rows = element == k
            assert len(set(modes[i, rows])) == 1  # one mode per element
            if stuck[rows].all():
                assert np.linalg.norm(f[rows]) <= fs[i, rows][0] * (1 + _REL_TOL)
            else:
                a, u = rate[rows], direction[i, rows]
                along = a @ u
                scale = _REL_TOL * np.max(np.abs(delassus)) * fs[i].max()
                assert along >= -scale
                assert np.linalg.norm(a - along * u) <= 1e-6 * abs(along) + scale


# --- two elements on one coordinate of an oscillator, end to end ---


class _OnSprings(jf.systems.AbstractSystem):
    """Unit masses on unit springs (``q̈ = τ − q − Jᵀ f``) with friction rows
    `jac`: ``[[1], [a]]`` is a slider and a pinion of radius ``1/a`` on its
    rack, a singular Delassus matrix when both stick."""

    jac: jax.Array
    n_dof: int = eqx.field(static=True)
    n_friction: int = eqx.field(static=True)

    def __init__(self, jac):
        self.jac = jac
        self.n_friction, self.n_dof = jac.shape

    def mass_matrix(self, q):
        return jnp.eye(self.n_dof)

    def bias_force(self, q, qd):
        return q

    def friction_jacobian(self, q):
        return self.jac

    def friction_jacobian_dot_qd(self, q, qd):
        return jnp.zeros(self.n_friction)


_OMEGA = 0.5
_T1 = 8.0
_TS = jnp.linspace(0.0, _T1, 161)


@jax.jit
def _two_on_one_jit(fc, fs, amplitude, ratio):
    return jf.simulate(
        _OnSprings(jnp.stack([jnp.ones(1), ratio[None]])),
        jf.Coulomb(fc, fs),
        q0=jnp.zeros(1),
        qd0=jnp.zeros(1),
        t1=_T1,
        force=jf.forces.Sine(amplitude, _OMEGA),
        ts=_TS,
        max_events=20,
        throw=False,
    )


def _two_on_one(fc, fs, amplitude, ratio=1.0):
    # The ratio as an array: one compilation for every ratio.
    return _two_on_one_jit(fc, fs, amplitude, jnp.asarray(ratio, jnp.float64))


def _slip_forward(t, t0, amplitude, level):
    """``ẍ + x = A sin(ωt) − level`` from rest at ``x = 0`` at ``t0``."""
    gain = amplitude / (1 - _OMEGA**2)
    x_p = gain * np.sin(_OMEGA * t) - level
    c1 = -(gain * np.sin(_OMEGA * t0) - level)
    c2 = -gain * _OMEGA * np.cos(_OMEGA * t0)
    # Homogeneous part in (t − t0): x_h = c1 cos + c2 sin.
    x_h = c1 * np.cos(t - t0) + c2 * np.sin(t - t0)
    v = gain * _OMEGA * np.cos(_OMEGA * t) - c1 * np.sin(t - t0) + c2 * np.cos(t - t0)
    return x_p + x_h, v


@pytest.mark.parametrize("kinetic", [1.0, 0.8])
def test_two_elements_on_one_coordinate(kinetic):
    # Static limits 0.5 and 1.0 (kinetic levels `kinetic` times those). Stuck,
    # bit still, while the force is below the summed limit 1.5 (the spring is
    # unstretched); breakaway when A sin(ωt) = 1.5; then one slip of the
    # merged element, level 1.5·kinetic, in closed form.
    fs = jnp.array([0.5, 1.0])
    below = _two_on_one(kinetic * fs, fs, 1.45)
    assert below.result == jf.RESULTS.successful
    assert int(below.stats["num_events"]) == 0
    assert np.all(np.asarray(below.q) == 0.0) and np.all(np.asarray(below.qd) == 0.0)
    assert np.all(np.asarray(below.modes) == 0)
    friction, load = np.asarray(below.friction), 1.45 * np.sin(_OMEGA * _TS)
    np.testing.assert_allclose(friction.sum(axis=1), load, atol=1e-12)
    # The load shared in proportion to the limits.
    np.testing.assert_allclose(friction, np.outer(load, fs) / 1.5, atol=1e-12)

    amplitude = 2.0
    sol = _two_on_one(kinetic * fs, fs, amplitude)
    assert sol.result == jf.RESULTS.successful
    breakaway = np.arcsin(1.5 / amplitude) / _OMEGA
    assert abs(float(sol.event_times[0]) - breakaway) < _EVENT_TOL
    ts, q, modes = np.asarray(_TS), np.asarray(sol.q[:, 0]), np.asarray(sol.modes)
    stuck = ts < breakaway
    assert np.all(q[stuck] == 0.0) and np.all(modes[stuck] == 0)
    # First slip: forward until the velocity is zero again (closed form).
    fine = np.linspace(breakaway, _T1, 200001)
    _, v = _slip_forward(fine, breakaway, amplitude, 1.5 * kinetic)
    stop = fine[1:][np.argmax(v[1:] <= 0)]
    slipping = (ts > breakaway) & (ts < stop)
    assert slipping.sum() > 10
    x, _ = _slip_forward(ts[slipping], breakaway, amplitude, 1.5 * kinetic)
    np.testing.assert_allclose(q[slipping], x, atol=_STATE_TOL)
    assert np.all(modes[slipping] == 1)
    np.testing.assert_allclose(
        np.asarray(sol.friction)[slipping],
        kinetic * np.broadcast_to(fs, (slipping.sum(), 2)),
    )


@pytest.mark.parametrize("kinetic", [1.0, 0.8])
@pytest.mark.parametrize("ratio", [0.01, -50.0])
def test_redundant_elements_with_unequal_ratios(ratio, kinetic):
    # The pinion's limit is worth 1.0 on the slider's coordinate (1/|a|, in
    # its own unit): the pair holds the load up to 0.5 + 1.0 = 1.5 together
    # and must move exactly like the ratio-1 pair above. Splitting the stuck
    # load by the plain limits put the pinion at |a|·(its share) and released
    # it alone: both ratios spent `max_events` at a false breakaway (0.52 s
    # and 1.06 s instead of 1.70 s).
    fs = jnp.array([0.5, 1.0 / abs(ratio)])
    sol = _two_on_one(kinetic * fs, fs, 2.0, ratio)
    ref = _two_on_one(kinetic * jnp.array([0.5, 1.0]), jnp.array([0.5, 1.0]), 2.0)
    assert sol.result == jf.RESULTS.successful
    breakaway = np.arcsin(1.5 / 2.0) / _OMEGA
    assert abs(float(sol.event_times[0]) - breakaway) < _EVENT_TOL
    np.testing.assert_allclose(np.asarray(sol.q), np.asarray(ref.q), atol=1e-12)
    stuck_modes = np.asarray(sol.modes) == 0
    np.testing.assert_array_equal(stuck_modes, np.asarray(ref.modes) == 0)
    # While stuck: the generalised friction is the load, and both elements
    # are at the same fraction of their limits.
    ts, modes = np.asarray(_TS), np.asarray(sol.modes)
    stuck = (ts < breakaway) & np.all(modes == 0, axis=1)
    friction = np.asarray(sol.friction)[stuck]
    load = 2.0 * np.sin(_OMEGA * ts[stuck])
    np.testing.assert_allclose(friction @ np.array([1.0, ratio]), load, atol=1e-12)
    share = friction * np.array([1.0, np.sign(ratio)]) / np.asarray(fs)
    np.testing.assert_allclose(share[:, 0], share[:, 1], atol=1e-12)
    assert np.all(np.abs(share) <= 1 + 1e-12)


class _Ramp(jf.forces.AbstractStatelessForce):
    rate: jax.Array

    def __call__(self, t, q, qd):
        return self.rate * t


@jax.jit
@jax.vmap
def _three_on_two(row, fs, rate):
    return jf.simulate(
        _OnSprings(jnp.concatenate([jnp.eye(2), row[None]])),
        jf.Coulomb(fs, fs),
        q0=jnp.zeros(2),
        qd0=jnp.zeros(2),
        t1=3.0,
        force=_Ramp(rate),
        ts=jnp.linspace(0.0, 3.0, 31),
        max_events=16,
        throw=False,
    )


def test_coupled_redundant_elements_break_away_at_the_least_largest_utilisation():
    # At rest under the load r·t the three stuck elements hold exactly until
    # t* = 1/ρ, ρ the least largest utilisation of the load r (a linear
    # programme, SciPy): the breakaway event at t*, the state bit still before.
    rng = np.random.default_rng(0)
    num = 6
    rows = rng.uniform(0.2, 2.0, (num, 2)) * rng.choice([-1, 1], (num, 2))
    fs = rng.uniform(0.2, 1.5, (num, 3))
    rates = rng.normal(size=(num, 2))
    jacs = np.concatenate([np.broadcast_to(np.eye(2), (num, 2, 2)), rows[:, None]], 1)
    best = np.array(
        [
            _least_largest_utilisation(j, r, s)
            for j, r, s in zip(jacs, rates, fs, strict=True)
        ]
    )
    breakaway = rng.uniform(0.5, 2.5, num)
    rates = rates / (best * breakaway)[:, None]
    sol = _three_on_two(*map(jnp.asarray, (rows, fs, rates)))
    assert np.all(sol.result == jf.RESULTS.successful)
    np.testing.assert_allclose(np.asarray(sol.event_times[:, 0]), breakaway, atol=1e-9)
    ts, q = np.asarray(sol.ts), np.asarray(sol.q)
    before = ts < breakaway[:, None]
    assert before.sum() > num and np.all(q[before] == 0.0)


# --- a redundant stuck element whose redundancy holds only at rest ---


class _Lever(jf.systems.AbstractSystem):
    """Two unit masses, no springs; element C on ``x₁``, A on ``x₂`` and B with
    the row ``[k x₁, 1 + g x₁²]``. At ``x₁ = 0`` the rows of A and B are
    equal: with ``k = 0`` they stay parallel at every ``x₁`` (a redundancy
    that holds everywhere), with ``k ≠ 0`` only there (as the 3-PPRS's pin
    and slider, `creep_directions`)."""

    k: jax.Array
    g: jax.Array
    n_dof: int = eqx.field(static=True, default=2)
    n_friction: int = eqx.field(static=True, default=3)

    def mass_matrix(self, q):
        return jnp.eye(2)

    def bias_force(self, q, qd):
        return jnp.zeros(2)

    def friction_jacobian(self, q):
        lever = jnp.stack([self.k * q[0], 1 + self.g * q[0] ** 2])
        return jnp.stack([jnp.array([1.0, 0.0]), jnp.array([0.0, 1.0]), lever])

    def friction_jacobian_dot_qd(self, q, qd):
        bend = self.k * qd[0] ** 2 + 2 * self.g * q[0] * qd[0] * qd[1]
        return jnp.stack([0.0, 0.0, bend])


_LEVER_TS = jnp.linspace(0.0, 2.0, 401)


@jax.jit
@jax.vmap
def _lever(k, g):
    # C: limits 1.0/0.8, under the load t on x₁ from rest: breaks away at t = 1.
    # A and B share x₂ (no load on it): B's kinetic level 0.5 is held by A's 1.0.
    return jf.simulate(
        _Lever(k, g),
        jf.Coulomb(jnp.array([0.8, 1.0, 0.5]), jnp.array([1.0, 1.0, 0.6])),
        q0=jnp.zeros(2),
        qd0=jnp.zeros(2),
        t1=2.0,
        force=_Ramp(jnp.array([1.0, 0.0])),
        ts=_LEVER_TS,
        max_events=16,
        throw=False,
    )


def test_element_redundant_only_at_rest_slips_from_the_breakaway():
    # When C breaks away at t = 1, B's row equals A's, so B can be "stuck"
    # with A holding x₂; but as x₁ moves, B stuck would stop x₁ through the
    # lever k x₁ with a force growing like 1/x₁. B slips from t = 1 on, its
    # slip k x₁ ẋ₁ growing like (t − 1)³ in the direction sign(k), at its
    # kinetic level 0.5, which A holds. Then ẍ₁ = t − 0.8 − 0.5 |k| x₁ (B's
    # force on x₁ through the lever): a closed form. Before the fix B stayed
    # "stuck" while its slip velocity crept (the solve dropped its row), and
    # broke away only once its pivot passed the zero-pivot tolerance.
    # k = 0: B's row stays parallel to A's and B stays stuck, bit still.
    ks = np.array([1.0, -2.0, 0.0])
    sol = _lever(jnp.asarray(ks), jnp.array([0.0, 0.0, 1.0]))
    assert np.all(sol.result == jf.RESULTS.successful)
    np.testing.assert_array_equal(np.asarray(sol.stats["num_events"]), [1, 1, 1])
    np.testing.assert_allclose(np.asarray(sol.event_times[:, 0]), 1.0, atol=1e-9)
    ts = np.asarray(_LEVER_TS)
    before, after = ts < 1.0, ts > 1.0
    modes, slip = np.asarray(sol.modes), np.asarray(sol.slip_velocity)
    q, qd = np.asarray(sol.q), np.asarray(sol.qd)
    for i, k in enumerate(ks):
        assert np.all(modes[i, before] == 0) and np.all(q[i, before] == 0.0)
        assert np.all(modes[i, after, 0] == 1) and np.all(modes[i, after, 1] == 0)
        assert np.all(q[i, :, 1] == 0.0) and np.all(qd[i, :, 1] == 0.0)
        # Every stuck element's slip velocity is exactly zero.
        assert np.all(slip[i][modes[i] == 0] == 0.0)
        kappa = 0.5 * abs(k)
        if k == 0:
            assert np.all(modes[i, :, 2] == 0)
            t = ts[after] - 1.0
            x = 0.1 * t**2 + t**3 / 6
        else:
            assert np.all(modes[i, after, 2] == np.sign(k))
            friction = np.asarray(sol.friction)[i, after, 2]
            np.testing.assert_allclose(friction, 0.5 * np.sign(k))
            w, t = np.sqrt(kappa), ts[after] - 1.0
            # x'' + κx = t − 0.8 from rest at t = 1.
            x = (ts[after] - 0.8 - 0.2 * np.cos(w * t) - np.sin(w * t) / w) / kappa
        np.testing.assert_allclose(q[i, after, 0], x, atol=1e-8)


def test_independent_friction_rows_are_declared_only_where_they_are():
    # Systems that declare `independent_friction_rows` skip the least-norm
    # split of redundant stick forces (not compiled): their J must have full
    # row rank at any state. Bodies on several contacts, closed chains and
    # ball joints (their gimbal axes at gimbal lock, where armature keeps M
    # regular) may have dependent rows and do not declare it.
    branched, _ = load_urdf(Path(__file__).parent / "data" / "branched.urdf")
    ball = jf.systems.RigidBodyTree(
        [-1, 0, 1], ["revolute"] * 3, np.eye(3), np.zeros((3, 3)),
        mass=[0.0, 0.0, 1.0], com=np.zeros((3, 3)),
        inertia=[np.zeros((3, 3))] * 2 + [np.eye(3)], friction_joints=[(0, 1, 2)],
    )  # fmt: skip
    declared = [
        jf.systems.Oscillator(mass=1.0, stiffness=1.0),
        jf.systems.TwoMass(1.0, 2.0),
        jf.systems.StackedBlocks(m1=1.0, m2=2.0),
        jf.systems.TwoLinkArm(1.0, 0.8, 0.5, 0.4, 0.25, 0.2, 0.02, 0.01),
        branched,
    ]
    rng = np.random.default_rng(0)
    for system in declared:
        assert system.independent_friction_rows
        for _ in range(5):
            q = jnp.asarray(rng.uniform(-1.0, 1.0, system.n_dof))
            jac = np.asarray(system.friction_jacobian(q))
            assert np.linalg.matrix_rank(jac) == system.n_friction
    # Free bodies on one point contact each (spheres), with one penalty
    # joint between them: declared, full rank at random attitudes.
    contact = jf.systems.PlaneContact(0.1, 1e5, 10.0)
    joint = jf.systems.PenaltyJoint(0, 1, np.zeros(3), np.zeros(3), [0, 0, 1],
                                    [0, 0, 1], 1e4, 1.0, 1e2, 0.1)  # fmt: skip
    spheres = jf.systems.FreeBodies(
        [1.0, 2.0], [[0.1, 0.1, 0.1]] * 2, contact=contact, joints=[joint]
    )
    assert spheres.independent_friction_rows
    for _ in range(5):
        q = rng.uniform(-1.0, 1.0, (2, 7))
        q[:, 3:] /= np.linalg.norm(q[:, 3:], axis=1, keepdims=True)
        jac = np.asarray(spheres.friction_jacobian(jnp.asarray(q.reshape(-1))))
        assert np.linalg.matrix_rank(jac) == spheres.n_friction == 5
    # A box on its corners (eight rows, none with v_z: rank at most 5), or
    # on them as a patch, whose spin row vanishes with one corner loaded:
    # not declared.
    corners = [[x, y, -0.05] for x in (-0.1, 0.1) for y in (-0.05, 0.05)]
    box = jf.systems.FreeBodies(
        [1.0], [[0.1, 0.1, 0.1]],
        contact=jf.systems.PlaneContact(0.0, 1e5, 10.0, centres=corners),
    )  # fmt: skip
    patch = jf.systems.FreeBodies(
        [1.0], [[0.1, 0.1, 0.1]],
        contact=jf.systems.PlaneContact(0.0, 1e5, 10.0, centres=corners, patch=True),
    )  # fmt: skip
    assert not box.independent_friction_rows
    assert not patch.independent_friction_rows
    # Tilted 10° about (1, −1, 0): one corner 7.7 mm deep, the others above
    # (the depth matters to the patch only: r = 0).
    half, axis = np.radians(5.0), np.array([1.0, -1.0, 0.0]) / np.sqrt(2)
    q = jnp.asarray(np.r_[0.0, 0.0, 0.06, np.cos(half), np.sin(half) * axis])
    assert np.linalg.matrix_rank(np.asarray(box.friction_jacobian(q))) == 5
    assert np.linalg.matrix_rank(np.asarray(patch.friction_jacobian(q))) == 2
    assert not ball.independent_friction_rows
    lock = jnp.array([0.0, np.pi / 2, 0.0])
    assert np.linalg.matrix_rank(np.asarray(ball.friction_jacobian(lock))) == 2
    assert not jf.systems.ClosedChain.independent_friction_rows
