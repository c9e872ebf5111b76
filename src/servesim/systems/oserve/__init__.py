"""OServe (ICML'26): settings and the lower-level flow network."""

from .config import OServeConfig, paper_inputs
from .flow import Assignment, completion_time, lcm_capacity, max_flow, min_gpus_per_replica, min_makespan, unit_costs

__all__ = ["OServeConfig", "paper_inputs", "Assignment", "completion_time", "lcm_capacity", "max_flow",
           "min_gpus_per_replica", "min_makespan", "unit_costs"]
