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
    for name, render in [("perf-engine-mape", docs_blocks.perf_engine_mape), ("perf-heldout", docs_blocks.perf_heldout),
                         ("perf-transfer", docs_blocks.perf_transfer)]:
        assert render(metrics) in text, f"docs/architecture.md's {name} block is stale: run `servesim docs`"


def test_heldout_rows_sorted_by_error_and_named_by_backend(tmp_path):
    m = tmp_path / "metrics.json"
    m.write_text(json.dumps({"median_mape_pct_fitted": 5.94, "median_r2_fitted": 0.98454, "median_mape_pct_table": 3.71,
                             "median_mape_pct_vidur": 36.6, "n_datasets": 34}))
    lines = docs_blocks.perf_heldout(m).splitlines()
    assert "34 public measurement sets" in lines[0]
    assert lines[2].startswith("| `table`") and lines[2].endswith("| 3.7 % |  |")
    assert lines[3] == "| `fitted` (held-out 20 %) | 5.9 % | 0.985 |" and lines[4].startswith("| `vidur`")
    m.write_text(json.dumps({"n_datasets": 3}))
    with pytest.raises(ValueError, match="median_mape_pct"):
        docs_blocks.perf_heldout(m)


def test_transfer_table_pairs_readings_and_the_overall_row(tmp_path):
    m = tmp_path / "metrics.json"
    m.write_text(json.dumps({"transfer_gpu_pair_median_mape_pct[zero-shot|a10->h800]": 51.25,
                             "transfer_gpu_pair_median_mape_pct[zero-shot|h800->h100-80gb]": 9.34,
                             "transfer_gpu_pair_median_mape_pct[host-from-other-models|a10->h800]": 11.6,
                             "transfer_gpu_pair_median_mape_pct[other-reading|a10->h800]": 1.0,
                             "transfer_gpu_median_mape_pct[zero-shot]": 19.22}))
    lines = docs_blocks.perf_transfer(m).splitlines()
    assert lines[0].count("|") == 4 and "other-reading" not in lines[0]
    assert lines[2] == "| H800 → H100 | 9.3 % |  |"  # same-silicon pairs first
    assert lines[3] == "| A10 → H800 | 51.2 % | 11.6 % |"
    assert lines[4] == "| all pairs × models | 19.2 % |  |"
