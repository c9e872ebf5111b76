"""The claims' nulls of PreServe (workflow/claims/README.md "Nulls"): each is the same metric code
with the naive system in the place of the system under test, on hand-made inputs."""

import math

import numpy as np
import pandas as pd
import pytest

from servesim.analysis import preserve_routing as pr


def _cur(rows):
    """A curves() table from (model, router, qps, ttft, norm_mean, norm_p99, attainment)."""
    out = []
    for model, router, qps, ttft, nmean, np99, att in rows:
        out.append({"model": model, "router": router, "qps": qps, "ttft_mean_s": ttft, "ttft_p99_s": 2 * ttft,
                    "norm_mean_s": nmean, "norm_p99_s": np99, "e2e_mean_s": 10.0, "slo_attainment_pct": att,
                    "router_select_ms_mean": 1.0, "preemptions": 100 * ttft, "n_seeds": 1})
    return pd.DataFrame(out)


def _summ():
    return {"fig09/7b/lr": {"model": "7b", "router": "lr", "isolated_norm_latency_s": 0.05,
                            "settings": {"slo_norm_s": 0.2}, "duration_s": 600, "n_instances": 4,
                            "predictions": "collected"}}


def test_fig09_round_robin_null_goes_through_the_same_reductions():
    rows = []
    for q, scale in ((8.1, 1.0), (10.5, 4.0)):
        rows += [("7b", "rr", q, 3.0 * scale, 0.10 * scale, 0.5 * scale, 90.0),
                 ("7b", "lr", q, 2.0 * scale, 0.08 * scale, 0.4 * scale, 92.0),
                 ("7b", "mu", q, 2.5 * scale, 0.09 * scale, 0.45 * scale, 91.0),
                 ("7b", "preserve", q, 1.0 * scale, 0.05 * scale, 0.2 * scale, 99.0)]
    rows += [("13b", "rr", 11.7, 3.0, 0.2, 0.8, 80.0), ("13b", "lr", 11.7, 2.0, 0.15, 0.6, 85.0),
             ("13b", "mu", 11.7, 1.5, 0.12, 0.5, 90.0), ("13b", "preserve", 11.7, 1.0, 0.1, 0.25, 95.0)]
    m = pr.fig09_metrics(_cur(rows), _summ())
    # PreServe against LR, and round robin (the null) against LR, by the same formula
    assert m["ttft_mean_reduction_vs_lr_pct_qps10p5"] == pytest.approx(50.0)
    assert m["ttft_mean_reduction_rr_vs_lr_pct_qps10p5"] == pytest.approx(-50.0)
    assert m["slo_violation_reduction_rr_vs_lr_pct_qps10p5"] == pytest.approx(100 * (1 - 10 / 8))
    # 13B: PreServe against the best of all three baselines (MU), round robin against the best of LR and MU
    assert m["p99_norm_latency_reduction_vs_second_best_pct_13b"] == pytest.approx(50.0)
    assert m["p99_norm_latency_reduction_rr_vs_second_best_pct_13b"] == pytest.approx(-60.0)
    # "over 45.8 %": the smaller of the two models' reductions (7B at 10.5 QPS vs its best baseline, LR)
    assert m["p99_norm_latency_reduction_vs_second_best_pct_min"] == pytest.approx(min(50.0, 50.0))
    assert m["slo_violation_reduction_vs_second_best_pct_min"] == pytest.approx(min(100 * (1 - 1 / 8), 50.0))
    assert m["rr_best_all_metrics_high_qps"] is False
    assert m["preserve_best_all_metrics_high_qps"] is True
    # 'comparable below 9.3' and its null above the knee: the same spread formula
    assert m["router_spread_below_9p3"] == pytest.approx((0.10 - 0.05) / 0.05)
    assert m["router_spread_qps10p5"] == pytest.approx((0.40 - 0.20) / 0.20)
    # what the diagnoses cite: MU against LR by the same formula, each router's values, the ranges
    assert m["ttft_mean_reduction_mu_vs_lr_pct_qps10p5"] == pytest.approx(-25.0)
    assert m["slo_violation_mu_qps10p5_pct"] == pytest.approx(9.0) and m["preemptions_mu_qps10p5"] == pytest.approx(1000.0)
    assert (m["ttft_mean_min_qps10p5_s"], m["ttft_mean_max_qps10p5_s"]) == (4.0, 12.0)
    assert (m["slo_attainment_min_qps10p5_pct"], m["slo_attainment_max_qps10p5_pct"]) == (90.0, 99.0)
    assert math.isnan(m["ttft_mean_min_qps9p9_s"])   # no 9.9 QPS point on this grid
    assert m["p99_norm_latency_mu_13b_knee_s"] == 0.5 and m["slo_violation_rr_13b_knee_pct"] == 20.0


def test_fig09_null_keys_are_nan_when_a_run_is_missing():
    rows = [("7b", r, 10.5, 1.0, 0.1, 0.3, 95.0) for r in ("lr", "mu", "preserve")]
    m = pr.fig09_metrics(_cur(rows), _summ())
    for k in ("ttft_mean_rr_qps10p5_s", "ttft_mean_reduction_rr_vs_lr_pct_qps10p5",
              "p99_norm_latency_reduction_rr_vs_second_best_pct_min", "router_spread_qps10p5"):
        assert math.isnan(m[k]), k
    assert m["rr_best_all_metrics_high_qps"] is None


def test_fig09_true_lengths_reading_swaps_only_preserves_rows():
    """The reading `true-lengths` is fig09_metrics with PreServe's rows taken from the true-length
    runs: the baselines, the knee and the formulas stay; keys carry the `truelen_` prefix."""
    base = [("7b", "lr", 10.5, 2.0, 0.08, 0.4, 92.0), ("7b", "mu", 10.5, 2.5, 0.09, 0.45, 91.0),
            ("7b", "rr", 10.5, 3.0, 0.10, 0.5, 90.0), ("7b", "preserve", 10.5, 4.0, 0.2, 0.8, 80.0)]
    true = [("7b", "preserve", 10.5, 1.0, 0.05, 0.2, 99.0)]
    m = pr.fig09_metrics(_cur(base), _summ())
    t = pr.true_lengths_metrics(_cur(base), _cur(true), _summ())
    assert set(t) == {pr.TRUE_LENGTHS_PREFIX + k for k in pr.TRUE_LENGTHS_KEYS}
    assert m["ttft_mean_reduction_vs_lr_pct_qps10p5"] == pytest.approx(-100.0)
    assert t["truelen_ttft_mean_reduction_vs_lr_pct_qps10p5"] == pytest.approx(50.0)
    assert t["truelen_slo_attainment_preserve_qps10p5_pct"] == 99.0
    assert pr.true_lengths_metrics(_cur(base), _cur([]), _summ()) == {}


def test_fig09_mu_readings_swap_only_mus_rows_and_are_nan_without_their_runs():
    """The readings of what MU reads replace MU's rows (runs fig09mu/*): with MU the best baseline
    PreServe trails it; with a slower-reading MU worse than LR, LR becomes the best baseline and
    PreServe leads. A reading whose runs are missing (quick) gives NaN keys, not absent ones."""
    base = [(mo, r, q, *v) for mo, q in (("7b", 10.5), ("13b", 11.7))
            for r, v in (("lr", (2.0, 0.08, 0.4, 92.0)), ("mu", (1.0, 0.05, 0.2, 98.0)),
                         ("rr", (3.0, 0.10, 0.5, 90.0)), ("preserve", (1.5, 0.06, 0.3, 96.0)))]
    slow = [(mo, "mu", q, 4.0, 0.2, 0.8, 80.0) for mo, q in (("7b", 10.5), ("13b", 11.7))]
    m = pr.fig09_metrics(_cur(base), _summ())
    r = pr.mu_reading_metrics(_cur(base), {"s30": _cur(slow)}, _summ())
    assert set(r) == {p + k for _, p in pr.MU_READINGS.values() for k in pr.MU_READING_KEYS}
    assert m["second_best_p99_qps10p5"] == "mu" and m["p99_norm_latency_reduction_vs_second_best_pct_qps10p5"] < 0
    assert r["mu30_second_best_p99_qps10p5"] == "lr"
    assert r["mu30_slo_attainment_mu_qps10p5_pct"] == 80.0
    assert r["mu30_ttft_mean_mu_qps10p5_s"] == 4.0
    # PreServe's own rows are untouched: its P99 (0.3) against the best baseline's, MU's 0.2 by
    # default, LR's 0.4 when MU reads every 30 s
    assert m["p99_norm_latency_reduction_vs_second_best_pct_min"] == pytest.approx(-50.0)
    assert r["mu30_p99_norm_latency_reduction_vs_second_best_pct_min"] == pytest.approx(25.0)
    assert r["mu30_slo_violation_reduction_vs_second_best_pct_min"] == pytest.approx(50.0)
    assert math.isnan(r["mu15_slo_attainment_mu_qps10p5_pct"]) and math.isnan(r["muoracle_knee_qps_13b"])


def test_fig10_imbalance_null_reads_the_normal_load():
    rows = [("7b", r, q, t, n, 2 * n, 99.0) for q, f in ((9.3, 1.0), (10.5, 10.0))
            for r, t, n in (("rr", 0.3 * f, 0.08 * f), ("lr", 0.2 * f, 0.07 * f), ("mu", 0.25 * f, 0.075 * f),
                            ("preserve", 0.2 * f, 0.07 * f))]
    summ = {"fig09/7b/preserve": {"model": "7b", "router": "preserve", "predictor_ms_mean": 30.0,
                                  "dispatch_overhead_ms": 45.6}}
    m = pr.fig10_metrics(_cur(rows), summ)
    assert m["ttft_mean_ms_imbalanced"] == pytest.approx(3000.0)
    assert m["ttft_mean_ms_imbalanced_normal_load"] == pytest.approx(300.0)
    assert m["norm_latency_mean_ms_imbalanced_normal_load"] == pytest.approx(80.0)


def _ts(overloaded_instance_from_s: dict[int, float], n_inst=4, t_end=300):
    rows = []
    for t in range(t_end):
        for j in range(n_inst):
            start = overloaded_instance_from_s.get(j)
            over = start is not None and t >= start
            rows.append({"time_s": float(t), "instance": j, "kv_usage": 0.99 if over else 0.5,
                         "queued_prompt_tokens": 100 if over else 0, "norm_latency_s": 0.1})
    return pd.DataFrame(rows)


def test_fig04_null_router_is_read_like_lr_and_mu():
    series = {"lr": _ts({0: 120.0}), "mu": _ts({1: 180.0}), "preserve": _ts({})}
    m = pr.fig04_metrics(series)
    assert m["lr_first_overload_min"] == pytest.approx(2.0)
    assert m["mu_first_overload_min"] == pytest.approx(3.0)
    assert math.isnan(m["preserve_first_overload_min"])
    assert m["both_routers_overload_single_instance"] is True
    assert m["lr_instances_overloading_within_1min_of_first"] == 0 and math.isnan(m["lr_last_of_those_overload_min"])
    assert (m["lr_peak_kv_usage_min"], m["lr_peak_kv_usage_max"]) == (0.5, 0.99)
    fill = pr.fig04_metrics({"lr": _ts({0: 120.0, 2: 150.0, 3: 175.0, 1: 200.0})})   # 1 starts past the minute
    assert fill["lr_instances_overloading_within_1min_of_first"] == 2
    assert fill["lr_last_of_those_overload_min"] == pytest.approx(175.0 / 60.0)
    assert m["preserve_overloads_single_instance"] is False
    m = pr.fig04_metrics({"lr": series["lr"], "mu": series["mu"]})
    assert m["preserve_overloads_single_instance"] is None


def test_table1_last_value_null_is_the_truth_two_windows_back(monkeypatch):
    from servesim.systems.preserve import table1 as T

    y = np.arange(1.0, 41.0)
    s = T.Table1Settings(gen_scale=0.001, epochs=1, batch_size=8, k=4, hidden=4, baselines=())
    rows, preds = T.run_series(y, "code", "prompt", s, prophet_ok=False)
    row = next(r for r in rows if r["method"] == "last_value")
    assert row["protocol"] == "online"
    np.testing.assert_array_equal(preds["last_value"].to_numpy(), y[18:38])   # test windows 20..39
    np.testing.assert_allclose(row["mean_ape_pct"], np.mean(200.0 / y[20:]))
