"""The solution type shared by every simulation path, and its result codes."""

import diffrax
import equinox as eqx
from jaxtyping import Array, Float, Int


class RESULTS(diffrax.RESULTS):  # pyright: ignore[reportGeneralTypeIssues]
    """Result codes of `jaxfric.simulate`: diffrax's codes plus the switch path's."""

    max_events_reached = (
        "The event budget `max_events` was spent before `t1`: the trajectory stops "
        "short of `t1`. Increase `max_events`."
    )
    event_location_failed = (
        "An event (velocity zero or breakaway) could not be located by the root "
        "finder. Tighten `rtol`/`atol` or lower `dtmax`."
    )
    stick_solve_failed = (
        "No consistent set of stick/slip modes was found for the stuck elements "
        "(the Delassus system may be singular: redundant friction elements; or, "
        "for reaction-load friction on cylindrical joints, the reactions couple "
        "so strongly to the friction that the mode choice's rounds at the "
        "levels of its own friction did not settle; or the slip of an "
        "element of several rows (a ball) crossed zero at a dead point of its "
        "joint, where its rows of J vanish while the mechanism moves: one-row "
        "elements pass through such a zero, several-row ones cannot yet)."
    )
    nonfinite_state = (
        "The state or the applied force became non-finite (NaN or inf) during the "
        "solve: check the force callable, the parameters and the initial state. "
        "This is not a step-size problem; more `max_steps` will not help."
    )
    closure_failed = (
        "The state became non-finite where the system's loop-closure equations "
        "could not be solved (`ClosedChain.configuration_status`): the "
        "mechanism cannot be assembled there from `q_guess`. Check `q0` and "
        "the applied forces, or give a `q_guess` on the branch to follow."
    )
    singular_configuration = (
        "The solve stopped at a singular configuration of the system (a "
        "closed chain's toggle or branch point: its dependent coordinates' "
        "closure Jacobian lost rank, so they cannot follow the independent "
        "ones). Choose other independent coordinates."
    )
    invalid_parameters = (
        "A parameter of the system, friction law or force left its allowed range "
        "(a value traced under jit, vmap or grad, so not checked at construction); "
        "the states are NaN. Run with `throw=True` to name the parameter."
    )
    load_coupling_failed = (
        "The friction of a law with load-dependent levels (`JointFriction`, "
        "`JointLuGre`) could not be solved where the solve stopped: Newton's "
        "method on friction = F(friction), F the friction at the reactions of "
        "a friction, did not converge within the law's `max_iterations`, or "
        "I − dF/dfriction was singular (friction raising its own load as fast "
        "as it grows: a gain of one, about the friction coefficient times a pin "
        "radius or reaction arm over a link length, larger with LuGre's bristle "
        "damping). Raise `max_iterations`; if that does not help, check the "
        "load models' geometry and coefficients."
    )


class Solution(eqx.Module):
    """A simulated trajectory, on the saved times `ts`.

    Attributes:
        ts: saved times, s, shape ``(t,)``.
        q: generalised positions, shape ``(t, n)``.
        qd: generalised velocities, shape ``(t, n)``.
        friction: friction force per element ``f``, N or N·m, shape ``(t, m)``
            (for stuck elements the stick force of the Delassus solve).
        slip_velocity: ``s = J(q) q̇``, shape ``(t, m)``.
        friction_state: internal state of a dynamic law (LuGre/Dahl bristle
            deflection ``z``, m), shape ``(t, m)``; shape ``(t, 0)`` for laws with
            no internal state.
        force_state: internal state of the applied force (controller integrators),
            shape ``(t, c)``.
        modes: per element ``+1`` slip forward, ``-1`` slip backward, ``0`` stuck,
            shape ``(t, m)``. Smooth paths report ``sign(s)``.
        event_times: times of the mode switches, s, shape ``(max_events,)``, padded
            with ``inf`` (empty for paths without events).
        stats: counters: ``num_steps``, ``num_accepted_steps``,
            ``num_rejected_steps``, ``num_vf_evals``, ``num_events``.
        result: a `RESULTS` code; ``RESULTS.successful`` when the solve reached
            ``t1`` correctly.
    """

    ts: Float[Array, " t"]
    q: Float[Array, "t coord"]
    qd: Float[Array, "t dof"]
    friction: Float[Array, "t m"]
    slip_velocity: Float[Array, "t m"]
    friction_state: Float[Array, "t z"]
    force_state: Float[Array, "t c"]
    modes: Int[Array, "t m"]
    event_times: Float[Array, " e"]
    stats: dict[str, Array]
    result: RESULTS
