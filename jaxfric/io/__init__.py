"""File input and output: TOML configurations, robot models (URDF, MJCF through
MuJoCo's compiler) and identified friction written back into them, measured
records and robot logs (ROS bags), and result files.

The library core does no file I/O; this package and `jaxfric.cli` do.
"""

from .config import (
    ConfigError as ConfigError,
    SimulationConfig as SimulationConfig,
    available_types as available_types,
    build as build,
    load_config as load_config,
    parse_config as parse_config,
    parse_simulate as parse_simulate,
    read_toml as read_toml,
)
from .export import (
    JointFriction as JointFriction,
    export_mjcf as export_mjcf,
    export_urdf as export_urdf,
    joint_friction as joint_friction,
)
from .logs import (
    load_joint_states as load_joint_states,
    write_joint_states as write_joint_states,
)
from .mjcf import (
    build_mjcf as build_mjcf,
    load_mjcf as load_mjcf,
    load_mjcf_string as load_mjcf_string,
)
from .motionsolve import (
    MotionSolveModel as MotionSolveModel,
    load_motionsolve as load_motionsolve,
    load_motionsolve_string as load_motionsolve_string,
)
from .records import load_record as load_record, save_record as save_record
from .results import (
    save_solution as save_solution,
    solution_arrays as solution_arrays,
    summarize as summarize,
    to_jsonable as to_jsonable,
    write_csv as write_csv,
    write_json as write_json,
    write_npz as write_npz,
)
from .urdf import (
    URDFRobot as URDFRobot,
    build_urdf as build_urdf,
    load_urdf as load_urdf,
    parse_urdf as parse_urdf,
    parse_urdf_string as parse_urdf_string,
)
