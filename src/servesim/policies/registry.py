"""Name -> class registries for routers and control policies (autoscalers, forecasters...).

    @register_router("my-router")
    class MyRouter(HeapRouter):
        def key(self, inst): return inst.pending_tokens + 100 * inst.outstanding
"""

from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")

ROUTERS: dict[str, type] = {}
GLOBAL_ROUTERS: dict[str, type] = {}
CONTROLLERS: dict[str, type] = {}


def _register(table: dict[str, type], kind: str, name: str) -> Callable[[type[T]], type[T]]:
    def deco(cls: type[T]) -> type[T]:
        if name in table and table[name] is not cls:
            raise ValueError(f"{kind} {name!r} is already registered to {table[name].__name__}")
        table[name] = cls
        cls.name = name  # type: ignore[attr-defined]
        return cls

    return deco


def register_router(name: str):
    """Class decorator: make an endpoint router available under `name` (scenario `router:`)."""
    return _register(ROUTERS, "router", name)


def register_global_router(name: str):
    """Class decorator: make a global (request -> endpoint) router available under `name`."""
    return _register(GLOBAL_ROUTERS, "global router", name)


def register_controller(name: str):
    """Class decorator: make a periodic control actor (autoscaler, ...) available under `name`."""
    return _register(CONTROLLERS, "controller", name)


def lookup(table: dict[str, type], kind: str, name: str) -> type:
    try:
        return table[name]
    except KeyError:
        raise KeyError(f"unknown {kind} {name!r}; known: {sorted(table)}") from None
