"""servesim.systems.sageserve: SageServe's control plane (journal POMACS 2025 / conference).

- ``config``: every parameter, the paper's text as defaults, ``SageServeConfig.code()`` = the
  authors' repository;
- ``ilp``: the hourly allocation ILP (PuLP on CBC or HiGHS);
- ``actors``: LT-I / LT-U / LT-UA as fleet control actors (hourly forecast + ILP);
- ``strategies`` / ``runs``: one strategy on ``servesim.fleet`` (CLI ``servesim sageserve-run``);
- ``scenario``: the fleet scenario of one strategy (``instance_models``: each model's instance);
- ``theta``: per-instance throughput by saturating one simulated instance;
- ``niw`` / ``tiers``: the NIW queue manager and the FCFS / EDF / PF / DPA queue orders;
- ``niw_loop``: both in the simulation loop (NIW held and released on low utilisation; instance
  queues ordered by tier policy);
- ``niw_chunks``: long NIW requests as fixed-size jobs (J §6.2), accounted as one request;
- ``chiron``: the Chiron baseline (interactive / mixed / batch pools);
- ``illustration``: journal Fig 1's reactive vs ideal scaler.
"""

from .config import STRATEGIES, TIER_POLICIES, ConfigError, SageServeConfig
from .ilp import AllocationProblem, AllocationResult, ILPError, solve

__all__ = ["AllocationProblem", "AllocationResult", "ConfigError", "ILPError", "SageServeConfig",
           "STRATEGIES", "TIER_POLICIES", "solve"]
