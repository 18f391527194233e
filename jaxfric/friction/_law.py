"""The root of the friction laws, defined with the protocol it belongs to in
`jaxfric.simulate` (kept importable here for modules that still name it)."""

from ..simulate import AbstractFrictionLaw as AbstractFrictionLaw
