"""OServe (ICML'26): settings, the flow network, replica capacities and the deployment search."""

from .config import OServeConfig, paper_inputs
from .flow import (
           Assignment,
           completion_time,
           lcm_capacity,
           max_flow,
           min_gpus_per_replica,
           min_makespan,
           unit_costs,
)
from .objective import FlowValue, evaluate, phi
from .profiler import CapacityProfiler, TypePool, pools_from_frame
from .replica import Shape, instance_config, kv_tokens, min_gpus, step_model, strategies

# the search (Alg. 1, exhaustive, CLI) is `servesim.systems.oserve.search`; not imported here so that
# `python -m servesim.systems.oserve.search` runs it cleanly

__all__ = [
           "Assignment",
           "CapacityProfiler",
           "FlowValue",
           "OServeConfig",
           "Shape",
           "TypePool",
           "completion_time",
           "evaluate",
           "instance_config",
           "kv_tokens",
           "lcm_capacity",
           "max_flow",
           "min_gpus",
           "min_gpus_per_replica",
           "min_makespan",
           "paper_inputs",
           "phi",
           "pools_from_frame",
           "step_model",
           "strategies",
           "unit_costs",
]
