"""Every figure notebook runs through papermill on its tiny parameters and writes its outputs;
every notebook has an in-sync jupytext percent pair."""

import json
from pathlib import Path

import pytest
import yaml

from servesim.analysis.kernel_ipc import execute_notebook
from tests.conftest import ROOT, pythonpath_env

NOTEBOOKS = sorted(ROOT.glob("notebooks/*/*.ipynb"))


def _params(nb: Path) -> dict:
    f = ROOT / "workflow" / "params" / f"{nb.parent.name}.yaml"
    entry = (yaml.safe_load(f.read_text()) or {}).get(nb.stem, {}) if f.exists() else {}
    return entry


def _code_cells(cells) -> list[str]:
    return [c.source.strip() for c in cells if c.cell_type == "code"]


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_jupytext_pair_in_sync(nb):
    import jupytext

    py = nb.with_suffix(".py")
    assert py.exists(), f"{nb} has no paired {py.name} (jupytext percent)"
    a, b = jupytext.read(nb), jupytext.read(py)
    assert _code_cells(a.cells) == _code_cells(b.cells), f"{nb.name} and {py.name} differ: run `jupytext --sync {py}`"
    params = [c for c in a.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1, f"{nb}: needs exactly one cell tagged `parameters`"
    _assert_papermill_reads(nb, params[0])


def _assert_papermill_reads(nb: Path, cell) -> None:
    """papermill's own parser lists every parameter (else it warns "Unable to parse line" on each run and
    `papermill --help-notebook` omits it; an `=` inside a trailing comment is enough to lose one)."""
    import re

    from papermill.translators import PythonTranslator

    assigned = [m.group(1) for m in re.finditer(r"^([A-Za-z_]\w*)\s*=", cell.source, re.M)]
    parsed = [p.name for p in PythonTranslator.inspect(cell)]
    lost = [a for a in assigned if a not in parsed]
    assert not lost, f"{nb}: papermill cannot parse the parameter line(s) of {lost} (no `=` in their comments)"


@pytest.mark.slow
@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_notebook_runs_and_writes_outputs(nb, tmp_path, monkeypatch):
    import importlib.util

    entry = _params(nb)
    if entry.get("runs"):
        pytest.skip("reads declared runs' outputs (workflow/runs/): covered by the workflow end-to-end test")
    if importlib.util.find_spec("vllm") is not None:
        # the end-to-end test (test_workflow.py) runs every notebook on these same parameters through
        # the workflow and checks the same outputs; it skips only where vLLM is missing, and then this runs
        pytest.skip("covered by the workflow end-to-end test (it runs where vLLM is installed)")
    for k, v in pythonpath_env().items():
        monkeypatch.setenv(k, v)
    params = dict(entry.get("test", entry.get("quick", {})))
    params.update(scale="quick", root=str(tmp_path), seed=0)
    execute_notebook(str(nb), str(tmp_path / "executed.ipynb"), parameters=params, kernel_name="python3",
                     cwd=str(nb.parent), progress_bar=False)
    group, fig = nb.parent.name, nb.stem
    for out in (f"figures/quick/{group}/{fig}.pdf", f"figures/quick/{group}/{fig}.png",
                f"results/quick/{group}/{fig}/data.csv", f"results/quick/{group}/{fig}/metrics.json"):
        assert (tmp_path / out).stat().st_size > 0, out
    json.loads((tmp_path / f"results/quick/{group}/{fig}/metrics.json").read_text())


_RUN_READ = __import__("re").compile(r"\.load(?:_detail)?\(\s*\"([^\"]+)\"")


def _notebook_run_reads():
    """(paper, figure, pattern) for every run pattern a notebook reads through a ``load(...)``
    helper (``aegaeon_sweeps``, ``preserve_routing``, OServe's readers): a string first argument."""
    out = []
    for py in sorted((ROOT / "notebooks").glob("*/*.py")):
        for pat in _RUN_READ.findall(py.read_text()):
            out.append((py.parent.name, py.stem, pat))
    return out


def test_a_figure_declares_every_run_its_notebook_reads():
    """A run a notebook reads but its figure does not declare (workflow/params/<paper>.yaml `runs:`)
    is not an input of the figure's job: the job may start before the run has written its outputs
    and fail, or read stale ones. Every run a notebook's load pattern selects, at every scale, is
    one the figure declares."""
    from servesim.analysis import runs

    checked, missing = 0, []
    for paper, fig, pat in _notebook_run_reads():
        params = yaml.safe_load((ROOT / "workflow" / "params" / f"{paper}.yaml").read_text()) or {}
        declared_pats = (params.get(fig) or {}).get("runs") or []
        for scale in runs.SCALES:
            try:
                read = {r.name for r in runs.select(paper, pat, scale, ROOT)}
            except runs.RunsError:   # not a run pattern (a file another helper reads)
                break
            decl = {r.name for r in runs.select(paper, declared_pats, scale, ROOT)} if declared_pats else set()
            missing += [f"{paper}/{fig} ({scale}): {n}" for n in sorted(read - decl)]
            checked += bool(read)
    assert checked > 20, "the notebooks' run reads were not found"
    assert not missing, "runs read but not declared as the figure's inputs: " + "; ".join(missing[:8])
