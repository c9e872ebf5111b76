"""Name -> component registries: what a scenario file may name.

One `Registry` per kind of component (endpoint routers, global routers, autoscalers and other
control actors, instance schedulers, step-time backends). A component joins with a decorator::

    from servesim.policies import register_controller

    @register_controller("my-scaler")
    class MyScaler: ...

and a scenario names it (``autoscaler: {name: my-scaler, <its options>}``). Registering a second
object under a taken name is an error naming both; an unknown name is an error listing the known
ones. `Registry.create` builds a component from a name and an options mapping, checked by the
component itself: its ``Options`` model (pydantic) when it has one, else the keyword parameters
of its constructor; every error names the option's key path (``autoscaler.up: ...``).

This module imports nothing from servesim, so every layer can hold a registry.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class UnknownName(KeyError, ValueError):
    """A name no component is registered under (a KeyError and a ValueError, so callers that
    catch either keep working); the message lists the known names."""

    def __str__(self) -> str:  # KeyError would print the message quoted
        return str(self.args[0]) if self.args else ""


class OptionsError(ValueError):
    """A component's options do not validate; one line per problem, each naming its key path."""


class Registry(Generic[T]):
    """Names -> components of one ``kind`` (e.g. ``"autoscaler"``).

    ``normalise`` maps a name to its registry spelling (routers accept ``-`` and ``_``).
    ``set_name``: a registered class gets a ``name`` attribute (its registry name).
    Read like a mapping: ``name in reg``, ``reg[name]``, ``list(reg)``, ``len(reg)``.
    """

    def __init__(self, kind: str, normalise: Callable[[str], str] | None = None, set_name: bool = True) -> None:
        self.kind = kind
        self._normalise = normalise or (lambda s: s)
        self._set_name = set_name
        self._items: dict[str, T] = {}

    # ---------------------------------------------------------------- writing
    def register(self, name: str, *, replace: bool = False) -> Callable[[T], T]:
        """Decorator adding a class or factory under ``name``. A taken name is an error naming
        both objects (``replace=True`` overrides it on purpose)."""
        key = self._normalise(name)

        def deco(obj: T) -> T:
            old = self._items.get(key)
            if old is not None and old is not obj and not replace:
                raise ValueError(f"{self.kind} {key!r} is already registered to {_qualname(old)}; "
                                 f"cannot register {_qualname(obj)} under the same name")
            self._items[key] = obj
            if self._set_name and isinstance(obj, type):
                obj.name = key  # type: ignore[attr-defined]
            return obj

        return deco

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a component registered for one run, e.g. a scheduler holding that run's
        workload); an unknown name is an error naming it."""
        key = self._normalise(name)
        if key not in self._items:
            raise UnknownName(f"unknown {self.kind} {name!r}; known: {self.names()}")
        del self._items[key]

    # ---------------------------------------------------------------- reading
    def get(self, name: str) -> T:
        """The component registered under ``name``; `UnknownName` lists the known names."""
        try:
            return self._items[self._normalise(name)]
        except (KeyError, TypeError, AttributeError):
            raise UnknownName(f"unknown {self.kind} {name!r}; known: {self.names()}") from None

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._items)

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._normalise(name) in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def items(self):
        return self._items.items()

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"

    # ---------------------------------------------------------------- building
    def create(self, name: str, options: Mapping[str, Any] | None = None, *, where: str = "",
               context: Mapping[str, Any] | None = None) -> Any:
        """``component(**context, **checked options)``.

        ``where``: the key path the options sit at (``"autoscaler"``), prefixed to every error.
        ``context``: arguments the caller supplies (an RNG, ...), not options a user may set.
        Raises `UnknownName` for an unknown ``name`` and `OptionsError` for bad options.
        """
        obj = self.get(name)
        at = f"{where}." if where else ""
        opts = dict(options or {})
        context = dict(context or {})
        schema = getattr(obj, "Options", None)
        if schema is not None and hasattr(schema, "model_validate"):
            try:
                opts = dict(schema.model_validate(opts))
            except ValueError as exc:  # pydantic's ValidationError is a ValueError
                raise OptionsError("\n".join(_pydantic_lines(exc, at, where))) from None
        else:
            _check_keywords(obj, opts, context, self.kind, name, at)
        try:
            return obj(**context, **opts)
        except (TypeError, ValueError) as exc:
            raise OptionsError(f"{where or self.kind}: {exc}") from None


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


def _pydantic_lines(exc: Exception, at: str, where: str) -> list[str]:
    errors = getattr(exc, "errors", None)
    if errors is None:
        return [f"{where}: {exc}"]
    lines = []
    for e in errors():
        loc = ".".join(str(p) for p in e["loc"])
        msg = pydantic_message(e, unknown="unknown option (not allowed here)")
        lines.append(f"{at}{loc}: {msg}" if loc else f"{where}: {msg}")
    return lines


def pydantic_message(e: Mapping[str, Any], unknown: str) -> str:
    """One pydantic error's message, in the project's words (``unknown``: for a key not allowed)."""
    if e["type"] == "extra_forbidden":
        return unknown
    if e["type"] == "bool_type":  # a StrictBool given "yes", 1, ...: no YAML 1.1 or truthy reading
        return f"expected true or false, got {e.get('input')!r}"
    return e["msg"].removeprefix("Value error, ")


def _check_keywords(obj: Any, opts: dict, context: dict, kind: str, name: str, at: str) -> None:
    """Options against the constructor's keyword parameters (no ``Options`` model): names, and
    the type of every option annotated ``bool``, ``int``, ``float`` or ``str``."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):  # a builtin without a signature: let the call decide
        return
    try:  # string annotations (``from __future__ import annotations``) evaluated
        sig = inspect.signature(obj, eval_str=True)
    except Exception:  # noqa: BLE001 (an annotation that does not evaluate: names are still checked)
        pass
    params = {p.name: p for p in sig.parameters.values()
              if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in context
              and not p.name.startswith("_")}
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return
    errs = [f"{at}{k}: unknown option for {kind} {name!r}; allowed: {sorted(params)}"
            for k in opts if k not in params]
    errs += [f"{at}{p.name}: required option of {kind} {name!r} is missing"
             for p in params.values() if p.default is p.empty and p.name not in opts]
    errs += [f"{at}{k}: {problem}" for k, v in opts.items() if k in params
             if (problem := _type_problem(params[k].annotation, v))]
    if errs:
        raise OptionsError("\n".join(errs))


def _type_problem(annotation: Any, value: Any) -> str | None:
    """Why ``value`` does not fit a plain ``bool``/``int``/``float``/``str`` annotation, else None.

    No coercion: ``"no"`` for a bool would be truthy, ``True`` for a number would be 1."""
    if annotation is bool and not isinstance(value, bool):
        return f"expected true or false, got {value!r}"
    if annotation in (int, float) and (isinstance(value, bool) or not isinstance(value, (int, float))):
        return f"expected a number, got {value!r}"
    if annotation is int and isinstance(value, float) and not value.is_integer():
        return f"expected a whole number, got {value!r}"
    if annotation is str and not isinstance(value, str):
        return f"expected a string, got {value!r}"
    return None


__all__ = ["OptionsError", "Registry", "UnknownName", "pydantic_message"]
