"""The simulation entry point and its solution type."""

from ._simulate import simulate as simulate
from ._solution import RESULTS as RESULTS, Solution as Solution
