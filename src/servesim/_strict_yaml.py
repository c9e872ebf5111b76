"""YAML that refuses duplicate keys (PyYAML lets the last one win silently).

Errors name the source and the line of the repeated key, and of a syntax error.
"""

from __future__ import annotations

from typing import Any

import yaml

from servesim.errors import InputError


class StrictYAMLError(InputError):
    """A YAML syntax error or a duplicate key; the message names the source and line."""


class _StrictLoader(yaml.SafeLoader):
    pass


def _mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # keys merged in with << may be overridden (YAML merge-key rules)
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            continue  # the constructor below reports an unhashable key
        if key in seen:
            raise StrictYAMLError(f"{loader.name}: line {key_node.start_mark.line + 1}: duplicate key {key!r} "
                                  f"(first at line {seen[key] + 1})")
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def load_strict(text_or_stream: Any, source: str = "<yaml>") -> Any:
    """``yaml.safe_load`` with duplicate keys as errors; ``source`` names the text in messages."""
    loader = _StrictLoader(text_or_stream)
    loader.name = source
    try:
        return loader.get_single_data()
    except StrictYAMLError:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise StrictYAMLError(f"{source}: {where}YAML error: {problem}") from None
    finally:
        loader.dispose()


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
