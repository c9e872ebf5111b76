"""servesim.policies: routers and control policies behind name registries."""

from .autoscalers import ReactiveAutoscaler
from .global_routers import LocalRouter, PreferenceRouter
from .registry import CONTROLLERS, GLOBAL_ROUTERS, ROUTERS, register_controller, register_global_router, register_router
from .routers import (HeapRouter, JSQTokens, LeastOutstanding, ListRouter, PowerOfTwo, RandomRouter, RoundRobin,
                      Router)

__all__ = ["Router", "ListRouter", "HeapRouter", "RoundRobin", "RandomRouter", "PowerOfTwo", "LeastOutstanding",
           "JSQTokens", "ReactiveAutoscaler", "LocalRouter", "PreferenceRouter", "ROUTERS", "GLOBAL_ROUTERS",
           "CONTROLLERS", "register_router", "register_global_router", "register_controller"]
