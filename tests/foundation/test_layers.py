"""INV-10: the package's layers import only downward (docs/architecture.md)."""

import ast

from tests.conftest import ROOT

#: the layers, lowest first; a module may import its own layer and those before it
LAYERS = [{"workload", "catalog"}, {"perf"}, {"sim"}, {"fleet", "policies"}, {"forecast"}, {"systems"}, {"engine"},
          {"analysis"}]
RANK = {p: i for i, group in enumerate(LAYERS) for p in group}


def _imports(path, package: list[str]):
    for node in ast.walk(ast.parse(path.read_text())):  # function-level imports count too
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                yield ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                yield node.module or ""


def test_layers_import_only_downward():
    src = ROOT / "src" / "servesim"
    up = []
    for f in sorted(src.rglob("*.py")):
        parts = f.relative_to(src).parts
        if len(parts) < 2 or parts[0] not in RANK:
            continue
        for mod in _imports(f, ["servesim", *parts[:-1]]):
            m = mod.split(".")
            if m[0] == "servesim" and len(m) > 1 and RANK.get(m[1], -1) > RANK[parts[0]]:
                up.append(f"{f.relative_to(ROOT)} imports {mod}")
    assert not up, "\n".join(up)
    assert sum(1 for _ in src.rglob("*.py")) > 50  # the walk saw the package


def test_an_upward_import_is_caught(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("def g():\n    from ...analysis import runs\n")
    assert list(_imports(f, ["servesim", "sim", "sub"])) == ["servesim.analysis"]
