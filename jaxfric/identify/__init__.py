"""Friction identification: fit a system, a friction law and applied forces to
measured experiments by differentiating through `jaxfric.simulate`; the classical
linear least-squares baseline; measured records (`Record`; files through
`jaxfric.io.load_record`)."""

from ._experiment import (
    Experiment as Experiment,
    from_record as from_record,
    stack_experiments as stack_experiments,
    synthesize_record as synthesize_record,
)
from ._fit import (
    FitResult as FitResult,
    LevenbergMarquardt as LevenbergMarquardt,
    Model as Model,
    MultipleShooting as MultipleShooting,
    default_adam as default_adam,
    fit as fit,
    predict as predict,
)
from ._linear import (
    LinearFit as LinearFit,
    linear_least_squares as linear_least_squares,
    linear_least_squares_record as linear_least_squares_record,
    savgol as savgol,
)
from ._record import Record as Record, RecordError as RecordError
from ._transforms import (
    AbstractTransform as AbstractTransform,
    AtLeast as AtLeast,
    Bounded as Bounded,
    Identity as Identity,
    Positive as Positive,
)
