"""docs/invariants.md names a test for every invariant: each named test must exist, so an
invariant never points at a test that was renamed or removed."""

import re


def test_every_test_an_invariant_names_exists(project_root):
    text = (project_root / "docs" / "invariants.md").read_text()
    refs = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", text)
    assert len(refs) > 20
    missing = [f"{path}::{name}" for path, name in refs
               if not re.search(rf"^\s*def {name}\(", (project_root / path).read_text(), re.M)]
    assert not missing, f"docs/invariants.md names tests that do not exist: {missing}"
