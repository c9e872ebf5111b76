"""Time-varying autoregression (journal App. B (2)).

AR(p) with intercept whose coefficients drift: recursive least squares with exponential
forgetting (factor ``lam``) over the training window, so recent minutes weigh more. The
forecast iterates the final coefficients ``horizon`` steps ahead.
"""

from __future__ import annotations

import numpy as np

from .base import Forecaster, ForecastError


class TVAR(Forecaster):
    name = "tvar"

    def __init__(self, p: int = 4, lam: float = 0.98, delta: float = 100.0) -> None:
        super().__init__()
        if p < 1:
            raise ForecastError(f"tvar: p must be >= 1, got {p}")
        if not 0.0 < lam <= 1.0:
            raise ForecastError(f"tvar: forgetting factor lam must be in (0, 1], got {lam}")
        self.p, self.lam, self.delta = int(p), float(lam), float(delta)
        self.min_train = self.p + 2

    def _fit(self, y: np.ndarray) -> None:
        p, lam = self.p, self.lam
        self._scale = float(np.mean(np.abs(y))) or 1.0
        z = y / self._scale
        k = p + 1
        w = np.zeros(k)
        P = np.eye(k) * self.delta
        # RLS: one rank-1 update per time step (this is the training cost Fig 17 measures)
        for t in range(p, z.size):
            x = np.empty(k)
            x[0] = 1.0
            x[1:] = z[t - p:t][::-1]
            Px = P @ x
            g = Px / (lam + x @ Px)
            w = w + g * (z[t] - x @ w)
            P = (P - np.outer(g, Px)) / lam
        self._w = w
        self._hist = z[-p:].copy()

    def _predict(self, horizon: int) -> np.ndarray:
        hist = list(self._hist)
        out = np.empty(horizon)
        for h in range(horizon):
            x = np.concatenate(([1.0], hist[::-1][: self.p]))
            v = float(x @ self._w)
            out[h] = v
            hist.append(v)
        return out * self._scale
