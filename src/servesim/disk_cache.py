"""Per-user, content-addressed caches of deterministic results (`~/.cache/servesim/<name>/`).

A cache entry is one small JSON file named by a hash of *everything* its value depends on: the
inputs, the library versions and the digest of the servesim code that computed it
(`servesim._imports.code_digest`), so a hit returns exactly what a fresh computation would, and a
clone elsewhere on the machine shares it. Entries are written whole (a temporary file, then a
rename): jobs running side by side may compute the same key. Leaf module.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path


def cache_dir(name: str, env_var: str) -> Path:
    """``$<env_var>`` if set, else ``$XDG_CACHE_HOME/servesim/<name>`` (``~/.cache`` by default)."""
    return Path(os.environ.get(env_var)
                or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "servesim" / name)


def key_of(inputs: dict, *blobs: bytes) -> str:
    """A 24-hex-digit key of ``inputs`` (JSON, keys sorted) and raw ``blobs`` (e.g. an array's bytes)."""
    h = hashlib.sha256(json.dumps(inputs, sort_keys=True, default=repr).encode())
    for b in blobs:
        h.update(b)
    return h.hexdigest()[:24]


def read_json(path: Path) -> dict | None:
    """The entry at ``path``, or None when there is none (or it cannot be read: it is recomputed)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_json(path: Path, obj: dict) -> None:
    """One entry, written whole (JSON floats round-trip exactly)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj))
    tmp.replace(path)
