"""Name -> class registries for global routers and control policies (autoscalers, ...).

The endpoint-router registry (`ROUTERS`, `register_router`) lives with the routers in
`servesim.sim.routers` (the Cluster uses it too) and is re-exported here.
"""

from __future__ import annotations

from ..sim.routers import ROUTERS, register_class, register_router

GLOBAL_ROUTERS: dict[str, type] = {}
CONTROLLERS: dict[str, type] = {}


def register_global_router(name: str):
    """Class decorator: make a global (request -> endpoint) router available under `name`."""
    return register_class(GLOBAL_ROUTERS, "global router", name)


def register_controller(name: str):
    """Class decorator: make a periodic control actor (autoscaler, ...) available under `name`."""
    return register_class(CONTROLLERS, "controller", name)


def lookup(table: dict[str, type], kind: str, name: str) -> type:
    try:
        return table[name]
    except KeyError:
        raise KeyError(f"unknown {kind} {name!r}; known: {sorted(table)}") from None


__all__ = ["CONTROLLERS", "GLOBAL_ROUTERS", "ROUTERS", "lookup", "register_controller",
           "register_global_router", "register_router"]
