"""Where the project is: the nearest folder above a path that holds the Snakefile and pyproject.toml.

A leaf module (it imports nothing from servesim), so any layer may use it: `servesim.data` finds
the traces MANIFEST with it, `servesim.analysis.outputs` (which re-exports it) the results folders.
"""

from __future__ import annotations

import os
from pathlib import Path

_MARKERS = ("Snakefile", "pyproject.toml")


def project_root(start: str | os.PathLike | None = None) -> Path:
    """The project's root: the nearest parent of ``start`` (default cwd) holding the Snakefile."""
    here = Path(start or os.getcwd()).resolve()
    for p in (here, *here.parents):
        if all((p / m).exists() for m in _MARKERS):
            return p
    raise FileNotFoundError(f"no servesim project root (with {_MARKERS}) above {here}")
