"""`ruff check` (the rules in pyproject.toml's [tool.ruff]) finds nothing in the package, the tests,
the workflow and the benchmarks."""

import subprocess
import sys

from tests.conftest import ROOT


def test_ruff_check_is_clean():
    r = subprocess.run([sys.executable, "-m", "ruff", "--version"], capture_output=True, text=True)
    assert r.returncode == 0, "ruff is not installed: pip install -e .[test]"
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise",
                        "src", "tests", "workflow", "benchmarks"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
