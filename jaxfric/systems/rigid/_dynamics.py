"""Rigid-body dynamics of a `TreeModel`: recursive Newton–Euler, composite
rigid body mass matrix, forward dynamics (Featherstone 2008, Ch. 5–6).

Pure functions. After forward kinematics, every body is handled at once: spatial
quantities are expressed in the base frame, where the Newton–Euler recursions
become sums over ancestors and subtrees, i.e. products with the tree's static
ancestor matrix. This keeps the traced program small (fast compilation) and
batches well under `vmap`. The public functions are jitted, so that a call
outside `jit` compiles once per tree instead of once per primitive.
"""

import jax
import jax.numpy as jnp

from ..._linalg import spd_solve
from ..._types import Array, Float, Matrix, Vector
from . import _spatial as sp
from ._kinematics import forward_kinematics
from ._model import TreeModel, structure


def _world(model: TreeModel, q):
    """Body poses, joint motion subspaces and body inertias in the base frame."""
    st = structure(model)
    rot_w, pos_w = forward_kinematics(model, q)
    subspace = sp.motion_to_frame(
        rot_w,
        pos_w,
        jnp.asarray(st.s_omega, dtype=rot_w.dtype),
        jnp.asarray(st.s_vel, dtype=rot_w.dtype),
    )
    inertia = sp.transform_inertia(
        rot_w, pos_w, model.mass, model.first_moment, model.inertia
    )
    return st, rot_w, pos_w, subspace, inertia


def _tree_sum(mask, x):
    """``Σ_j mask[i, j] x[j]`` for a static boolean `mask`: sums over ancestors
    (`Structure.ancestors`) or over subtrees (its transpose).

    A product with the 0/1 matrix, which `vmap` makes a matrix product (faster
    than a masked sum of the broadcast ``(n, n, k)`` array: README,
    Performance). At full precision (float32 products on a GPU would otherwise
    round to TF32). A non-finite value of one body spreads to every body's
    sum (``0·inf``), within one state only.
    """
    return jnp.matmul(
        jnp.asarray(mask, dtype=x.dtype), x, precision=jax.lax.Precision.HIGHEST
    )


def _rnea(model: TreeModel, q, qd, qdd, external=None, world=None):
    """Recursive Newton–Euler (Featherstone 2008, Table 5.1) in the base frame.

    ``V_i = Σ_{j ≼ i} S_j q̇_j``; ``A_i = −g + Σ_{j ≼ i} (S_j q̈_j + V_j ×m S_j q̇_j)``
    (gravity as a fictitious base acceleration, so body forces include it);
    ``f_i = I_i A_i + V_i ×* I_i V_i``; joint ``i`` transmits the subtree sum
    ``F_i = Σ_{k ≽ i} f_k`` and ``τ_i = S_iᵀ F_i``. `external` wrenches on the
    bodies (base coordinates, about the base origin, moment first, ``(dof, 6)``)
    are subtracted from the body forces (Featherstone 2008, Eq. 5.9).

    Returns ``(τ, F_moment, F_force, rot_w, pos_w)`` with ``F`` in base
    coordinates about the base origin. `world`: `_world` at `q` when the
    caller has it.
    """
    world = _world(model, q) if world is None else world
    st, rot_w, pos_w, (s_w, s_v), inertia = world
    anc, sub = st.ancestors, st.ancestors.T
    u_w, u_v = s_w * qd[:, None], s_v * qd[:, None]
    velocity = _tree_sum(anc, jnp.concatenate([u_w, u_v], axis=1))
    omega, vel = velocity[:, :3], velocity[:, 3:]
    c_w, c_v = sp.cross_motion(omega, vel, u_w, u_v)
    drive = jnp.concatenate([s_w * qdd[:, None] + c_w, s_v * qdd[:, None] + c_v], 1)
    acceleration = _tree_sum(anc, drive)
    alpha, acc = acceleration[:, :3], acceleration[:, 3:] - model.gravity[None, :]
    n_a, f_a = sp.inertia_apply(*inertia, alpha, acc)
    n_c, f_c = sp.cross_force(omega, vel, *sp.inertia_apply(*inertia, omega, vel))
    body_force = jnp.concatenate([n_a + n_c, f_a + f_c], axis=1)
    if external is not None:
        body_force = body_force - external
    transmitted = _tree_sum(sub, body_force)
    moment, force = transmitted[:, :3], transmitted[:, 3:]
    tau = jnp.sum(s_w * moment + s_v * force, axis=-1)
    return tau, moment, force, rot_w, pos_w


@jax.jit
def inverse_dynamics(model: TreeModel, q: Vector, qd: Vector, qdd: Vector) -> Vector:
    """Joint forces ``τ = M(q) q̈ + C(q, q̇) q̇ + g(q)`` by recursive Newton–Euler.

    Args:
        model: the tree.
        q, qd, qdd: joint positions (rad, m), velocities and accelerations.

    Returns:
        Joint torques/forces, N·m or N, shape ``(dof,)``.
    """
    return _rnea(model, q, qd, qdd)[0]


@jax.jit
def joint_wrenches(
    model: TreeModel,
    q: Vector,
    qd: Vector,
    qdd: Vector,
    external: Float[Array, "dof 6"] | None = None,
) -> Float[Array, "dof 6"]:
    """Reaction wrench transmitted through every joint (Newton–Euler).

    Row ``i`` is the spatial force the parent exerts on body ``i`` (and, through
    it, on the whole subtree) through joint ``i``, expressed in body ``i``'s
    frame: ``(moment about the joint-frame origin, N·m; force, N)``. Its
    joint-axis component is the actuation ``τ_i``; the rest is carried by the
    bearing (the load of load-dependent joint friction). Gravity included.

    Args:
        model: the tree.
        q, qd, qdd: joint positions, velocities, accelerations.
        external: wrenches applied to the bodies from outside the tree (e.g.
            loop-closure forces), in base coordinates about the base origin,
            moment first, shape ``(dof, 6)``; default none.

    Returns:
        Shape ``(dof, 6)``, moment first.
    """
    _, moment, force, rot_w, pos_w = _rnea(model, q, qd, qdd, external)
    moment_b, force_b = sp.force_from_frame(rot_w, pos_w, moment, force)
    return jnp.concatenate([moment_b, force_b], axis=1)


@jax.jit
def bias_force(model: TreeModel, q: Vector, qd: Vector) -> Vector:
    """Coriolis, centrifugal and gravity forces ``C(q, q̇) q̇ + g(q)``, N·m or N."""
    return _rnea(model, q, qd, jnp.zeros_like(qd))[0]


@jax.jit
def gravity_force(model: TreeModel, q: Vector) -> Vector:
    """Generalised gravity forces ``g(q)``, N·m or N."""
    zero = jnp.zeros_like(q)
    return _rnea(model, q, zero, zero)[0]


def _crba(world) -> Matrix:
    """`mass_matrix` from `_world`'s terms."""
    st, _, _, (s_w, s_v), (mass, first_moment, inertia) = world
    packed = jnp.concatenate(
        [mass[:, None], first_moment, inertia.reshape(-1, 9)], axis=1
    )
    composite = _tree_sum(st.ancestors.T, packed)
    moment, force = sp.inertia_apply(
        composite[:, 0],
        composite[:, 1:4],
        composite[:, 4:].reshape(-1, 3, 3),
        s_w,
        s_v,
    )
    # coupling[j, i] = S_jᵀ I^c_i S_i
    coupling = jnp.sum(
        s_w[:, None, :] * moment[None, :, :] + s_v[:, None, :] * force[None, :, :],
        axis=-1,
    )
    upper = jnp.where(st.ancestors.T, coupling, 0.0)
    return upper + upper.T - jnp.diag(jnp.diag(coupling))


@jax.jit
def mass_matrix(model: TreeModel, q: Vector) -> Matrix:
    """Joint-space mass matrix by the composite rigid body algorithm
    (Featherstone 2008, Table 6.2) in the base frame:
    ``M_ji = S_jᵀ I^c_i S_i`` for ``j`` an ancestor of (or equal to) ``i``, with
    ``I^c_i`` the inertia of the subtree rooted at body ``i``.

    Args:
        model: the tree.
        q: joint positions, shape ``(dof,)``.

    Returns:
        ``M(q)``, symmetric, shape ``(dof, dof)``, kg·m² / kg.
    """
    return _crba(_world(model, q))


@jax.jit
def mass_matrix_and_bias(
    model: TreeModel, q: Vector, qd: Vector
) -> tuple[Matrix, Vector]:
    """`mass_matrix` and `bias_force` from one forward kinematics pass (what a
    simulation evaluates at every state; one copy of the kinematics in the
    compiled program instead of two).

    Returns:
        ``(M(q), C(q, q̇) q̇ + g(q))``: kg·m² / kg, shape ``(dof, dof)``; N·m or
        N, shape ``(dof,)``.
    """
    world = _world(model, q)
    return _crba(world), _rnea(model, q, qd, jnp.zeros_like(qd), world=world)[0]


@jax.jit
def forward_dynamics(model: TreeModel, q: Vector, qd: Vector, tau: Vector) -> Vector:
    """Joint accelerations ``q̈ = M⁻¹ (τ − C q̇ − g)`` (CRBA, then
    `jaxfric._linalg.spd_solve`: no LAPACK call, which under `vmap` on a CPU
    can deadlock beside another).

    Args:
        model: the tree.
        q, qd: joint positions and velocities.
        tau: joint torques/forces, N·m or N.

    Returns:
        ``q̈``, rad/s² or m/s², shape ``(dof,)``.
    """
    mass, bias = mass_matrix_and_bias(model, q, qd)
    return spd_solve(mass, tau - bias)
