"""Azure-2024-like code and chat weeks (the PreServe workloads; spec preserve §2.2, §5).

The Azure LLM inference traces 2024 (one week, May 2024) are not reachable offline; users who
have them load them with :func:`servesim.workload.load_azure`. This generator stands in for them:

* arrivals: a Cox process with per-minute rate ``W(t) * diurnal(hour) * noise``; the shape
  parameters are *solved* (bisection on the noise-free curve) so the 30-minute prompt-TPS profile
  has PreServe's quoted ratios (§3.1.1, Fig 2a/b):

  ====================================================  =======  ==========================
  target                                                 value    how it is met
  ====================================================  =======  ==========================
  code peak prompt TPS / average                         3.3      diurnal width solved
  code peak prompt TPS / minimum                         35.6     diurnal floor solved
  highest code daily peak / lowest weekday peak          1.35     weekday weights
  code peak prompt TPS / chat peak prompt TPS            2        chat width solved
  chat peak response TPS / code peak response TPS        4        not imposed (reported)
  ====================================================  =======  ==========================

* weekday level ``W(t)`` (``day_weights``): ``interpolated`` (default) moves from one day's weight
  to the next over a raised-cosine ramp of ``RAMP_HALF_H`` hours either side of each 00:00 UTC;
  ``step`` (the generator before issue 31) holds each calendar day's weight from 00:00 to 24:00,
  so the code service jumps 4.5x (Sunday 0.22 -> Monday 1.0) from one minute to the next at
  Monday 00:00. See :func:`day_level` for why the ramp and its width.
* volume: 16,803,695 code and 27,303,999 conversation requests at ``scale=1`` (the real files);
  calendars as the real files: code starts Friday 2024-05-10, conversation Sunday 2024-05-12,
  t = 0 at 00:00 UTC of the first day.
* lengths: (prompt, output) pairs bootstrapped from the 2023 one-hour trace of the same service
  (code from code, conversation from conversation).

The chat/code response ratio follows from the 2023 length pools (mean output 211 vs 28 tokens);
it is reported, not forced: forcing it would distort the prompt-TPS ratios above.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from functools import lru_cache

from .arrivals import bin_arrivals, categorical, seeds
from .characterise import counts_per_bin, sums_per_bin
from .gen_sageserve import diurnal
from .schema import WorkloadError, check_volume, validate

WEEK_S = 7 * 86_400
ROWS = {"code": 16_803_695, "conv": 27_303_999}
START = {"code": ("2024-05-10T00:00:00+00:00", 4), "conv": ("2024-05-12T00:00:00+00:00", 6)}  # (t0, weekday)
#: relative daily volume by weekday Mon..Sun
DAY_WEIGHTS = {"code": (1.0, 1.12, 1.08, 1.04, 0.83, 0.24, 0.22), "conv": (1.0, 1.02, 1.04, 1.03, 0.98, 0.80, 0.78)}
TARGETS = {"code_peak_over_avg": 3.3, "code_peak_over_min": 35.6, "code_over_chat_peak_prompt": 2.0,
           "chat_over_code_peak_response": 4.0, "code_peak_over_lowest_weekday_peak": 1.35}
PEAK_HOUR = 16.0
CHAT_FLOOR = 0.3
#: readings of the weekday level between calendar days (the first is the default)
DAY_WEIGHT_READINGS = ("interpolated", "step")
#: half-width (hours) of the ramp between two days' weights, centred on 00:00 UTC [A]
RAMP_HALF_H = 3.0


def day_level(kind: str, minute: np.ndarray, day_weights: str = "interpolated") -> np.ndarray:
    """The weekday level W at each trace minute (minute 0 = 00:00 UTC of the first day).

    ``step``: the weight of the minute's calendar day. ``interpolated``: within ``RAMP_HALF_H``
    hours of a midnight, ``(1 - s) * W[day before] + s * W[day after]`` with the raised cosine
    ``s = (1 - cos(pi * (x + H) / (2 H))) / 2`` of the offset x from that midnight (s = 0 at
    x = -H, 1/2 at midnight, 1 at x = +H, flat at both ends); elsewhere the day's own weight.
    The days before the first and after the last are the calendar's (the trace is a window of a
    continuous week).

    Why a ramp and why this one [A]: neither the spec (§2.2, §5) nor the DynamoLLM trace's
    description says how the level changes between days; they give only weekday and weekend
    per-minute peaks. The real trace's timestamps are UTC and its users are spread over time
    zones, so the weekday/weekend change happens at each user's local midnight and has no single
    switch time in UTC; a one-minute 4.5x jump at 00:00 UTC is an artifact of multiplying
    calendar days. +-3 h spans the Americas' and Europe's offsets from one another (UTC-7 to
    UTC+2 in May) to first order; the ramp is centred on 00:00 UTC and symmetric, so each calendar
    day keeps its weight at its own hours and its total moves by only the small share of the
    diurnal curve that falls within 3 h of midnight (the curve's floor is there: peak at 16 UTC):
    within 5 % of the step reading's total for every day of both services (tested). The cosine
    rather than a linear ramp keeps the rate's slope continuous at the ramp's ends.
    """
    if day_weights not in DAY_WEIGHT_READINGS:
        raise WorkloadError(f"azure_week: day_weights={day_weights!r}; expected one of {DAY_WEIGHT_READINGS}")
    w = np.asarray(DAY_WEIGHTS[kind], dtype=np.float64)
    minute = np.asarray(minute)
    day = minute // 1440
    first = START[kind][1]
    if day_weights == "step":
        return w[(first + day) % 7]
    h = RAMP_HALF_H
    t_h = minute / 60.0
    k = np.floor(t_h / 24.0 + 0.5).astype(np.int64)  # the nearest midnight (day k starts there)
    x = t_h - 24.0 * k  # hours from it, in [-12, 12)
    s = 0.5 * (1.0 - np.cos(np.pi * (np.clip(x, -h, h) + h) / (2.0 * h)))
    return (1.0 - s) * w[(first + k - 1) % 7] + s * w[(first + k) % 7]


def _profile(kind: str, floor: float, width_h: float, days: int = 7,
             day_weights: str = "interpolated") -> np.ndarray:
    minute = np.arange(days * 1440)
    return day_level(kind, minute, day_weights) * diurnal((minute % 1440) / 60.0, floor, PEAK_HOUR, width_h)


def _ratios(rate: np.ndarray) -> tuple[float, float]:
    b = rate.reshape(-1, 30).sum(1)  # 30-minute bins
    return b.max() / b.mean(), b.max() / b.min()


def _bisect(f, lo: float, hi: float, target: float, increasing: bool, it: int = 40) -> float:
    for _ in range(it):
        mid = 0.5 * (lo + hi)
        if (f(mid) < target) == increasing:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@lru_cache(maxsize=16)
def _solve(kind: str, peak_over_avg: float, peak_over_min: float | None,
           day_weights: str = "interpolated") -> tuple[float, float]:
    """Diurnal (floor, width) giving the target 30-min ratios for the noise-free curve."""
    def prof(f: float, w: float) -> np.ndarray:
        return _profile(kind, f, w, day_weights=day_weights)

    def floor_for(w: float) -> float:
        if peak_over_min is None:
            return CHAT_FLOOR
        return _bisect(lambda f: _ratios(prof(f, w))[1], 1e-4, 0.99, peak_over_min, increasing=False)

    w = _bisect(lambda w: _ratios(prof(floor_for(w), w))[0], 0.3, 12.0, peak_over_avg, increasing=False)
    f = floor_for(w)
    got = _ratios(prof(f, w))
    if abs(got[0] / peak_over_avg - 1) > 0.01:
        raise WorkloadError(f"azure_week[{kind}]: peak/avg {peak_over_avg} not reachable (got {got[0]:.3f})")
    return f, w


def solve_shape(kind: str, peak_over_avg: float, peak_over_min: float | None = None,
                day_weights: str = "interpolated") -> dict:
    """Diurnal (floor, width) giving the target 30-min ratios for the noise-free curve."""
    if day_weights not in DAY_WEIGHT_READINGS:
        raise WorkloadError(f"azure_week: day_weights={day_weights!r}; expected one of {DAY_WEIGHT_READINGS}")
    f, w = _solve(kind, float(peak_over_avg), None if peak_over_min is None else float(peak_over_min), day_weights)
    return {"floor": f, "width_h": w}


def _pool(kind: str, lengths: pd.DataFrame | None) -> pd.DataFrame:
    if lengths is not None:
        return lengths
    from .loaders import load_azure_2023

    return load_azure_2023(kind)


def week_shape(kind: str, lengths: pd.DataFrame | None = None, other_lengths: pd.DataFrame | None = None,
               day_weights: str = "interpolated") -> dict:
    """The solved diurnal (floor, width_h) of ``kind`` (see the module doc's table)."""
    if kind == "code":
        return solve_shape("code", TARGETS["code_peak_over_avg"], TARGETS["code_peak_over_min"], day_weights)
    pool, code_pool = _pool(kind, lengths), _pool("code", other_lengths)
    # chat peak prompt TPS = code peak prompt TPS / 2  =>  chat peak/avg ratio:
    ratio = (TARGETS["code_peak_over_avg"] * ROWS["code"] * code_pool["prompt_tokens"].mean()
             / (TARGETS["code_over_chat_peak_prompt"] * ROWS["conv"] * pool["prompt_tokens"].mean()))
    return solve_shape("conv", ratio, day_weights=day_weights)


def azure_week(kind: str = "code", scale: float = 1.0, seed: int = 0, *, days: int = 7, noise_sigma: float = 0.1,
               lengths: pd.DataFrame | None = None, other_lengths: pd.DataFrame | None = None,
               max_context: int | None = None, day_weights: str = "interpolated") -> pd.DataFrame:
    """One synthetic Azure-2024-like week of ``kind`` = ``code`` or ``conv`` (see the module doc).

    ``scale`` multiplies the real file's row count (PreServe's 8 A40s need ~0.15-0.25, spec §2.2).
    ``lengths`` overrides the (prompt, output) pool (default: the 2023 trace of the same kind);
    ``other_lengths`` is the other service's pool, used only to solve the chat shape.
    ``max_context``: clip prompts to ``max_context - output`` (LLaMA-2's 4096; None = no clip).
    ``day_weights``: ``interpolated`` (default) or ``step``, the weekday level between calendar
    days (:func:`day_level`); the diurnal shape is solved for the reading, so both meet the
    module doc's ratios.
    """
    if kind not in ROWS:
        raise WorkloadError(f"azure_week: kind={kind!r}; expected 'code' or 'conv'")
    if day_weights not in DAY_WEIGHT_READINGS:
        raise WorkloadError(f"azure_week: day_weights={day_weights!r}; expected one of {DAY_WEIGHT_READINGS}")
    check_volume("azure_week", ROWS[kind] * scale * days / 7.0, days)  # before the per-minute arrays
    pool = _pool(kind, lengths)
    shape = week_shape(kind, pool, other_lengths, day_weights)
    r_arr, r_noise, r_len = seeds(seed, 3)
    prof = _profile(kind, shape["floor"], shape["width_h"], days, day_weights)
    rate = ROWS[kind] * scale * days / 7.0 * prof / prof.sum()
    if noise_sigma > 0:
        rate = rate * np.exp(noise_sigma * r_noise.standard_normal(rate.shape) - 0.5 * noise_sigma ** 2)
    t, _ = bin_arrivals(r_arr, rate[None, :], 60.0)
    idx = r_len.integers(0, len(pool), t.size)
    p = pool["prompt_tokens"].to_numpy()[idx]
    o = pool["output_tokens"].to_numpy()[idx]
    if max_context is not None:
        o = np.minimum(o, max_context - 1)
        p = np.clip(p, 1, max_context - o)
    one = np.zeros(t.size, dtype=np.int8)
    df = pd.DataFrame({"request_id": np.arange(t.size, dtype=np.int64), "arrival_s": t, "prompt_tokens": p,
                       "output_tokens": o, "model": categorical(one, ["default"]),
                       "region": categorical(one, ["default"]), "tier": categorical(one, ["IW-F"]),
                       "app": categorical(one, [kind]), "deadline_s": np.nan})
    out = validate(df, f"<azure_week:{kind}>")
    out.attrs.update(generator="azure_week", kind=kind, seed=seed, scale=scale, t0=START[kind][0],
                     first_weekday=START[kind][1], day_weights=day_weights, **shape)
    return out


def tps_30min(df: pd.DataFrame, days: int = 7) -> pd.DataFrame:
    """Prompt and response tokens per second in 30-minute bins (PreServe Fig 2a/b)."""
    a = df["arrival_s"].to_numpy()
    h = days * 86_400.0
    return pd.DataFrame({"t_h": np.arange(int(h // 1800)) * 0.5,
                         "requests": counts_per_bin(a, 1800.0, h),
                         "prompt_tps": sums_per_bin(a, df["prompt_tokens"].to_numpy(), 1800.0, h) / 1800.0,
                         "response_tps": sums_per_bin(a, df["output_tokens"].to_numpy(), 1800.0, h) / 1800.0})


def fig2_ratios(code: pd.DataFrame, conv: pd.DataFrame, code_first_weekday: int = 4) -> dict[str, float]:
    """PreServe §3.1.1's quoted ratios measured on two weeks (30-minute bins)."""
    c, v = tps_30min(code), tps_30min(conv)
    daily_peak = c["prompt_tps"].to_numpy().reshape(7, 48).max(1)
    weekday = (code_first_weekday + np.arange(7)) % 7 < 5
    return {"code_peak_over_avg": float(c.prompt_tps.max() / c.prompt_tps.mean()),
            "code_peak_over_min": float(c.prompt_tps.max() / c.prompt_tps.min()),
            "code_over_chat_peak_prompt": float(c.prompt_tps.max() / v.prompt_tps.max()),
            "chat_over_code_peak_response": float(v.response_tps.max() / c.response_tps.max()),
            "code_peak_over_lowest_weekday_peak": float(daily_peak.max() / daily_peak[weekday].min())}
