"""OServe's workload predictor (§5.1, Fig 7): per-type request counts of the next 1-minute span.

S1 (types): requests are typed by k-means on (input, output) length (``workload.gen_oserve.classify``,
k = 4, z-scored log lengths, clusters named SILO/LILO/SISO/LISO by their centroid vs the medians);
``span_counts`` counts them per span. S2 (counts): an LSTM reads the last ``lookback`` (50) spans of
the 4 per-type counts and predicts the next span's 4 counts (one multivariate LSTM: the paper says
each type is predicted "independently" but not how [A]).

The paper states neither the LSTM's size nor its training (spec §1.6 [A]); ours [R]: 2 layers x 64
hidden, Adam 1e-3, MSE, early stopping on the last 10 % of the training part. Scaling: each window
is divided per type by its own mean (+1), and the target by the same, so one model serves traces of
any volume (the 2-week training series and the cluster-scaled T1/T2). Seeded, one thread: same seed,
same weights, bit for bit.

Baselines (§6.3): ``MovingAveragePredictor`` (per-type mean of the last ``window`` spans) and the
type-agnostic LSTM (``AggregatePredictor``: the same LSTM on the total count, split into types by
the previous span's mix, spec [R]). ``OraclePredictor`` returns the true next counts (the online
loop's "oracle λ" reading).

Where a trace is shorter than the lookback (T1 is 80 min, T2 50 min), the history before its first
span is the trace's lead-in (``gen_oserve.trace_lead_in``: the trace's own process continued back
in time; ``rolling``'s ``history``), as a running service has; ``--history pad`` (the first span
repeated, which also shows span 0 its own counts) is the earlier reading.

CLI (``python -m servesim.systems.oserve.predictor``): trains on ``--days`` of
``gen_oserve.type_counts`` (90/10 train/test split), scores every predictor (LSTM, moving average, type-agnostic LSTM, last value) on the test part
and on the T1/T2 traces, and writes predictions.csv, rrmse.csv, summary.json and lstm.pt (the
trained LSTM: the online runs forecast with it, ``online.py --lstm-model``).
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import InputError
from ...metrics.forecast_error import rrmse

LOOKBACK = 50  # §5.1: "the past 50 time spans"
SPAN_S = 60.0  # §3: one-minute spans
MODEL_FILE = "lstm.pt"  # the CLI's trained LSTM, beside its summary.json (read by the online runs)


def span_counts(workload: pd.DataFrame, types, span_s: float = SPAN_S, n_spans: int | None = None) -> np.ndarray:
    """Requests per (span, type): ``workload['app']`` holds the type names ``types``; spans x J."""
    t = workload["arrival_s"].to_numpy(float)
    unknown = set(pd.unique(workload["app"])) - set(types)
    if unknown:
        raise InputError(f"span_counts: types {sorted(unknown)} are not in {list(types)}")
    codes = pd.Categorical(workload["app"], categories=list(types)).codes
    span = (t // span_s).astype(np.int64)
    n = int(n_spans if n_spans is not None else (span.max() + 1 if span.size else 0))
    out = np.zeros((n, len(types)))
    ok = span < n
    np.add.at(out, (span[ok], codes[ok]), 1.0)
    return out


def windows(series: np.ndarray, lookback: int) -> tuple[np.ndarray, np.ndarray]:
    """(X, y): every ``lookback``-long window of ``series`` (T x J) and the span after it."""
    s = np.asarray(series, float)
    n = len(s) - lookback
    if n < 1:
        raise InputError(f"series of {len(s)} spans is too short for a {lookback}-span lookback")
    idx = np.arange(lookback)[None, :] + np.arange(n)[:, None]
    return s[idx], s[lookback:]


def _scale(X: np.ndarray) -> np.ndarray:
    return X.mean(axis=1, keepdims=True) + 1.0  # per window and type: (n, 1, J)


class LSTMPredictor:
    """Per-type next-span counts from the last ``lookback`` spans (see the module docstring)."""

    name = "lstm"

    def __init__(self, lookback: int = LOOKBACK, hidden: int = 64, layers: int = 2, epochs: int = 50, lr: float = 1e-3,
                 batch: int = 256, stride: int = 1, patience: int = 5, seed: int = 0):
        if lookback < 1 or hidden < 1 or layers < 1 or epochs < 1 or batch < 1 or stride < 1:
            raise InputError("LSTM predictor: lookback, hidden, layers, epochs, batch and stride must be >= 1")
        self.lookback, self.hidden, self.layers, self.epochs = int(lookback), int(hidden), int(layers), int(epochs)
        self.lr, self.batch, self.stride, self.patience, self.seed = float(lr), int(batch), int(stride), int(patience), int(seed)
        self.model = None
        self.history: list[float] = []  # validation loss per epoch

    def _build(self, J: int):
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(s):
                super().__init__()
                s.lstm = nn.LSTM(J, self.hidden, self.layers, batch_first=True)
                s.head = nn.Linear(self.hidden, J)

            def forward(s, x):
                out, _ = s.lstm(x)
                return s.head(out[:, -1])

        torch.manual_seed(self.seed)
        return Net()

    def fit(self, series: np.ndarray) -> LSTMPredictor:
        import torch

        torch.set_num_threads(1)
        X, y = windows(np.asarray(series, float).reshape(len(series), -1), self.lookback)
        X, y = X[::self.stride], y[::self.stride]
        sc = _scale(X)
        Xn, yn = X / sc, y / sc[:, 0]
        n_val = max(1, len(Xn) // 10)
        Xt, yt = torch.tensor(Xn[:-n_val], dtype=torch.float32), torch.tensor(yn[:-n_val], dtype=torch.float32)
        Xv, yv = torch.tensor(Xn[-n_val:], dtype=torch.float32), torch.tensor(yn[-n_val:], dtype=torch.float32)
        self.J = X.shape[2]
        self.model = self._build(self.J)
        opt = torch.optim.Adam(self.model.parameters(), lr=self.lr)
        rng = np.random.default_rng(self.seed)
        best, best_state, stale = np.inf, None, 0
        for _ in range(self.epochs):
            self.model.train()
            for b in np.array_split(rng.permutation(len(Xt)), max(1, len(Xt) // self.batch)):
                opt.zero_grad()
                loss = torch.mean((self.model(Xt[b]) - yt[b]) ** 2)
                loss.backward()
                opt.step()
            self.model.eval()
            with torch.no_grad():
                v = float(torch.mean((self.model(Xv) - yv) ** 2))
            self.history.append(v)
            if v < best - 1e-7:
                best, stale = v, 0
                best_state = {k: t.clone() for k, t in self.model.state_dict().items()}
            else:
                stale += 1
                if stale >= self.patience:
                    break
        self.model.load_state_dict(best_state)
        self.model.eval()
        return self

    def settings(self) -> dict:
        return {"lookback": self.lookback, "hidden": self.hidden, "layers": self.layers, "epochs": self.epochs,
                "lr": self.lr, "batch": self.batch, "stride": self.stride, "patience": self.patience, "seed": self.seed}

    def save(self, path) -> None:
        """The trained weights and settings, so that the online runs forecast with this very model
        instead of training their own (``load``)."""
        import torch

        if self.model is None:
            raise RuntimeError("LSTM predictor: fit() first")
        torch.save({"settings": self.settings(), "J": self.J, "history": self.history,
                    "state_dict": self.model.state_dict()}, path)

    @classmethod
    def load(cls, path) -> LSTMPredictor:
        import torch

        path = Path(path)
        if not path.is_file():
            raise InputError(f"{path}: no trained LSTM here (the predictor run writes lstm.pt)")
        try:
            d = torch.load(path, map_location="cpu", weights_only=True)
            p = cls(**d["settings"])
            p.J, p.history = int(d["J"]), list(d["history"])
            p.model = p._build(p.J)
            p.model.load_state_dict(d["state_dict"])
        except (KeyError, TypeError, RuntimeError, OSError, ValueError, EOFError, pickle.UnpicklingError) as e:
            raise InputError(f"{path}: not a trained LSTM of this predictor ({type(e).__name__}: {e})") from None
        p.model.eval()
        return p

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Next-span counts (n x J, >= 0) of windows ``X`` (n x lookback x J)."""
        import torch

        if self.model is None:
            raise RuntimeError("LSTM predictor: fit() first")
        X = np.asarray(X, float)
        sc = _scale(X)
        with torch.no_grad():
            out = self.model(torch.tensor(X / sc, dtype=torch.float32)).numpy().astype(float)
        return np.maximum(out * sc[:, 0], 0.0)


class MovingAveragePredictor:
    """Per-type mean of the last ``window`` spans (§6.3's moving-average baseline)."""

    name = "moving_average"

    def __init__(self, window: int = LOOKBACK):
        self.window = int(window)
        self.lookback = self.window

    def fit(self, series) -> MovingAveragePredictor:
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X, float)[:, -self.window:].mean(axis=1)


class LastValuePredictor(MovingAveragePredictor):
    """The last span's per-type counts (a one-span moving average): the naive null of the claims
    that the LSTM forecasts well (workflow/claims/oserve.yaml, null_system)."""

    name = "last_value"

    def __init__(self):
        super().__init__(1)


class AggregatePredictor:
    """Type-agnostic LSTM (§6.3): forecasts the total, split by the previous span's type mix."""

    name = "aggregate_lstm"

    def __init__(self, **lstm_kw):
        self.lstm = LSTMPredictor(**lstm_kw)
        self.lookback = self.lstm.lookback

    def fit(self, series) -> AggregatePredictor:
        self.lstm.fit(np.asarray(series, float).sum(axis=1, keepdims=True))
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, float)
        total = self.lstm.predict(X.sum(axis=2, keepdims=True))[:, 0]
        last = X[:, -1]
        mix = np.divide(last, last.sum(1, keepdims=True), out=np.full(last.shape, 1.0 / X.shape[2]),
                        where=last.sum(1, keepdims=True) > 0)
        return total[:, None] * mix


class OraclePredictor:
    """The true next-span counts (needs ``rolling``'s ``series``): the "oracle λ" reading."""

    name = "oracle"
    lookback = 1

    def fit(self, series) -> OraclePredictor:
        return self


def rolling(pred, series: np.ndarray, start: int = 0, pad: bool = True, history: np.ndarray | None = None) -> np.ndarray:
    """One-step predictions of spans ``start..T-1`` of ``series`` (T x J), each from the spans before
    it. ``history`` (H x J, oldest first): the spans before ``series`` starts, read where a window
    reaches back past span 0. ``pad``: history shorter than the lookback is its first span (or
    ``series``' first) repeated (else predictions start at span ``lookback``, the rows before NaN).
    Without ``history``, span 0's prediction reads span 0 itself: a trace's lead-in avoids that."""
    s = np.asarray(series, float)
    if isinstance(pred, OraclePredictor):
        out = s.copy()
        out[:start] = np.nan
        return out
    L = pred.lookback
    if history is not None and len(history):
        h = np.asarray(history, float).reshape(len(history), -1)
        if h.shape[1] != s.shape[1]:
            raise InputError(f"rolling: history has {h.shape[1]} types, the series {s.shape[1]}")
        s, start = np.vstack([h, s]), start + len(h)
        return rolling(pred, s, start, pad)[len(h):]
    if pad:
        s_ext = np.vstack([np.repeat(s[:1], L, axis=0), s])
        X = np.stack([s_ext[t:t + L] for t in range(max(start, 0), len(s))])
        out = np.full(s.shape, np.nan)
        out[max(start, 0):] = pred.predict(X)
        return out
    first = max(start, L)
    out = np.full(s.shape, np.nan)
    if first < len(s):
        out[first:] = pred.predict(np.stack([s[t - L:t] for t in range(first, len(s))]))
    return out


HISTORIES = ("lead-in", "pad")


def trace_history(name: str, spans: int, rate_rps: float, seed: int, stride: int = 1) -> np.ndarray:
    """The ``spans`` one-minute spans (spans x types, oldest first) before trace ``name`` compressed
    to every ``stride``-th minute (``online.compress`` keeps minute 0, ``stride``, ...): its lead-in's
    minutes -stride x spans, ..., -stride."""
    from ...workload import gen_oserve as G

    return G.trace_lead_in(name, spans * stride, rate_rps, seed)[::stride]


def make(name: str, **lstm_kw):
    """A predictor by name: lstm | moving_average | aggregate_lstm | last_value | oracle."""
    if name == "lstm":
        return LSTMPredictor(**lstm_kw)
    if name == "moving_average":
        return MovingAveragePredictor(lstm_kw.get("lookback", LOOKBACK))
    if name == "aggregate_lstm":
        return AggregatePredictor(**lstm_kw)
    if name == "last_value":
        return LastValuePredictor()
    if name == "oracle":
        return OraclePredictor()
    raise InputError(f"predictor {name!r}: one of lstm, moving_average, aggregate_lstm, last_value, oracle")


PREDICTORS = ("lstm", "moving_average", "aggregate_lstm", "last_value")


def inference_ms(pred, series: np.ndarray, repeats: int = 50) -> float:
    """Median wall time (ms) of one 4-type prediction from the last lookback spans."""
    X = np.asarray(series, float)[None, -pred.lookback:]
    pred.predict(X)
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        pred.predict(X)
        ts.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(ts))


# ---- CLI ---------------------------------------------------------------------------------------------

def _check(a: argparse.Namespace) -> None:
    for opt in ("days", "epochs", "hidden", "layers", "stride", "lookback"):
        if getattr(a, opt) < 1:
            raise InputError(f"--{opt}: need >= 1, got {getattr(a, opt)}")
    if not 0 < a.train_fraction < 1:
        raise InputError(f"--train-fraction: need a number in (0, 1), got {a.train_fraction}")
    if a.days * 1440 * (1 - a.train_fraction) < a.lookback + 1:
        raise InputError(f"--days {a.days}: the test part is shorter than the {a.lookback}-span lookback")
    for t in a.traces:
        if t not in ("T1", "T2"):
            raise InputError(f"--traces: T1 or T2, got {t!r}")
    if not (a.rate > 0 and np.isfinite(a.rate)):
        raise InputError(f"--rate: need a finite number > 0, got {a.rate}")


def run(a: argparse.Namespace) -> int:
    import torch

    from ...output_dir import staged_output_dir
    from ...workload import gen_oserve as G

    _check(a)
    torch.set_num_threads(1)
    t_start = time.perf_counter()
    counts = G.type_counts(days=a.days, seed=a.seed)
    series = counts[list(G.TYPES)].to_numpy(float)
    n_train = int(round(a.train_fraction * len(series)))
    kw = dict(lookback=a.lookback, hidden=a.hidden, layers=a.layers, epochs=a.epochs, stride=a.stride, seed=a.seed)
    preds = {name: make(name, **kw) for name in PREDICTORS}
    fit_s = {}
    for name, p in preds.items():
        t0 = time.perf_counter()
        p.fit(series[:n_train])
        fit_s[name] = time.perf_counter() - t0
    rows, err = [], []
    # the paper's protocol: the test part, each span predicted from the 50 before it (history may reach into train)
    sources = {"azure_week_test": (series, n_train, None)}
    pool = G.type_pool("kmeans", a.seed)
    for tr in a.traces:  # each span from the 50 before it: the trace's lead-in, or (pad) span 0 from span 1 on
        wl = G.trace(tr, rate_rps=a.rate, seed=a.seed, pool=pool)
        hist = trace_history(tr, a.lookback, a.rate, a.seed, 1) if a.history == "lead-in" else None
        sources[tr] = (span_counts(wl, G.TYPES, SPAN_S, G.TRACE_MINUTES[tr]), 0 if hist is not None else 1, hist)
    for src, (s, start, hist) in sources.items():
        for name, p in preds.items():
            pr = rolling(p, s, start, pad=True, history=hist)
            act = s[start:]
            r = rrmse(act, pr[start:])
            err.append({"source": src, "predictor": name, **{f"rrmse_{t}": v for t, v in zip(G.TYPES, r)},
                        "rrmse_mean": float(np.nanmean(r)), "n_spans": len(act)})
            if src != "azure_week_test" or name == "lstm":
                keep = range(start, len(s)) if src != "azure_week_test" else range(max(start, len(s) - 1440), len(s))
                for t in keep:
                    rows.append({"source": src, "predictor": name, "span": t,
                                 **{f"actual_{ty}": s[t, j] for j, ty in enumerate(G.TYPES)},
                                 **{f"pred_{ty}": pr[t, j] for j, ty in enumerate(G.TYPES)}})
    err = pd.DataFrame(err)
    test = err[err.source == "azure_week_test"].set_index("predictor").rrmse_mean
    summ = {"days": a.days, "train_fraction": a.train_fraction, "n_train_spans": n_train, "n_test_spans": len(series) - n_train,
            "lookback_spans": a.lookback, "horizon_s": SPAN_S, "types": list(G.TYPES), "type_method": "kmeans",
            "lstm": {"hidden": a.hidden, "layers": a.layers, "epochs_max": a.epochs, "stride": a.stride,
                     "epochs_run": len(preds["lstm"].history), "lr": 1e-3, "loss": "MSE of window-mean-scaled counts"},
            "rrmse_test_pct": {k: float(v) for k, v in test.items()},
            "rrmse_trace_pct": {f"{r.source}/{r.predictor}": float(r.rrmse_mean) for r in err.itertuples() if r.source != "azure_week_test"},
            "inference_ms": {k: inference_ms(p, series[:n_train]) for k, p in preds.items()},
            "fit_s": fit_s, "trace_rate_rps": a.rate, "traces": list(a.traces), "trace_history": a.history, "seed": a.seed,
            "wall_s": time.perf_counter() - t_start}
    with staged_output_dir(a.out, command="oserve predictor", force=a.force) as tmp:
        pd.DataFrame(rows).to_csv(tmp / "predictions.csv", index=False)
        err.to_csv(tmp / "rrmse.csv", index=False)
        (tmp / "summary.json").write_text(json.dumps(summ, indent=2, default=float) + "\n")
        preds["lstm"].save(tmp / MODEL_FILE)
    print("RRMSE (test): " + ", ".join(f"{k} {v:.2f}%" for k, v in test.items()) + f" -> {Path(a.out)}")
    return 0


def main(argv=None) -> int:
    from ...cli_errors import add_output_args, run_command

    ap = argparse.ArgumentParser(prog="python -m servesim.systems.oserve.predictor", description=__doc__.split("\n")[0])
    ap.add_argument("--days", type=int, default=14, help="days of per-minute type counts (the paper: two weeks)")
    ap.add_argument("--train-fraction", type=float, default=0.9)
    ap.add_argument("--lookback", type=int, default=LOOKBACK)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--stride", type=int, default=1, help="use every n-th training window")
    ap.add_argument("--traces", nargs="*", default=["T1", "T2"], help="evaluation traces (T1, T2)")
    ap.add_argument("--rate", type=float, default=5.0, help="the traces' mean arrival rate, req/s")
    ap.add_argument("--history", choices=HISTORIES, default="lead-in",
                    help="the spans before a trace's first: its lead-in (the trace's process continued back, "
                         "gen_oserve.trace_lead_in), or pad (the first span repeated; scored from span 1)")
    add_output_args(ap)
    return run_command(run, ap.parse_args(argv), "oserve predictor")


if __name__ == "__main__":
    sys.exit(main())
