"""PreServe's service workload predictor (Tier 1, §4.1, Alg. 1-2): window totals, the online
two-step forecast with truth replacement, and APE.

Alg. 2, at the start of window T_i (history = true totals up to T_{i-1}):
  1. P^_i     = M(P_{i-k}, ..., P_{i-1})          (one step)
  2. P^_{i+1} = M(P_{i-k+1}, ..., P_{i-1}, P^_i)   (two steps: the value the scaler uses)
  3. when T_i ends, the true P_i replaces P^_i in the history.
So the forecast of window j used for provisioning is made at the start of window j-1 from the
truth up to j-2. :func:`online_forecast` returns both the one- and two-step forecasts of every
test window; ``steps`` in :func:`table1` picks which is scored (default 2, Alg. 2's own).

Daily retraining (the paper's "periodically (e.g., daily)") is an option: every
``retrain_every`` windows the model is refitted on the most recent ``retrain_window`` true
totals (min-max bounds re-derived from them).
"""

from __future__ import annotations

from typing import Callable, Protocol

import numpy as np
import pandas as pd

from ...forecast.base import ForecastError, as_series

WINDOW_S = 600.0  # §4.1 |T_i| = 10 min
WINDOWS_PER_DAY = 144


class WindowModel(Protocol):
    """What the online phase needs: ``k``, ``fit(series)`` and ``predict_windows(X (n, k))``."""

    k: int

    def fit(self, series): ...

    def predict_windows(self, X) -> np.ndarray: ...


def window_totals(df: pd.DataFrame, window_s: float = WINDOW_S, t_end: float | None = None) -> pd.DataFrame:
    """Prompt and response token totals per window (zero-filled): columns ``window, t_s, prompt, response``."""
    for col in ("arrival_s", "prompt_tokens", "output_tokens"):
        if col not in df.columns:
            raise ForecastError(f"window_totals: request table has no column {col!r}")
    t = df["arrival_s"].to_numpy(dtype=np.float64)
    if t_end is None:
        t_end = float(t.max()) + 1e-9 if t.size else 0.0
    n = int(np.ceil(t_end / window_s))
    keep = (t >= 0) & (t < t_end)
    idx = (t[keep] // window_s).astype(np.int64)
    tot = {c: np.bincount(idx, weights=df[c].to_numpy(dtype=np.float64)[keep], minlength=n)[:n]
           for c in ("prompt_tokens", "output_tokens")}
    return pd.DataFrame({"window": np.arange(n), "t_s": np.arange(n) * window_s,
                         "prompt": tot["prompt_tokens"], "response": tot["output_tokens"]})


def ape(actual, predicted) -> np.ndarray:
    """Absolute percentage error per point, in percent: 100 |pred - actual| / actual.

    A zero actual has no APE: it is an error naming the index (a window with no traffic cannot
    be scored in percent; the caller must drop or report it)."""
    a = np.asarray(actual, dtype=np.float64)
    p = np.asarray(predicted, dtype=np.float64)
    if a.shape != p.shape:
        raise ForecastError(f"ape: shapes differ: actual {a.shape}, predicted {p.shape}")
    bad = np.flatnonzero(~(a > 0))
    if bad.size:
        raise ForecastError(f"ape: actual value at index {int(bad[0])} is {a[bad[0]]}; APE needs positive actuals")
    return 100.0 * np.abs(p - a) / a


def online_forecast(series, make_model: Callable[[], WindowModel], n_train: int, *,
                    retrain_every: int | None = None, retrain_window: int | None = None) -> pd.DataFrame:
    """Alg. 2 over the test windows ``n_train..len-1`` (see the module doc).

    The model is fitted on ``series[:n_train]`` (the offline phase, Alg. 1). Returns one row per
    test window j: ``window, actual, pred_1step`` (made at the start of j from the truth up to
    j-1) and ``pred_2step`` (made at the start of j-1 from the truth up to j-2 and the one-step
    forecast of j-1), plus ``model_fit`` (which fit produced the two-step forecast).
    """
    y = as_series(series, 2, "online_forecast")
    n = y.size
    if not 2 <= n_train < n:
        raise ForecastError(f"online_forecast: n_train={n_train} must be in [2, {n - 1}] for a series of {n}")
    if retrain_every is not None and int(retrain_every) < 1:
        raise ForecastError(f"online_forecast: retrain_every must be >= 1 or None, got {retrain_every}")
    retrain_window = n_train if retrain_window is None else int(retrain_window)
    model = make_model()
    model.fit(y[:n_train])
    k = int(model.k)
    if n_train - 1 < k + 1:
        raise ForecastError(f"online_forecast: n_train={n_train} too short for k={k}")
    # fit boundaries: origins o (start of window o, truth up to o-1) in [b_j, b_{j+1}) use fit j
    bounds = [n_train - 1]
    if retrain_every:
        bounds += list(range(n_train - 1 + int(retrain_every), n, int(retrain_every)))
    bounds.append(n)
    p1 = np.full(n + 1, np.nan)  # p1[o]: one-step forecast of window o made at origin o
    p2 = np.full(n + 1, np.nan)  # p2[o+1]: two-step forecast of window o+1 made at origin o
    fit_of = np.full(n + 1, -1)
    for j in range(len(bounds) - 1):
        lo, hi = bounds[j], bounds[j + 1]
        if j > 0:  # periodic retraining on the most recent truth (known up to lo-1)
            model = make_model()
            model.fit(y[max(0, lo - retrain_window):lo])
        origins = np.arange(lo, hi)
        X1 = y[origins[:, None] - k + np.arange(k)[None, :]]  # truth y[o-k..o-1]
        one = model.predict_windows(X1)
        # two-step: drop the oldest, append the one-step forecast (not the truth: it is unknown yet)
        X2 = np.concatenate([X1[:, 1:], one[:, None]], axis=1)
        two = model.predict_windows(X2)
        p1[origins] = one
        p2[origins + 1] = two
        fit_of[origins + 1] = j
    test = np.arange(n_train, n)
    return pd.DataFrame({"window": test, "actual": y[test], "pred_1step": np.clip(p1[test], 0.0, None),
                         "pred_2step": np.clip(p2[test], 0.0, None), "model_fit": fit_of[test]})
