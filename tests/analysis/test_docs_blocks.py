"""docs_blocks: measured numbers in docs/ rendered from the results that hold them (issue 27)."""

import json

import pytest

from servesim.analysis import docs_blocks


def test_mape_table_rows_and_columns_from_the_metrics_keys(tmp_path):
    m = tmp_path / "metrics.json"
    m.write_text(json.dumps({"gpu_bench_mape_pct[gpu-bench|aegaeon:qwen2.5-7b:h800:tp1]": 22.62,
                             "gpu_bench_mape_pct[gpu-bench+engine|aegaeon:qwen2.5-7b:h800:tp1]": 7.39,
                             "gpu_bench_mape_pct[gpu-bench|splitwise:llama-2-70b:h100-80gb:tp8]": 43.94,
                             "median_mape_pct_fitted": 5.9}))
    lines = docs_blocks.perf_engine_mape(m).splitlines()
    assert lines[0].count("|") == 4  # the set and the two backends present
    assert "| Aegaeon qwen2.5-7b, H800 | 22.6 % | 7.4 % |" in lines
    assert "| Splitwise llama-2-70b, H100, TP 8 | 43.9 % |  |" in lines
    m.write_text(json.dumps({"median_mape_pct_fitted": 5.9}))
    with pytest.raises(ValueError, match="no gpu_bench_mape_pct"):
        docs_blocks.perf_engine_mape(m)


def test_update_rewrites_only_its_blocks(tmp_path):
    (tmp_path / "results/quick/calibration/perf_models").mkdir(parents=True)
    (tmp_path / "results/quick/calibration/perf_models/metrics.json").write_text(
        json.dumps({"gpu_bench_mape_pct[gpu-bench|aegaeon:yi-1.5-9b:h100-80gb:tp1]": 30.19}))
    page = tmp_path / "page.md"
    page.write_text("before\n<!-- perf-engine-mape:begin (generated) -->\nold | 1 %\n<!-- perf-engine-mape:end -->\nafter\n")
    assert docs_blocks.update(page, tmp_path) == ["perf-engine-mape"]
    text = page.read_text()
    assert text.startswith("before\n") and text.endswith("<!-- perf-engine-mape:end -->\nafter\n")
    assert "old | 1 %" not in text and "| Aegaeon yi-1.5-9b, H100 | 30.2 % |" in text
    assert docs_blocks.update(page, tmp_path) == ["perf-engine-mape"] and page.read_text() == text  # idempotent


def test_docs_blocks_are_current(project_root):
    """Each generated block of docs/ equals what `servesim docs` renders from this checkout's quick
    results (skipped where the quick calibration has not run)."""
    metrics = project_root / "results/quick/calibration/perf_models/metrics.json"
    if not metrics.exists():
        pytest.skip("no quick perf_models results in this checkout")
    page = project_root / "docs" / "architecture.md"
    text = page.read_text()
    want = docs_blocks.perf_engine_mape(metrics)
    assert want in text, "docs/architecture.md's perf-engine-mape block is stale: run `servesim docs`"
