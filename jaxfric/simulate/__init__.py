"""The simulation entry point, its options and solution types, and
`stick_margin` (how far stick forces are from breakaway)."""

from ._options import SimulateOptions as SimulateOptions
from ._simulate import simulate as simulate
from ._solution import RESULTS as RESULTS, Solution as Solution
from ._stick import stick_margin as stick_margin
