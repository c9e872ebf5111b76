"""servesim.policies: routers and control policies behind name registries.

The endpoint routers are implemented in `servesim.sim.routers` (shared with the Cluster) and
re-exported here under the same names.
"""

from ..sim.routers import (
                      HeapRouter,
                      JSQTokens,
                      LeastOutstanding,
                      ListRouter,
                      PowerOfTwo,
                      RandomRouter,
                      RoundRobin,
                      Router,
)
from .autoscalers import ReactiveAutoscaler
from .global_routers import LocalRouter, PreferenceRouter
from .registry import (
                      CONTROLLERS,
                      GLOBAL_ROUTERS,
                      ROUTERS,
                      register_controller,
                      register_global_router,
                      register_router,
)

__all__ = [
                      "CONTROLLERS",
                      "GLOBAL_ROUTERS",
                      "ROUTERS",
                      "HeapRouter",
                      "JSQTokens",
                      "LeastOutstanding",
                      "ListRouter",
                      "LocalRouter",
                      "PowerOfTwo",
                      "PreferenceRouter",
                      "RandomRouter",
                      "ReactiveAutoscaler",
                      "RoundRobin",
                      "Router",
                      "register_controller",
                      "register_global_router",
                      "register_router",
]
