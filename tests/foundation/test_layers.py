"""INV-10: the package's layers import only downward, and no module imports itself back
(docs/architecture.md).

Every module under src/servesim belongs to a unit (its top-level package, or itself for a
top-level module) and every unit to a layer. Imports are read from the AST, function-level
(lazy) and ``if TYPE_CHECKING:`` ones included, as `servesim._imports` reads them for the
workflow's inputs: a job that imports a module depends on everything that module imports.
``from pkg import sub`` names the submodule ``pkg.sub``; ``from pkg import name`` names
``pkg/__init__``. (Importing ``pkg.sub`` also runs ``pkg/__init__`` first; that implicit step is
not an edge, or every package whose ``__init__`` re-exports a submodule would be a circle.)
Imports by string (``importlib.import_module``) are not seen; only ``servesim.cli`` uses them.
"""

import ast
from pathlib import Path

from tests.conftest import ROOT

#: the layers, lowest first; a unit may import its own layer and those before it
LAYERS = [
    # leaves: import nothing from servesim (`servesim` is the package's own __init__)
    {"servesim", "errors", "_imports", "registry", "project_root", "control", "disk_cache"},
    # foundation: errors, YAML and table readers, output folders, the commands' one error path, datasets
    {"_yaml", "tables", "output_dir", "cli_errors", "data"},
    {"workload", "catalog"},
    {"metrics"},
    {"perf"},
    {"sim"},
    {"policies"},
    {"fleet"},
    {"forecast"},
    {"systems"},
    {"engine"},
    {"analysis"},
    {"cli", "cli_data"},  # the command line: imports any layer
]
RANK = {u: i for i, group in enumerate(LAYERS) for u in group}
SRC = ROOT / "src" / "servesim"


def _modules(src: Path) -> dict[str, tuple[Path, list[str]]]:
    """Dotted module name -> (file, the package its relative imports start from)."""
    out = {}
    for f in sorted(src.rglob("*.py")):
        parts = [src.name, *f.relative_to(src).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
            out[".".join(parts)] = (f, parts)
        else:
            out[".".join(parts)] = (f, parts[:-1])
    return out


def _owner(name: str, modules) -> str | None:
    """The module that defines dotted ``name`` (itself, or its longest module prefix)."""
    parts = name.split(".")
    while parts and ".".join(parts) not in modules:
        parts.pop()
    return ".".join(parts) or None


def _imported(path: Path, package: list[str], modules) -> set[str]:
    """The modules of ``modules`` that ``path`` imports, anywhere in the file."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        out.update(m for m in map(lambda n: _owner(n, modules), names) if m)
    return out


def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    """module -> the other modules of the package it imports."""
    modules = _modules(src)
    return {m: _imported(f, pkg, modules) - {m} for m, (f, pkg) in modules.items()}


def unit(module: str) -> str:
    """``servesim.fleet.core`` -> ``fleet``; ``servesim.cli`` -> ``cli``; ``servesim`` -> ``servesim``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _reach(graph, v) -> set[str]:
    seen, todo = set(), [v]
    while todo:
        for w in graph.get(todo.pop(), ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def _group(graph, v) -> set[str]:
    """The nodes on a circle through ``v``."""
    return {w for w in _reach(graph, v) if v in _reach(graph, w)}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle (``[a, b, ..., a]``) per strongly connected group of two or more nodes (the
    shortest through the group's first node; `_group` names the rest)."""
    reachable = {v: _reach(graph, v) for v in graph}
    out, done = [], set()
    for v in sorted(graph):
        if v in done or v not in reachable[v]:
            continue
        group = {w for w in reachable[v] if v in reachable[w]}
        done |= group
        prev, todo = {v: None}, [v]  # shortest path v -> ... -> v inside the group
        while todo:
            a = todo.pop(0)
            if v in graph[a]:
                path = [v]
                while a is not None:
                    path.append(a)
                    a = prev[a]
                out.append(path[::-1])
                break
            for b in sorted(graph[a] & group):
                if b not in prev:
                    prev[b] = a
                    todo.append(b)
    return out


def _unit_graph(graph):
    g = {}
    for a, bs in graph.items():
        g.setdefault(unit(a), set()).update(unit(b) for b in bs if unit(b) != unit(a))
    return g


def test_every_module_has_a_layer():
    graph = import_graph()
    assert len(graph) > 50  # the walk saw the package
    missing = sorted({unit(m) for m in graph} - set(RANK))
    assert not missing, f"add these to a layer of LAYERS (and docs/architecture.md): {missing}"
    assert not set(RANK) - {unit(m) for m in graph}, "LAYERS names a unit the package no longer has"


def test_layers_import_only_downward():
    up = [f"{a} (layer {RANK[unit(a)]}) imports {b} (layer {RANK[unit(b)]})"
          for a, bs in sorted(import_graph().items()) for b in sorted(bs)
          if unit(a) in RANK and unit(b) in RANK and RANK[unit(b)] > RANK[unit(a)]]
    assert not up, "\n".join(up)


def test_no_import_cycles():
    graph = import_graph()
    found = [" -> ".join(c) + f"  (of the circle {sorted(_group(graph, c[0]))})" for c in cycles(graph)]
    assert not found, "modules that import each other (move what they share down):\n" + "\n".join(found)
    found = [" -> ".join(c) for c in cycles(_unit_graph(graph))]
    assert not found, "packages that import each other:\n" + "\n".join(found)


def _package(tmp_path, files: dict[str, str]) -> Path:
    src = tmp_path / "servesim"
    for name, text in {"__init__.py": "", **files}.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    return src


def test_an_upward_import_is_caught(tmp_path):
    src = _package(tmp_path, {"sim/__init__.py": "", "sim/sub/__init__.py": "",
                              "sim/sub/x.py": "def g():\n    from ...analysis import runs\n",
                              "analysis/__init__.py": "", "analysis/runs.py": ""})
    g = import_graph(src)
    assert g["servesim.sim.sub.x"] == {"servesim.analysis.runs"}
    assert RANK[unit("servesim.analysis.runs")] > RANK[unit("servesim.sim.sub.x")]


def test_a_circle_through_a_lazy_import_is_caught(tmp_path):
    src = _package(tmp_path, {"fleet/__init__.py": "", "fleet/a.py": "from .b import f\n",
                              "fleet/b.py": "def f():\n    from servesim.fleet.a import g\n",
                              "cli_errors.py": "def h():\n    from servesim.fleet import a\n"})
    g = import_graph(src)
    assert cycles(g) == [["servesim.fleet.a", "servesim.fleet.b", "servesim.fleet.a"]]
    assert g["servesim.cli_errors"] == {"servesim.fleet.a"}  # the submodule, not fleet/__init__


def test_a_submodule_may_import_its_siblings_through_the_package(tmp_path):
    src = _package(tmp_path, {"perf/__init__.py": "from .registry import build\n",
                              "perf/registry.py": "def build():\n    from . import table\n", "perf/table.py": ""})
    assert cycles(import_graph(src)) == []
    # ... but not a name its package's __init__ defines from it
    (src / "perf" / "table.py").write_text("from servesim.perf import build\n")
    assert cycles(import_graph(src)) == [["servesim.perf", "servesim.perf.registry", "servesim.perf.table",
                                          "servesim.perf"]]


def test_packages_that_import_each_other_are_caught():
    g = {"servesim.fleet.run": {"servesim.policies.registry"}, "servesim.policies.registry": set(),
         "servesim.policies.autoscalers": {"servesim.fleet.control"}, "servesim.fleet.control": set()}
    assert cycles(g) == []
    assert cycles(_unit_graph(g)) == [["fleet", "policies", "fleet"]]
