import numpy as np
import pytest

from servesim.metrics import PERCENTILES, percentile, stats, summarize
from servesim.metrics.latency import p_word, stat_keys

from .hand import table, tokens


def test_stats_by_hand():
    s = stats(np.array([1.0, 0.5, 2.0, 0.5, np.nan]), "ttft", (50, 75, 90, 99.9))
    assert s["mean_ttft_s"] == 1.0
    assert s["median_ttft_s"] == s["p50_ttft_s"] == 0.75          # sorted .5 .5 1 2
    assert s["p75_ttft_s"] == pytest.approx(1.25)                  # index 2.25: 1 + .25 * (2 - 1)
    assert s["p90_ttft_s"] == pytest.approx(1.7)                   # index 2.7
    assert s["p99.9_ttft_s"] == pytest.approx(1.997)
    assert s["std_ttft_s"] == pytest.approx(np.sqrt(0.375))        # population (ddof 0), as vLLM
    assert list(s) == stat_keys("ttft", (50, 75, 90, 99.9))


def test_empty_selection_gives_none():
    assert set(stats(np.array([np.nan]), "e2el").values()) == {None}
    assert percentile([], 50) is None and percentile([np.nan, 2.0, 4.0], 50) == 3.0


def test_vllm_key_spelling():
    assert p_word(99) == "99" and p_word(99.9) == "99.9"
    assert stat_keys("itl", (99,)) == ["mean_itl_s", "median_itl_s", "std_itl_s", "p99_itl_s"]


def test_summary_latencies_counts_and_throughput_by_hand():
    a = summarize(table())["all"]
    assert (a["requests"], a["completed"], a["failed"], a["unfinished"]) == (5, 4, 1, 0)
    assert a["states"] == {"finished": 4, "rejected": 1}
    assert (a["total_input_tokens"], a["total_output_tokens"]) == (100, 11)
    assert a["duration_s"] == 10.0                                  # first arrival 0 -> last finish 10
    assert a["request_throughput_per_s"] == 0.4
    assert a["output_throughput_tok_per_s"] == pytest.approx(1.1)
    assert a["total_token_throughput_tok_per_s"] == pytest.approx(11.1)
    assert a["mean_ttft_s"] == 1.0 and a["median_ttft_s"] == 0.75
    assert a["mean_e2el_s"] == 3.875 and a["median_e2el_s"] == 3.5
    assert a["mean_tpot_s"] == 2.5 and a["median_tpot_s"] == 0.5    # r2 has one token: no TPOT
    assert a["mean_e2el_per_token_s"] == pytest.approx(2.15)        # 3/5, 1.5/3, 4/1, 7/2
    assert a["median_e2el_per_token_s"] == pytest.approx(2.05)
    assert a["mean_queue_s"] == 0.5
    # ITL without token times: the exact pooled mean, nothing else
    assert a["mean_itl_s"] == pytest.approx(9.5 / 7) and a["p50_itl_s"] is None


def test_itl_from_recorded_tokens():
    a = summarize(table(), tokens=tokens())["all"]
    gaps = [0.5] * 6 + [6.5]
    assert a["mean_itl_s"] == pytest.approx(9.5 / 7) and a["median_itl_s"] == 0.5
    assert a["p99_itl_s"] == pytest.approx(np.percentile(gaps, 99))
    assert a["std_itl_s"] == pytest.approx(np.std(gaps))


def test_tiers_and_groups():
    s = summarize(table(), groups={"iw": ("IW-F", "IW-N"), "first_two": np.array([1, 1, 0, 0, 0], bool)})
    assert list(s["by_tier"]) == ["IW-F", "IW-N", "NIW"]
    assert s["by_tier"]["IW-F"]["requests"] == 3 and s["by_tier"]["IW-F"]["completed"] == 2
    assert s["by_tier"]["IW-F"]["duration_s"] == 10.0                # the run's, in every block
    assert s["groups"]["iw"]["completed"] == 3 and s["groups"]["iw"]["p50_ttft_s"] == 1.0
    assert s["groups"]["first_two"]["mean_ttft_s"] == 0.75
    with pytest.raises(ValueError, match="group 'bad'"):
        summarize(table(), groups={"bad": np.ones(3, bool)})


def test_missing_column_is_named():
    with pytest.raises(ValueError, match="e2e_s"):
        summarize(table().drop(columns="e2e_s"))


def test_default_percentiles():
    assert PERCENTILES == (50, 75, 90, 95, 99)
    assert summarize(table())["percentiles"] == [50, 75, 90, 95, 99]
