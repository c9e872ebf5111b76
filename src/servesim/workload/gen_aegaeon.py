"""Aegaeon model-market workloads: many models, per-model Poisson arrivals, ShareGPT lengths
(spec aegaeon §1.7, §2, §5).

* :func:`market` -- M logical models ``model_00 ...``, each a Poisson stream of rate ``rate`` (or
  its own rate from ``rates``). ``arrivals="ae"`` reproduces the artifact's construction (per model
  floor(duration * rate) exponential gaps, cut at ``duration``); ``"poisson"`` is a true Poisson
  process. Lengths are drawn with replacement from a pool:
  ``"aegaeon"`` (default) = the unique (input, output) pairs of the artifact's ``-1.0-1.0`` workload
  CSVs (ShareGPT, already tokenised by the authors; calibration targets: input mean 720 / p50 598 /
  p90 1593 / p99 2197, output mean 308 / p50 275 / p90 608 / p99 992, spec §2);
  ``"sharegpt"`` = our own ShareGPT pairs (history so far -> reply, output >= 16 tokens, WordPiece).
  ``input_scale`` / ``output_scale`` = 2 give the -ix2 / -ox2 datasets of Fig 12.
* :func:`popularity_rates` -- a skewed model market (Fig 1a, illustrative): log-normal per-model
  rates set at quantiles so that the bottom 94.1 % of models receive 1.35 % of requests and the
  tail boundary is a rate of 1.16 (claim 9), i.e. deterministic given M.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

from .arrivals import categorical, seeds
from .schema import WorkloadError, validate

AE_LENGTH_STATS = {"input_mean": 720, "input_p50": 598, "input_p90": 1593, "input_p99": 2197,
                   "output_mean": 308, "output_p50": 275, "output_p90": 608, "output_p99": 992}
#: claim 9: the bottom 94.1 % of models get 1.35 % of requests; tail = average rate < 1.16
SKEW = {"tail_frac": 0.941, "tail_share": 0.0135, "tail_rate": 1.16}


@lru_cache(maxsize=4)
def _ae_pool() -> pd.DataFrame:
    from .loaders import aegaeon_workload_files, load_aegaeon

    files = [f for f in aegaeon_workload_files() if f.name.endswith("-1.0-1.0.csv")]
    if not files:
        raise WorkloadError("aegaeon/workloads: no synth-*-1.0-1.0.csv file found")
    d = pd.concat([load_aegaeon(f)[["prompt_tokens", "output_tokens"]] for f in files], ignore_index=True)
    return d.drop_duplicates().sort_values(["prompt_tokens", "output_tokens"]).reset_index(drop=True)


def length_pool(source: str | pd.DataFrame = "aegaeon", *, min_output: int = 16, tokenizer: str = "wordpiece",
                max_conversations: int | None = None) -> pd.DataFrame:
    """(prompt_tokens, output_tokens) pairs to draw from (see the module doc)."""
    if isinstance(source, pd.DataFrame):
        return source[["prompt_tokens", "output_tokens"]]
    if source == "aegaeon":
        return _ae_pool()
    if source == "sharegpt":
        from .sharegpt import load_sharegpt

        d = load_sharegpt(mode="history", tokenizer=tokenizer, max_conversations=max_conversations)
        return d.loc[d["output_tokens"] >= min_output, ["prompt_tokens", "output_tokens"]].reset_index(drop=True)
    raise WorkloadError(f"aegaeon length pool: source={source!r}; expected aegaeon|sharegpt or a DataFrame")


def popularity_rates(n_models: int, *, tail_frac: float = SKEW["tail_frac"], tail_share: float = SKEW["tail_share"],
                     tail_rate: float = SKEW["tail_rate"]) -> np.ndarray:
    """Per-model rates (req/s), descending: log-normal quantiles ``exp(mu + sigma z_i)`` at
    ``z_i = Phi^-1((i + 0.5) / M)``, with sigma solved (bisection) so the bottom ``tail_frac`` of the
    M models carry exactly ``tail_share`` of the expected requests, and mu so the tail boundary (the
    geometric mean of the last tail and first head model) has rate ``tail_rate``."""
    k = int(round(tail_frac * n_models))
    if not 0 < k < n_models:
        raise WorkloadError(f"popularity_rates: tail_frac={tail_frac} leaves no tail or no head with M={n_models}")
    from scipy.stats import norm  # here, not at import (scipy.stats costs about 0.3 s)

    z = norm.ppf((np.arange(n_models) + 0.5) / n_models)

    def share(sig: float) -> float:
        w = np.exp(sig * (z - z.max()))
        return float(w[:k].sum() / w.sum())

    lo, hi = 1e-3, 50.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if share(mid) > tail_share else (lo, mid)
    sigma = 0.5 * (lo + hi)
    mu = np.log(tail_rate) - sigma * 0.5 * (z[k - 1] + z[k])
    return np.exp(mu + sigma * z)[::-1]


def market(n_models: int = 16, rate: float = 0.1, duration_s: float = 60.0, seed: int = 0, *,
           rates=None, arrivals: str = "ae", lengths: str | pd.DataFrame = "aegaeon",
           input_scale: float = 1.0, output_scale: float = 1.0, model_prefix: str = "model_") -> pd.DataFrame:
    """A multi-model workload: per-model Poisson arrivals over ``duration_s`` (see the module doc)."""
    if isinstance(n_models, bool) or int(n_models) != n_models or n_models < 1:
        raise WorkloadError(f"aegaeon market: n_models={n_models!r} must be a whole number >= 1")
    n_models = int(n_models)
    rates = np.full(n_models, float(rate)) if rates is None else np.asarray(rates, float)
    if rates.shape != (n_models,) or (rates < 0).any():
        raise WorkloadError(f"aegaeon market: rates must be {n_models} non-negative numbers")
    pool = length_pool(lengths)
    r_arr, r_len = seeds(seed, 2)
    if arrivals == "ae":
        k = np.floor(duration_s * rates).astype(np.int64)
        model = np.repeat(np.arange(n_models), k)
        gaps = r_arr.exponential(1.0, model.size) / np.repeat(np.maximum(rates, 1e-300), k)
        start = np.concatenate([[0], np.cumsum(k)[:-1]])
        t = np.cumsum(gaps)
        t = t - np.repeat(np.concatenate([[0.0], t])[start], k)  # restart the cumulative sum per model
        keep = t < duration_s
        t, model = t[keep], model[keep]
    elif arrivals == "poisson":
        k = r_arr.poisson(duration_s * rates)
        model = np.repeat(np.arange(n_models), k)
        t = r_arr.random(model.size) * duration_s
    else:
        raise WorkloadError(f"aegaeon market: arrivals={arrivals!r}; expected ae|poisson")
    order = np.argsort(t, kind="stable")
    t, model = t[order], model[order]
    idx = r_len.integers(0, len(pool), t.size)
    p = np.maximum(1, np.rint(pool["prompt_tokens"].to_numpy()[idx] * input_scale)).astype(np.int64)
    o = np.rint(pool["output_tokens"].to_numpy()[idx] * output_scale).astype(np.int64)
    width = max(2, len(str(n_models - 1)))
    names = [f"{model_prefix}{i:0{width}d}" for i in range(n_models)]
    one = np.zeros(t.size, np.int8)
    df = pd.DataFrame({"request_id": np.arange(t.size, dtype=np.int64), "arrival_s": t, "prompt_tokens": p,
                       "output_tokens": o, "model": categorical(model, names), "region": categorical(one, ["default"]),
                       "tier": categorical(one, ["IW-F"]), "app": categorical(one, ["sharegpt"]),
                       "deadline_s": np.nan})
    out = validate(df, "<aegaeon.market>")
    out.attrs.update(generator="aegaeon.market", n_models=n_models, duration_s=duration_s, seed=seed,
                     arrivals=arrivals, rates=rates.tolist(), input_scale=input_scale, output_scale=output_scale,
                     lengths=lengths if isinstance(lengths, str) else "custom")
    return out


def tail_share(df: pd.DataFrame, tail_frac: float = SKEW["tail_frac"]) -> float:
    """Share of requests received by the least popular ``tail_frac`` of models (by realised count)."""
    n_models = len(df["model"].cat.categories) if isinstance(df["model"].dtype, pd.CategoricalDtype) \
        else df["model"].nunique()
    c = np.sort(df["model"].value_counts().reindex(
        df["model"].cat.categories if isinstance(df["model"].dtype, pd.CategoricalDtype) else None,
        fill_value=0).to_numpy())
    c = np.concatenate([np.zeros(n_models - c.size), c])
    k = int(round(tail_frac * n_models))
    return float(c[:k].sum() / max(c.sum(), 1))
