"""The first exact figures' notebooks run via papermill with tiny parameters and write their three outputs."""

import json
import os
from pathlib import Path

import pytest

from servesim.analysis.kernel_ipc import execute_notebook
from tests.data_marks import needs_sageserve_perf

papermill = pytest.importorskip("papermill")
jupytext = pytest.importorskip("jupytext")

ROOT = Path(__file__).resolve().parents[2]
NB = ROOT / "notebooks"

# notebook -> (tiny parameters, the metric names its claims read)
CASES = {
    "sageserve/fig02_tps_boxplots": ({}, {f"{m}_{g}_tps_{s}" for m in ("llama2_70b", "bloom_176b")
                                          for g in ("a100", "h100") for s in ("q1", "median", "q3")}),
    "aegaeon/fig04_active_models": ({"horizon_s": 2000.0, "plot_s": 200.0, "n_batches": 4},
                                    {"expected_active_formula", "expected_active_fraction", "simulated_active_mean",
                                     "aggregate_rps", "models_per_gpu_bound"}),
    "aegaeon/tab01_kv_cache": ({}, {"kv_kib_per_token_qwen_7b", "kv_kib_per_token_internlm2_5_7b_chat",
                                    "kv_kib_per_token_llama_13b", "kv_kib_per_token_qwen_72b"}),
    "oserve/tab01_spatial_cv": ({}, {f"cv_s{i}" for i in range(1, 6)}),
    "oserve/tab02_temporal_cv": ({}, {f"cv_t{i}" for i in range(1, 5)}),
}


@pytest.fixture
def kernel_env(monkeypatch):
    """The kernel papermill starts inherits this process's environment: make it import this tree."""
    paths = [str(ROOT / "src")] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    monkeypatch.setenv("SERVESIM_ROOT", os.environ.get("SERVESIM_ROOT", str(ROOT)))  # where data is found


def _run(name: str, params: dict, out_root: Path) -> dict:
    execute_notebook(str(NB / f"{name}.ipynb"), str(out_root / "executed.ipynb"),
                     parameters={**params, "root": str(out_root), "scale": "quick"},
                     kernel_name="python3", progress_bar=False, cwd=str(out_root))
    paper, fig = name.split("/")
    for ext in ("pdf", "png"):
        assert (out_root / "figures" / "quick" / paper / f"{fig}.{ext}").stat().st_size > 0
    res = out_root / "results" / "quick" / paper / fig
    assert len((res / "data.csv").read_text().splitlines()) > 1
    return json.loads((res / "metrics.json").read_text())


# notebooks that read a dataset: skipped where it is not fetched
NEEDS = {"sageserve/fig02_tps_boxplots": needs_sageserve_perf}


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(n, marks=NEEDS.get(n, ())) for n in sorted(CASES)])
def test_notebook_runs_and_writes_outputs(name, tmp_path, kernel_env):
    params, keys = CASES[name]
    metrics = _run(name, params, tmp_path)
    assert set(metrics) == keys
    assert all(isinstance(v, float) and v > 0 for v in metrics.values())


@pytest.mark.slow
def test_seeded_notebook_is_deterministic(tmp_path, kernel_env):
    name = "aegaeon/fig04_active_models"
    params = {**CASES[name][0], "seed": 3}
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    _run(name, params, a)
    _run(name, params, b)
    for rel in ("results/quick/aegaeon/fig04_active_models/data.csv",
                "results/quick/aegaeon/fig04_active_models/metrics.json",
                "figures/quick/aegaeon/fig04_active_models.png", "figures/quick/aegaeon/fig04_active_models.pdf"):
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


@pytest.mark.parametrize("name", sorted(CASES))
def test_script_and_notebook_are_paired(name):
    py = jupytext.read(NB / f"{name}.py")
    nb = jupytext.read(NB / f"{name}.ipynb")
    assert [(c.cell_type, c.source) for c in py.cells] == [(c.cell_type, c.source) for c in nb.cells]
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert "parameters" in first_code.metadata.get("tags", [])
