"""The Snakemake workflow: dry run of the default target, and the quick target end to end in a
temporary copy of the project (notebooks on their tiny `test` parameters)."""

import csv
import json
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT, pythonpath_env

SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def test_dry_run_default_target_is_quick():
    r = subprocess.run(SNAKEMAKE + ["-n", "--quiet", "rules"], cwd=ROOT, capture_output=True, text=True, env=pythonpath_env())
    assert r.returncode == 0, r.stderr[-3000:]
    r = subprocess.run(SNAKEMAKE + ["-n", "--forceall"], cwd=ROOT, capture_output=True, text=True, env=pythonpath_env())
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout + r.stderr
    assert "rule quick:" in out and "claims_report" in out and "provenance" in out


def test_invalid_config_names_the_key():
    r = subprocess.run(SNAKEMAKE + ["-n", "--config", "scale=huge"], cwd=ROOT, capture_output=True, text=True, env=pythonpath_env())
    assert r.returncode != 0
    assert "huge" in (r.stdout + r.stderr)


def _copy_project(dst):
    for name in ("Snakefile", "pyproject.toml", "README.md"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, dst / name)
    ignore = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints")
    for d in ("src", "notebooks", "workflow"):
        shutil.copytree(ROOT / d, dst / d, ignore=ignore)
    (dst / "traces").mkdir()
    for f in ("MANIFEST", "datasets.yaml"):  # not traces/data: the test fetches from the mirror
        shutil.copy(ROOT / "traces" / f, dst / "traces" / f)


def _failed_job_logs(proj, out: str, n: int = 2500) -> str:
    """The tails of the failed jobs' logs (they live in the temporary project, gone after the
    test): the engine's log and its server's, and any log Snakemake names as a failed job's."""
    import re

    failed = re.findall(r"^\s*log: (\S+) \(check log file\(s\) for error details\)", out, re.M)
    found = [proj / p for p in failed]
    found += sorted((proj / "results/quick/engine").glob("server.log*"))
    found.append(proj / "logs/quick/engine/calibration.log")
    parts = []
    for f in dict.fromkeys(found):
        if f.is_file():
            parts.append(f"\n===== {f.relative_to(proj)} (tail) =====\n" + f.read_text(errors="replace")[-n:])
    return "".join(parts)


@pytest.mark.slow
def test_quick_target_end_to_end(tmp_path, mirror):
    import importlib.util

    if importlib.util.find_spec("vllm") is None:  # the quick target replays workloads on vLLM
        pytest.skip("vLLM is not installed (pip install -e .[engine-cpu]); the quick target runs the engine stage")
    proj = tmp_path / "proj"
    proj.mkdir()
    _copy_project(proj)
    env = pythonpath_env()
    env["PYTHONPATH"] = str(proj / "src")
    cmd = SNAKEMAKE + ["--cores", "2", "--config", "tiny=true", f"data_mirror={mirror}", "allow_download=false"]
    r = subprocess.run(cmd, cwd=proj, capture_output=True, text=True, env=env)
    assert r.returncode == 0, _failed_job_logs(proj, r.stdout + r.stderr) + "\n===== snakemake (tail) =====\n" \
        + (r.stdout + r.stderr)[-4000:]
    with open(proj / "results/quick/claims_report.csv") as fh:
        rows = list(csv.DictReader(fh))
    from servesim.analysis.claims import KINDS, STATUSES

    assert all(row["status"] in STATUSES and row["kind"] in KINDS for row in rows)
    prov = json.loads((proj / "results/quick/provenance.json").read_text())
    assert prov["scale"] == "quick" and "numpy" in prov["packages"]
    for nb in sorted((proj / "notebooks").glob("*/*.ipynb")):
        assert (proj / "figures/quick" / nb.parent.name / f"{nb.stem}.png").exists(), nb
        assert (proj / "logs/quick" / nb.parent.name / f"{nb.stem}.ipynb").exists(), nb
    # nothing left to do: a second run is a no-op
    r2 = subprocess.run(cmd + ["-n"], cwd=proj, capture_output=True, text=True, env=env)
    assert "Nothing to be done" in r2.stdout + r2.stderr
