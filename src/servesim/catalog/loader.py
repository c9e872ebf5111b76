"""Read and validate the catalog's YAML files; look entries up by key or alias."""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError
from .specs import HardwareSpec, ModelSpec

DATA_DIR = Path(__file__).parent / "data"
MODELS_FILE = DATA_DIR / "models.yaml"
HARDWARE_FILE = DATA_DIR / "hardware.yaml"


class CatalogError(InputError):
    """A catalog file is malformed, or a key is unknown."""


def _fields(cls) -> tuple[dict[str, Any], set[str]]:
    """(field name -> type annotation string, required names) of a spec dataclass, minus `key`."""
    types, required = {}, set()
    for f in dataclasses.fields(cls):
        if f.name == "key":
            continue
        types[f.name] = f.type
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.add(f.name)
    return types, required


def _coerce(value: Any, typ: str, where: str) -> Any:
    """Check one value against its annotation (as written in specs.py) and normalise it."""
    nullable = "None" in typ
    if value is None:
        if nullable:
            return None
        raise CatalogError(f"{where}: must not be null")
    base = typ.replace(" | None", "")
    if base == "int":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or float(value) != int(value):
            raise CatalogError(f"{where}: expected an integer, got {value!r}")
        if value < 0:
            raise CatalogError(f"{where}: must be >= 0, got {value!r}")
        return int(value)
    if base == "float":
        if isinstance(value, str):
            try:  # YAML 1.1 reads "6.74e9" (no dot before e) as a string
                value = float(value)
            except ValueError:
                raise CatalogError(f"{where}: expected a number, got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise CatalogError(f"{where}: expected a non-negative number, got {value!r}")
        return float(value)
    if base == "bool":
        if not isinstance(value, bool):
            raise CatalogError(f"{where}: expected true/false, got {value!r}")
        return value
    if base == "str":
        if not isinstance(value, str) or not value.strip():
            raise CatalogError(f"{where}: expected a non-empty string, got {value!r}")
        return value
    if base.startswith("tuple"):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise CatalogError(f"{where}: expected a list of strings, got {value!r}")
        return tuple(value)
    raise AssertionError(typ)  # pragma: no cover


def _load(path: Path, cls) -> dict[str, Any]:
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise CatalogError(f"catalog file not found: {path}") from None
    except yaml.YAMLError as e:
        raise CatalogError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(raw, dict) or not raw:
        raise CatalogError(f"{path}: expected a mapping of key -> entry")
    types, required = _fields(cls)
    out = {}
    for key, entry in raw.items():
        if not isinstance(key, str) or key != key.lower():
            raise CatalogError(f"{path}: key {key!r} must be a lowercase string")
        if not isinstance(entry, dict):
            raise CatalogError(f"{path}: entry {key!r} must be a mapping")
        missing = sorted(required - entry.keys())
        if missing:
            raise CatalogError(f"{path}: entry {key!r} is missing field(s) {', '.join(missing)}")
        unknown = sorted(entry.keys() - types.keys())
        if unknown:
            raise CatalogError(f"{path}: entry {key!r} has unknown field(s) {', '.join(unknown)}")
        vals = {k: _coerce(v, types[k], f"{path}: {key}.{k}") for k, v in entry.items()}
        spec = cls(key=key, **vals)
        _check(spec, path)
        out[key] = spec
    return out


def _check(spec, path: Path) -> None:
    """Cross-field sanity checks."""
    where = f"{path}: entry {spec.key!r}"
    if isinstance(spec, ModelSpec):
        for name in ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "dtype_bytes", "n_experts", "experts_per_token"):
            if getattr(spec, name) < 1:
                raise CatalogError(f"{where}: {name} must be >= 1")
        if spec.heads % spec.kv_heads:
            raise CatalogError(f"{where}: heads ({spec.heads}) must be a multiple of kv_heads ({spec.kv_heads})")
        if spec.experts_per_token > spec.n_experts:
            raise CatalogError(f"{where}: experts_per_token > n_experts")
    else:
        for name in ("mem_bytes", "flops", "mem_bw", "interconnect_bw", "pcie_bw"):
            if getattr(spec, name) <= 0:
                raise CatalogError(f"{where}: {name} must be > 0")


def _index(entries: dict[str, Any], path: Path) -> dict[str, str]:
    """lowercase name or alias -> key; an alias claimed twice is an error."""
    idx: dict[str, str] = {}
    for key, spec in entries.items():
        for name in (key, *spec.aliases):
            n = name.lower()
            if idx.get(n, key) != key:
                raise CatalogError(f"{path}: name {name!r} is used by both {idx[n]!r} and {key!r}")
            idx[n] = key
    return idx


@functools.lru_cache(maxsize=8)
def load_models(path: str | os.PathLike = MODELS_FILE) -> dict[str, ModelSpec]:
    """All models of a catalog file (default: the packaged one), validated."""
    return _load(Path(path), ModelSpec)


@functools.lru_cache(maxsize=8)
def load_hardware(path: str | os.PathLike = HARDWARE_FILE) -> dict[str, HardwareSpec]:
    """All accelerators of a catalog file (default: the packaged one), validated."""
    return _load(Path(path), HardwareSpec)


@functools.lru_cache(maxsize=8)
def _model_index(path) -> dict[str, str]:
    return _index(load_models(path), Path(path))


@functools.lru_cache(maxsize=8)
def _hw_index(path) -> dict[str, str]:
    return _index(load_hardware(path), Path(path))


def model_key(name: str, path: str | os.PathLike = MODELS_FILE) -> str:
    """The catalog key of a model name or alias (case-insensitive)."""
    try:
        return _model_index(path)[name.lower()]
    except KeyError:
        raise CatalogError(f"unknown model {name!r} (not a key or alias in {path}); known: {', '.join(sorted(load_models(path)))}") from None


def hardware_key(name: str, path: str | os.PathLike = HARDWARE_FILE) -> str:
    """The catalog key of a hardware name or alias (case-insensitive)."""
    try:
        return _hw_index(path)[name.lower()]
    except KeyError:
        raise CatalogError(f"unknown hardware {name!r} (not a key or alias in {path}); known: {', '.join(sorted(load_hardware(path)))}") from None


def get_model(key: str, path: str | os.PathLike = MODELS_FILE) -> ModelSpec:
    """A model by key or alias, e.g. ``get_model("llama-2-70b")`` or ``get_model("qwen_7b")``."""
    if isinstance(key, ModelSpec):
        return key
    return load_models(path)[model_key(key, path)]


def get_hardware(key: str, path: str | os.PathLike = HARDWARE_FILE) -> HardwareSpec:
    """An accelerator by key or alias, e.g. ``get_hardware("h100-80gb")``."""
    if isinstance(key, HardwareSpec):
        return key
    return load_hardware(path)[hardware_key(key, path)]


def model_keys(path: str | os.PathLike = MODELS_FILE) -> list[str]:
    """Sorted model keys."""
    return sorted(load_models(path))


def hardware_keys(path: str | os.PathLike = HARDWARE_FILE) -> list[str]:
    """Sorted hardware keys."""
    return sorted(load_hardware(path))
