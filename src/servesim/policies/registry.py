"""Registries of global routers and control actors (autoscalers, ...), read by scenario files.

A scenario names them: ``global_router: {name: preference, ...}``, ``autoscaler: {name:
reactive, ...}``; the remaining keys are the component's options (see `servesim.registry`).
The endpoint-router registry (`ROUTERS`, `register_router`) lives with the routers in
`servesim.sim.routers` (the Cluster uses it too) and is re-exported here.
"""

from __future__ import annotations

from ..registry import Registry
from ..sim.routers import ROUTERS, register_router

#: ``name -> class`` with ``route(ridx, fleet) -> (model, region) | None``
GLOBAL_ROUTERS: Registry = Registry("global router")
#: ``name -> class`` of periodic control actors: ``period_s`` and ``act(view) -> [actions]``
CONTROLLERS: Registry = Registry("autoscaler")


def register_global_router(name: str):
    """Class decorator: make a global (request -> endpoint) router available under `name`."""
    return GLOBAL_ROUTERS.register(name)


def register_controller(name: str):
    """Class decorator: make a periodic control actor (autoscaler, ...) available under `name`
    (scenario key ``autoscaler: {name: <name>, <options>}``)."""
    return CONTROLLERS.register(name)


__all__ = ["CONTROLLERS", "GLOBAL_ROUTERS", "ROUTERS", "register_controller", "register_global_router",
           "register_router"]
