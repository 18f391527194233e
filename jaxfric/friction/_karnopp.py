"""Placeholder: Karnopp law being written."""

from ._base import AbstractFrictionLaw


class Karnopp(AbstractFrictionLaw):
    pass
