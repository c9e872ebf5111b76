"""SageServe O365-like fleet week: 3 regions x 4 models x tiers IW-F / IW-N / NIW.

The production traces are not public (spec sageserve §5), so this generator is calibrated to the
*structure* the paper describes (J §3, Figs 3-5, 10) and to the sizes of the authors' replayed trace:

==========================  =====================================================  ===================
target                      value                                                  source
==========================  =====================================================  ===================
requests in the week        7.2 M at ``scale=1`` (x ``growth``; Jul'25 ~ 5x)        R final_data.csv
IW : NIW                    3 : 1 (IW-F 50 %, IW-N 25 %, NIW 25 %)                  J App. A (Nov'24)
IW region shares            East 42.6 %, Central 29.5 %, West 27.9 %                R run (spec §5)
NIW regions                 West negligible (4 %), Central 46 %, East 50 %           J §3 (Jul'25)
IW shape                    one diurnal peak per day, quiet weekend                 J Figs 3-5
IW-F periodicity            0.7-0.95 (lag-1-day ACF of hourly counts)               J §3
IW-N                        periodic; Model B grows Wed-Fri and is less periodic    J §3
                            (0.3-0.5: hourly log-normal noise)
IW per-minute noise         in-sample one-step ARIMA(3,1,2) error of the IW prompt  R notebook
                            tokens per minute: mean over (model, region) 19.96 %    (spec §1.4)
                            (authors' per-series 16-24 %)
NIW shape                   flat over the week (periodicity <= 0.286), bursty       J §3
                            at the 1-minute scale (log-normal Cox noise)
peak 4-h RPS                ~25-30 (aggregate, Nov'24 scale)                        J Fig 3a
Model A East vs West IW-F   4x                                                      J §3
Model B                     peaks Central for IW-F, West for IW-N                   J §3
tokens                      most prompts > 1 k, most outputs < 1 k, mean output     J Fig 10; R
                            ~222, Model B p99 prompt ~49 k and output ~2 000
==========================  =====================================================  ===================

Model letters follow the authors' code: A = Llama2-70B, B = Bloom-176B, C = Llama3.1-8B,
D = Llama3.2-3B. Day 0 is a Monday. Every number below is a named default, so a user can
re-calibrate it; the notebook ``notebooks/workload/sageserve_week`` tabulates targets vs produced.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .arrivals import bin_arrivals, categorical, lognormal_lengths, lognormal_noise, seeds
from .schema import TIERS, check_volume, validate

MODELS = ("llama-2-70b", "bloom-176b", "llama-3.1-8b", "llama-3.2-3b")  # A, B, C, D
REGIONS = ("westus", "centralus", "eastus")
WEEK_S = 7 * 86_400
BIN_S = 60.0

#: tier -> share of all requests (IW:NIW = 3:1; IW-F is the largest tier, J §3)
TIER_SHARES = {"IW-F": 0.50, "IW-N": 0.25, "NIW": 0.25}
#: tier -> region shares (West, Central, East)
REGION_SHARES = {"IW-F": (0.279, 0.295, 0.426), "IW-N": (0.279, 0.295, 0.426), "NIW": (0.04, 0.46, 0.50)}
#: tier -> region -> model shares (A, B, C, D)
MODEL_SHARES = {
    "IW-F": {"westus": (0.21, 0.33, 0.26, 0.20), "centralus": (0.30, 0.40, 0.15, 0.15),
             "eastus": (0.55, 0.20, 0.15, 0.10)},
    "IW-N": {"westus": (0.25, 0.45, 0.15, 0.15), "centralus": (0.35, 0.25, 0.20, 0.20),
             "eastus": (0.50, 0.25, 0.15, 0.10)},
    "NIW": {"westus": (0.40, 0.30, 0.15, 0.15), "centralus": (0.30, 0.20, 0.35, 0.15),
            "eastus": (0.40, 0.30, 0.15, 0.15)},
}
#: relative daily volume Mon..Sun for IW traffic (quiet weekend)
IW_DAY_WEIGHTS = (0.95, 1.0, 1.0, 0.97, 0.88, 0.15, 0.12)
#: IW-N of Model B grows mid-week (more on Wed/Thu/Fri than Mon/Tue)
IW_N_B_DAY_WEIGHTS = (0.70, 0.75, 1.0, 1.05, 1.0, 0.15, 0.12)
#: diurnal bump: floor + (1 - floor) * exp(-((h - peak_hour) / width)^2 / 2), hours on a 24 h circle
DIURNAL = {"floor": 0.10, "peak_hour": 16.0, "width_h": 3.8}
#: log-normal sigma of the per-minute Cox noise per tier (NIW is bursty at the 1-min scale), by
#: reading. "arima_fit" (default): the IW sigmas fitted so that the authors' forecast error holds
#: on the week at scale 1: the in-sample one-step ARIMA(3,1,2) error 100 mean|e| / mean(actual) of
#: the IW prompt tokens per minute, averaged over the 12 (model, region) series, equals the mean of
#: the 12 per-series errors the authors' notebook reports (19.96 %; spec sageserve §1.4, band
#: 16-24 %), IW-N kept 4/3 of IW-F. Most of that error is the Poisson count and the log-normal
#: prompt sizes (sigma 0 already gives ~19 %), so the fit pins the extra noise only loosely; the
#: measurement is servesim.forecast.onestep_error. "smooth_v1": the earlier hand-set values.
MINUTE_NOISE_READINGS = {
    "arima_fit": {"IW-F": 0.10, "IW-N": 0.133, "NIW": 1.2},
    "smooth_v1": {"IW-F": 0.15, "IW-N": 0.2, "NIW": 1.2},
}
MINUTE_NOISE = MINUTE_NOISE_READINGS["arima_fit"]
#: (tier, model) -> log-normal sigma of hourly noise: IW-N of Model B is less periodic (J §3: 0.3-0.5)
HOURLY_NOISE = {("IW-N", "bloom-176b"): 0.72}
#: model -> (prompt median, prompt sigma, prompt max, output median, output sigma, output max)
LENGTHS = {
    "llama-2-70b": (2950, 1.1, 32_000, 160, 0.9, 4096),
    "bloom-176b": (4000, 1.1, 100_000, 140, 1.15, 8192),
    "llama-3.1-8b": (2000, 1.0, 32_000, 110, 1.0, 4096),
    "llama-3.2-3b": (2450, 0.9, 32_000, 130, 0.9, 4096),
}
#: NIW Model C in Central carries much larger prompts (a batch evaluation app, J §3)
NIW_C_CENTRAL_PROMPT_FACTOR = 4.0
#: tier -> deadline offset (s): TTFT deadlines for IW, completion deadline for NIW (J §4/§6.2)
DEADLINES = {"IW-F": 1.0, "IW-N": 60.0, "NIW": 86_400.0}
#: top applications of J Fig 6a (Jul'25, share of requests)
APPS = {"RAG": 41.2, "ContentGeneration-1": 9.3, "Workflows-1": 8.6, "Chat-1": 6.7, "Chat-2": 5.3,
        "Evaluation": 3.8, "ContentGeneration-2": 3.2, "Workflows-2": 2.4, "Workflows-3": 1.8,
        "ContentGeneration-3": 1.7, "Others": 16.2}


def diurnal(hours: np.ndarray, floor: float, peak_hour: float, width_h: float) -> np.ndarray:
    d = (hours - peak_hour + 12.0) % 24.0 - 12.0
    return floor + (1.0 - floor) * np.exp(-0.5 * (d / width_h) ** 2)


def tier_shape(tier: str, model: str, days: int = 7, diurnal_params: dict | None = None) -> np.ndarray:
    """Relative per-minute rate (sums to 1) of one (tier, model) stream over ``days`` days."""
    n = days * 1440
    minute = np.arange(n)
    if tier == "NIW":
        shape = np.ones(n)
    else:
        p = {**DIURNAL, **(diurnal_params or {})}
        w = IW_N_B_DAY_WEIGHTS if (tier == "IW-N" and model == "bloom-176b") else IW_DAY_WEIGHTS
        day_w = np.asarray(w)[(minute // 1440) % 7]
        shape = day_w * diurnal((minute % 1440) / 60.0, **p)
    return shape / shape.sum()


def tier_shares_for_ratio(iw_niw_ratio: float) -> dict[str, float]:
    """Tier shares with IW:NIW = ``iw_niw_ratio``:1, IW-F:IW-N kept at the default 2:1 and the total
    fixed (J App. A changes "the IW to NIW ratio in our traces"; which volume was held is not said:
    here the trace's size is held, so 1:1 has less IW and more NIW than 3:1)."""
    if not iw_niw_ratio > 0:
        raise ValueError(f"sageserve_week: iw_niw_ratio must be > 0, got {iw_niw_ratio!r}")
    iw = iw_niw_ratio / (iw_niw_ratio + 1.0)
    f = TIER_SHARES["IW-F"] / (TIER_SHARES["IW-F"] + TIER_SHARES["IW-N"])
    return {"IW-F": iw * f, "IW-N": iw * (1.0 - f), "NIW": 1.0 - iw}


def stream_rates(total: float, days: int = 7, diurnal_params: dict | None = None,
                 tier_shares: dict[str, float] | None = None):
    """Expected requests per minute for each (tier, region, model) stream: (keys, rates[streams, minutes])."""
    ts = TIER_SHARES if tier_shares is None else tier_shares
    keys, rows = [], []
    for tier in TIERS:
        for r, region in enumerate(REGIONS):
            for m, model in enumerate(MODELS):
                share = ts[tier] * REGION_SHARES[tier][r] * MODEL_SHARES[tier][region][m]
                keys.append((tier, region, model))
                rows.append(total * share * tier_shape(tier, model, days, diurnal_params))
    return keys, np.vstack(rows)


def sageserve_week(scale: float = 1.0, seed: int = 0, *, total_requests: float = 7.2e6, growth: float = 1.0,
                   days: int = 7, bursts: bool = False, burst_factor: float = 8.0,
                   burst_window_s: tuple[float, float] = (90_000.0, 172_800.0), burst_len_s: float = 60.0,
                   diurnal_params: dict | None = None, iw_niw_ratio: float | None = None,
                   fifth_model: str | None = None, fifth_model_share: float = 1.0,
                   minute_noise: str | dict | None = None) -> pd.DataFrame:
    """Generate the O365-like fleet week (see the module doc for every calibration target).

    ``scale`` multiplies the volume (1.0 = 7.2 M requests per week, the authors' replayed trace;
    ``growth=5`` gives the Jul'25 level). ``bursts`` replays J Fig 16: the requests that arrive in
    the first ``burst_len_s`` of every hour inside ``burst_window_s`` are replicated so that load is
    ``burst_factor`` times higher for that minute (the authors' notebook copies them 8 more times,
    i.e. 9x: ``burst_factor=9``).

    ``iw_niw_ratio`` (J App. A ablation; default 3:1) re-splits the tiers with the total held, see
    `tier_shares_for_ratio`. ``fifth_model`` (J Fig 14: ``"llama-4-scout"``) adds a fifth model's
    traffic on top of the four: a statistical copy of Model A's streams (same tier, region and
    diurnal shape, Model A's token distributions) times ``fifth_model_share``, drawn from its own
    random streams so the four models' requests stay exactly those of the same seed without it.

    ``minute_noise`` names a reading of `MINUTE_NOISE_READINGS` (default ``"arima_fit"``) or is a
    tier -> sigma mapping.
    """
    noise = minute_noise_sigmas(minute_noise)
    r_arr, r_noise, r_len, r_app, r_burst = seeds(seed, 5)
    total = total_requests * growth * scale * days / 7.0
    # bursts copy the first burst_len_s of an hour (burst_factor - 1) more times
    check_volume("sageserve_week", total * (1 + (burst_factor - 1) * burst_len_s / 3600 if bursts else 1)
                 * (1 + fifth_model_share if fifth_model is not None else 1), days)
    tshares = None if iw_niw_ratio is None else tier_shares_for_ratio(iw_niw_ratio)
    keys, rates = stream_rates(total, days, diurnal_params, tshares)
    if fifth_model is not None:
        if fifth_model in MODELS:
            raise ValueError(f"sageserve_week: fifth_model {fifth_model!r} is already one of {MODELS}")
        if bursts:
            raise ValueError("sageserve_week: fifth_model and bursts together are not supported")
        if not fifth_model_share > 0:
            raise ValueError(f"sageserve_week: fifth_model_share must be > 0, got {fifth_model_share!r}")
        a_rows = [i for i, k in enumerate(keys) if k[2] == MODELS[0]]
        fifth = (rates[a_rows] * fifth_model_share, [keys[i][0] for i in a_rows], [keys[i][1] for i in a_rows])
    sig = np.array([noise[k[0]] for k in keys])[:, None]
    rates = rates * (np.exp(sig * r_noise.standard_normal(rates.shape) - 0.5 * sig * sig) if sig.any() else 1.0)
    for i, k in enumerate(keys):
        sig_h = HOURLY_NOISE.get((k[0], k[2]), 0.0)
        if sig_h > 0:
            rates[i] *= np.repeat(lognormal_noise(r_noise, rates.shape[1] // 60, sig_h), 60)
    t, stream = bin_arrivals(r_arr, rates, BIN_S)
    k_tier = np.array([TIERS.index(k[0]) for k in keys], dtype=np.int8)
    k_region = np.array([REGIONS.index(k[1]) for k in keys], dtype=np.int8)
    k_model = np.array([MODELS.index(k[2]) for k in keys], dtype=np.int8)
    tier, region, model = k_tier[stream], k_region[stream], k_model[stream]
    del stream
    L = np.array([LENGTHS[m] for m in MODELS], dtype=np.float64)
    p_med = L[model, 0]
    boost = (tier == TIERS.index("NIW")) & (region == REGIONS.index("centralus")) & (model == MODELS.index("llama-3.1-8b"))
    p_med = np.where(boost, p_med * NIW_C_CENTRAL_PROMPT_FACTOR, p_med)
    prompt = lognormal_lengths(r_len, p_med, L[model, 1], 1, L[model, 2].astype(np.int64))
    del p_med, boost
    output = lognormal_lengths(r_len, L[model, 3], L[model, 4], 1, L[model, 5].astype(np.int64))
    app_p = np.array(list(APPS.values()))
    app = r_app.choice(len(APPS), size=t.size, p=app_p / app_p.sum()).astype(np.int8)
    attrs = {"generator": "sageserve_week", "seed": seed, "scale": scale, "growth": growth, "days": days,
             "day0": "Monday", "bursts": bursts,
             "minute_noise": minute_noise if isinstance(minute_noise, str) else ("arima_fit" if minute_noise is None else dict(noise))}
    models = MODELS
    if iw_niw_ratio is not None:
        attrs.update(iw_niw_ratio=float(iw_niw_ratio), tier_shares=tshares)
    if fifth_model is not None:
        models = MODELS + (fifth_model,)
        extra = _fifth_model_requests(seed, *fifth, code=len(MODELS), app_p=app_p / app_p.sum(), noise=noise)
        order = np.argsort(np.concatenate([t, extra[0]]), kind="stable")
        t, tier, region, model, prompt, output, app = (
            np.concatenate([a, b])[order] for a, b in zip((t, tier, region, model, prompt, output, app), extra))
        attrs.update(fifth_model=fifth_model, fifth_model_share=float(fifth_model_share),
                     fifth_model_requests=int(extra[0].size))
    if bursts:
        lo, hi = burst_window_s
        in_burst = (t >= lo) & (t < hi) & ((t % 3600.0) < burst_len_s)
        idx = np.flatnonzero(in_burst)
        copies = int(round(burst_factor)) - 1
        extra = np.tile(idx, copies)
        order = np.argsort(np.concatenate([t, t[extra]]), kind="stable")
        t, tier, region, model, prompt, output, app = (
            np.concatenate([a, a[extra]])[order] for a in (t, tier, region, model, prompt, output, app))
        attrs.update(burst_factor=burst_factor, burst_window_s=list(burst_window_s), burst_len_s=burst_len_s,
                     burst_copies=int(extra.size))
    deadline = t + np.array([DEADLINES[x] for x in TIERS])[tier]
    df = pd.DataFrame({
        "request_id": np.arange(t.size, dtype=np.int64), "arrival_s": t, "prompt_tokens": prompt,
        "output_tokens": output, "model": categorical(model, models), "region": categorical(region, REGIONS),
        "tier": categorical(tier, TIERS), "app": categorical(app, APPS), "deadline_s": deadline})
    out = validate(df, "<sageserve_week>")
    out.attrs.update(attrs)
    return out


def minute_noise_sigmas(minute_noise: str | dict | None = None) -> dict[str, float]:
    """tier -> per-minute log-normal sigma: a reading of `MINUTE_NOISE_READINGS` by name (None:
    the default), or a mapping with a non-negative sigma for every tier."""
    if minute_noise is None or isinstance(minute_noise, str):
        name = "arima_fit" if minute_noise is None else minute_noise
        if name not in MINUTE_NOISE_READINGS:
            raise ValueError(f"sageserve_week: minute_noise {name!r} is not one of {sorted(MINUTE_NOISE_READINGS)}")
        return dict(MINUTE_NOISE_READINGS[name])
    missing = [t for t in TIERS if t not in minute_noise]
    bad = [t for t, v in minute_noise.items() if not (float(v) >= 0.0)]
    if missing or bad:
        raise ValueError(f"sageserve_week: minute_noise needs a sigma >= 0 for every tier {list(TIERS)} "
                         f"(missing {missing}, negative or NaN {bad})")
    return {t: float(minute_noise[t]) for t in TIERS}


def _fifth_model_requests(seed: int, rates: np.ndarray, tiers: list[str], regions: list[str], *, code: int,
                          app_p: np.ndarray, noise: dict[str, float]):
    """Arrays (t, tier, region, model, prompt, output, app) of the fifth model's requests: Model A's
    per-stream rates, noise and token distributions, from random streams of its own."""
    r_arr, r_noise, r_len, r_app = (np.random.default_rng(s) for s in
                                    np.random.SeedSequence([seed, 5]).spawn(4))
    sig = np.array([noise[x] for x in tiers])[:, None]
    rates = rates * np.exp(sig * r_noise.standard_normal(rates.shape) - 0.5 * sig * sig)
    t, stream = bin_arrivals(r_arr, rates, BIN_S)
    tier = np.array([TIERS.index(x) for x in tiers], dtype=np.int8)[stream]
    region = np.array([REGIONS.index(x) for x in regions], dtype=np.int8)[stream]
    p_med, p_sig, p_max, o_med, o_sig, o_max = LENGTHS[MODELS[0]]
    prompt = lognormal_lengths(r_len, np.full(t.size, float(p_med)), p_sig, 1, int(p_max))
    output = lognormal_lengths(r_len, np.full(t.size, float(o_med)), o_sig, 1, int(o_max))
    app = r_app.choice(app_p.size, size=t.size, p=app_p).astype(np.int8)
    return t, tier, region, np.full(t.size, code, dtype=np.int8), prompt, output, app
