"""Closed kinematic chains: a `RigidBodyTree` cut open at loop joints, closed
again by holonomic constraints ``Φ(q) = 0``, simulated in independent
coordinates.

Coordinate partitioning (Farhat et al. 2010, Eq. 2–3; Wehage & Haug 1982): the
tree coordinates split into independent ``z`` (e.g. the actuated joints) and
dependent ``y``. At every evaluation ``y(z)`` is solved from ``Φ(z, y) = 0`` by
Gauss–Newton, so closure holds to the solver tolerance along any trajectory (no
drift, no Baumgarte terms). With ``R = ∂q/∂z`` (``R_z = I``,
``R_y = −Φ_y⁺ Φ_z``) and ``q̈ = R z̈ + c``, ``c_y = −Φ_y⁺ (Φ̇_q q̇)``, the
tree's equations ``M q̈ + h = τ + Φ_qᵀ λ − J_tᵀ f`` projected on ``Rᵀ``
(``Φ_q R = 0`` removes ``λ``) give a system of the usual form in ``z``:

    (Rᵀ M R) z̈ = Rᵀ τ − Rᵀ (M c + h) − (J_t R)ᵀ f,

(``J_t`` the tree's friction Jacobian: rows of single joints, or a ball
element's relative angular velocity), so the switch path, the smooth laws,
identification and optimisation run on it unchanged. ``Φ_y⁺`` is a
least-squares inverse: redundant closure equations (a planar loop closed by
a spatial joint) are allowed as long as they are consistent and fix every
dependent coordinate.
"""

from collections.abc import Sequence
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from .._check import check_finite, check_range, is_concrete
from .._linalg import (
    det,
    lstsq_solve,
    lu_solve_det,
    min_norm_solve,
    singular_values,
)
from .._types import Array, Float, Jacobian, Matrix, SlipVector, Vector
from ._base import AbstractSystem, ConfigurationStatus, Dynamics, JointReactions
from .rigid import _dynamics, _kinematics, _spatial as sp
from .rigid._system import RigidBodyTree, friction_joint_reactions, joint_indices

LOOP_KINDS = {"ball": 3, "revolute": 5, "prismatic": 5, "weld": 6}
# `ClosedChain.configuration_status`: ``Φ_y`` counts as (nearly) singular
# below this ratio of its extreme singular values (a condition number above
# 1e3). At a toggle (a fold of ``y(z)``) the smallest one falls like the
# square root of the distance: a non-Grashof four-bar's crank driven into its
# toggle stopped (`max_steps`) 1.5e-6 rad short of it, ratio 8e-4 (measured),
# and the ratio is below 1e-3 only within ~2e-6 rad of the toggle.
SINGULAR_RATIO = 1e-3
# `ClosedChain._newton`'s branch following: at most this many continuation
# stages (a non-Grashof four-bar's crank taken 3.2 rad from its guess, to
# within 0.01 rad of its toggle, took at most 16, measured), and the stride (a
# fraction of the way from the guess) not below this.
MAX_STAGES = 64
MIN_STRIDE = 1e-6


def _perpendicular(axis: np.ndarray) -> np.ndarray:
    """Two unit vectors completing `axis` to an orthonormal basis, ``(2, 3)``."""
    helper = np.eye(3)[int(np.argmin(np.abs(axis)))]
    n1 = np.cross(axis, helper)
    n1 /= np.linalg.norm(n1)
    return np.stack([n1, np.cross(axis, n1)])


class LoopJoint(eqx.Module):
    """A loop-closure joint between frame A, fixed to link `link_a`, and frame B,
    fixed to link `link_b`, of a `RigidBodyTree`.

    At an assembled configuration the two frames coincide (a prismatic joint:
    same orientation, B's origin on A's axis). The closure equations, in the
    world frame with ``d = p_B − p_A`` and the rotation error
    ``e = vee(R_Aᵀ R_B − R_Bᵀ R_A)/2`` (zero for equal orientations):

    - ``"ball"`` (spherical joint, 3 equations): ``d = 0``;
    - ``"revolute"`` about `axis` ``u`` (5): ``d = 0`` and ``(R_A n_k)·(R_B u)
      = 0`` for the two directions ``n_k ⟂ u``;
    - ``"prismatic"`` along ``u`` (5): ``(R_A n_k)·d = 0`` and ``e = 0``;
    - ``"weld"`` (6): ``d = 0`` and ``e = 0``.

    Args:
        kind: ``"ball"``, ``"revolute"``, ``"prismatic"`` or ``"weld"``.
        link_a, link_b: link names of the tree (`RigidBodyTree.model.link_names`,
            the base link included).
        translation_a, translation_b: origins of frames A and B in their link
            frames, m, shape ``(3,)`` (default the link origin).
        rotation_a, rotation_b: axes of frames A and B in their link frames,
            ``(3, 3)`` (default identity).
        axis: joint axis in frame A (revolute, prismatic), normalised here.
    """

    kind: str = eqx.field(static=True)
    link_a: str = eqx.field(static=True)
    link_b: str = eqx.field(static=True)
    translation_a: Float[Array, "3"]
    translation_b: Float[Array, "3"]
    rotation_a: Float[Array, "3 3"]
    rotation_b: Float[Array, "3 3"]
    axis: tuple[float, float, float] = eqx.field(static=True)

    def __init__(
        self,
        kind: str,
        link_a: str,
        link_b: str,
        *,
        translation_a=(0.0, 0.0, 0.0),
        translation_b=(0.0, 0.0, 0.0),
        rotation_a=None,
        rotation_b=None,
        axis=(0.0, 0.0, 1.0),
    ):
        if kind not in LOOP_KINDS:
            raise ValueError(
                f"loop joint kind {kind!r} is not supported; allowed "
                f"{tuple(LOOP_KINDS)}."
            )
        if link_a == link_b:
            raise ValueError(f"a loop joint needs two links; got {link_a!r} twice.")
        self.kind = kind
        self.link_a = str(link_a)
        self.link_b = str(link_b)
        arrays = {}
        for name, value, shape in (
            ("translation_a", translation_a, (3,)),
            ("translation_b", translation_b, (3,)),
            ("rotation_a", np.eye(3) if rotation_a is None else rotation_a, (3, 3)),
            ("rotation_b", np.eye(3) if rotation_b is None else rotation_b, (3, 3)),
        ):
            arr = jnp.asarray(value, dtype=float)
            if arr.shape != shape:
                raise ValueError(f"`{name}` must have shape {shape}; got {arr.shape}.")
            check_finite(name, arr)
            arrays[name] = arr
        self.translation_a = arrays["translation_a"]
        self.translation_b = arrays["translation_b"]
        self.rotation_a = arrays["rotation_a"]
        self.rotation_b = arrays["rotation_b"]
        u = np.asarray(axis, dtype=float)
        norm = np.linalg.norm(u) if u.shape == (3,) else np.nan
        if not np.isfinite(norm) or norm < 1e-12:
            raise ValueError(f"`axis` must be a non-zero 3-vector; got {axis!r}.")
        self.axis = tuple(float(x) for x in u / norm)

    @property
    def n_equations(self) -> int:
        """Number of closure equations (3, 5, 5 or 6)."""
        return LOOP_KINDS[self.kind]

    def residual(self, rot_a, pos_a, rot_b, pos_b) -> Float[Array, " k"]:
        """Closure residual from the world poses of frames A and B (m, and
        dimensionless for orientations); zero when the joint is assembled."""
        d = pos_b - pos_a
        rel = rot_a.T @ rot_b
        e = 0.5 * jnp.stack(
            [rel[2, 1] - rel[1, 2], rel[0, 2] - rel[2, 0], rel[1, 0] - rel[0, 1]]
        )
        u = np.asarray(self.axis)
        normals = jnp.asarray(_perpendicular(u)) @ rot_a.T  # n_k in world
        if self.kind == "ball":
            return d
        if self.kind == "weld":
            return jnp.concatenate([d, e])
        if self.kind == "revolute":
            return jnp.concatenate([d, normals @ (rot_b @ u)])
        return jnp.concatenate([normals @ d, e])  # prismatic


class ClosedChain(AbstractSystem):
    """A closed-chain mechanism: a `RigidBodyTree` with loop-closure joints,
    simulated in its independent coordinates (coordinate partitioning,
    Farhat et al. 2010, Eq. 2–3).

    The state of a simulation is ``(z, ż)``, the independent coordinates and
    their velocities; `assemble` gives the full tree coordinates ``q(z)``.
    Applied forces are generalised forces along ``z``: for actuators on the
    independent joints (the usual choice) they are the actuator forces. Friction
    elements sit on tree joints (`RigidBodyTree.friction_joints`), active or
    passive; their slip velocities are those joints' velocities, ``s = E_f R ż``,
    and a ball element's (three gimbal joints, `RigidBodyTree`) is the ball's
    angular velocity relative to its socket, ``s = E(q) R_b ż`` (``R_b`` the
    gimbal joints' rows of ``R``); in general ``s = J_t(q) R ż``.

    The dependent coordinates are solved at every evaluation by continuation
    from the assembly configuration `q_guess` (one Gauss–Newton solve near it;
    predictor–corrector stages along the branch farther away), so a trajectory
    stays on the branch (assembly mode) of `q_guess` and closure holds to `tol`
    (m, rad) everywhere. The cost of an evaluation grows with the distance from
    `q_guess`: put it near the middle of the motion. Their derivatives are
    the implicit-function ones,
    ``∂y/∂(z, θ) = −Φ_y⁺ ∂Φ/∂(z, θ)`` (a custom JVP, itself differentiable, so
    higher derivatives are exact too). Where the solve fails (a singular
    configuration, the dependent Jacobian ``Φ_y`` losing rank, or a
    configuration that cannot be assembled), every quantity is NaN; a trial
    step into such a region is rejected and retried shorter, and a simulation
    that cannot go on reports the cause (`configuration_status` at the state
    where it stopped): `RESULTS.singular_configuration` or
    `RESULTS.closure_failed`.

    Args:
        tree: the mechanism with its loops cut: every joint, active and passive.
        loops: the `LoopJoint` s that close it.
        independent: the independent coordinates (tree joint indices or names),
            as many as the mechanism's degrees of freedom. Default: chosen at
            `q_guess` by QR with column pivoting on ``Φ_q`` (the dependent ones
            are the best-conditioned pivots).
        q_guess: a configuration of the tree near the assembly mode to follow,
            rad or m, shape ``(n_tree,)`` (default zeros); it is assembled at
            construction (its independent entries kept).
        tol: closure tolerance on the residual's largest entry, m or rad,
            ``> 0`` (default 1e-12).
        max_iterations: Gauss–Newton iterations at most (default 30).
    """

    tree: RigidBodyTree
    loops: tuple[LoopJoint, ...]
    independent: tuple[int, ...] = eqx.field(static=True)
    dependent: tuple[int, ...] = eqx.field(static=True)
    q_guess: Float[Array, " tree"]
    tol: float = eqx.field(static=True)
    max_iterations: int = eqx.field(static=True)
    _frames: tuple[tuple[int, int], ...] = eqx.field(static=True)
    # ``Φ_q`` at `q_guess`: the branch test and first predictor of `_newton`
    # (kept, not recomputed at each of its evaluation sites: compile time).
    # It only steers the solve, so a `tree_at` that changes the tree's numbers
    # may leave it as it is.
    _guess_jacobian: Float[Array, "k tree"]

    # diffrax's stage loop instead of written-out stages (measured on the
    # 2-core CPU, same results to 3e-13): first calls 13-30 % shorter, a single
    # run 1.3-1.6x faster (four-bar with reaction-load friction 60 -> 37 ms;
    # bench_closed_chain 21 -> 15 ms), a vmap batch of 64 unchanged (15 ms).
    unrolled_stages: ClassVar[bool] = False

    def __init__(
        self,
        tree: RigidBodyTree,
        loops: Sequence[LoopJoint],
        independent: Sequence[int | str] | None = None,
        q_guess=None,
        *,
        tol: float = 1e-12,
        max_iterations: int = 30,
    ):
        if not isinstance(tree, RigidBodyTree):
            raise TypeError(f"`tree` must be a RigidBodyTree; got {type(tree)}.")
        loops = tuple(loops)
        if not loops or not all(isinstance(lp, LoopJoint) for lp in loops):
            raise ValueError("`loops` must be a non-empty sequence of LoopJoint.")
        check_range("tol", tol, lower=0.0, lower_open=True)
        if int(max_iterations) < 1:
            raise ValueError(f"`max_iterations` must be >= 1; got {max_iterations}.")
        names = tree.model.link_names
        # A ball element's reaction is its third joint's wrench: its gimbal
        # links (the first two joints' children) must carry nothing else.
        inner = {
            j for row in tree.ball_rows for j in tree.friction_joints[row : row + 2]
        }
        gimbals = {
            name
            for name, body in zip(names, tree.model.link_bodies, strict=True)
            if body in inner
        }
        frames = []
        for lp in loops:
            for link in (lp.link_a, lp.link_b):
                if link not in names:
                    raise ValueError(
                        f"loop joint {lp.kind!r}: no link named {link!r}; links are "
                        f"{names}."
                    )
                if link in gimbals:
                    raise ValueError(
                        f"loop joint {lp.kind!r}: link {link!r} is a gimbal link of "
                        "a ball-joint friction element, which must carry nothing "
                        "else (its reaction is one force)."
                    )
            frames.append((names.index(lp.link_a), names.index(lp.link_b)))
        n = tree.n_dof
        q_guess = jnp.zeros(n) if q_guess is None else jnp.asarray(q_guess, float)
        if q_guess.shape != (n,):
            raise ValueError(
                f"`q_guess` must have shape ({n},), one entry per movable joint of "
                f"the tree; got {q_guess.shape}."
            )
        check_finite("q_guess", q_guess)
        self.tree = tree
        self.loops = loops
        self._frames = tuple(frames)
        self.tol = float(tol)
        self.max_iterations = int(max_iterations)
        self.q_guess = q_guess
        self._guess_jacobian = jnp.zeros((self.n_equations, n))  # set below
        concrete = is_concrete(q_guess) and all(
            is_concrete(x) for x in jax.tree.leaves(eqx.filter(tree, eqx.is_array))
        )
        if independent is None:
            if not concrete:
                raise ValueError(
                    "`independent` must be given when the tree or `q_guess` is traced "
                    "(the automatic choice needs concrete values)."
                )
            # Provisional partition, so that the module is complete for `jit`.
            self.independent, self.dependent = (), tuple(range(n))
            independent = _choose_independent(self.closure_jacobian(q_guess))
        self.independent = joint_indices("independent", independent, tree.joint_names)
        self.dependent = tuple(i for i in range(n) if i not in self.independent)
        if concrete:
            self.q_guess = self._assembled_guess()
        self._guess_jacobian = self.closure_jacobian(self.q_guess)

    # -- construction-time checks -------------------------------------------------

    def _assembled_guess(self) -> Array:
        """`q_guess` (concrete) assembled, after checking that the loops fix
        exactly the dependent coordinates there; raise naming the problem
        otherwise."""
        jac = np.asarray(self.closure_jacobian(self.q_guess))
        rank = _rank(jac)
        n, k = self.tree.n_dof, len(self.independent)
        if rank != n - k:
            raise ValueError(
                f"the loops fix {rank} of the tree's {n} coordinates at `q_guess`, so "
                f"the mechanism has {n - rank} degrees of freedom; got {k} "
                f"independent coordinates {self.independent}."
            )
        z0 = self.q_guess[jnp.asarray(self.independent)]
        y, ok, res = _newton_jit(self, z0, follow=False)
        if not bool(ok):
            raise ValueError(
                "`q_guess` cannot be assembled: Gauss–Newton on the closure "
                f"equations ended with residual {float(res):.3e} > tol={self.tol} "
                "(give a configuration closer to an assembled one, or other "
                "independent coordinates)."
            )
        q = self._full(z0, y)
        jac = np.asarray(self.closure_jacobian(q))
        dep_rank = _rank(jac[:, list(self.dependent)]) if self.dependent else 0
        if dep_rank != len(self.dependent):
            raise ValueError(
                f"the independent coordinates {self.independent} cannot drive the "
                "mechanism at `q_guess`: the closure Jacobian of the dependent "
                f"coordinates {self.dependent} has rank {dep_rank} < "
                f"{len(self.dependent)} (choose other independent joints, or leave "
                "`independent` to the automatic choice)."
            )
        return q

    # -- sizes ----------------------------------------------------------------------

    @property
    def n_dof(self) -> int:
        return len(self.independent)

    @property
    def n_friction(self) -> int:
        return self.tree.n_friction

    @property
    def vector_elements(self) -> tuple[tuple[int, int], ...]:
        """The tree's ball-joint elements (`RigidBodyTree.vector_elements`)."""
        return self.tree.vector_elements

    @property
    def n_equations(self) -> int:
        """Number of closure equations (redundant ones included)."""
        return sum(lp.n_equations for lp in self.loops)

    def parameter_checks(self):
        return self.tree.parameter_checks()

    # -- kinematics -------------------------------------------------------------------

    def _loop_frames(self, q):
        """World poses ``(R_A, p_A, R_B, p_B)`` of every loop's two frames."""
        rot, pos = _kinematics.link_poses(self.tree.model, q)
        poses = []
        for lp, (a, b) in zip(self.loops, self._frames, strict=True):
            rot_a, pos_a = sp.compose(rot[a], pos[a], lp.rotation_a, lp.translation_a)
            rot_b, pos_b = sp.compose(rot[b], pos[b], lp.rotation_b, lp.translation_b)
            poses.append((rot_a, pos_a, rot_b, pos_b))
        return poses

    @eqx.filter_jit
    def closure_residual(self, q: Float[Array, " tree"]) -> Float[Array, " k"]:
        """``Φ(q)``: the closure equations of every loop at tree coordinates `q`,
        m (positions) and dimensionless (orientations)."""
        poses = self._loop_frames(q)
        return jnp.concatenate(
            [lp.residual(*pose) for lp, pose in zip(self.loops, poses, strict=True)]
        )

    def _residual_and_jacobian(self, q):
        """``(Φ(q), Φ_q(q))``. The Jacobian is assembled from each frame's
        twist Jacobian (the world motion subspaces of the joints between it and
        the base, Featherstone 2008, Eq. 4.16) and ``∂Φ/∂ξ``, the residual's
        derivative with respect to a virtual world twist of each frame: one
        forward-kinematics pass, no differentiation through the tree."""
        poses = self._loop_frames(q)
        st, _, _, (s_w, s_v), _ = _dynamics._world(self.tree.model, q)
        columns = jnp.concatenate([s_w, s_v], axis=1).T  # (6, n_tree)
        ancestors = st.ancestors
        bodies = self.tree.model.link_bodies
        phis, jacs = [], []
        for lp, pose, (a, b) in zip(self.loops, poses, self._frames, strict=True):
            phi, (g_a, g_b) = _twist_derivatives(lp, *pose)
            jac = jnp.zeros((lp.n_equations, self.tree.n_dof), dtype=q.dtype)
            for link, g in ((a, g_a), (b, g_b)):
                if bodies[link] >= 0:
                    moved = jnp.where(ancestors[bodies[link]], columns, 0.0)
                    jac = jac + g @ moved
            phis.append(phi)
            jacs.append(jac)
        return jnp.concatenate(phis), jnp.concatenate(jacs)

    @eqx.filter_jit
    def closure_jacobian(self, q: Float[Array, " tree"]) -> Float[Array, "k tree"]:
        """``Φ_q(q)``, shape ``(n_equations, n_tree)``."""
        return self._residual_and_jacobian(q)[1]

    def _full(self, z, y):
        q = jnp.zeros(self.tree.n_dof, dtype=jnp.result_type(z, y))
        q = q.at[jnp.asarray(self.independent, int)].set(z)
        if self.dependent:
            q = q.at[jnp.asarray(self.dependent, int)].set(y)
        return q

    def _newton(self, z, follow: bool = True):
        """The dependent coordinates ``y`` at `z` on the assembly mode of
        `q_guess`: ``(y, converged, max |Φ|)`` (the residual before the last
        Gauss–Newton step, which only reduces it). Not differentiated.

        With `follow` (always, once `q_guess` is assembled) the solve follows
        the branch from ``(z_g, y_g)`` of `q_guess` to `z` along the straight
        line in ``z``: predictor–corrector continuation, the predictor along
        the tangent ``∂y/∂z`` at the last accepted point, Gauss–Newton
        corrections, the stride doubled after a good stage and quartered after
        a bad one. A
        corrected point counts only if it converged, moved less than half as
        far as the predictor did, and ``det(Φ_y(q_g)ᵀ Φ_y(q))`` kept its
        (positive) sign. Gauss–Newton from the guess alone jumps to another
        assembly mode once `z` is far from it (a non-Grashof four-bar's crank
        swung by 0.65 rad did, measured): a silently wrong trajectory. Near the
        guess this is one stage, the plain solve. Without `follow`
        (construction, on a guess not yet assembled): plain Gauss–Newton.

        One `while_loop` runs the corrections of every stage (a simulation
        evaluates this at many places of its program, ~80 on the four-bar's
        switch path, and a loop per stage made it compile and run markedly
        longer). Each iteration's step and the tangent at its point come
        from one elimination, the tangent as the extra right-hand sides
        ``Φ_z`` (for a square ``Φ_y`` its determinant too, for the branch
        test): the accepted iteration's tangent is the next predictor. A
        chord or secant predictor would be cheaper, but its first-order error
        fails the "moved less than half" test at any stride. An iteration
        that has contracted by 100× or more stops when its quadratic model
        puts the step just solved 10⁴× below `tol` (one residual and
        Jacobian fewer: 3 → 2 iterations near the guess on the 3-RPS, closure
        still at rounding)."""
        dep = jnp.asarray(self.dependent, int)
        ind = jnp.asarray(self.independent, int)
        y0 = self.q_guess[dep]
        z0 = self.q_guess[ind]
        dz = z - z0
        basis = self._guess_jacobian[:, dep]
        square = basis.shape[0] == basis.shape[1]

        def solve(jac, rhs):
            """``(Φ_y⁺ rhs, det Φ_y)`` (the determinant of a square ``Φ_y``
            only) from one elimination."""
            if square:
                return lu_solve_det(jac[:, dep], rhs)
            return lstsq_solve(jac[:, dep], rhs), None

        if follow:
            x, basis_det = solve(self._guess_jacobian, self._guess_jacobian[:, ind])
            slope = -x @ dz
        else:  # `_guess_jacobian` is not set yet: no branch to follow
            basis_det, slope = None, jnp.zeros_like(y0)

        def step(jac, phi):
            """The Gauss–Newton step at ``(z, y)`` with Jacobian `jac`, the
            tangent ``∂y/∂z·dz`` there, and (with `follow`) whether
            ``det(Φ_y(q_g)ᵀ Φ_y)`` is positive (for a square ``Φ_y``,
            ``det Φ_y(q_g)·det Φ_y``): one elimination for all three where
            ``Φ_y`` is square."""
            x, det_y = solve(jac, jnp.concatenate([phi[:, None], jac[:, ind]], 1))
            if not follow:
                same_mode = None
            elif square:
                same_mode = basis_det * det_y > 0
            else:
                same_mode = det(basis.T @ jac[:, dep]) > 0
            return x[:, 0], -x[:, 1:] @ dz, same_mode

        def cond(carry):
            s, _, _, stride, _, _, _, _, _, _, stage = carry
            if not follow:
                return (s < 1.0) & (stage < 1)
            return (s < 1.0) & (stage < MAX_STAGES) & (stride > MIN_STRIDE)

        def body(carry):
            s, y, slope, stride, s_try, y_pred, y_it, k, res, prev, stage = carry
            phi, jac = self._residual_and_jacobian(self._full(z0 + s_try * dz, y_it))
            res_it = jnp.max(jnp.abs(phi))
            dy, slope_here, same_mode = step(jac, phi)
            y_next = y_it - dy
            # Quadratic convergence, r_{k+1} ≈ C r_k² with C ≈ r_k / r_{k-1}²:
            # once the iteration contracts by 100× or more, the step just
            # solved is taken where its predicted residual is 10⁴× below tol,
            # instead of checking it with one more residual and Jacobian. (C
            # from the first steps underestimates: at 100× below tol the 3-RPS
            # closed to 2.6e-14 m instead of 5e-16 m.)
            predicted = res_it * (res_it / prev) ** 2
            contracts = jnp.isfinite(prev) & (res_it <= 1e-2 * prev)
            good = (res_it <= self.tol) | (contracts & (predicted <= 1e-4 * self.tol))
            over = good | (k + 1 >= self.max_iterations) | ~(res_it < jnp.inf)
            if follow:
                moved = jnp.max(jnp.abs(y_it - y_pred))
                predicted = jnp.max(jnp.abs(y_pred - y))
                good = good & same_mode & (moved <= 0.5 * predicted + 1e3 * self.tol)
            accept = over & good
            slope = jnp.where(accept, slope_here, slope)
            s = jnp.where(accept, s_try, s)
            y = jnp.where(accept, y_next, y)
            stride = jnp.where(over, jnp.where(good, 2.0, 0.25) * stride, stride)
            s_next = jnp.minimum(s + stride, 1.0)
            y_start = y + (s_next - s) * slope
            return (
                s,
                y,
                slope,
                stride,
                jnp.where(over, s_next, s_try),
                jnp.where(over, y_start, y_pred),
                jnp.where(over, y_start, y_next),
                jnp.where(over, 0, k + 1),
                jnp.where(accept, res_it, res),
                jnp.where(over, jnp.inf, res_it),
                stage + over.astype(jnp.int32),
            )

        one = jnp.ones((), dtype=y0.dtype)
        y1 = y0 + slope
        nan, inf = jnp.nan * one, jnp.inf * one
        carry = (0.0 * one, y0, slope, one, one, y1, y1, 0, nan, inf, 0)
        s, y, *_, res, _, _ = jax.lax.while_loop(cond, body, carry)
        # Whole turns of a revolute joint are the same configuration: report
        # the angle within half a turn of the guess.
        types = self.tree.model.joint_types
        turning = np.array([types[i] != "prismatic" for i in self.dependent])
        turns = jnp.round((y - y0) / (2 * np.pi))
        y = jnp.where(turning, y - 2 * np.pi * turns, y)
        return y, s >= 1.0, res

    @eqx.filter_jit
    def assemble(self, z: Vector) -> Float[Array, " tree"]:
        """The tree coordinates ``q(z)`` of the assembled mechanism, rad or m,
        shape ``(n_tree,)``; NaN where the closure solve fails (singular or
        unassemblable configuration).

        Derivatives (with respect to `z` and every parameter) are the implicit
        ones, ``dy = −Φ_y⁺ (Φ_z dz + Φ_θ dθ)`` (a custom JVP: the Gauss–Newton
        iterations are not differentiated).
        """
        self.check_vectors(q=z)
        if not self.dependent:
            return self._full(z, jnp.zeros(0, dtype=z.dtype))
        return self._full(z, _dependent_coordinates(self, z))

    @eqx.filter_jit
    def near(self, q: Vector) -> "ClosedChain":
        """The chain with `q_guess` moved to its assembled configuration at
        independent coordinates `q` (where that closure solve fails, left as
        it is): the closure's branch following (`assemble`) then starts next
        to the configurations a simulation segment evaluates, one short stage
        instead of a continuation from the original guess. The same branch,
        so the same coordinates (to the closure tolerance); no derivative
        flows through the new guess, which only steers the solve."""
        self.check_vectors(q=q)
        assembled = jax.lax.stop_gradient(self.assemble(q))
        assembled = jnp.where(jnp.all(jnp.isfinite(assembled)), assembled, self.q_guess)
        return eqx.tree_at(
            lambda c: (c.q_guess, c._guess_jacobian),
            self,
            (assembled, self.closure_jacobian(assembled)),
        )

    @eqx.filter_jit
    def configuration_status(self, q: Vector) -> ConfigurationStatus:
        """Whether the chain can be evaluated at independent coordinates `q`:
        `ConfigurationStatus.closure_failed` where the branch of `q_guess`
        cannot be followed to it (beyond the mechanism's reach, or past a
        toggle),
        `ConfigurationStatus.singular` where it assembles but the dependent
        coordinates' closure Jacobian ``Φ_y`` is nearly rank deficient (smallest
        singular value below `SINGULAR_RATIO` times the largest: a toggle or
        branch point, where ``R = ∂q/∂z`` grows without bound), otherwise
        `ConfigurationStatus.ok` (also for a non-finite `q`, where nothing can
        be said).

        A simulation that stops on a non-finite state asks this at the last
        accepted state: a trajectory running into a toggle position of its
        independent coordinates stops just short of it (every longer trial step
        fails), so its result is ``singular_configuration``."""
        self.check_vectors(q=q)
        if not self.dependent:
            return ConfigurationStatus.ok
        y, ok, _ = self._newton(q)
        jac = self.closure_jacobian(self._full(q, y))[:, jnp.asarray(self.dependent)]
        sv = singular_values(jac)
        singular = ~(sv[-1] > SINGULAR_RATIO * sv[0])
        status = ConfigurationStatus.where(
            ok,
            ConfigurationStatus.where(
                singular, ConfigurationStatus.singular, ConfigurationStatus.ok
            ),
            ConfigurationStatus.closure_failed,
        )
        finite = jnp.all(jnp.isfinite(q))
        return ConfigurationStatus.where(finite, status, ConfigurationStatus.ok)

    @eqx.filter_jit
    def velocity_map(self, q: Float[Array, " tree"]) -> Float[Array, "tree dof"]:
        """``R = ∂q/∂z`` at assembled tree coordinates `q`: rows of the
        independent coordinates are the identity, those of the dependent ones
        ``−Φ_y⁺ Φ_z``; ``q̇ = R ż``. Shape ``(n_tree, n_dof)``."""
        return self._velocity_map(self.closure_jacobian(q))

    def _velocity_map(self, jac):
        ind, dep = list(self.independent), list(self.dependent)
        rows = jnp.zeros((self.tree.n_dof, self.n_dof), dtype=jac.dtype)
        rows = rows.at[jnp.asarray(ind, int)].set(jnp.eye(self.n_dof, dtype=jac.dtype))
        if dep:
            rows = rows.at[jnp.asarray(dep, int)].set(
                -lstsq_solve(jac[:, dep], jac[:, ind])
            )
        return rows

    @eqx.filter_jit
    def tree_state(self, z: Vector, zd: Vector):
        """The tree's state ``(q, q̇, R, c)`` at ``(z, ż)``: coordinates,
        velocities ``q̇ = R ż``, the velocity map ``R`` and the velocity-product
        acceleration ``c`` (``q̈ = R z̈ + c``): zero on the independent rows and
        ``−Φ_y⁺ (Φ̇_q q̇)`` on the dependent ones, with ``Φ̇_q q̇`` the second
        directional derivative of ``Φ`` along ``q̇``."""
        return self._tree_state(z, zd)[:4]

    def _tree_state(self, z: Vector, zd: Vector):
        """`tree_state` and the closure Jacobian ``Φ_q`` it was built from (one
        closure solve for every caller that needs both)."""
        self.check_vectors(q=z, qd=zd)
        q = self.assemble(z)
        jac = self.closure_jacobian(q)
        rows = self._velocity_map(jac)
        qd = rows @ zd
        c = jnp.zeros_like(q)
        if self.dependent:

            def along(q):
                return jax.jvp(self.closure_residual, (q,), (qd,))[1]

            curvature = jax.jvp(along, (q,), (qd,))[1]
            dep = jnp.asarray(self.dependent, int)
            c = c.at[dep].set(-lstsq_solve(jac[:, dep], curvature))
        return q, qd, rows, c, jac

    # -- the system interface ----------------------------------------------------------

    def mass_matrix(self, q: Vector) -> Matrix:
        """``Rᵀ M(q(z)) R``, kg or kg·m² (with `q` the independent coordinates)."""
        self.check_vectors(q=q)
        return _position_terms(self, q)[1]

    def bias_force(self, q: Vector, qd: Vector) -> Vector:
        """``Rᵀ (M c + h(q, q̇))`` in the independent coordinates, N or N·m."""
        self.check_vectors(q=q, qd=qd)
        return _all_terms(self, q, qd).bias

    def friction_jacobian(self, q: Vector) -> Jacobian:
        """``J_t R``, with ``J_t`` the tree's friction Jacobian
        (`RigidBodyTree.friction_jacobian`): for single-joint elements the
        friction joints' rows of the velocity map."""
        self.check_vectors(q=q)
        return _position_terms(self, q)[2]

    def friction_jacobian_dot_qd(self, q: Vector, qd: Vector) -> SlipVector:
        """``d(J_t R)/dt ż = J_t c + J̇_t q̇`` (``J̇_t = 0`` but for ball
        elements)."""
        self.check_vectors(q=q, qd=qd)
        return _all_terms(self, q, qd).jdot_qd

    def dynamics(self, q: Vector, qd: Vector) -> Dynamics:
        """``M``, ``h``, ``J``, ``J̇q̇`` in the independent coordinates from one
        closure solve (the four methods each solve it again)."""
        self.check_vectors(q=q, qd=qd)
        return _all_terms(self, q, qd)

    @eqx.filter_jit
    def inverse_dynamics(self, q: Vector, qd: Vector, qdd: Vector) -> Vector:
        """Generalised forces along the independent coordinates producing ``z̈``
        without friction: ``Rᵀ (M q̈ + h)`` with ``q̈ = R z̈ + c`` (for actuated
        independent joints, the drive forces), N or N·m."""
        self.check_vectors(q=q, qd=qd, qdd=qdd)
        q_tree, qd_tree, rows, c = self.tree_state(q, qd)
        tau = self.tree.inverse_dynamics(q_tree, qd_tree, rows @ qdd + c)
        return rows.T @ tau

    # -- reactions ---------------------------------------------------------------------

    @eqx.filter_jit
    def loop_forces(
        self,
        q: Vector,
        qd: Vector,
        qdd: Vector,
        applied: Vector,
        friction: SlipVector,
    ) -> Float[Array, " k"]:
        """Loop-closure multipliers ``λ`` (the constraint forces of the cut
        joints): the least-squares (minimum-norm, for redundant equations)
        solution of ``Φ_qᵀ λ = M q̈ + h − E_zᵀ τ + J_tᵀ f`` with the applied
        forces `applied` acting on the independent joints. For a ball joint
        ``λ`` is the force on link B from link A in world axes, N.

        Args:
            q, qd, qdd: independent coordinates, velocities, accelerations.
            applied: generalised forces along ``z``, N or N·m.
            friction: friction force of each element, N or N·m (e.g.
                `Solution.friction`).
        """
        self.check_vectors(q=q, qd=qd, qdd=qdd, applied=applied, friction=friction)
        return self._reactions(q, qd, qdd, applied, friction)[1]

    @eqx.filter_jit
    def joint_wrenches(
        self,
        q: Vector,
        qd: Vector,
        qdd: Vector,
        applied: Vector,
        friction: SlipVector,
    ) -> Float[Array, "tree 6"]:
        """Reaction wrench transmitted through every tree joint of the closed
        chain, with the loop forces (`loop_forces`) acting on the bodies they
        connect: row ``i`` as in `jaxfric.systems.rigid.joint_wrenches` (body
        ``i``'s frame, moment about its origin first, N·m; then force, N)."""
        self.check_vectors(q=q, qd=qd, qdd=qdd, applied=applied, friction=friction)
        return self._reactions(q, qd, qdd, applied, friction)[2]

    def joint_reactions(
        self,
        q: Vector,
        qd: Vector,
        qdd: Vector,
        applied: Vector,
        friction: SlipVector,
        dynamics: Dynamics | None = None,
    ) -> JointReactions:
        """The reaction wrench of every tree joint with a friction element, the
        loop forces included (`joint_wrenches`), in the joint's friction frame
        (``z`` along its axis): the loads of reaction-load joint friction
        (`jaxfric.friction.JointFriction`). In a closed chain they depend on
        the applied forces and the friction directly, through the loop
        forces. With `dynamics` (`dynamics(q, q̇)` at this state) the closure is
        not solved again: its tree state is reused."""
        self.check_vectors(q=q, qd=qd, qdd=qdd, applied=applied, friction=friction)
        shared = None if dynamics is None else dynamics.shared
        q_tree, _, wrenches = self._reactions(q, qd, qdd, applied, friction, shared)
        return friction_joint_reactions(self.tree, wrenches, q_tree)

    def _reactions(self, q, qd, qdd, applied, friction, tree_state=None):
        """``(q_tree, λ, wrenches)`` of `loop_forces` and `joint_wrenches` from
        one closure solve (each a `while_loop`: the load coupling of
        reaction-load friction evaluates this at every step), or none where
        `tree_state` (`_tree_state` at ``(q, q̇)``) is given."""
        if tree_state is None:
            tree_state = self._tree_state(q, qd)
        q_tree, qd_tree, rows, c, jac = tree_state
        qdd_tree = rows @ qdd + c
        lhs = self.tree.inverse_dynamics(q_tree, qd_tree, qdd_tree)
        lhs = lhs.at[jnp.asarray(self.independent, int)].add(-applied)
        if self.tree.ball_rows:
            lhs = lhs + self.tree.friction_jacobian(q_tree).T @ friction
        else:
            lhs = lhs.at[jnp.asarray(self.tree.friction_joints, int)].add(friction)
        lam = min_norm_solve(jac.T, lhs)
        external = self._loop_wrenches(q_tree, lam)
        wrenches = _dynamics.joint_wrenches(
            self.tree.model, q_tree, qd_tree, qdd_tree, external
        )
        return q_tree, lam, wrenches

    def _loop_wrenches(self, q_tree, lam):
        """World wrenches (about the base origin, moment first) of the loop
        forces on every body, shape ``(n_tree, 6)``: ``W = (∂Φ/∂ξ)ᵀ λ`` with
        ``ξ`` a virtual world twist of the body, so that the wrenches do the
        virtual work ``λ·δΦ``."""
        bodies = self.tree.model.link_bodies
        poses = self._loop_frames(q_tree)
        out = jnp.zeros((self.tree.n_dof, 6), dtype=q_tree.dtype)
        start = 0
        for lp, pose, (a, b) in zip(self.loops, poses, self._frames, strict=True):
            mult = lam[start : start + lp.n_equations]
            start += lp.n_equations
            _, (g_a, g_b) = _twist_derivatives(lp, *pose)
            for link, g in ((a, g_a), (b, g_b)):
                if bodies[link] >= 0:
                    out = out.at[bodies[link]].add(g.T @ mult)
        return out


@eqx.filter_custom_jvp
def _dependent_coordinates(chain: ClosedChain, z):
    """``y(z)`` by Gauss–Newton; NaN where it fails."""
    y, ok, _ = chain._newton(z)
    return jnp.where(ok, y, jnp.nan)


@_dependent_coordinates.def_jvp
def _dependent_coordinates_jvp(primals, tangents):
    # Implicit function theorem on Φ(θ, z, y(θ, z)) = 0.
    chain, z = primals
    t_chain, t_z = jax.tree.map(
        lambda p, t: jnp.zeros_like(p) if t is None and eqx.is_inexact_array(p) else t,
        primals,
        tangents,
    )
    y = _dependent_coordinates(chain, z)

    def residual(chain, z):
        return chain.closure_residual(chain._full(z, y))

    _, d_phi = eqx.filter_jvp(residual, (chain, z), (t_chain, t_z))
    jac = chain.closure_jacobian(chain._full(z, y))
    return y, -lstsq_solve(jac[:, jnp.asarray(chain.dependent, int)], d_phi)


# The construction-time check runs this on concrete values: compiled once per
# chain structure instead of dispatched op by op.
@eqx.filter_jit
def _newton_jit(chain: ClosedChain, z, follow: bool = True):
    return chain._newton(z, follow)


# The simulation evaluates these at many points of its traced program: jitted,
# each is traced once per chain structure (the switch path calls them ~60 times).
@jax.jit
def _position_terms(chain: ClosedChain, z):
    """``(R, Rᵀ M R, J_t R)`` at independent coordinates `z`."""
    q = chain.assemble(z)
    rows = chain.velocity_map(q)
    jac = _friction_terms(chain.tree, q, None, rows)[0]
    return rows, rows.T @ chain.tree.mass_matrix(q) @ rows, jac


@jax.jit
def _all_terms(chain: ClosedChain, z, zd) -> Dynamics:
    """`ClosedChain.dynamics`: one `tree_state` for every term (`bias_force` and
    `friction_jacobian_dot_qd` read theirs from it too; XLA drops the rest)."""
    state = chain._tree_state(z, zd)
    q, qd, rows, c, _ = state
    tree = chain.tree
    # `M` and `h` from one kinematics pass (the tree's `dynamics`; its friction
    # terms are not used, and XLA drops them).
    mass, bias, *_ = tree.dynamics(q, qd)
    jac, jdot_qd = _friction_terms(tree, q, qd, rows, c)
    return Dynamics(
        rows.T @ mass @ rows,
        rows.T @ (mass @ c + bias),
        jac,
        jdot_qd,
        shared=state,
    )


def _friction_terms(tree: RigidBodyTree, q, qd, rows, c=None):
    """``(J_t R, J_t c + J̇_t q̇)``: the closed chain's friction Jacobian and
    velocity-product slip acceleration from the tree's (`J̇_t q̇` only where
    `qd` is given). Single-joint elements pick rows (``J_t`` a selection,
    ``J̇_t = 0``); a ball element's rows are its relative angular velocity
    ``E(q) q̇`` in the socket frame."""
    if not tree.ball_rows:
        joints = jnp.asarray(tree.friction_joints, int)
        return rows[joints], None if c is None else c[joints]
    jac = tree.friction_jacobian(q)
    if c is None:
        return jac @ rows, None
    return jac @ rows, jac @ c + tree.friction_jacobian_dot_qd(q, qd)


def _twist_derivatives(loop: LoopJoint, rot_a, pos_a, rot_b, pos_b):
    """``Φ`` of one loop and its derivatives ``(∂Φ/∂ξ_A, ∂Φ/∂ξ_B)``, each
    ``(k, 6)``, with respect to virtual world twists ``ξ = (ω, v)`` (about the
    base origin) of frames A and B."""

    def moved(twist_a, twist_b):
        return loop.residual(
            *_displace(rot_a, pos_a, twist_a), *_displace(rot_b, pos_b, twist_b)
        )

    zero = jnp.zeros(6, dtype=pos_a.dtype)
    phi = loop.residual(rot_a, pos_a, rot_b, pos_b)
    return phi, jax.jacfwd(moved, argnums=(0, 1))(zero, zero)


def _displace(rot, pos, twist):
    """A pose moved by the world twist ``(ω, v)`` about the base origin, to
    first order (its derivative at zero is all that is used)."""
    omega, v = twist[:3], twist[3:]
    return rot + sp.skew(omega) @ rot, pos + jnp.cross(omega, pos) + v


def _rank(matrix: np.ndarray) -> int:
    if matrix.size == 0:
        return 0
    sv = np.linalg.svd(matrix, compute_uv=False)
    return int(np.sum(sv > 1e-9 * max(1.0, float(sv[0]))))


def _choose_independent(closure_jacobian) -> tuple[int, ...]:
    """Independent coordinates from a (concrete) closure Jacobian ``Φ_q``: QR
    with column pivoting ranks its columns; the first ``rank`` pivots are the
    dependent coordinates, the rest independent (Wehage & Haug 1982)."""
    jac = np.asarray(closure_jacobian)
    rank = _rank(jac)
    _, _, pivots = scipy.linalg.qr(jac, pivoting=True, mode="economic")
    dependent = set(int(p) for p in pivots[:rank])
    return tuple(i for i in range(jac.shape[1]) if i not in dependent)
