"""Structure metrics of a SageServe-like week (J §3, Figs 3-5, 10), used by the calibration and
characterisation notebooks. Volumes are divided by ``scale`` so quick and full runs compare with
the paper's (Nov'24) numbers directly. Exact production values are not reproducible without the
O365 trace; these check the structure the paper describes."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .characterise import counts_per_bin, periodicity, sums_per_bin

WEEK_S = 7 * 86_400.0
MODEL_SLUGS = {"llama-2-70b": "a", "bloom-176b": "b", "llama-3.1-8b": "c", "llama-3.2-3b": "d"}
TOKEN_SLUGS = {"llama-2-70b": "llama2_70b", "bloom-176b": "bloom_176b", "llama-3.1-8b": "llama3_1_8b",
               "llama-3.2-3b": "llama3_2_3b"}
TIER_SLUGS = {"IW-F": "iwf", "IW-N": "iwn", "NIW": "niw"}
REGION_SLUGS = {"westus": "west", "centralus": "central", "eastus": "east"}


def _arr(df: pd.DataFrame) -> np.ndarray:
    return df["arrival_s"].to_numpy()


def hourly(df: pd.DataFrame) -> np.ndarray:
    return counts_per_bin(_arr(df), 3600.0, WEEK_S)


def load_bins(df: pd.DataFrame, bin_s: float, scale: float = 1.0) -> pd.DataFrame:
    """RPS and input+output TPS per bin (divided by ``scale``)."""
    a = _arr(df)
    tok = (df["prompt_tokens"].to_numpy() + df["output_tokens"].to_numpy()).astype(np.float64)
    return pd.DataFrame({"t_h": np.arange(int(WEEK_S // bin_s)) * bin_s / 3600.0,
                         "rps": counts_per_bin(a, bin_s, WEEK_S) / bin_s / scale,
                         "tps": sums_per_bin(a, tok, bin_s, WEEK_S) / bin_s / scale})


def volume_metrics(df: pd.DataFrame, scale: float) -> dict[str, float]:
    """Fig 3: aggregate volume and shape."""
    b4 = load_bins(df, 4 * 3600.0, scale)
    iw = df[df["tier"] != "NIW"]
    daily_iw = counts_per_bin(_arr(iw), 86_400.0, WEEK_S)
    daily = counts_per_bin(_arr(df), 86_400.0, WEEK_S)
    h = hourly(iw).reshape(7, 24)[:5]
    n_iw, n = len(iw), len(df)
    return {
        "week_requests_m": n / scale / 1e6,
        "mean_rps": n / WEEK_S / scale,
        "peak_4h_rps": float(b4["rps"].max()),
        "peak_4h_tps_k": float(b4["tps"].max() / 1e3),
        "peak_day_over_mean_day": float(daily.max() / daily.mean()),
        "iw_share": n_iw / n,
        "iw_niw_ratio": n_iw / max(n - n_iw, 1),
        "weekend_over_weekday_iw": float(daily_iw[5:].mean() / daily_iw[:5].mean()),
        "iw_weekday_peak_over_trough": float(np.mean(h.max(1) / np.maximum(h.min(1), 1))),
        "iw_weekday_peak_hour_spread_h": float(np.ptp(h.argmax(1))),
    }


def periodicity_metrics(df: pd.DataFrame) -> dict[str, float]:
    """Periodicity score (lag-1-day ACF of hourly counts) per tier, and per tier x model."""
    out = {}
    for tier, ts in TIER_SLUGS.items():
        d = df[df["tier"] == tier]
        out[f"periodicity_{ts}"] = periodicity(hourly(d), 24)
        for model, ms in MODEL_SLUGS.items():
            out[f"periodicity_{ts}_model_{ms}"] = periodicity(hourly(d[d["model"] == model]), 24)
    return out


def region_metrics(df: pd.DataFrame, scale: float) -> dict[str, float]:
    """Fig 5 / Fig 4: shares per region and the model-region relations J §3 states."""
    out = {}
    iw, niw = df[df["tier"] != "NIW"], df[df["tier"] == "NIW"]
    for region, rs in REGION_SLUGS.items():
        ri, rn = iw[iw["region"] == region], niw[niw["region"] == region]
        out[f"iw_share_{rs}"] = len(ri) / max(len(iw), 1)
        out[f"niw_share_{rs}"] = len(rn) / max(len(niw), 1)
        out[f"peak_4h_rps_{rs}"] = float(load_bins(df[df["region"] == region], 4 * 3600.0, scale)["rps"].max())
        out[f"iw_niw_ratio_{rs}"] = len(ri) / max(len(rn), 1)

    def count(tier, model, region):
        return int(((df["tier"] == tier) & (df["model"] == model) & (df["region"] == region)).sum())

    out["model_a_iwf_east_over_west"] = count("IW-F", "llama-2-70b", "eastus") / max(count("IW-F", "llama-2-70b", "westus"), 1)
    b_iwf = {r: count("IW-F", "bloom-176b", r) for r in REGION_SLUGS}
    b_iwn = {r: count("IW-N", "bloom-176b", r) for r in REGION_SLUGS}
    out["model_b_iwf_top_region_is_central"] = float(max(b_iwf, key=b_iwf.get) == "centralus")
    out["model_b_iwn_top_region_is_west"] = float(max(b_iwn, key=b_iwn.get) == "westus")
    bn = df[(df["tier"] == "IW-N") & (df["model"] == "bloom-176b")]
    d = counts_per_bin(_arr(bn), 86_400.0, WEEK_S)
    out["model_b_iwn_wed_fri_over_mon_tue"] = float(d[2:5].mean() / max(d[0:2].mean(), 1))
    c_central = df[(df["tier"] == "NIW") & (df["model"] == "llama-3.1-8b") & (df["region"] == "centralus")]
    other = df[(df["tier"] == "NIW") & ~((df["model"] == "llama-3.1-8b") & (df["region"] == "centralus"))]
    out["niw_model_c_central_tokens_per_request_ratio"] = float(
        (c_central["prompt_tokens"] + c_central["output_tokens"]).mean()
        / (other["prompt_tokens"] + other["output_tokens"]).mean())
    return out


def token_metrics(df: pd.DataFrame) -> dict[str, float]:
    """Fig 10: per-model token percentiles and the overall statements."""
    out = {"mean_output_tokens": float(df["output_tokens"].mean()),
           "frac_prompt_over_1k": float((df["prompt_tokens"] > 1000).mean()),
           "frac_output_under_1k": float((df["output_tokens"] < 1000).mean())}
    for model, ms in TOKEN_SLUGS.items():
        d = df[df["model"] == model]
        for col, name in (("prompt_tokens", "prompt"), ("output_tokens", "output")):
            p50, p99 = np.percentile(d[col].to_numpy(), [50, 99])
            out[f"{ms}_{name}_p50"], out[f"{ms}_{name}_p99"] = float(p50), float(p99)
    return out
