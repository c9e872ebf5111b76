"""servesim.systems.sageserve: SageServe's control plane (journal POMACS 2025 / conference).

Pieces available without the fleet: the allocation ILP (``ilp``), the parameters with paper
and code presets (``config``), the NIW queue manager and tier policies (``niw``, ``tiers``),
and the Fig 1 illustration (``illustration``).
"""

from .config import STRATEGIES, TIER_POLICIES, ConfigError, SageServeConfig
from .ilp import AllocationProblem, AllocationResult, ILPError, solve

__all__ = ["AllocationProblem", "AllocationResult", "ConfigError", "ILPError", "SageServeConfig",
           "STRATEGIES", "TIER_POLICIES", "solve"]
