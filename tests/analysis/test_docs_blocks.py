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
    text = (project_root / "docs" / "architecture.md").read_text()
    blocks = docs_blocks._blocks(project_root, "quick")
    present = {name: (src, render) for name, (src, render) in blocks.items() if src.exists()}
    if not present:
        pytest.skip("no quick calibration results in this checkout")
    for name, (_, render) in present.items():
        assert f"<!-- {name}:begin" in text, f"docs/architecture.md has no {name} block"
        if name in docs_blocks.MEASURED_HERE:  # this machine's engine: the same form, its own numbers
            head = render().splitlines()[0]
            assert head in text, f"docs/architecture.md's {name} block has another form: run `servesim docs`"
        else:
            assert render() in text, f"docs/architecture.md's {name} block is stale: run `servesim docs`"


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


def test_engine_fidelity_table_errors_with_spreads_and_the_verdict(tmp_path):
    m = tmp_path / "metrics.json"
    m.write_text(json.dumps({"ttft_p50_rel_err_load0.3": 0.074, "ttft_p50_engine_spread_load0.3": 0.028,
                             "ttft_p50_rel_err_load1.2": -0.118, "e2e_p50_rel_err_load0.3": 0.095,
                             "capacity_rel_err": -0.005, "replays": 8, "replay_mode": "in-process",
                             "replay_repeats_min": 2, "lagged_replays": 0, "step_fit_heldout_mape_pct": 6.5,
                             "meets_10pct_or_spread_below_saturation": None}))
    text = docs_blocks.engine_fidelity(m)
    lines = text.splitlines()
    assert lines[0] == "| simulator − engine (engine spread) | load 0.3 | load 1.2 |"
    assert "| TTFT P50 | +7.4 % (2.8 %) | -11.8 % |" in lines
    assert "| E2E P50 | +9.5 % |  |" in lines and not any(line.startswith("| TBT") for line in lines)
    assert "Saturation capacity -0.5 %" in text and "undecided" in text
    assert "(one replay per load: no engine spread at this scale)" in text  # no spread measured: said so
    m.write_text(json.dumps({**json.loads(m.read_text()), "max_engine_spread_p50_p90_ttft_e2e_below_saturation": 0.058}))
    assert "against an engine spread up to 5.8 %; step-time fit" in docs_blocks.engine_fidelity(m)
    assert "engine_spread_unexplained" not in docs_blocks.engine_fidelity(m)  # not measured: no line
    left = tmp_path / "left.json"  # the spread the simulated repeats at each one's speed leave
    left.write_text(json.dumps({**json.loads(m.read_text()),
                                "speed_matched_max_engine_spread_unexplained_p50_p90_ttft_e2e_below_saturation": 0.021,
                                "probe_matched_max_engine_spread_unexplained_p50_p90_ttft_e2e_below_saturation": None}))
    assert ("Of the engine's spread below saturation (up to 5.8 %), the simulator's repeats at their measured step "
            "speeds leave up to 2.1 % (`engine_spread_unexplained`" in docs_blocks.engine_fidelity(left))
    assert "probes' speeds" not in docs_blocks.engine_fidelity(left)  # a reading not measured is left out
    assert "On P50 TTFT, TBT and E2E alone" not in docs_blocks.engine_fidelity(left)
    left.write_text(json.dumps({**json.loads(left.read_text()), "max_engine_spread_p50_ttft_tpot_e2e_below_saturation": 0.04,
                                "speed_matched_max_engine_spread_unexplained_p50_ttft_tpot_e2e_below_saturation": 0.012}))
    assert ("On P50 TTFT, TBT and E2E alone (issue 33's bound: 5 %) the engine's spread below saturation is up to 4.0 %, "
            "1.2 % left at the repeats' measured step speeds." in docs_blocks.engine_fidelity(left))
    assert "take the host's speed out" not in text  # no reading measured: no line
    assert "sampling interval" not in text  # metrics written before the intervals: no verdict on them
    d = json.loads(m.read_text())
    m.write_text(json.dumps({**d, "ttft_p90_rel_err_load0.3": 0.29, "ttft_p90_rel_err_lo_load0.3": -0.03,
                             "ttft_p90_rel_err_hi_load0.3": 0.37, "ttft_p90_engine_spread_load0.3": 0.4,
                             "verdict_10pct_below_saturation": "undecided"}))
    assert ("within 10 % below saturation, each miss read against its 90 % sampling interval (a paired block "
            "bootstrap of the requests, `servesim.metrics.interval`) and the engine's spread: **undecided** "
            "(1 miss, the largest: TTFT P90 at load 0.3 +29.0 %, interval -3.0 % to +37.0 %, spread 40.0 %); the older reading, where a "
            "spread over 10 % passes a miss: within 10 % or the engine's spread below saturation: undecided "
            "(a load without a lag-clean replay)." in docs_blocks.engine_fidelity(m))
    m.write_text(json.dumps(d))
    d = json.loads(m.read_text())
    m.write_text(json.dumps({**d, "speed_matched_max_abs_rel_err_p50_p90_ttft_e2e_below_saturation": 0.083,
                             "sched_same_share_load0.3": 1.0, "sched_same_share_load1.2": 0.5}))
    assert text.splitlines()[-1] != (last := docs_blocks.engine_fidelity(m).splitlines()[-1])
    assert last == ("The same worst error under the readings that take the host's speed out: speed-matched (each "
                    "replay simulated at its own measured prefill and decode speeds) 8.3 %.")
    assert "the first replay of each of 2 loads and shapes): the same batch as the engine at 50.0 % of steps at the " \
        "lowest" in docs_blocks.engine_fidelity(m)
    assert "Held-out shapes" not in docs_blocks.engine_fidelity(m)  # no shape judged: no line
    m.write_text(json.dumps({**d, "sched_same_share_ramp": 0.25, "shapes_max_abs_rel_err_p50_p90_ttft_e2e_tbt": 0.43,
                             "steps_shapes_max_abs_rel_err_p50_p90_ttft_e2e_tbt": 0.061}))
    text2 = docs_blocks.engine_fidelity(m)
    assert "each of 1 loads and shapes): the same batch as the engine at 25.0 %" in text2
    assert text2.splitlines()[-1] == ("Held-out shapes (bursty, long prompts, long outputs, a ramp through saturation), "
                                      "the worst P50/P90 TTFT and E2E and P50 TBT error: as profiled 43.0 %; steps 6.1 %.")
    # each shape's load: measured where the engine measured its capacity, the fitted model's where not
    m.write_text(json.dumps({**d, "shapes_max_abs_rel_err_p50_p90_ttft_e2e_tbt": 0.43, "shape_load_basis": "capacity",
                             "shape_load[bursty]": 0.526, "shape_load_sim[bursty]": 0.537,
                             "shape_load[long-output]": None, "shape_load_sim[long-output]": 1.131}))
    assert docs_blocks.engine_fidelity(m).splitlines()[-1] == (
        "The shapes' loads (arrival rate over the capacity of their own lengths, long shapes on the basis `capacity`; "
        "measured on the engine, or the fitted model's where not): bursty 0.53; long-output 1.13 (model).")
    assert "scatter" not in text
    m.write_text(json.dumps({**d, "step_time_noise_floor_median_pct": 7.94}))
    assert "held-out MAPE 6.5 % (steps of one shape scatter by a median 7.9 % on their own);" in docs_blocks.engine_fidelity(m)
    assert "first order" not in docs_blocks.engine_fidelity(m)  # no step bias measured: no line
    m.write_text(json.dumps({**d, "step_time_profile_bias_pct_load0.3": -2.0, "sensitivity_e2e_p50_load0.3": 4.5,
                             "step_bias_first_order_e2e_p50_rel_err_load0.3": -0.09}))
    assert docs_blocks.engine_fidelity(m).splitlines()[-1] == (
        "That worst error (E2E P50 at load 0.3, +9.5 %) is, to first order, the step model's error on that replay's "
        "busy time (-2.0 %) times the metric's sensitivity to step time (4.5): -9.0 %.")
    m.write_text(json.dumps({**d, "step_form": "quadratic-seqs", "linear_max_abs_rel_err_p50_p90_ttft_e2e_below_saturation": 0.186,
                             "speed_spread_load0.3": 0.012, "speed_spread_ramp": 0.071, "speed_spread_load1.2": None,
                             "shapes_max_abs_rel_err_p50_p90_ttft_e2e_tbt": 0.26,
                             "linear_shapes_max_abs_rel_err_p50_p90_ttft_e2e_tbt": 0.24}))
    text3 = docs_blocks.engine_fidelity(m)
    assert ("The step model's form is quadratic-seqs (`servesim.perf.fitted.FORMS`); fitted in the linear form on the "
            "same profile steps (the reading `linear`) that worst error is 18.6 %.") in text3
    assert "differed between repeats of one workload by up to 7.1 % (`speed_spread_<case>`)." in text3
    m.write_text(json.dumps({**json.loads(m.read_text()), "probe_tracking_mean_abs_pct": 1.43,
                             "replay_speed_mean_abs_dev_pct": 5.3,
                             "probe_matched_max_abs_rel_err_p50_p90_ttft_e2e_below_saturation": 0.091}))
    text4 = docs_blocks.engine_fidelity(m)
    assert ("(`speed_spread_<case>`); each replay's speed was 5.3 % from the profile's on average, and the speed probe "
            "around it tracked it within 1.4 %.") in text4
    assert "probe-matched (each replay simulated at the host speed a fixed probe measured just before and after it) 9.1 %" \
        in text4
    assert text3.splitlines()[-1].endswith("as profiled 26.0 %; linear form 24.0 %.")
    assert "no-gaps" not in text3  # no clock recorded: no line
    m.write_text(json.dumps({**json.loads(m.read_text()), "step_clock": "cycle",
                             "no_gaps_max_abs_rel_err_p50_p90_ttft_e2e_below_saturation": 0.123,
                             "no_gaps_shapes_max_abs_rel_err_p50_p90_ttft_e2e_tbt": 0.2}))
    text5 = docs_blocks.engine_fidelity(m)
    assert ("The live steps are timed by the clock cycle (`servesim.engine.records.STEP_CLOCKS`: each step with the "
            "gap before it); fitted on the steps' own wall times instead (the reading `no-gaps`) that worst error is "
            "12.3 %.") in text5
    assert text5.splitlines()[-1].endswith("as profiled 26.0 %; linear form 24.0 %; no-gaps 20.0 %.")
    assert "fitted for the median step" not in text5  # no median refit scored: no line
    held = "[loads (held-out half)]"
    m.write_text(json.dumps({**json.loads(m.read_text()), f"step_time_refit_median_ape_pct{held}": 7.13,
                             f"step_time_refit-median_median_ape_pct{held}": 4.78,
                             f"step_time_refit_median_ratio{held}": 0.963}))
    assert ("On the engine's own held-out steps (a refit on the other half of the load replays' steps) the step model's "
            "median error is 7.1 % fitted for the mean step, as the simulator's is, and 4.8 % in the same form fitted "
            "for the median step (the form's own error; weighting `median`): the median step ran 3.7 % below the mean "
            "fit, the host's slow steps scattering further than its fast ones.") in docs_blocks.engine_fidelity(m)
    m.write_text(json.dumps({"capacity_rel_err": 0.0}))
    with pytest.raises(ValueError, match="ttft_p50_rel_err_load"):
        docs_blocks.engine_fidelity(m)


def test_gpu_bench_hardware_ratios_and_bandwidths_from_the_committed_tables(tmp_path):
    """H200 / H100 ratios only over the steps both measured, prefill and decode apart; copy rates
    per transfer and size; block copies by block size; the GEMM against the catalog's datasheet."""
    import pandas as pd

    cols = ["prefill_tokens", "prefill_ctx", "decode_seqs", "decode_ctx", "step_s"]
    for hw, times in (("h100-80gb", [1.0, 2.0, 4.0, 9.0]), ("h200", [0.5, 2.0, 3.0])):
        (tmp_path / hw).mkdir()
        steps = [(128, 128, 0, 0), (0, 0, 8, 1024), (0, 0, 16, 1024), (512, 512, 0, 0)][: len(times)]
        pd.DataFrame([(*s, t) for s, t in zip(steps, times)], columns=cols).to_csv(tmp_path / hw / "m-tp1.csv", index=False)
    pd.DataFrame({"kind": ["h2d-pinned", "h2d-pinned", "h2d-pinned-blocks", "gemm-bfloat16-8192"],
                  "bytes": [2**20, 2**24, 2**24, 0], "copies": [1, 1, 256, 1],
                  "bytes_per_s": [4.1e10, 5.4e10, 7.1e9, 7.9e14]}).to_csv(tmp_path / "h100-80gb" / "bandwidth.csv", index=False)
    out = docs_blocks.gpu_bench_hardware(tmp_path)
    assert "| m-tp1 | 3 | 0.50× (0.50–0.50) | 0.88× (0.75–1.00) | 0.70× |" in out  # the 512-token step: H100 only
    assert "| h2d-pinned | 41 | 54 |" in out and "| 64 KiB |" in out and "| h2d-pinned-blocks | 7 |" in out
    assert "790 TFLOP/s, 80 % of the datasheet's 989." in out


def test_engine_costs_table_one_row_per_held_out_model(tmp_path):
    m = tmp_path / "metrics.json"
    m.write_text(json.dumps({"engine_cost[k_prefill|yi-1.5-9b]": 0.751, "engine_cost[k_decode|yi-1.5-9b]": 0.968,
                             "engine_cost[overhead_ms|yi-1.5-9b]": 1.121, "engine_cost[seq_overhead_us|yi-1.5-9b]": 59.7,
                             "engine_cost[k_prefill|llama-2-13b]": 0.756, "median_mape_pct_fitted": 5.9}))
    lines = docs_blocks.perf_engine_costs(m).splitlines()
    assert lines[2] == "| llama-2-13b | 0.76 | nan | nan ms | nan µs |"  # sorted; a missing parameter shows
    assert lines[3] == "| yi-1.5-9b | 0.75 | 0.97 | 1.12 ms | 60 µs |"
    m.write_text(json.dumps({"median_mape_pct_fitted": 5.9}))
    with pytest.raises(ValueError, match="no engine_cost"):
        docs_blocks.perf_engine_costs(m)


def test_the_published_block_names_the_snapshots_commit_and_machine(tmp_path):
    part = tmp_path / "results-full" / "calibration"
    (part / "sim_vs_vllm").mkdir(parents=True)
    (part / "sim_vs_vllm" / "metrics.json").write_text(json.dumps(
        {"ttft_p50_rel_err_load0.3": 0.05, "ttft_p50_engine_spread_load0.3": 0.02, "replays": 3}))
    (part / "STAMP.json").write_text(json.dumps({"commit": "0123456789abcdef" * 2 + "01234567",
                                                 "published_utc": "2026-12-05T03:00:00Z",
                                                 "machine": {"cpus": 2, "machine": "x86_64"}}))
    page = tmp_path / "page.md"
    page.write_text("<!-- engine-fidelity-published:begin (generated) -->\n<!-- engine-fidelity-published:end -->\n")
    assert docs_blocks.update(page, tmp_path) == ["engine-fidelity-published"]
    text = page.read_text()
    assert "made at 0123456789 on 2026-12-05 on a 2-core x86_64 machine" in text
    assert "| TTFT P50 | +5.0 % (2.0 %) |" in text
    # a figure re-drawn since (`servesim snapshot --figure`): the notebook's commit and the runs' both named
    st = json.loads((part / "STAMP.json").read_text())
    (part / "STAMP.json").write_text(json.dumps({**st, "remade": {"sim_vs_vllm": {
        "commit": "fedcba9876543210" * 2 + "fedcba98", "published_utc": "2026-12-07T12:00:00Z"}}}))
    assert docs_blocks.update(page, tmp_path) == ["engine-fidelity-published"]
    assert ("made at fedcba9876 on 2026-12-07 from the runs made at 0123456789 on 2026-12-05 on a 2-core x86_64 "
            "machine") in page.read_text()
