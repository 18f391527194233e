"""Placeholder: Kikuuwe law being written."""

from ._base import AbstractFrictionLaw


class Kikuuwe(AbstractFrictionLaw):
    pass
