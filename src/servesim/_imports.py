"""Which source files a notebook depends on: the transitive closure of its `servesim` imports.

The workflow declares these files as a figure's inputs, so editing `servesim/perf/...` re-runs
exactly the figures that import it (directly or through another servesim module). Leaf module:
imports nothing from servesim.
"""

from __future__ import annotations

import ast
import hashlib
import json
from functools import lru_cache
from pathlib import Path


def _module_file(src: Path, mod: str) -> Path | None:
    parts = mod.split(".")
    p = src.joinpath(*parts)
    if (p / "__init__.py").exists():
        return p / "__init__.py"
    if p.with_suffix(".py").exists():
        return p.with_suffix(".py")
    return None


def _package_of(src: Path, file: Path) -> str:
    rel = file.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    else:
        parts = parts[:-1]
    return ".".join(parts)


def _imports(tree: ast.AST, package: str | None) -> set[str]:
    """Absolute module names a parsed file imports (``from a import b`` yields a and a.b)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level and package is not None:
                base_parts = package.split(".") if package else []
                base_parts = base_parts[: len(base_parts) - (node.level - 1)] if node.level > 1 else base_parts
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base:
                out.add(base)
                out.update(f"{base}.{a.name}" for a in node.names if a.name != "*")
    return out


def _code_of_notebook(path: Path) -> str:
    if path.suffix == ".ipynb":
        nb = json.loads(path.read_text())
        cells = [c for c in nb.get("cells", []) if c.get("cell_type") == "code"]
        text = "\n".join("".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells)
    else:
        text = path.read_text()
    # IPython magics and shell lines are not Python
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(("%", "!")))


def closure(entry: str | Path, src: str | Path, root_package: str = "servesim") -> list[Path]:
    """Sorted source files of ``root_package`` under ``src`` that ``entry`` (a .py or .ipynb) imports,
    transitively, including the ``__init__`` of every package on the way and the data files in the
    ``data/`` folder of every package it touches."""
    return _closure_of(ast.parse(_code_of_notebook(Path(entry))), Path(src), root_package)


def module_closure(module: str, src: str | Path, root_package: str = "servesim") -> list[Path]:
    """`closure` of ``python -m <module>``: the module's own file and everything it imports."""
    return _closure_of(ast.parse(f"import {module}"), Path(src), root_package)


@lru_cache(maxsize=None)
def code_digest(module: str) -> str:
    """sha256 (hex) of the source (paths and bytes) of every servesim file ``module`` imports,
    transitively: a cache keyed on it misses whenever code that could change its results changes
    (content-addressed caches of simulation results must never outlive the code that made them)."""
    src = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for f in module_closure(module, src):
        h.update(str(f.relative_to(src)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _file_imports(src: Path, f: Path) -> frozenset[str]:
    """`_imports` of one source file, parsed once per content (a workflow's DAG asks for the
    closures of hundreds of jobs over the same files: parsing each again took most of a dry run)."""
    st = f.stat()
    return _parsed_imports(str(f), st.st_mtime_ns, st.st_size, str(src))


@lru_cache(maxsize=4096)
def _parsed_imports(file: str, _mtime_ns: int, _size: int, src: str) -> frozenset[str]:
    f = Path(file)
    return frozenset(_imports(ast.parse(f.read_text()), _package_of(Path(src), f)))


@lru_cache(maxsize=1024)
def _data_files(folder: Path) -> tuple[Path, ...]:
    return tuple(f for f in folder.rglob("*") if f.is_file() and "__pycache__" not in f.parts)


def _closure_of(tree: ast.AST, src: Path, root_package: str) -> list[Path]:
    todo = [_imports(tree, None)]
    seen: set[Path] = set()
    while todo:
        for mod in todo.pop():
            if mod != root_package and not mod.startswith(root_package + "."):
                continue
            parts = mod.split(".")
            for i in range(1, len(parts) + 1):  # parents' __init__ run first
                f = _module_file(src, ".".join(parts[:i]))
                if f is not None and f not in seen:
                    seen.add(f)
                    todo.append(_file_imports(src, f))
    # data files shipped beside an imported module (``<package>/data/**``) are inputs too
    data = {f for m in seen for f in _data_files(m.parent / "data")}
    return sorted(seen | data)
