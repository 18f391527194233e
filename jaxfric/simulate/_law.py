"""The root of the friction laws, the protocol `simulate` consumes (here, so
that simulate imports nothing from `jaxfric.friction`, which imports its paths)."""

from typing import TYPE_CHECKING, ClassVar

import equinox as eqx

from .._check import AbstractCheck, raise_if_invalid

if TYPE_CHECKING:
    from ..systems import JointReactions
    from ._path import AbstractPath


class AbstractFrictionLaw(eqx.Module):
    """Base of every friction law. Subclasses are strategy objects passed to
    `jaxfric.simulate`. Each abstract family declares how its laws are
    simulated, ``simulation_path`` (a `jaxfric.simulate` path, as a diffrax
    solver declares its ``term_structure``): `simulate` dispatches on it.
    """

    simulation_path: eqx.AbstractClassVar["AbstractPath"]
    #: Whether the law's levels depend on the joints' reaction loads
    #: (`at_reactions`), which depend on the accelerations and so on the
    #: friction itself: the law's path then solves that coupling at every
    #: evaluation (`jaxfric.friction.JointFriction` on the switch path,
    #: `jaxfric.friction.JointLuGre` on the dynamic-law path).
    load_dependent: ClassVar[bool] = False

    def parameter_checks(self) -> tuple[AbstractCheck, ...]:
        """The ranges of this law's own parameters (a law inside it declares
        its own), checked on concrete values at construction and on traced
        values inside `jaxfric.simulate`. Default: none.
        """
        return ()

    def ordered_levels(self) -> tuple[tuple[str, str], ...]:
        """Pairs ``(upper, lower)`` of this law's own parameter fields whose
        order is part of the law: a static limit at least the kinetic level
        (Karnopp 1985; Farhat et al. 2010, Eq. 5). Identification keeps each
        pair ordered through a fit (`jaxfric.identify.AtLeast`); a law held in
        a field declares its own. Default: none.
        """
        return ()

    def at_reactions(self, reactions: "JointReactions") -> "AbstractFrictionLaw":
        """This law with its levels at the joints' reaction loads `reactions`
        (`jaxfric.systems.AbstractSystem.joint_reactions`). Default: the law
        itself (its levels do not depend on loads); a `load_dependent` law
        returns a load-independent law at those loads.
        """
        del reactions
        return self

    @property
    def rows_per_element(self) -> int | tuple[int, ...]:
        """Slip rows per friction element: 1, or the rows of a vector element
        (2 for friction in a contact plane: the element's force lies in a disk
        of its rows, `jaxfric.friction.IsotropicCoulomb`), or a tuple of each
        element's rows where they differ (a revolute joint's one row beside a
        ball joint's three, `jaxfric.friction.JointFriction`). Consecutive
        rows of ``J`` form one element."""
        return 1

    def at_state(self, system, q, qd) -> "AbstractFrictionLaw":
        """This law with its levels at the state ``(q, q̇)`` of `system`: a law
        whose level is a friction coefficient times the contact normal force
        (`AbstractSystem.normal_forces`; Kikuuwe & Yamamoto 2008, Eq. 23)
        returns itself with that level. Default: the law itself.
        """
        del system, q, qd
        return self

    def __check_init__(self):
        # Runs after the subclass's own (shape) checks: equinox calls every
        # class's `__check_init__` along the MRO.
        raise_if_invalid(self.parameter_checks())


__all__ = ["AbstractFrictionLaw"]
