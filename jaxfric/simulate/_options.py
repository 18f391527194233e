"""`SimulateOptions`: the numerical options of `jaxfric.simulate`, one typed object."""

import dataclasses
from typing import Any

import diffrax
import equinox as eqx
import numpy as np

from .._check import check_range, is_concrete
from .._types import ArrayLike, ScalarLike


class SimulateOptions(eqx.Module):
    """The numerical options of `jaxfric.simulate`, as every path receives them.

    `simulate` builds one from its keywords; the TOML configs, `identify` and
    `optimize` can build one from theirs (``SimulateOptions(**keywords)``: an
    unknown name is a `TypeError` naming it, a value out of range a
    `ValueError`). `None` means "the default of the law's path"; the path fills
    them in once (`AbstractPath.defaults`, then `with_defaults`), and an option
    that the law's path does not use is rejected (`AbstractPath.check_used`).

    Attributes:
        solver: a `diffrax` solver.
        rtol, atol: step-size controller tolerances, in ``(0, inf)``.
        dt0: initial (on the fixed-step paths: the) step size, s, in ``(0, inf)``.
        dtmax: largest step, s, in ``(0, inf]``.
        jump_ts: times, s, where the applied force or its derivative jumps.
        max_steps: step budget (per segment on the switch path), >= 1.
        max_events: event budget of the switch path, >= 1.
        friction_state0: initial internal state of a law that has one.
        adjoint: the `diffrax` adjoint of the solves.
    """

    solver: diffrax.AbstractSolver | None = None
    rtol: ScalarLike | None = None
    atol: ScalarLike | None = None
    dt0: ScalarLike | None = None
    dtmax: ScalarLike | None = None
    jump_ts: ArrayLike | None = None
    max_steps: int | None = None
    max_events: int | None = None
    friction_state0: ArrayLike | None = None
    adjoint: diffrax.AbstractAdjoint | None = None

    def __check_init__(self):
        for name in ("rtol", "atol", "dt0"):
            value = getattr(self, name)
            if value is not None:
                check_range(name, value, lower=0.0, lower_open=True)
        dtmax = self.dtmax
        if (
            dtmax is not None
            and is_concrete(dtmax)
            and not np.all(np.asarray(dtmax) > 0)
        ):
            raise ValueError(f"`dtmax` must lie in (0.0, inf], got {dtmax!r}.")
        for name in ("max_steps", "max_events"):
            value = getattr(self, name)
            if value is not None:
                check_range(name, value, lower=1.0)

    def given(self) -> tuple[str, ...]:
        """The names of the options that are set (not `None`)."""
        return tuple(
            f.name
            for f in dataclasses.fields(self)
            if getattr(self, f.name) is not None
        )

    def with_defaults(self, **defaults: Any) -> "SimulateOptions":
        """These options with each `None` one of `defaults` filled in, then the
        defaults shared by every path (`DEFAULTS`)."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for name, value in {**DEFAULTS, **defaults}.items():
            if values[name] is None:
                values[name] = value
        return SimulateOptions(**values)


#: Defaults shared by every path.
DEFAULTS: dict[str, Any] = dict(
    max_steps=16384,
    max_events=64,
    adjoint=diffrax.RecursiveCheckpointAdjoint(),
)

#: The option names, in `SimulateOptions` order.
OPTION_NAMES: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(SimulateOptions)
)
