"""Multiplicative LSTM forecaster (PreServe §4.1, Tier 1), PyTorch on CPU.

The cell is Krause et al. 2016's mLSTM (arXiv 1609.07959, eqs. 18-23), *not* the xLSTM "mLSTM"
(a matrix-memory cell of the same name):

    m_t  = (W_mx x_t) * (W_mh h_{t-1})
    hh_t = W_hx x_t + W_hm m_t
    i_t  = sigmoid(W_ix x_t + W_im m_t)
    f_t  = sigmoid(W_fx x_t + W_fm m_t)
    o_t  = sigmoid(W_ox x_t + W_om m_t)
    c_t  = f_t * c_{t-1} + i_t * tanh(hh_t)
    h_t  = tanh(c_t) * o_t

plus a bias on each of the four x-side projections (as in the usual LSTM implementations;
``bias=False`` gives the equations exactly as printed). A linear head on the last h_t gives the
next value. PreServe feeds the last ``k`` window totals (min-max scaled) and predicts the next
one; it states neither k nor the hyper-parameters, so the defaults below are the spec's
assumptions (k = 36 windows = 6 h, hidden 64, Adam 1e-3, MSE, 200 epochs).

Scaling (a named reading): Alg. 1 min-max normalises each sample including its target, which
cannot be done online; here min and max come from the training series and are reused for
every prediction (values above the training max map above 1).

torch is imported by this module only (``servesim.forecast`` registers it lazily), so the rest of
the package works without it. Training is seeded and single-threaded: same seed, same weights,
bit for bit.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .base import Forecaster, ForecastError


class MLSTMCell(nn.Module):
    """One multiplicative LSTM cell (Krause et al. 2016)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True) -> None:
        super().__init__()
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        self.W_mx = nn.Linear(input_size, hidden_size, bias=False)
        self.W_mh = nn.Linear(hidden_size, hidden_size, bias=False)
        # rows [0:H] -> hh, [H:2H] -> i, [2H:3H] -> f, [3H:4H] -> o
        self.W_x = nn.Linear(input_size, 4 * hidden_size, bias=bias)
        self.W_m = nn.Linear(hidden_size, 4 * hidden_size, bias=False)

    def forward(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]):
        """x: (B, input_size); state (h, c): (B, H) each. Returns the new (h, c)."""
        return self._step(self.W_mx(x), self.W_x(x), state)

    def _step(self, xm, xz, state):
        # xm = W_mx x_t and xz = W_{h,i,f,o}x x_t (+ bias): the x-side projections
        h, c = state
        m = xm * self.W_mh(h)
        hh, i, f, o = (xz + self.W_m(m)).chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(hh)
        h = torch.tanh(c) * torch.sigmoid(o)
        return h, c

    def forward_seq(self, seq: torch.Tensor) -> torch.Tensor:
        """Run over (B, T, input_size) from zero state; returns the last h (B, H). The x-side
        projections of all steps are computed in one matmul (same arithmetic as ``forward``)."""
        B, T, _ = seq.shape
        xm, xz = self.W_mx(seq), self.W_x(seq)
        h = seq.new_zeros(B, self.hidden_size)
        c = seq.new_zeros(B, self.hidden_size)
        for t in range(T):
            h, c = self._step(xm[:, t], xz[:, t], (h, c))
        return h


class MLSTMRegressor(nn.Module):
    """mLSTM over a (B, T, input) sequence, linear head on the last hidden state -> (B,)."""

    def __init__(self, input_size: int = 1, hidden_size: int = 64, bias: bool = True) -> None:
        super().__init__()
        self.cell = MLSTMCell(input_size, hidden_size, bias)
        self.head = nn.Linear(hidden_size, 1)

    def forward(self, seq: torch.Tensor) -> torch.Tensor:
        return self.head(self.cell.forward_seq(seq)).squeeze(-1)


def windows(y: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Supervised pairs {y[i-k..i-1]} -> y[i] for i = k..len-1: (X (n, k), target (n,))."""
    n = y.size - k
    if n < 1:
        raise ForecastError(f"mlstm: series of {y.size} points gives no window of k={k} plus a target")
    idx = np.arange(k)[None, :] + np.arange(n)[:, None]
    return y[idx], y[k:]


class MLSTM(Forecaster):
    """Tier-1 forecaster: k past window totals -> the next one (see the module doc)."""

    name = "mlstm"

    def __init__(self, k: int = 36, hidden: int = 64, epochs: int = 200, lr: float = 1e-3,
                 batch_size: int = 64, seed: int = 0, bias: bool = True) -> None:
        super().__init__()
        if int(k) < 1 or int(hidden) < 1 or int(epochs) < 1 or int(batch_size) < 1 or not lr > 0:
            raise ForecastError(f"mlstm: need k, hidden, epochs, batch_size >= 1 and lr > 0; got "
                                f"k={k}, hidden={hidden}, epochs={epochs}, batch_size={batch_size}, lr={lr}")
        self.k, self.hidden, self.epochs, self.lr = int(k), int(hidden), int(epochs), float(lr)
        self.batch_size, self.seed, self.bias = int(batch_size), int(seed), bool(bias)
        self.min_train = self.k + 1
        self.loss_history: list[float] = []
        self.net: MLSTMRegressor | None = None

    # -- scaling ------------------------------------------------------------------------------
    def _scale(self, y):
        return (np.asarray(y, dtype=np.float64) - self._lo) / self._span

    def _unscale(self, z):
        return np.asarray(z, dtype=np.float64) * self._span + self._lo

    # -- Forecaster API -----------------------------------------------------------------------
    def _fit(self, y: np.ndarray) -> None:
        self._lo, hi = float(y.min()), float(y.max())
        if hi <= self._lo:
            raise ForecastError(f"mlstm: training series is constant ({self._lo}); min-max scaling is undefined")
        self._span = hi - self._lo
        z = self._scale(y)
        X, t = windows(z, self.k)
        torch.set_num_threads(1)
        torch.manual_seed(self.seed)
        gen = torch.Generator().manual_seed(self.seed)
        self.net = MLSTMRegressor(1, self.hidden, self.bias)
        opt = torch.optim.Adam(self.net.parameters(), lr=self.lr)
        Xt = torch.tensor(X, dtype=torch.float32).unsqueeze(-1)
        tt = torch.tensor(t, dtype=torch.float32)
        n = Xt.shape[0]
        self.loss_history = []
        self.net.train()
        for _ in range(self.epochs):
            perm = torch.randperm(n, generator=gen)
            total = 0.0
            for s in range(0, n, self.batch_size):
                b = perm[s:s + self.batch_size]
                opt.zero_grad()
                loss = nn.functional.mse_loss(self.net(Xt[b]), tt[b])
                loss.backward()
                opt.step()
                total += float(loss.detach()) * b.numel()
            self.loss_history.append(total / n)
        self.net.eval()
        self._tail = y[-self.k:].copy()

    def predict_windows(self, X) -> np.ndarray:
        """One-step predictions for raw (unscaled) windows X of shape (n, k)."""
        if self.net is None:
            raise ForecastError("mlstm: predict before fit")
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.k:
            raise ForecastError(f"mlstm: windows must have shape (n, {self.k}), got {X.shape}")
        torch.set_num_threads(1)
        with torch.no_grad():
            z = self.net(torch.tensor(self._scale(X), dtype=torch.float32).unsqueeze(-1)).numpy()
        return self._unscale(z.astype(np.float64))

    def _predict(self, horizon: int) -> np.ndarray:
        # recursive multi-step: each prediction is appended to the window for the next
        hist = list(self._tail)
        out = []
        for _ in range(horizon):
            p = float(self.predict_windows(np.array(hist[-self.k:])[None, :])[0])
            out.append(p)
            hist.append(p)
        return np.array(out)

    def __repr__(self) -> str:  # pragma: no cover - cosmetic
        return f"MLSTM(k={self.k}, hidden={self.hidden}, epochs={self.epochs}, seed={self.seed})"
