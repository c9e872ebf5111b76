"""Gaussian hidden Markov model forecaster (journal App. B (3)), Baum-Welch in numpy.

Hidden states are demand regimes with Gaussian emissions on the per-minute demand. After
fitting, the filtered state distribution at the last minute is propagated through the
transition matrix: E[y_{T+h}] = alpha_T A^h mu. The paper's HMM also uses date and time of
day as inputs; here the state is learnt from the demand alone (the window is too short for
calendar features to vary).
"""

from __future__ import annotations

import numpy as np

from .base import Forecaster, ForecastError


def _gauss_pdf(y: np.ndarray, mu: np.ndarray, var: np.ndarray) -> np.ndarray:
    """(T, K) emission densities."""
    d = y[:, None] - mu[None, :]
    return np.exp(-0.5 * d * d / var[None, :]) / np.sqrt(2.0 * np.pi * var[None, :])


def forward_backward(y, pi, A, mu, var):
    """Scaled forward-backward. Returns (alpha, beta, scales, log-likelihood)."""
    B = _gauss_pdf(y, mu, var) + 1e-300
    T, K = B.shape
    alpha = np.empty((T, K))
    beta = np.empty((T, K))
    c = np.empty(T)
    a = pi * B[0]
    c[0] = a.sum()
    alpha[0] = a / c[0]
    for t in range(1, T):
        a = (alpha[t - 1] @ A) * B[t]
        c[t] = a.sum()
        alpha[t] = a / c[t]
    beta[-1] = 1.0
    for t in range(T - 2, -1, -1):
        beta[t] = (A @ (B[t + 1] * beta[t + 1])) / c[t + 1]
    return alpha, beta, c, B, float(np.log(c).sum())


class GaussianHMM(Forecaster):
    """K-state Gaussian HMM fitted by Baum-Welch (EM) from a deterministic quantile start."""

    name = "hmm"

    def __init__(self, n_states: int = 3, n_iter: int = 100, tol: float = 1e-6, min_var: float = 1e-4) -> None:
        super().__init__()
        if n_states < 1:
            raise ForecastError(f"hmm: n_states must be >= 1, got {n_states}")
        self.K, self.n_iter, self.tol, self.min_var = int(n_states), int(n_iter), float(tol), float(min_var)
        self.min_train = 2 * self.K
        self.loglik: float = float("nan")
        self.n_iter_run = 0

    def _fit(self, y: np.ndarray) -> None:
        K = self.K
        self._scale = float(np.mean(np.abs(y))) or 1.0
        z = y / self._scale
        # deterministic init: state means at evenly spaced quantiles, sticky transitions
        mu = np.quantile(z, (np.arange(K) + 0.5) / K)
        var = np.full(K, max(float(z.var()), self.min_var))
        A = np.full((K, K), 0.1 / max(K - 1, 1)) + np.eye(K) * (0.9 - 0.1 / max(K - 1, 1)) if K > 1 else np.ones((1, 1))
        pi = np.full(K, 1.0 / K)
        prev = -np.inf
        for it in range(self.n_iter):
            alpha, beta, c, B, ll = forward_backward(z, pi, A, mu, var)
            gamma = alpha * beta
            gamma /= gamma.sum(axis=1, keepdims=True)
            # expected transitions: xi_t(i,j) = alpha_t(i) A(i,j) B_{t+1}(j) beta_{t+1}(j) / c_{t+1}
            xi = (alpha[:-1, :, None] * A[None] * (B[1:] * beta[1:])[:, None, :]) / c[1:, None, None]
            pi = gamma[0]
            A = xi.sum(axis=0)
            A /= A.sum(axis=1, keepdims=True)
            w = gamma.sum(axis=0) + 1e-12
            mu = (gamma * z[:, None]).sum(axis=0) / w
            var = np.maximum((gamma * (z[:, None] - mu[None]) ** 2).sum(axis=0) / w, self.min_var)
            self.n_iter_run = it + 1
            if ll - prev < self.tol * abs(ll):
                break
            prev = ll
        alpha, _, _, _, ll = forward_backward(z, pi, A, mu, var)
        self.loglik = ll
        self._A, self._mu, self._var, self._pi = A, mu, var, pi
        self._last = alpha[-1]

    def _predict(self, horizon: int) -> np.ndarray:
        out = np.empty(horizon)
        s = self._last
        for h in range(horizon):
            s = s @ self._A
            out[h] = s @ self._mu
        return out * self._scale
