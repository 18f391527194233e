"""Mechanical systems: mass matrix, bias forces and friction Jacobians."""

from ._base import AbstractSystem as AbstractSystem
from ._lumped import Oscillator as Oscillator
from ._lumped import StackedBlocks as StackedBlocks, TwoMass as TwoMass
