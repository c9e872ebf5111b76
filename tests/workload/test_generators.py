import numpy as np
import pandas as pd
import pytest

from servesim.workload import characterise as C
from servesim.workload import gen_aegaeon as A
from servesim.workload import gen_oserve as O
from servesim.workload import generate
from servesim.workload.gen_azure_week import TARGETS, azure_week, fig2_ratios
from servesim.workload.gen_sageserve import REGION_SHARES, TIER_SHARES, sageserve_week
from tests.data_marks import needs_aegaeon_workloads


@pytest.fixture(scope="module")
def week():
    return sageserve_week(scale=0.02, seed=1)


def test_sageserve_deterministic():
    a, b = sageserve_week(0.002, seed=3), sageserve_week(0.002, seed=3)
    pd.testing.assert_frame_equal(a, b)
    assert not sageserve_week(0.002, seed=4)["arrival_s"].equals(a["arrival_s"])


def test_sageserve_calibration(week):
    n = len(week)
    assert abs(n / (7.2e6 * 0.02) - 1) < 0.02
    for tier, s in C.share(week, "tier").items():
        assert abs(s - TIER_SHARES[tier]) < 0.01
    iw = week[week["tier"] != "NIW"]
    got = C.share(iw, "region")
    for r, name in enumerate(("westus", "centralus", "eastus")):
        assert abs(got[name] - REGION_SHARES["IW-F"][r]) < 0.01
    def hourly(d):
        return C.counts_per_bin(d["arrival_s"].to_numpy(), 3600, 7 * 86400)

    a = week[week["model"] == "llama-2-70b"]
    assert 0.7 <= C.periodicity(hourly(a[a["tier"] == "IW-F"]), 24) <= 0.95
    b = week[(week["model"] == "bloom-176b") & (week["tier"] == "IW-N")]
    assert 0.3 <= C.periodicity(hourly(b), 24) <= 0.5
    niw = C.periodicity(hourly(a[a["tier"] == "NIW"]), 24)
    assert niw <= 0.286
    daily = C.counts_per_bin(iw["arrival_s"].to_numpy(), 86400, 7 * 86400)
    assert daily[5:].max() < 0.3 * daily[:5].min()  # quiet weekend
    peak4h = C.counts_per_bin(week["arrival_s"].to_numpy(), 4 * 3600, 7 * 86400).max() / (4 * 3600) / 0.02
    assert 25 <= peak4h <= 30
    f = a[(a["tier"] == "IW-F")]
    assert 3.5 < (f["region"] == "eastus").sum() / (f["region"] == "westus").sum() < 4.5
    assert abs(week["output_tokens"].mean() / 222 - 1) < 0.1
    assert (week["prompt_tokens"] > 1000).mean() > 0.5 and (week["output_tokens"] < 1000).mean() > 0.5
    b = week[week["model"] == "bloom-176b"]
    assert 40_000 < np.percentile(b["prompt_tokens"], 99) < 60_000
    assert 1600 < np.percentile(b["output_tokens"], 99) < 2400


def test_sageserve_bursts():
    base = sageserve_week(0.01, seed=2)
    burst = sageserve_week(0.01, seed=2, bursts=True, burst_factor=8)
    t0, t1 = base["arrival_s"].to_numpy(), burst["arrival_s"].to_numpy()
    def m(t):
        return ((t >= 25 * 3600) & (t < 25 * 3600 + 60)).sum()

    assert m(t1) == 8 * m(t0) > 0
    def outside(t):
        return ((t >= 25 * 3600 + 60) & (t < 26 * 3600)).sum()

    assert outside(t1) == outside(t0)


def test_azure_week_ratios(azure_mirror):
    code, conv = azure_week("code", 0.02, seed=0), azure_week("conv", 0.02, seed=0)
    assert abs(len(code) / (16_803_695 * 0.02) - 1) < 0.01
    pd.testing.assert_frame_equal(code.head(1000), azure_week("code", 0.02, seed=0).head(1000))
    r = fig2_ratios(code, conv)
    assert abs(r["code_peak_over_avg"] / TARGETS["code_peak_over_avg"] - 1) < 0.05
    assert abs(r["code_peak_over_min"] / TARGETS["code_peak_over_min"] - 1) < 0.35  # the minimum is noisy
    assert abs(r["code_over_chat_peak_prompt"] / 2 - 1) < 0.1
    # a ratio of two days' largest noisy 30-min bins: it moves by several % with the draw (seeds 0-3
    # give 1.27-1.36 here); the weights meet 1.35 exactly on the noise-free curve (test_azure_week_days)
    assert abs(r["code_peak_over_lowest_weekday_peak"] / 1.35 - 1) < 0.08
    # weekday vs weekend per-minute peaks (spec preserve §2.2: ~5-5.8 K vs ~1-1.4 K per minute at scale 1)
    per_min = C.counts_per_bin(code["arrival_s"].to_numpy(), 3600, 7 * 86400).reshape(7, 24).max(1) / 60 / 0.02
    assert 4000 < per_min[0] < 6000 and per_min[1:3].max() < 1600  # Fri, then Sat/Sun (hourly means)


def test_oserve_levels_hit_table_cvs(azure_mirror):
    pool = O.type_pool()
    assert np.allclose(np.bincount(pool["type"]) / len(pool), [0.273, 0.224, 0.228, 0.274], atol=0.002)
    for level, cv in O.SPATIAL_CV.items():
        assert abs(O.level_cvs(O.spatial(level, 2.0, 10, seed=0, pool=pool))["spatial_cv"] - cv) < 0.002
    for level, cv in O.TEMPORAL_CV.items():
        d = O.temporal(level, 2.0, 10, seed=0, pool=pool)
        assert abs(O.level_cvs(d)["temporal_cv"] - cv) < 0.002
    d = O.trace("T1", 2.0, seed=0, pool=pool)
    comp = O.composition(d, [s[0] for s in d.attrs["spans_s"]] + [d.attrs["spans_s"][-1][1]])
    so = comp[:, 2] + comp[:, 3]
    assert so[0] > 0.7 and so[-1] < 0.3 and (np.diff(so) < 0.05).all()
    pd.testing.assert_frame_equal(d, O.trace("T1", 2.0, seed=0, pool=pool))
    c = O.type_counts(days=2, seed=0)
    h = (c["minute"] % 1440) // 60
    short = c[["SISO", "LISO"]].sum(axis=1) / c[["SILO", "LILO", "SISO", "LISO"]].sum(axis=1)
    assert short[(h >= 12) & (h < 16)].mean() > 0.6 > short[(h >= 20) & (h < 23)].mean()


def test_oserve_kmeans_classifier_names_clusters():
    rng = np.random.default_rng(0)
    p = np.concatenate([rng.integers(10, 50, 200), rng.integers(3000, 5000, 200)] * 2)
    o = np.concatenate([rng.integers(2, 10, 400), rng.integers(300, 600, 400)])
    t = O.classify(p, o, "kmeans")
    assert list(np.bincount(t, minlength=4)) == [200, 200, 200, 200]
    assert (t[:200] == 2).all() and (t[200:400] == 3).all() and (t[400:600] == 0).all()


def test_aegaeon_market(aegaeon_mirror):
    pool = A.length_pool()
    assert len(pool) == 8294
    assert abs(pool["prompt_tokens"].mean() - 720) < 1 and np.percentile(pool["output_tokens"], 50) == 275
    d = A.market(16, 0.1, 120, seed=0)
    counts = d["model"].value_counts()
    assert (counts <= 12).all() and len(counts) == 16 and d["arrival_s"].max() < 120
    pd.testing.assert_frame_equal(d, A.market(16, 0.1, 120, seed=0))
    x2 = A.market(16, 0.1, 120, seed=0, output_scale=2)
    assert (x2["output_tokens"] == 2 * d["output_tokens"]).all()
    r = A.popularity_rates(100)
    assert abs(np.sort(r)[:94].sum() / r.sum() - 0.0135) < 1e-9
    m = A.market(100, rates=r, duration_s=600, seed=0, arrivals="poisson")
    assert abs(A.tail_share(m) - 0.0135) < 0.003
    big = A.market(40, 0.5, 2000, seed=1, arrivals="poisson")
    assert abs(len(big) / (40 * 0.5 * 2000) - 1) < 0.03


@needs_aegaeon_workloads
def test_generate_registry():
    d = generate("aegaeon_market", scale=1.0, seed=0, n_models=4, rate=1.0)
    assert set(d["model"].astype(str)) <= {"model_00", "model_01", "model_02", "model_03"}


def test_generate_registry_unknown_name():
    with pytest.raises(ValueError, match="unknown generator"):
        generate("nope")
