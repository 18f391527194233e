"""The simulation entry point, its options and solution types,
`stick_margin` (how far stick forces are from breakaway) and `load_coupling`
(the friction–reaction coupling of reaction-load friction at one state); the
protocol a law family implements (`AbstractFrictionLaw`, whose
``simulation_path`` is one of the paths below), and the save-time and interval
checks that the configs share."""

# First: the law families (imported while this package loads) need it.
from ._law import AbstractFrictionLaw as AbstractFrictionLaw

# isort: split

from ._common import check_interval as check_interval, save_times as save_times
from ._karnopp import KARNOPP_PATH as KARNOPP_PATH
from ._kikuuwe import KIKUUWE_PATH as KIKUUWE_PATH
from ._loads import LoadCoupling as LoadCoupling
from ._options import SimulateOptions as SimulateOptions
from ._path import AbstractPath as AbstractPath
from ._simulate import simulate as simulate
from ._smooth import DYNAMIC_PATH as DYNAMIC_PATH, SMOOTH_PATH as SMOOTH_PATH
from ._solution import RESULTS as RESULTS, Solution as Solution
from ._stick import load_coupling as load_coupling, stick_margin as stick_margin
from ._switch import SWITCH_PATH as SWITCH_PATH
