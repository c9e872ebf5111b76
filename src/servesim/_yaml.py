"""A strict YAML loader for the project's hand-written files (claims, configs, scenarios).

`yaml.safe_load` lets a repeated key silently win and reads `yes`/`no`/`on`/`off` as booleans
(YAML 1.1), so `allow_download: maybe` and a copy-pasted duplicate key both pass unnoticed.
`strict_yaml_load` refuses duplicate keys (naming the line) and reads only `true`/`false` as
booleans (YAML 1.2 core schema); everything else is as `safe_load`.
"""

from __future__ import annotations

import re
from typing import IO, Any

import yaml

from servesim.errors import InputError

__all__ = ["StrictYAMLError", "parse_bool", "strict_yaml_load"]


class StrictYAMLError(InputError, yaml.YAMLError):
    """Malformed YAML, or a mapping with a repeated key. The message names the source and line."""


class _StrictLoader(yaml.SafeLoader):
    pass


# YAML 1.2 booleans only: drop SafeLoader's YAML 1.1 bool resolver and add a narrower one.
_StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict = {}
    for key_node, _ in node.value:  # the keys written here, before `<<` merges add theirs
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise StrictYAMLError(f"line {key_node.start_mark.line + 1}: a mapping key must be a scalar, "
                                  f"got {key!r}") from None
        if key in seen:
            raise StrictYAMLError(f"line {key_node.start_mark.line + 1}: duplicate key {key!r} "
                                  f"(first at line {seen[key]})")
        seen[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def strict_yaml_load(stream: str | bytes | IO, source: str | None = None) -> Any:
    """Parse one YAML document strictly. Raises `StrictYAMLError` naming `source` (a file name)
    and the line for a duplicate key or any YAML syntax error."""
    where = f"{source}: " if source else ""
    try:
        return yaml.load(stream, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except StrictYAMLError as exc:
        raise StrictYAMLError(f"{where}{exc}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = " ".join(str(x) for x in (exc.context, exc.problem) if x)
        raise StrictYAMLError(f"{where}not valid YAML: {at}{what}") from None
    except yaml.YAMLError as exc:
        raise StrictYAMLError(f"{where}not valid YAML: {exc}") from None


_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


def parse_bool(value: Any, key: str) -> bool:
    """A boolean option given as a bool or one of true/false, yes/no, on/off, 1/0 (any case);
    anything else (``maybe``) is an error naming ``key`` rather than a silent False."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise StrictYAMLError(f"{key}={value!r}: expected a boolean (true/false, yes/no, on/off, 1/0)")
