from servesim._imports import closure


def test_closure_is_transitive_and_includes_parents(tmp_path, project_root):
    src = tmp_path / "src"
    pkg = src / "servesim"
    (pkg / "a").mkdir(parents=True)
    (pkg / "b").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "__init__.py").write_text("from .x import f\n")
    (pkg / "a" / "x.py").write_text("from ..b import y\nimport numpy\n")
    (pkg / "b" / "__init__.py").write_text("")
    (pkg / "b" / "y.py").write_text("")
    (pkg / "b" / "z.py").write_text("")  # never imported
    nb = tmp_path / "nb.py"
    nb.write_text("%matplotlib inline\nfrom servesim.a import f\n")
    got = {p.relative_to(src).as_posix() for p in closure(nb, src)}
    assert got == {"servesim/__init__.py", "servesim/a/__init__.py", "servesim/a/x.py",
                   "servesim/b/__init__.py", "servesim/b/y.py"}


def test_closure_of_real_package(project_root, tmp_path):
    nb = tmp_path / "nb.py"
    nb.write_text("from servesim.analysis.outputs import FigureOutputs\n")
    got = {p.name for p in closure(nb, project_root / "src")}
    assert "outputs.py" in got and "schema.py" not in got


def test_closure_follows_an_edited_file(tmp_path):
    """Each file's imports are parsed once per content: an edit in the same process is seen."""
    src = tmp_path / "src"
    pkg = src / "servesim"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("")
    (pkg / "b.py").write_text("")
    nb = tmp_path / "nb.py"
    nb.write_text("import servesim.a\n")
    assert {p.name for p in closure(nb, src)} == {"__init__.py", "a.py"}
    (pkg / "a.py").write_text("from . import b  # now a imports b\n")
    assert {p.name for p in closure(nb, src)} == {"__init__.py", "a.py", "b.py"}
